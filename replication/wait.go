package replication

import (
	"context"
	"reflect"
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
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.busyLocked()
	if b.hwMoved == nil {
		b.hwMoved = make(chan struct{})
	}
	return b.hwMoved
}

// WaitAny waits until one of waits is closed (true), or until deadline fires
// or ctx is done (false). A nil deadline never fires. It starts no
// goroutine: with more than one channel it selects on all of them at once
// (reflect.Select).
func WaitAny(ctx context.Context, deadline <-chan time.Time, waits []<-chan struct{}) bool {
	switch len(waits) {
	case 0:
		select {
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	case 1:
		select {
		case <-waits[0]:
			return true
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(waits)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)})
	for _, w := range waits {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}
