package replication

import (
	"fmt"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// openLog opens (or creates) the log of tp for the topic with id. A log
// that records another topic id is what a deleted topic of the same name
// left behind (deleted while this broker was down, say): it is removed and
// a fresh log takes its place, as Kafka does with partition.metadata.
func (m *Manager) openLog(tp partition.TopicPartition, id cluster.TopicID) (*partition.Log, error) {
	lg, err := m.logs.GetOrCreate(tp)
	if err != nil {
		return nil, err
	}
	have, ok, err := lg.TopicID()
	if err != nil {
		m.logger.Warn().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("unreadable partition.metadata; rewriting it")
	}
	if ok && have != id {
		m.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("removing the log of an earlier topic with the same name")
		if err := m.logs.Delete(tp); err != nil {
			return nil, fmt.Errorf("remove stale log %s: %w", tp, err)
		}
		if lg, err = m.logs.GetOrCreate(tp); err != nil {
			return nil, err
		}
		ok = false
	}
	if !ok {
		if err := lg.SetTopicID(id); err != nil {
			return nil, fmt.Errorf("record topic id of %s: %w", tp, err)
		}
	}
	return lg, nil
}
