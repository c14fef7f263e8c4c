package replication

import (
	"sort"
	"time"

	"github.com/gokafka/gokafka/partition"
)

// FollowerLag is how far one follower of a partition this broker leads
// is behind it.
type FollowerLag struct {
	TP       partition.TopicPartition
	Follower int32
	// Offsets is the leader's log end minus the follower's (the whole
	// log end when the follower has not fetched under this epoch).
	Offsets int64
	// Time is how long since the follower last reached the leader's log
	// end (0 while it is caught up).
	Time time.Duration
}

// FollowerLags returns the lag of every follower of every partition this
// broker leads, for metrics. It takes each partition's lock briefly.
func (m *Manager) FollowerLags() []FollowerLag {
	m.mu.RLock()
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.RUnlock()
	nowMs := m.now().UnixMilli()
	var out []FollowerLag
	for _, p := range parts {
		p.mu.Lock()
		if st := p.mu.st; st != nil && p.mu.isLeader {
			for _, f := range st.followers {
				lag := FollowerLag{TP: p.TP, Follower: f.id, Offsets: st.leo}
				if f.leo >= 0 {
					lag.Offsets = max(st.leo-f.leo, 0)
				}
				if lag.Offsets > 0 && f.lastCaughtUpMs > 0 {
					lag.Time = time.Duration(max(nowMs-f.lastCaughtUpMs, 0)) * time.Millisecond
				}
				out = append(out, lag)
			}
		}
		p.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.TP != b.TP {
			if a.TP.Topic != b.TP.Topic {
				return a.TP.Topic < b.TP.Topic
			}
			return a.TP.Partition < b.TP.Partition
		}
		return a.Follower < b.Follower
	})
	return out
}
