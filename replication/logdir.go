package replication

// Partitions in an offline log dir (Kafka's
// ReplicaManager.handleLogDirFailure). When the partition.Manager takes a
// log dir offline, HandleLogDirFailure stops this broker's replicas there:
// their fetchers stop, parked acks=all produces fail, leadership duties end
// and the partitions are no longer hosted. Requests for them answer
// KAFKA_STORAGE_ERROR (not NOT_LEADER_OR_FOLLOWER: the client must not
// retry here until the controller moves the leadership, which the broker
// asks for through its heartbeat). Metadata naming this broker as their
// leader or follower is ignored while the dir is offline; a restart
// recovers the dir.

import (
	"fmt"

	"github.com/gokafka/gokafka/partition"
)

// offlineLog reports whether tp's log is in an offline log dir.
func (m *Manager) offlineLog(tp partition.TopicPartition) bool {
	if m.logs == nil {
		return false
	}
	return m.logs.InOfflineDir(tp)
}

// HandleLogDirFailure stops every hosted partition whose log is in the
// log dir dir, which has gone offline.
func (m *Manager) HandleLogDirFailure(dir string) []partition.TopicPartition {
	m.reconcileMu.Lock()
	defer m.reconcileMu.Unlock()
	m.mu.Lock()
	var gone []*Partition
	for tp, p := range m.parts {
		if p.log.LogDir() == dir {
			gone = append(gone, p)
			delete(m.parts, tp)
		}
	}
	m.mu.Unlock()
	var tps []partition.TopicPartition
	for _, p := range gone {
		m.detach(p)
		tps = append(tps, p.TP)
		p.logger().Warn().Str("log_dir", dir).Msg("partition offline: its log dir failed")
	}
	return tps
}

// storageErr is the answer for a partition in an offline log dir.
func storageErr(tp partition.TopicPartition) error {
	return fmt.Errorf("%w: %s is in an offline log dir", ErrStorage, tp)
}

// DescribeLogDirs describes this broker's log dirs (DescribeLogDirs).
func (m *Manager) DescribeLogDirs() []partition.LogDirDescription {
	return m.logs.DescribeLogDirs()
}
