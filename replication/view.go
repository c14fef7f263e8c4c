package replication

import (
	"slices"
	"sort"
	"time"

	"github.com/gokafka/gokafka/partition"
)

// ReplicaView is what this broker knows of one partition it hosts, as its
// replica manager acts on it: for the built-in console, which shows the
// replication state rather than a second model of it.
type ReplicaView struct {
	TP          partition.TopicPartition
	Leader      bool
	LeaderEpoch int32
	// LEO, HW and LogStart are this broker's replica's (a follower's HW
	// is the leader's as its last fetch response said).
	LEO, HW, LogStart int64
	// ISR is the committed ISR while leading, the metadata's otherwise.
	ISR []int32
	// Followers, while leading: every other replica as the leader sees
	// it, by replica id.
	Followers []FollowerView
}

// FollowerView is one follower as its leader sees it.
type FollowerView struct {
	ID int32
	// LEO is the follower's log end offset from its last fetch, -1 until
	// it fetched under the current leader epoch.
	LEO int64
	// SinceCaughtUp is how long since the follower last reached the
	// leader's log end; 0 while it is caught up.
	SinceCaughtUp time.Duration
}

// ReplicaViews returns a view of every partition this broker hosts,
// sorted by topic and partition. It takes each partition's lock briefly,
// one at a time.
func (m *Manager) ReplicaViews() []ReplicaView {
	m.mu.RLock()
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.RUnlock()
	nowMs := m.now().UnixMilli()
	out := make([]ReplicaView, 0, len(parts))
	for _, p := range parts {
		v := ReplicaView{TP: p.TP, LEO: p.log.LogEndOffset(), HW: p.log.HighWatermark(), LogStart: p.log.LogStartOffset()}
		p.mu.Lock()
		v.Leader, v.LeaderEpoch = p.mu.isLeader, p.mu.leaderEpoch
		if st := p.mu.st; st != nil && p.mu.isLeader {
			v.ISR = slices.Clone(st.ISR())
			for _, f := range st.followers {
				fv := FollowerView{ID: f.id, LEO: f.leo}
				if f.leo != st.leo && f.lastCaughtUpMs > 0 {
					fv.SinceCaughtUp = time.Duration(max(nowMs-f.lastCaughtUpMs, 0)) * time.Millisecond
				}
				v.Followers = append(v.Followers, fv)
			}
		} else {
			v.ISR = slices.Clone(p.mu.isr)
		}
		p.mu.Unlock()
		slices.SortFunc(v.Followers, func(a, b FollowerView) int { return int(a.ID - b.ID) })
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TP.Topic != out[j].TP.Topic {
			return out[i].TP.Topic < out[j].TP.Topic
		}
		return out[i].TP.Partition < out[j].TP.Partition
	})
	return out
}
