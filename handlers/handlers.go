package handlers

import (
	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// Config is what the handlers need of the broker's configuration.
type Config struct {
	NodeID int32
	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool
}

// Handlers serves the Kafka APIs.
type Handlers struct {
	cfg      Config
	meta     cluster.Metadata
	replicas *replication.Manager
	reg      *protocol.Registry
	logger   zerolog.Logger
}

// Register creates the handlers and registers every API with reg.
func Register(reg *protocol.Registry, cfg Config, meta cluster.Metadata, replicas *replication.Manager, logger zerolog.Logger) *Handlers {
	h := &Handlers{cfg: cfg, meta: meta, replicas: replicas, reg: reg, logger: logger}
	for _, r := range []func(*protocol.Registry){
		h.registerProduce,
		h.registerFetch,
		h.registerListOffsets,
		h.registerMetadata,
		h.registerApiVersions,
		h.registerCreateTopics,
		h.registerDeleteTopics,
		h.registerDeleteRecords,
		h.registerOffsetForLeaderEpoch,
		h.registerDescribeConfigs,
		h.registerAlterConfigs,
		h.registerCreatePartitions,
		h.registerIncrementalAlterConfigs,
		h.registerDescribeCluster,
	} {
		r(reg)
	}
	return h
}
