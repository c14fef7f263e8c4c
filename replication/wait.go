package replication

import (
	"context"
	"time"

	"github.com/gokafka/gokafka/partition"
)

// HWMoved returns a channel that is closed the next time the partition's
// high watermark moves (consumer-visible progress), nil if the partition
// is not hosted here. Share fetches park on it as plain fetches do.
func (m *Manager) HWMoved(tp partition.TopicPartition) <-chan struct{} {
	p := m.Get(tp)
	if p == nil {
		return nil
	}
	return p.waitChan(false)
}

// WaitAny waits until one of waits is closed (true), or until deadline fires
// or ctx is done (false). A nil deadline never fires. With a single channel it
// selects on it directly; with more, waits[0] is still selected on directly
// and one goroutine per other channel reports the first close, all of them
// ending before WaitAny returns.
func WaitAny(ctx context.Context, deadline <-chan time.Time, waits []<-chan struct{}) bool {
	var first <-chan struct{} // nil when waits is empty: never ready
	if len(waits) > 0 {
		first = waits[0]
	}
	var woken chan struct{} // nil unless there are channels beyond the first
	if len(waits) > 1 {
		woken = make(chan struct{}, 1)
		stop := make(chan struct{})
		defer close(stop)
		for _, w := range waits[1:] {
			go func(w <-chan struct{}) {
				select {
				case <-w:
					select {
					case woken <- struct{}{}:
					default:
					}
				case <-stop:
				}
			}(w)
		}
	}
	select {
	case <-first:
		return true
	case <-woken:
		return true
	case <-deadline:
	case <-ctx.Done():
	}
	return false
}
