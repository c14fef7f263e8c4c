package replication

import (
	"github.com/gokafka/gokafka/partition"
)

// RackAwareReplicaSelector is the one replica.selector.class gokafka
// knows, named as Kafka names its own.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// Fetching from the closest replica (KIP-392).
//
// A consumer's fetch from v11 carries client metadata (its rack, possibly
// empty). Such a fetch may be served by a follower as well as the leader,
// as Kafka's ReplicaManager serves it (fetchOnlyLeader is false): the
// follower answers up to its own high watermark, which trails the
// leader's by at most a fetch round, an offset between that and its log
// end gets no records, and one past its log end OFFSET_OUT_OF_RANGE,
// which clients resolve with the leader. The leader epoch check
// (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) applies as on the leader.
// Older fetches, without client metadata, are served by the leader only
// (NOT_LEADER_OR_FOLLOWER elsewhere).
//
// With replica.selector.class set to RackAwareReplicaSelector, a leader
// answers such a fetch with a PreferredReadReplica and no records when it
// finds a better replica, as Kafka's findPreferredReadReplica and
// RackAwareReplicaSelector decide: only when the client names a rack the
// leader is not in, among the followers in the committed ISR whose log
// holds the fetch offset (log start <= offset <= log end) on live brokers
// in that rack, the one with the largest log end, then the one caught up
// most recently. Otherwise the leader serves the fetch itself. A replica
// that leaves the ISR is no longer chosen, so a client that comes back to
// the leader to re-check its choice is served by the leader.

// readable returns the partition a fetch reads: only as leader for a
// follower's fetch or a consumer's without client metadata, as leader or
// follower for a consumer's with it.
func (m *Manager) readable(tp partition.TopicPartition, currentEpoch int32, leaderOnly bool) (*Partition, error) {
	if leaderOnly {
		return m.leader(tp, currentEpoch)
	}
	p := m.Get(tp)
	if p == nil {
		return m.leader(tp, currentEpoch) // the same errors
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		return nil, err
	}
	return p, nil
}

// preferredReadReplica is the replica a consumer in rack should read
// offset from instead of this leader, or -1 to read here.
func (m *Manager) preferredReadReplica(p *Partition, rack string, offset int64) int32 {
	if m.cfg.ReplicaSelectorClass != RackAwareReplicaSelector || rack == "" {
		return -1
	}
	im := m.meta.Image()
	if b, ok := im.Brokers[m.nodeID]; ok && b.Rack != nil && *b.Rack == rack {
		return -1 // the leader is in the client's rack
	}
	nowMs := m.now().UnixMilli()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.mu.st
	if st == nil || !p.mu.isLeader {
		return -1
	}
	best, bestLEO, bestCaughtUp := int32(-1), int64(-1), int64(0)
	for _, id := range st.ISR() {
		f := st.follower(id)
		if id == st.localID || f == nil || f.leo < offset || f.logStart > offset {
			continue
		}
		b, ok := im.Brokers[id]
		if !ok || b.Fenced || b.Rack == nil || *b.Rack != rack {
			continue
		}
		caughtUp := f.lastCaughtUpMs
		if f.leo == st.leo {
			caughtUp = nowMs
		}
		if best < 0 || f.leo > bestLEO || f.leo == bestLEO && (caughtUp > bestCaughtUp || caughtUp == bestCaughtUp && id < best) {
			best, bestLEO, bestCaughtUp = id, f.leo, caughtUp
		}
	}
	return best
}
