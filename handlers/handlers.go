package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/gokafka/gokafka/acl"
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
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots,
	// the fetch sessions kept (0: Kafka's default, 1000; negative: none).
	FetchSessionCacheSlots int
	// FollowerSessionWatch (gokafka.replica.fetch.session.watch.enable)
	// lets a follower's fetch session read only the partitions that
	// changed since its last fetch (replication.SessionWatch) instead of
	// all of them as Kafka does. The broker's default is on; the zero
	// value here is off, Kafka's way.
	FollowerSessionWatch bool
	// ControllerListenerName is the controller listener's name, as
	// DescribeQuorum and AddRaftVoter name quorum addresses; empty is
	// CONTROLLER.
	ControllerListenerName string
}

// Handlers serves the Kafka APIs.
type Handlers struct {
	cfg      Config
	meta     cluster.Metadata
	replicas *replication.Manager
	reg      *protocol.Registry
	// ctrl serves the controller RPCs and the metadata changes beyond
	// Metadata; nil when the metadata is not a controller (tests), and
	// then those APIs are not served or answer as documented where used.
	ctrl Controller
	// groups is the group coordinator; nil answers
	// COORDINATOR_NOT_AVAILABLE.
	groups *group.Coordinator
	// pids hands out producer ids; nil when the broker has no allocator,
	// and then InitProducerId is not served.
	pids *idempotent.Allocator
	// txn is the transaction coordinator; nil answers
	// COORDINATOR_NOT_AVAILABLE.
	txn *txn.Coordinator
	// shareCoord, shareMgr and shareCfg serve share groups
	// (share_groups.go); nil answers COORDINATOR_NOT_AVAILABLE.
	shareCoord *share.Coordinator
	shareMgr   *share.Manager
	shareCfg   share.Config
	// quotas enforces client quotas; nil enforces none (quotas.go).
	quotas *quota.Quotas
	// authz decides what each principal may do; nil allows everything
	// (authz.go).
	authz *acl.Authorizer
	// applied and peers serve read-your-writes on every broker
	// (propagate.go); applied is nil without a controller.
	applied *applied
	peers   peers
	// obs receives request and traffic counts (observe.go); never nil.
	obs Observer
	// sessions are the fetch sessions (fetch_session.go).
	sessions *FetchSessionCache
}

// Close releases the connections the handlers opened to other brokers.
func (h *Handlers) Close() { h.peers.Close() }

// Controller is what the handlers need of the metadata controller beyond
// cluster.Metadata: the KRaft broker RPCs it answers as the active
// controller and the metadata changes of AlterClientQuotas, group configs
// and share-group state. cluster.Controller implements it.
type Controller interface {
	cluster.Metadata
	RegisterBroker(ctx context.Context, info cluster.BrokerInfo) error
	BrokerHeartbeat(ctx context.Context, id int32, shutdown bool, offlineDirs [][16]byte) (fenced, shouldShutdown bool, err error)
	AssignReplicasToDirs(ctx context.Context, id int32, dir [16]byte, parts map[string][]int32) error
	AllocateProducerIDs(ctx context.Context, id int32) (start int64, n int32, err error)
	AlterClientQuotas(ctx context.Context, changes []cluster.QuotaChange, validateOnly bool) []error
	SetGroupConfigs(ctx context.Context, group string, configs map[string]string, validateOnly bool) error
	UpdateShareState(ctx context.Context, ch cluster.ShareChange) error
	CreateACLs(ctx context.Context, bindings []acl.Binding) []error
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error)
	AlterUserScramCredentials(ctx context.Context, deletions []cluster.ScramChange, upserts []cluster.ScramUpsert) map[string]error
	AlterPartitionReassignments(ctx context.Context, reqs []cluster.Reassignment) []error
	ElectLeaders(ctx context.Context, typ cluster.ElectionType, parts map[string][]int32) ([]cluster.ElectionResult, error)
	JoinObserver(ctx context.Context, id int32, addr string) error
	UnregisterBroker(ctx context.Context, id int32) error
	NoteMetadataOffset(id int32, offset int64)
	DescribeQuorum() (cluster.QuorumDescription, error)
	AddRaftVoter(ctx context.Context, id int32, addr string) error
	RemoveRaftVoter(ctx context.Context, id int32) error
	Forward(ctx context.Context, req kmsg.Request, notController func(kmsg.Response) bool) (kmsg.Response, error)
}

var _ Controller = (*cluster.Controller)(nil)

// Deps are the components the handlers serve with, built and wired by the
// broker. Only Meta and Replicas are required; an API whose component is
// nil is not served or answers COORDINATOR_NOT_AVAILABLE, as documented on
// the Handlers fields.
type Deps struct {
	Meta       cluster.Metadata
	Replicas   *replication.Manager
	Controller Controller
	// ProducerIDs is the broker's producer-id allocator, shared with the
	// transaction coordinator.
	ProducerIDs *idempotent.Allocator
	Groups      *group.Coordinator
	Txn         *txn.Coordinator
	ShareCoord  *share.Coordinator
	ShareMgr    *share.Manager
	ShareCfg    share.Config
	Quotas      *quota.Quotas
	// Authorizer, if set, authorizes every request (authz.go).
	Authorizer *acl.Authorizer
	// Observer receives request and traffic counts for the broker's
	// metrics; nil observes nothing.
	Observer Observer
	// PeerTLS and PeerSASL secure the connections the handlers open to
	// other brokers' inter-broker listeners (propagate.go); nil for a
	// PLAINTEXT one.
	PeerTLS  protocol.PeerTLS
	PeerSASL kgosasl.Mechanism
}

// Register creates handlers over meta and replicas alone (no controller
// RPCs, producer ids, coordinators or quotas) and registers them with reg.
func Register(reg *protocol.Registry, cfg Config, meta cluster.Metadata, replicas *replication.Manager) *Handlers {
	return New(reg, cfg, Deps{Meta: meta, Replicas: replicas})
}

// FetchSessions returns the broker's fetch-session cache.
func (h *Handlers) FetchSessions() *FetchSessionCache { return h.sessions }

// New creates the handlers over d and registers every API with reg.
func New(reg *protocol.Registry, cfg Config, d Deps) *Handlers {
	h := &Handlers{
		cfg: cfg, meta: d.Meta, replicas: d.Replicas, reg: reg,
		ctrl: d.Controller, pids: d.ProducerIDs, groups: d.Groups, txn: d.Txn,
		shareCoord: d.ShareCoord, shareMgr: d.ShareMgr, shareCfg: d.ShareCfg, quotas: d.Quotas,
		authz: d.Authorizer,
		obs:   d.Observer, peers: peers{tls: d.PeerTLS, sasl: d.PeerSASL},
	}
	if h.obs == nil {
		h.obs = nopObserver{}
	}
	if d.Controller != nil {
		// Registered last of the metadata watchers: see propagate.go.
		h.applied = newApplied(d.Meta)
	}
	slots := cfg.FetchSessionCacheSlots
	if slots == 0 {
		slots = DefaultFetchSessionCacheSlots
	}
	h.sessions = NewFetchSessionCache(slots, nil)
	h.sessions.watchFollowers = cfg.FollowerSessionWatch
	// The peer check comes first: a request refused there costs no quota.
	reg.Wrap(func(fn protocol.HandlerFunc) protocol.HandlerFunc { return h.observe(h.guard(h.quotaAware(fn))) })
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
		h.registerACLs,
		h.registerSASL,
		h.registerScramCredentials,
		h.registerReassignments,
		h.registerElectLeaders,
		h.registerQuorum,
	} {
		r(reg)
	}
	return h
}
