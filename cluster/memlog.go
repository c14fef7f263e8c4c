package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// MemLog is a Log kept in memory by a quorum of one that always leads it:
// a proposal is committed and applied at once, on the proposing goroutine,
// in the order proposals take its lock. Tests use it to drive the real
// Controller (validation, AlterPartition's fencing checks, elections)
// without raft, disks or timers.
type MemLog struct {
	ctrl *Controller
	// mu orders proposals and their publication, as the raft fsm's lock
	// does.
	mu    sync.Mutex
	st    *State
	index uint64
}

// OpenInMemory returns a Controller over a new MemLog, leading it as node
// cfg.NodeID, with the cluster id set, and the MemLog. It runs no
// background loops: no heartbeats of its own and no session expiry, so
// brokers change state only through the calls a test makes
// (RegisterBroker, BrokerHeartbeat, AlterPartition, ...). A test may also
// propose commands to the MemLog itself, for a metadata record no
// controller decision would produce.
func OpenInMemory(ctx context.Context, cfg Config, logger zerolog.Logger) (*Controller, *MemLog, error) {
	c := &Controller{
		cfg: cfg, logger: logger, stop: make(chan struct{}), hbStop: make(chan struct{}),
		qc:            QuorumConfig{HeartbeatInterval: 2 * time.Second, SessionTimeout: 9 * time.Second},
		previousEpoch: -1,
		now:           cfg.Now,
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.sessions = newSessions(c.qc.SessionTimeout)
	l := &MemLog{ctrl: c, st: NewState()}
	c.img = l.st.Image(-1)
	c.log = l
	c.logOpen.Store(true)
	if err := c.ensureClusterID(ctx); err != nil {
		return nil, nil, err
	}
	return c, l, nil
}

// Propose implements Log.
func (l *MemLog) Propose(ctx context.Context, cmds ...*Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	// As in the raft fsm, a failed entry still advances the applied
	// offset and leaves the state as it was.
	err := l.st.ApplyEntry(int64(l.index), cmds)
	l.st.offset = int64(l.index)
	l.ctrl.published(l.st.Image(l.ctrl.cfg.NodeID))
	return err
}

// Leader implements Log: this node.
func (l *MemLog) Leader() int32 { return l.ctrl.cfg.NodeID }

// LeaderAddr implements Log: none, a MemLog has no quorum listener.
func (l *MemLog) LeaderAddr() string { return "" }

// IsLeader implements Log: always.
func (l *MemLog) IsLeader() bool { return true }

// Term implements Log: one leadership, for ever.
func (l *MemLog) Term() uint64 { return 1 }

// Barrier implements Log: every proposal is applied before it returns.
func (l *MemLog) Barrier(ctx context.Context) error { return ctx.Err() }

// AppliedIndex implements Log.
func (l *MemLog) AppliedIndex() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.index
}

// LastIndex implements Log: the same as AppliedIndex.
func (l *MemLog) LastIndex() uint64 { return l.AppliedIndex() }

// Close implements Log.
func (l *MemLog) Close() error { return nil }
