package coordinator

import (
	"time"

	"github.com/rs/zerolog"
)

// ReadPartitionLog reads an internal topic's partition from its log start
// to the log end it had when the read began, as a coordinator that just
// became its leader does to rebuild its state. Reads stop at the high
// watermark, which on a new leader lags until the followers catch up: the
// loop waits for it rather than take records the ISR may not hold. parse
// consumes a chunk of whole batches and returns the offset after the last
// one. It returns false if cancel closed first.
//
// The group and transaction coordinators both load this way.
func ReadPartitionLog(r Replicas, tp TopicPartition, maxBytes int32, cancel <-chan struct{}, log zerolog.Logger, parse func(chunk []byte) (next int64, err error)) bool {
	var pos, target int64 = -1, -1
	backoff := time.NewTimer(0)
	defer backoff.Stop()
	<-backoff.C
	wait := func() bool {
		backoff.Reset(20 * time.Millisecond)
		select {
		case <-backoff.C:
			return true
		case <-cancel:
			return false
		}
	}
	hwn, _ := r.(hwNotifier)
	for {
		select {
		case <-cancel:
			return false
		default:
		}
		// Taken before the bounds, so that a move between the two is
		// not missed.
		var hwMoved <-chan struct{}
		if hwn != nil {
			hwMoved = hwn.HWMoved(tp)
		}
		logStart, hw, leo, err := r.Bounds(tp)
		if err != nil {
			// The replica manager may not host the partition yet.
			if !wait() {
				return false
			}
			continue
		}
		if target < 0 {
			target, pos = leo, logStart
		}
		pos = max(pos, logStart)
		if pos >= target {
			return true
		}
		if hw <= pos {
			if hwMoved == nil {
				if !wait() {
					return false
				}
				continue
			}
			// The high watermark's move (or a role change) wakes us.
			select {
			case <-hwMoved:
			case <-cancel:
				return false
			}
			continue
		}
		recs, err := r.Read(tp, pos, hw, maxBytes)
		if err != nil {
			log.Warn().Err(err).Int64("offset", pos).Msg("reading the partition failed; retrying")
			if !wait() {
				return false
			}
			continue
		}
		next, err := parse(recs)
		if err != nil {
			log.Error().Err(err).Int64("offset", pos).Msg("the partition holds a corrupt batch; loading stopped there")
			return true
		}
		if next <= pos {
			log.Error().Int64("offset", pos).Msg("no progress reading the partition; loading stopped there")
			return true
		}
		pos = next
	}
}

// hwNotifier is a Replicas that signals high watermark moves, so that a
// load waiting for the followers to catch up waits for that signal rather
// than polling. replication.Manager's store and the test fakes are.
type hwNotifier interface {
	HWMoved(tp TopicPartition) <-chan struct{}
}
