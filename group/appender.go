package group

import (
	"context"
	"sync"
	"time"
)

// maxBatchBytes keeps a combined batch under Kafka's default
// max.message.bytes (1048588) with room for the batch header.
const maxBatchBytes = 1000000

// appendReq is one write to a __consumer_offsets partition: the records of
// one offset commit or one group change, which must land in one batch.
type appendReq struct {
	recs []record
	size int
	// txn marks a transactional offset commit of producer pid at epoch;
	// it goes out in a batch of its own.
	txn   bool
	pid   int64
	epoch int16
	// done runs on the appender's goroutine (or a fresh one after close)
	// with the append's outcome.
	done func(err error)
}

// appender writes to one __consumer_offsets partition in the order its
// requests were queued. Requests are queued under their group's lock, so
// the log sees a group's changes in the order the group made them, and a
// group's last record is always its latest state. Whatever queued while an
// append was in flight goes out together as the next batch.
type appender struct {
	c  *Coordinator
	tp TopicPartition

	mu struct {
		sync.Mutex
		queue  []appendReq
		closed bool
	}
	wake chan struct{}
	done chan struct{}
}

func newAppender(c *Coordinator, tp TopicPartition) *appender {
	a := &appender{c: c, tp: tp, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		a.run()
	}()
	return a
}

// enqueue queues recs. It never blocks and never calls done itself: a
// closed appender answers from a new goroutine, so that callers holding a
// group lock never see their callback run underneath them.
func (a *appender) enqueue(recs []record, done func(error)) {
	a.enqueueReq(appendReq{recs: recs, done: done})
}

// enqueueTxn queues a transactional offset commit of producer pid.
func (a *appender) enqueueTxn(recs []record, pid int64, epoch int16, done func(error)) {
	a.enqueueReq(appendReq{recs: recs, done: done, txn: true, pid: pid, epoch: epoch})
}

func (a *appender) enqueueReq(req appendReq) {
	recs, done := req.recs, req.done
	size := 0
	for _, r := range recs {
		size += len(r.key) + len(r.value) + 16
	}
	a.mu.Lock()
	if a.mu.closed {
		a.mu.Unlock()
		go done(ErrNotCoordinator)
		return
	}
	req.size = size
	a.mu.queue = append(a.mu.queue, req)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// close stops the appender; queued requests fail with NOT_COORDINATOR. An
// append in flight finishes (it fails too if leadership has moved).
func (a *appender) close() {
	a.mu.Lock()
	a.mu.closed = true
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *appender) run() {
	defer close(a.done)
	for {
		<-a.wake
		for {
			a.mu.Lock()
			queue, closed := a.mu.queue, a.mu.closed
			a.mu.queue = nil
			a.mu.Unlock()
			if closed {
				for _, r := range queue {
					r.done(ErrNotCoordinator)
				}
				return
			}
			if len(queue) == 0 {
				break
			}
			a.write(queue)
		}
	}
}

// write appends queue as few batches as the size limit allows; a request
// is never split across batches.
func (a *appender) write(queue []appendReq) {
	for len(queue) > 0 {
		n, size := 0, 0
		for n < len(queue) && (n == 0 || !queue[0].txn && !queue[n].txn && size+queue[n].size <= maxBatchBytes) {
			size += queue[n].size
			n++
		}
		chunk := queue[:n]
		queue = queue[n:]
		var recs []record
		for _, r := range chunk {
			recs = append(recs, r.recs...)
		}
		batch := buildBatch(recs, a.c.now().UnixMilli())
		if chunk[0].txn {
			batch = buildProducerBatch(recs, a.c.now().UnixMilli(), chunk[0].pid, chunk[0].epoch)
		}
		timeout := a.c.cfg.OffsetCommitTimeout
		ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Second)
		err := a.c.replicas.Append(ctx, a.tp, batch, timeout)
		cancel()
		if err != nil {
			a.c.logger.Warn().Err(err).Str("topic", a.tp.Topic).Int32("partition", a.tp.Partition).Int("records", len(recs)).Msg("writing to the offsets topic failed")
		}
		for _, r := range chunk {
			r.done(err)
		}
	}
}
