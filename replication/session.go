package replication

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gokafka/gokafka/partition"
)

// SessionWatch is the standing side of a follower's fetch session
// (KIP-227) at the leader: it stays registered with every partition of
// the session from one fetch to the next, so that a fetch need only read
// the partitions that changed since the previous one instead of all of
// them. A partition marks itself dirty in each watch on every change that
// notifyLocked names (an append, a high watermark or log start move, a
// role, ISR or replica change) and wakes the watch's parked fetch on the
// changes that wake followers. A fetch registers each partition as it
// reads it, the Partition object it reads, before taking its log end
// offset, so that an append the read does not see marks it dirty even
// when this broker created the partition while the fetch was under way.
//
// The follower's position still reaches the ISR state machine whenever it
// moves: the fetch names the partition then. A partition left out because
// nothing changed counts as fetched at the log end on every fetch of the
// session (Kafka reads it and records exactly that), through the time of
// the session's latest fetch (leaderState.FollowerInSession), so a
// follower whose session goes on fetching stays caught up, and one that
// stops fetching falls behind from its last fetch on.
//
// Lock order: a partition's mu, then the watch's mu.
type SessionWatch struct {
	replicaID int32
	// ch is signalled (buffered, 1) when a change should wake a parked
	// fetch of the session.
	ch chan struct{}
	// roundMs is the time of the session's latest fetch, in
	// milliseconds of the manager's clock.
	roundMs atomic.Int64

	mu      sync.Mutex
	closed  bool
	watched map[partition.TopicPartition]*Partition
	dirty   map[partition.TopicPartition]struct{}
}

// smallSet is the size up to which a set that is emptied over and over
// is cleared for reuse rather than made afresh.
const smallSet = 64

// NewSessionWatch returns a watch for a fetch session of follower
// replicaID, watching nothing yet.
func (m *Manager) NewSessionWatch(replicaID int32) *SessionWatch {
	return &SessionWatch{
		replicaID: replicaID,
		ch:        make(chan struct{}, 1),
		watched:   make(map[partition.TopicPartition]*Partition),
		dirty:     make(map[partition.TopicPartition]struct{}),
	}
}

// markDirty records a change of tp, waking a parked fetch if wake. Under
// the partition's mu.
func (w *SessionWatch) markDirty(tp partition.TopicPartition, wake bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.dirty[tp] = struct{}{}
	w.mu.Unlock()
	if wake {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// TakeDirty calls fn for each partition that changed since the last call,
// and forgets them (and any wake-up they left). Changes after it returns
// are kept for the next call.
func (w *SessionWatch) TakeDirty(fn func(tp partition.TopicPartition)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tp := range w.dirty {
		fn(tp)
	}
	if len(w.dirty) > smallSet {
		// A cleared map keeps the room of its largest size: after a
		// burst (a topic's creation marks thousands of partitions) an
		// idle session would keep it for good.
		w.dirty = make(map[partition.TopicPartition]struct{})
	} else {
		clear(w.dirty)
	}
	select {
	case <-w.ch:
	default:
	}
}

// Dirty counts the partitions changed since the last TakeDirty.
func (w *SessionWatch) Dirty() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirty)
}

// watch registers w with p, the partition hosted as tp now, unless it is
// already; a partition replaced since (a role or reassignment change) is
// left for the new one.
func (w *SessionWatch) watch(tp partition.TopicPartition, p *Partition) {
	w.mu.Lock()
	old, ok := w.watched[tp]
	if w.closed || (ok && old == p) {
		w.mu.Unlock()
		return
	}
	w.watched[tp] = p
	w.mu.Unlock()
	if ok && old != nil {
		old.unwatchSession(w)
	}
	p.watchSession(w)
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		// Closed meanwhile: Close may have missed this registration.
		p.unwatchSession(w)
	}
}

// Forget stops watching tp, which left the session.
func (w *SessionWatch) Forget(tp partition.TopicPartition) {
	w.mu.Lock()
	p := w.watched[tp]
	delete(w.watched, tp)
	delete(w.dirty, tp)
	w.mu.Unlock()
	if p != nil {
		p.unwatchSession(w)
	}
}

// Close stops watching every partition; the session is gone.
func (w *SessionWatch) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	watched := w.watched
	w.watched, w.dirty = nil, nil
	w.mu.Unlock()
	for _, p := range watched {
		p.unwatchSession(w)
	}
}

// Watching counts the partitions w is registered with.
func (w *SessionWatch) Watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}

func (p *Partition) watchSession(w *SessionWatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.mu.sessions, w) {
		p.mu.sessions = append(p.mu.sessions, w)
	}
}

func (p *Partition) unwatchSession(w *SessionWatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.mu.sessions, w); i >= 0 {
		p.mu.sessions = slices.Delete(p.mu.sessions, i, i+1)
	}
	if len(p.mu.sessions) == 0 {
		p.mu.sessions = nil
	}
}
