package cluster

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The metadata log's retention: metadata.max.retention.bytes and
// metadata.max.retention.ms on hashicorp/raft.
//
// After each snapshot raft deletes the log up to the snapshot's index but
// keeps its last TrailingLogs entries (10,240 by default), so that a
// follower a little behind catches up from the log rather than from a
// snapshot. Metadata entries that change thousands of partitions hold a
// megabyte or more each, so 10,240 of them would be gigabytes. Kafka
// deletes the log before its latest snapshot once it holds more than
// metadata.max.retention.bytes or is older than metadata.max.retention.ms.
// Here, whenever the state is snapshotted (or a snapshot restored), the
// fsm works out, from the sizes and append times of the entries it
// applied, how many of the newest entries fit those limits and sets raft's
// TrailingLogs to that before raft compacts the log (raft compacts right
// after persisting the snapshot the fsm handed it, reading TrailingLogs
// then). It never keeps fewer than minTrailingLogs entries, nor more than
// raft's default.
//
// The limits bound the log before the snapshot; the entries after it
// (those not yet applied when the snapshot was taken) are always kept, and
// the snapshots themselves (raft keeps the newest two, each the size of
// the state) come on top, where Kafka counts them in the same budget.

// defaultRetentionBytes is Kafka's metadata.max.retention.bytes.
const defaultRetentionBytes = 100 << 20

// defaultRetentionTime is Kafka's metadata.max.retention.ms.
const defaultRetentionTime = 7 * 24 * time.Hour

// minTrailingLogs is the fewest entries kept after a snapshot, whatever
// their size or age: a follower a few proposals behind when the leader
// snapshots catches up from the log rather than by a snapshot install.
const minTrailingLogs = 16

// maxTrailingLogs is the most entries kept after a snapshot: raft's
// default TrailingLogs.
const maxTrailingLogs = 10240

// loggedEntry is the size of one command entry of the metadata log.
type loggedEntry struct {
	index uint64
	bytes int64
	// at is when the leader appended it; zero if unknown.
	at time.Time
}

// retention sets raft's TrailingLogs from the sizes and ages of the log's
// entries. Apart from conf, it is used on raft's fsm goroutine only
// (fsm.Apply, Snapshot and Restore), and never under fsm.mu.
type retention struct {
	// maxBytes is the most bytes of entries kept before a snapshot,
	// negative for no limit; maxAge the oldest an entry kept there may
	// be, 0 or less for no limit.
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time
	store    raft.LogStore
	// conf is the running raft's settings; nil until raft runs.
	conf atomic.Pointer[raftConf]
	// commands are the command entries from index from on that this
	// node applied or read back, ascending. Every other index from from
	// on holds one of raft's own entries (a barrier, a leader's no-op, a
	// configuration), which the fsm does not see and which hold (almost)
	// no bytes.
	commands []loggedEntry
	from     uint64
	// trailing is the TrailingLogs last set, 0 before the first.
	trailing uint64
}

func newRetention(qc QuorumConfig, now func() time.Time, store raft.LogStore) *retention {
	r := &retention{maxBytes: qc.RetentionBytes, maxAge: qc.RetentionTime, now: now, store: store, from: 1}
	if r.maxBytes == 0 {
		r.maxBytes = defaultRetentionBytes
	}
	if r.maxAge == 0 {
		r.maxAge = defaultRetentionTime
	}
	return r
}

// applied records a command entry the fsm applied.
func (r *retention) applied(l *raft.Log) {
	r.commands = append(r.commands, loggedEntry{index: l.Index, bytes: int64(len(l.Data)), at: l.AppendedAt})
}

// restored forgets what it knew of the log after the state was restored
// from a snapshot whose last command entry is offset: the entries from
// offset+1 to the snapshot's index are raft's own.
func (r *retention) restored(offset uint64) {
	r.commands, r.from = nil, offset+1
	r.retain()
}

// retain sets raft's TrailingLogs so that, when raft next compacts the
// log after a snapshot of everything applied so far, the applied entries
// it keeps hold at most maxBytes and none is older than maxAge (entries
// not applied yet are after the snapshot and always kept).
func (r *retention) retain() {
	conf := r.conf.Load()
	if conf == nil {
		return
	}
	first, err := r.store.FirstIndex()
	if err != nil {
		return
	}
	last, err := r.store.LastIndex()
	if err != nil || last == 0 {
		return
	}
	// Forget what raft has deleted.
	drop := 0
	for drop < len(r.commands) && r.commands[drop].index < first {
		drop++
	}
	r.commands = r.commands[drop:]
	r.from = max(r.from, first)

	// cut is the newest entry to delete, 0 if none need be.
	var cut, sum uint64
	var cutoff time.Time
	if r.maxAge > 0 {
		cutoff = r.now().Add(-r.maxAge)
	}
	over := func(e loggedEntry) bool {
		sum += uint64(e.bytes)
		if r.maxBytes >= 0 && sum > uint64(r.maxBytes) {
			return true
		}
		return !cutoff.IsZero() && !e.at.IsZero() && e.at.Before(cutoff)
	}
	// oldest is the oldest entry worth looking at: raft keeps no more
	// than maxTrailingLogs anyway.
	oldest := first
	if last > maxTrailingLogs {
		oldest = max(oldest, last-maxTrailingLogs+1)
	}
	for i := len(r.commands) - 1; i >= 0 && cut == 0; i-- {
		if e := r.commands[i]; e.index < oldest {
			cut = e.index
		} else if over(e) {
			cut = e.index
		}
	}
	// Below what this node applied since it started (or restored a
	// snapshot), the sizes are read back from the log, once.
	var older []loggedEntry
	idx := r.from
	for cut == 0 && idx > oldest {
		idx--
		var l raft.Log
		if err := r.store.GetLog(idx, &l); err != nil {
			if !errors.Is(err, raft.ErrLogNotFound) {
				return
			}
			// Deleted meanwhile: the log starts after it.
			break
		}
		if l.Type != raft.LogCommand {
			continue
		}
		e := loggedEntry{index: l.Index, bytes: int64(len(l.Data)), at: l.AppendedAt}
		older = append(older, e)
		if over(e) {
			cut = e.index
		}
	}
	if len(older) > 0 {
		known := make([]loggedEntry, 0, len(older)+len(r.commands))
		for i := len(older) - 1; i >= 0; i-- {
			known = append(known, older[i])
		}
		r.commands = append(known, r.commands...)
	}
	r.from = idx

	trailing := uint64(maxTrailingLogs)
	if cut > 0 {
		trailing = min(max(last-cut, minTrailingLogs), maxTrailingLogs)
	}
	if trailing == r.trailing {
		return
	}
	if err := conf.update(func(rc *raft.ReloadableConfig) { rc.TrailingLogs = trailing }); err == nil {
		r.trailing = trailing
	}
}

// raftConf changes a running raft's reloadable settings one at a time:
// raft's ReloadConfig sets all of them at once, so two callers changing
// different settings must not interleave their reads and writes. mu is
// a leaf lock.
type raftConf struct {
	mu sync.Mutex
	r  *raft.Raft
	// started is set once electNow has lowered the start-up timeouts
	// (raft.go); under mu.
	started bool
}

func (c *raftConf) update(change func(*raft.ReloadableConfig)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.r.ReloadableConfig()
	change(&rc)
	return c.r.ReloadConfig(rc)
}
