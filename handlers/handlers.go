package handlers

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/quota"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/share"
	"github.com/gokafka/gokafka/txn"
)

// Config is what the handlers need of the broker's configuration.
type Config struct {
	NodeID int32
	// AutoCreateTopics is auto.create.topics.enable.
	AutoCreateTopics bool
	// FetchMaxBytes is fetch.max.bytes, the most a Fetch response carries
	// (0: Kafka's default, 55 MiB).
	FetchMaxBytes int32
}

// Handlers serves the Kafka APIs.
type Handlers struct {
	cfg      Config
	meta     cluster.Metadata
	replicas *replication.Manager
	reg      *protocol.Registry
	// groups is the group coordinator, set by SetGroupCoordinator before
	// serving starts; nil answers COORDINATOR_NOT_AVAILABLE.
	groups *group.Coordinator
	logger zerolog.Logger
	// pids hands out producer ids; nil when the metadata cannot allocate
	// them, and then InitProducerId is not served.
	pids *idempotent.Allocator
	// txn is the transaction coordinator, set by SetTxnCoordinator before
	// serving starts; nil answers COORDINATOR_NOT_AVAILABLE.
	txn *txn.Coordinator
	// shareCoord, shareMgr and shareCfg serve share groups, set by
	// SetShare before serving starts (share_groups.go).
	shareCoord *share.Coordinator
	shareMgr   *share.Manager
	shareCfg   share.Config
	// quotas enforces client quotas, set by SetQuotas before serving
	// starts; nil enforces none (quotas.go).
	quotas *quota.Quotas
	// peerIdentity is set when the metadata names this cluster's nodes
	// (roles.go): broker-to-broker requests are then checked.
	peerIdentity bool
}

// producerIDSource is the metadata's producer-id block allocation.
type producerIDSource interface {
	AllocateProducerIDs(ctx context.Context, id int32) (start int64, n int32, err error)
}

// Register creates the handlers and registers every API with reg.
func Register(reg *protocol.Registry, cfg Config, meta cluster.Metadata, replicas *replication.Manager, logger zerolog.Logger) *Handlers {
	h := &Handlers{cfg: cfg, meta: meta, replicas: replicas, reg: reg, logger: logger}
	_, h.peerIdentity = meta.(interface{ PeerClientID(role string) string })
	// The peer check comes first: a request refused there costs no quota.
	reg.Wrap(func(fn protocol.HandlerFunc) protocol.HandlerFunc { return h.guard(h.quotaAware(fn)) })
	if src, ok := meta.(producerIDSource); ok {
		h.pids = idempotent.NewAllocator(func(ctx context.Context) (int64, int32, error) {
			return src.AllocateProducerIDs(ctx, cfg.NodeID)
		})
	}
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
		h.registerControllerRPCs,
		h.registerInitProducerID,
		h.registerGroups,
		h.registerAddPartitionsToTxn,
		h.registerAddOffsetsToTxn,
		h.registerEndTxn,
		h.registerWriteTxnMarkers,
		h.registerTxnOffsetCommit,
		h.registerDescribeProducers,
		h.registerDescribeLogDirs,
		h.registerDescribeTransactions,
		h.registerListTransactions,
		h.registerShare,
		h.registerClientQuotas,
	} {
		r(reg)
	}
	return h
}
