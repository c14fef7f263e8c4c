package replication

import "github.com/gokafka/gokafka/partition"

// HWMoved returns a channel that is closed the next time the partition's
// high watermark moves (consumer-visible progress), nil if the partition
// is not hosted here. Share fetches park on it as plain fetches do.
func (m *Manager) HWMoved(tp partition.TopicPartition) <-chan struct{} {
	p := m.Get(tp)
	if p == nil {
		return nil
	}
	return p.waitChan(false)
}
