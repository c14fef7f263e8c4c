package coordinator

import (
	"sync"

	"github.com/gokafka/gokafka/cluster"
)

// Partition is one partition of an internal topic this broker leads, as
// the Owner tracks it. A coordinator embeds it in its own per-partition
// type.
type Partition struct {
	ID    int32
	Epoch int32
	// Loaded is set once the coordinator's state for the partition is in
	// memory; until then requests for its keys answer
	// COORDINATOR_LOAD_IN_PROGRESS.
	Loaded bool
	// Cancel is closed when leadership is lost, stopping the load.
	Cancel chan struct{}
}

func (p *Partition) owned() *Partition { return p }

// Owned is a coordinator's per-partition type: a pointer to a struct
// embedding Partition.
type Owned interface {
	comparable
	owned() *Partition
}

// Hooks are what a coordinator does as partitions come and go.
type Hooks[P Owned] struct {
	// New wraps a newly led partition in the coordinator's own type.
	New func(Partition) P
	// Load rebuilds the partition's state; it runs on its own goroutine,
	// counted in the WaitGroup given to NewOwner, and calls Done on it.
	Load func(P)
	// Unload gives up the partition: it calls Detach under the lock and
	// drops what the coordinator kept for it.
	Unload func(pid int32)
}

// Owner follows which partitions of one internal topic this broker leads:
// on every metadata change (Reconcile) it loads the partitions it now
// leads and unloads those it no longer does, or whose leader epoch or
// topic id changed. The group and transaction coordinators both own
// their partitions through one.
//
// Its state is guarded by the coordinator's own lock, given to NewOwner,
// which also guards what the coordinator keeps per partition; methods
// named ...Locked expect it held.
type Owner[P Owned] struct {
	topic  string
	nodeID int32
	mu     sync.Locker
	wg     *sync.WaitGroup
	hooks  Hooks[P]

	closed        bool
	numPartitions int32
	topicID       cluster.TopicID
	parts         map[int32]P
}

// NewOwner returns the owner of topic's partitions led by nodeID. mu is
// the coordinator's lock; loads are counted in wg.
func NewOwner[P Owned](topic string, nodeID int32, mu sync.Locker, wg *sync.WaitGroup, hooks Hooks[P]) *Owner[P] {
	return &Owner[P]{topic: topic, nodeID: nodeID, mu: mu, wg: wg, hooks: hooks, parts: make(map[int32]P)}
}

// Reconcile loads the partitions this broker now leads and unloads those
// it no longer does. It runs on the metadata goroutine and never blocks:
// loading happens in the background.
func (o *Owner[P]) Reconcile(im *cluster.Image) {
	want, n, id := im.Led(o.topic, o.nodeID)
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	recreated := id != o.topicID
	o.numPartitions, o.topicID = n, id
	var drop []int32
	for pid, op := range o.parts {
		if e, ok := want[pid]; !ok || e != op.owned().Epoch || recreated {
			drop = append(drop, pid)
		}
	}
	o.mu.Unlock()
	for _, pid := range drop {
		o.hooks.Unload(pid)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for pid, epoch := range want {
		if _, ok := o.parts[pid]; ok || o.closed {
			continue
		}
		op := o.hooks.New(Partition{ID: pid, Epoch: epoch, Cancel: make(chan struct{})})
		o.parts[pid] = op
		o.wg.Add(1)
		go o.hooks.Load(op)
	}
}

// Close stops following the metadata and unloads every partition.
// stopLocked runs once, under the lock, as the owner closes; Close
// reports false if it had already closed.
func (o *Owner[P]) Close(stopLocked func()) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return false
	}
	o.closed = true
	stopLocked()
	var parts []int32
	for id := range o.parts {
		parts = append(parts, id)
	}
	o.mu.Unlock()
	for _, id := range parts {
		o.hooks.Unload(id)
	}
	return true
}

// DetachLocked forgets partition pid and closes its Cancel, returning it,
// or the zero P if it is not owned. Unload hooks call it first.
func (o *Owner[P]) DetachLocked(pid int32) (P, bool) {
	op, ok := o.parts[pid]
	if !ok {
		return op, false
	}
	delete(o.parts, pid)
	close(op.owned().Cancel)
	return op, true
}

// OwnsLocked reports whether op is still the owner's partition of its id
// and the owner is open.
func (o *Owner[P]) OwnsLocked(op P) bool {
	return o.parts[op.owned().ID] == op && !o.closed
}

// CurrentLocked reports whether op is still the owner's partition of its
// id, open or not.
func (o *Owner[P]) CurrentLocked(op P) bool { return o.parts[op.owned().ID] == op }

// Owns is OwnsLocked taking the lock.
func (o *Owner[P]) Owns(op P) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.OwnsLocked(op)
}

// ClosedLocked reports whether Close has run.
func (o *Owner[P]) ClosedLocked() bool { return o.closed }

// ForKeyLocked returns the loaded partition that key maps to, or the
// error to answer: ErrCoordinatorNotAvailable once closed,
// ErrNotCoordinator when the topic does not exist or another broker leads
// the partition, ErrCoordinatorLoading while it loads.
func (o *Owner[P]) ForKeyLocked(key string) (P, error) {
	var zero P
	if o.closed {
		return zero, ErrCoordinatorNotAvailable
	}
	if o.numPartitions == 0 {
		return zero, ErrNotCoordinator
	}
	op, ok := o.parts[PartitionFor(key, o.numPartitions)]
	switch {
	case !ok:
		return zero, ErrNotCoordinator
	case !op.owned().Loaded:
		return zero, ErrCoordinatorLoading
	}
	return op, nil
}

// LoadedLocked returns the owned partitions that are loaded, none once
// closed.
func (o *Owner[P]) LoadedLocked() []P {
	var out []P
	if o.closed {
		return nil
	}
	for _, op := range o.parts {
		if op.owned().Loaded {
			out = append(out, op)
		}
	}
	return out
}

// LoadingLocked reports whether any owned partition is still loading.
func (o *Owner[P]) LoadingLocked() bool {
	for _, op := range o.parts {
		if !op.owned().Loaded {
			return true
		}
	}
	return false
}
