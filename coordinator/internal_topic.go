package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
)

// InternalTopic is a topic a coordinator keeps its state in
// (__consumer_offsets, __transaction_state), created on first use as Kafka
// creates them.
type InternalTopic struct {
	Name          string
	NumPartitions int32
	// ReplicationFactor is the one wanted; the topic is created with
	// fewer replicas when fewer brokers are live.
	ReplicationFactor int16
	// MinISR, when positive, is its min.insync.replicas, capped at the
	// replication factor it is created with.
	MinISR  int32
	Configs map[string]string
}

// CoordinatorFor returns the broker that coordinates key: the leader of
// key's partition of t (PartitionFor). t is created first if it does not
// exist. Every error wraps ErrCoordinatorNotAvailable, which clients
// retry.
func CoordinatorFor(ctx context.Context, meta Metadata, t InternalTopic, key string, logger zerolog.Logger) (cluster.BrokerInfo, error) {
	im := meta.Image()
	ti := im.Topic(t.Name)
	if ti == nil {
		live := 0
		for _, b := range im.Brokers {
			if !b.Fenced {
				live++
			}
		}
		rf := min(int(t.ReplicationFactor), live)
		if rf < 1 {
			return cluster.BrokerInfo{}, ErrCoordinatorNotAvailable
		}
		configs := make(map[string]*string, len(t.Configs)+1)
		for k, v := range t.Configs {
			configs[k] = &v
		}
		if t.MinISR > 0 {
			minISR := strconv.Itoa(min(int(t.MinISR), rf))
			configs["min.insync.replicas"] = &minISR
		}
		errs := meta.CreateTopics(ctx, []cluster.TopicSpec{{
			Name: t.Name, NumPartitions: t.NumPartitions, ReplicationFactor: int16(rf), Configs: configs,
		}}, false)
		if err := errs[0]; err != nil && !errors.Is(err, cluster.ErrTopicExists) {
			logger.Warn().Err(err).Str("topic", t.Name).Msg("creating an internal topic failed")
			return cluster.BrokerInfo{}, fmt.Errorf("%w: creating %s: %v", ErrCoordinatorNotAvailable, t.Name, err)
		}
		logger.Info().Str("topic", t.Name).Int32("partitions", t.NumPartitions).Int("replication_factor", rf).Msg("created an internal topic")
		im = meta.Image()
		if ti = im.Topic(t.Name); ti == nil {
			return cluster.BrokerInfo{}, ErrCoordinatorNotAvailable
		}
	}
	leader, ok := LeaderFor(im, t.Name, key)
	if !ok {
		return cluster.BrokerInfo{}, ErrCoordinatorNotAvailable
	}
	b, ok := im.Brokers[leader]
	if leader < 0 || !ok || b.Fenced {
		return cluster.BrokerInfo{}, ErrCoordinatorNotAvailable
	}
	return b, nil
}

// LeaderFor returns the leader (-1 if none) of key's partition of topic in
// im; ok is false if the topic does not exist or has no partitions.
func LeaderFor(im *cluster.Image, topic, key string) (leader int32, ok bool) {
	ti := im.Topic(topic)
	if ti == nil || len(ti.Partitions) == 0 {
		return -1, false
	}
	return ti.Partitions[PartitionFor(key, int32(len(ti.Partitions)))].Leader, true
}
