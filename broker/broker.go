package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/handlers"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/metrics"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/quota"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/sasl"
	"github.com/gokafka/gokafka/share"
	"github.com/gokafka/gokafka/tlsconf"
	"github.com/gokafka/gokafka/txn"
)

// Config is the broker's validated configuration.
type Config struct {
	NodeID int32
	// Listeners are Kafka listener URLs, e.g. PLAINTEXT://127.0.0.1:9092.
	Listeners []string
	// AdvertisedListeners default to Listeners.
	AdvertisedListeners []string
	Rack                *string
	LogDirs             []string

	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	DeleteTopicEnable        bool
	// LeaderRebalance is the auto leader rebalance of the active
	// controller.
	LeaderRebalance LeaderRebalanceConfig
	// FetchMaxBytes is fetch.max.bytes, the most one Fetch response
	// carries.
	FetchMaxBytes int32
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots,
	// the fetch sessions (KIP-227) kept (0: Kafka's default, 1000;
	// negative: none).
	FetchSessionCacheSlots int
	// FollowerSessionWatch is gokafka.replica.fetch.session.watch.enable
	// (handlers.Config.FollowerSessionWatch).
	FollowerSessionWatch bool

	// Roles is process.roles; the zero value is a combined broker and
	// controller.
	Roles Roles
	// Quorum configures the metadata quorum; its Dir and BindAddr are
	// derived from LogDirs and the CONTROLLER listener.
	Quorum                  cluster.QuorumConfig
	ControllerListenerNames []string
	// InterBrokerListenerName is inter.broker.listener.name: the listener
	// the other nodes reach this one on, the only one exposing the
	// broker-to-broker APIs. Empty means the first listener that is not a
	// controller listener, as in Kafka.
	InterBrokerListenerName string
	// SecurityProtocolMap is listener.security.protocol.map, by upper-case
	// listener name. Empty maps each listener named for a protocol to it.
	SecurityProtocolMap map[string]string
	// ListenerSettings are the listener.name.<name>.<property> values by
	// upper-case listener name, then property: a listener's own value of
	// a property that also has a broker-wide one.
	ListenerSettings map[string]map[string]string
	// SSL holds the broker-wide ssl.* properties; a listener's own
	// listener.name.<name>.ssl.* values override them (tlsconf.Overlay).
	SSL map[string]string

	Protocol protocol.Config
	Logs     partition.ManagerConfig
	// Groups configures the group coordinator.
	Groups group.Config
	// Txn configures the transaction coordinator.
	Txn txn.Config
	// Share configures share groups (the coordinator and the partition
	// side).
	Share       share.Config
	Replication replication.Config
	// BrokerDefaults holds every broker property's value, the source of
	// topic config defaults and of DescribeConfigs for the broker.
	BrokerDefaults cluster.BrokerDefaults
	// ShutdownTimeout bounds how long in-flight requests may take to
	// finish at shutdown.
	ShutdownTimeout time.Duration
	// LogFS is the filesystem of the log dirs; nil is the operating
	// system's.
	LogFS partition.FS
	// Quota is the windowing of client quota rates
	// (quota.window.num, quota.window.size.seconds).
	Quota quota.Config
	// Authorizer turns ACLs on (authorizer.class.name, super.users,
	// allow.everyone.if.no.acl.found); nil authorizes nothing.
	Authorizer *acl.Config
	// SASL holds the broker-wide SASL properties (sasl.go).
	SASL SASLConfig
	// Metrics, if set, counts requests and traffic and reads the
	// broker's state once Start has succeeded (metrics/).
	Metrics *metrics.Metrics
	// PeerRoutes reroute every connection this node opens to another
	// node (tests only: see protocol.PeerRoutes); nil dials peers
	// directly.
	PeerRoutes protocol.PeerRoutes
}

// Roles is process.roles. A broker-only node (BrokerOnly) observes the
// metadata quorum without voting (cluster/membership.go), registers and
// hosts partitions; its CONTROLLER listener only receives the metadata
// log. A controller-only node (ControllerOnly) is a voter serving the
// controller APIs on its CONTROLLER listener, with no broker listener,
// no registration and no partitions.
type Roles struct {
	BrokerOnly, ControllerOnly bool
}

// LeaderRebalanceConfig is auto.leader.rebalance.enable,
// leader.imbalance.check.interval.seconds and
// leader.imbalance.per.broker.percentage.
type LeaderRebalanceConfig struct {
	Enable              bool
	CheckInterval       time.Duration
	PerBrokerPercentage int
}

// Server is a running broker.
type Server struct {
	cfg    Config
	logger zerolog.Logger

	meta     *cluster.Controller
	logs     *partition.Manager
	replicas *replication.Manager
	groups   *group.Coordinator
	txn      *txn.Coordinator
	shareC   *share.Coordinator
	shareM   *share.Manager
	srv      *protocol.Server
	reg      *protocol.Registry
	handlers *handlers.Handlers

	listeners []net.Listener
	// names holds each listener's name, by index in listeners.
	names []string
	// interBroker is the index of the inter-broker listener.
	interBroker int
	// ctrlName is the CONTROLLER listener's name.
	ctrlName string
	serveErr chan error
	// killed is set by Kill: from then on nothing the broker does may
	// look like a clean stop (see Kill).
	killed atomic.Bool
}

// Listener is a parsed listener URL.
type Listener struct {
	Name string
	Host string
	Port int
	// SecurityProtocol is the listener's from listener.security.protocol.map.
	SecurityProtocol string
}

// SecurityProtocols are Kafka's listener security protocols.
var SecurityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// securityProtocol resolves a listener's security protocol as Kafka does:
// from the map, else PLAINTEXT for a controller listener (KRaft's default).
func securityProtocol(cfg *Config, name string) (string, error) {
	if p, ok := cfg.SecurityProtocolMap[name]; ok {
		return p, nil
	}
	if len(cfg.SecurityProtocolMap) == 0 && slices.Contains(SecurityProtocols, name) {
		return name, nil
	}
	if slices.Contains(cfg.ControllerListenerNames, name) {
		return "PLAINTEXT", nil
	}
	return "", fmt.Errorf("no security protocol defined for listener %s in listener.security.protocol.map", name)
}

// ParseListener parses NAME://host:port.
func ParseListener(s string) (Listener, error) {
	// Not url.Parse: listener names such as SASL_PLAINTEXT are not valid
	// URL schemes.
	name, hostPort, ok := strings.Cut(strings.TrimSpace(s), "://")
	if !ok || name == "" || hostPort == "" || strings.ContainsAny(name, ":/") || strings.Contains(hostPort, "/") {
		return Listener{}, fmt.Errorf("invalid listener %q: want NAME://host:port", s)
	}
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return Listener{}, fmt.Errorf("invalid listener %q: %w", s, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return Listener{}, fmt.Errorf("invalid listener %q: bad port", s)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

// Start opens everything and starts serving. When it returns without
// error the listeners accept connections.
func Start(ctx context.Context, cfg Config, logger zerolog.Logger) (_ *Server, err error) {
	if len(cfg.LogDirs) == 0 {
		return nil, errors.New("log.dirs is empty")
	}
	var lns []Listener
	var ctrlName, ctrlProto string
	// stores holds the TLS material of each SSL or SASL_SSL listener.
	stores := map[string]*tlsconf.Store{}
	qc := cfg.Quorum
	qc.PeerRoutes = cfg.PeerRoutes
	cfg.Replication.PeerRoutes = cfg.PeerRoutes
	cfg.Txn.PeerRoutes = cfg.PeerRoutes
	for _, l := range cfg.Listeners {
		pl, err := ParseListener(l)
		if err != nil {
			return nil, err
		}
		if pl.SecurityProtocol, err = securityProtocol(&cfg, pl.Name); err != nil {
			return nil, err
		}
		if err := checkSecurityProtocol(&cfg, pl); err != nil {
			return nil, err
		}
		if isTLS(pl.SecurityProtocol) {
			if stores[pl.Name], err = tlsStore(&cfg, pl.Name, pl.SecurityProtocol, logger); err != nil {
				return nil, err
			}
		}
		if slices.Contains(cfg.ControllerListenerNames, pl.Name) {
			qc.BindAddr = net.JoinHostPort(pl.Host, strconv.Itoa(pl.Port))
			ctrlName, ctrlProto = pl.Name, pl.SecurityProtocol
			if st := stores[pl.Name]; st != nil {
				if qc.TLS, err = quorumTLS(st); err != nil {
					return nil, fmt.Errorf("listener %s: %w", pl.Name, err)
				}
			}
			continue
		}
		lns = append(lns, pl)
	}
	if len(qc.Voters) > 0 && qc.BindAddr == "" {
		if cfg.Roles.BrokerOnly {
			return nil, errors.New("process.roles=broker: the metadata log is replicated to this node's controller listener; add one (named in controller.listener.names) to listeners")
		}
		return nil, errors.New("controller.quorum.voters is set but no controller listener is configured")
	}
	if (cfg.Roles.BrokerOnly || cfg.Roles.ControllerOnly) && len(qc.Voters) == 0 {
		return nil, errors.New("process.roles with a single role needs controller.quorum.voters")
	}
	qc.Observer = cfg.Roles.BrokerOnly
	for _, a := range cfg.AdvertisedListeners {
		if pl, err := ParseListener(a); err == nil && pl.Name == ctrlName && ctrlName != "" {
			qc.AdvertisedAddr = net.JoinHostPort(pl.Host, strconv.Itoa(pl.Port))
		}
	}
	if cfg.Roles.ControllerOnly {
		if len(lns) > 0 {
			return nil, fmt.Errorf("process.roles=controller: listeners may only name controller listeners, not %s", lns[0].Name)
		}
		return startController(ctx, cfg, qc, ctrlName, ctrlProto, stores[ctrlName], logger)
	}
	if len(lns) == 0 {
		return nil, errors.New("no broker listener configured")
	}
	if err := checkAdvertisable(&cfg, lns); err != nil {
		return nil, err
	}
	interBroker := -1
	for i, l := range lns {
		if cfg.InterBrokerListenerName == "" || strings.EqualFold(l.Name, cfg.InterBrokerListenerName) {
			interBroker = i
			break
		}
	}
	if interBroker < 0 {
		return nil, fmt.Errorf("inter.broker.listener.name %q is not one of the broker listeners", cfg.InterBrokerListenerName)
	}
	s := &Server{cfg: cfg, logger: logger, interBroker: interBroker, ctrlName: ctrlName, serveErr: make(chan error, len(lns)+1)}
	// SASL settings are checked before anything is opened; SCRAM
	// credentials are read from the metadata once it is.
	saslCfgs := make([]*sasl.ServerConfig, len(lns))
	var scramMeta atomic.Pointer[cluster.Controller]
	for i, l := range lns {
		if isSASL(l.SecurityProtocol) {
			if saslCfgs[i], err = saslServerConfig(ctx, &cfg, l.Name, scramStore{&scramMeta}); err != nil {
				return nil, err
			}
		}
	}
	var peerAuth kgosasl.Mechanism
	if ib := lns[interBroker]; isSASL(ib.SecurityProtocol) {
		if peerAuth, err = peerSASL(&cfg, ib.Name); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			s.closeAll()
		}
	}()

	// Bind first, as Kafka's SocketServer does: a client may connect
	// while the metadata and the logs load, and its connection waits in
	// the listen backlog; nothing is accepted or read before every
	// partition is loaded and the broker is registered (Serve below).
	// A port already taken also fails the start before any work.
	for _, l := range lns {
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", l.Name, err)
		}
		s.listeners = append(s.listeners, ln)
		s.names = append(s.names, l.Name)
	}

	starting := func(string) {}
	if cfg.Metrics != nil {
		starting = cfg.Metrics.SetStarting
	}
	// Each start-up phase is logged with the time since Start began, so a
	// slow start shows where its time went.
	began := time.Now()
	phase := func(what string) {
		logger.Info().Dur("since_start", time.Since(began)).Msg("start-up: " + what)
		starting(what)
	}
	logsCfg := cfg.Logs
	logsCfg.Dirs = cfg.LogDirs
	logsCfg.NodeID = cfg.NodeID
	logsCfg.Progress = func(p partition.RecoveryProgress) { starting(p.String()) }
	var opened atomic.Pointer[cluster.Controller]
	configFor := func(topic string) partition.Config {
		meta := opened.Load()
		if meta == nil {
			// A log loaded while the metadata opens (below) starts with
			// the broker's defaults; the replica manager gives it its
			// topic's configs as it takes it up, before anything is
			// appended to it, retained or cleaned.
			return replication.LogConfig(nil, nil, cfg.NodeID, cfg.BrokerDefaults)
		}
		im := meta.Image()
		return replication.LogConfig(im, im.Topics[topic], cfg.NodeID, cfg.BrokerDefaults)
	}
	logFS := cfg.LogFS
	if logFS == nil {
		logFS = partition.OSFS()
	}
	openLogs := func(clusterID string) (*partition.Manager, error) {
		lc := logsCfg
		lc.ClusterID = clusterID
		return partition.OpenManager(logFS, lc, configFor, logger.With().Str("component", "log").Logger())
	}

	// A restarting broker (every log dir's meta.properties names its
	// cluster) loads its logs while the metadata quorum opens and catches
	// up, as Kafka does: both take a while with many partitions, and
	// neither needs the other until the replica manager takes the logs
	// up. The cluster id the logs were checked against is then checked
	// against the metadata's. A new broker learns the id from the quorum
	// first, and writes it.
	type loaded struct {
		logs *partition.Manager
		err  error
	}
	var early chan loaded
	storedID, restarting := partition.StoredClusterID(logFS, cfg.LogDirs)
	if restarting {
		early = make(chan loaded, 1)
		phase("loading logs while opening the metadata quorum")
		go func() {
			defer func() {
				if p := recover(); p != nil {
					early <- loaded{err: fmt.Errorf("loading logs: panic: %v", p)}
				}
			}()
			m, err := openLogs(storedID)
			early <- loaded{m, err}
		}()
	} else {
		phase("opening the metadata quorum")
	}
	qc.Dir = filepath.Join(cfg.LogDirs[0], cluster.MetadataDirName)
	s.meta, err = cluster.Open(ctx, cfg.clusterConfig(), qc, logger.With().Str("component", "cluster").Logger())
	if err != nil {
		if early != nil {
			if r := <-early; r.logs != nil {
				r.logs.Close()
			}
		}
		return nil, fmt.Errorf("open metadata: %w", err)
	}
	opened.Store(s.meta)
	scramMeta.Store(s.meta)

	if early != nil {
		phase("loading logs (metadata open)")
		r := <-early
		if r.err != nil {
			return nil, fmt.Errorf("open logs: %w", r.err)
		}
		if id := s.meta.Image().ClusterID; id != storedID {
			r.logs.Close()
			return nil, fmt.Errorf("open logs: the log dirs' meta.properties name cluster.id %q, the metadata %q", storedID, id)
		}
		s.logs = r.logs
	} else {
		phase("loading logs")
		if s.logs, err = openLogs(s.meta.Image().ClusterID); err != nil {
			return nil, fmt.Errorf("open logs: %w", err)
		}
	}
	rcfg := cfg.Replication
	rcfg.NodeID = cfg.NodeID
	rcfg.PeerSASL = peerAuth
	txnCfg := cfg.Txn
	txnCfg.PeerSASL = peerAuth
	// Every connection to another broker goes to its inter-broker
	// listener, with this node's own settings for that listener.
	var peerTLS protocol.PeerTLS
	if st := stores[lns[interBroker].Name]; st != nil {
		peerTLS = st.ClientConfig
	}
	rcfg.PeerTLS = peerTLS

	// The broker registers before it takes up its partitions, fenced, as
	// Kafka's does: the other brokers then know this incarnation when its
	// replica fetchers first reach them, and nothing moves to it before
	// it asks to be unfenced, once it can serve (below). The broker
	// registers the inter-broker listener's address, where the other
	// nodes reach it, and every listener's by name, so that a client is
	// told the addresses of the listener it connected to.
	var eps []cluster.Endpoint
	var ib Listener
	for i := range lns {
		adv, err := s.advertised(lns, i)
		if err != nil {
			return nil, err
		}
		if i == interBroker {
			ib = adv
		}
		eps = append(eps, cluster.Endpoint{Name: adv.Name, Host: adv.Host, Port: int32(adv.Port)})
	}
	s.registerLogDirs()
	phase("registering with the controller")
	if err := s.meta.RegisterFenced(ctx, ib.Host, int32(ib.Port), eps...); err != nil {
		return nil, fmt.Errorf("register broker: %w", err)
	}

	phase("taking up the partitions")
	s.replicas, err = replication.NewManagerWithConfig(rcfg, s.logs, s.meta, logger.With().Str("component", "replicas").Logger())
	if err != nil {
		return nil, fmt.Errorf("load partitions: %w", err)
	}
	s.watchLogDirs()
	s.logs.Start()

	reg := protocol.NewRegistry()
	s.reg = reg
	s.groups, err = group.New(cfg.Groups, s.meta, coordinator.ReplicaStore(s.replicas), logger.With().Str("component", "groups").Logger())
	if err != nil {
		return nil, fmt.Errorf("start group coordinator: %w", err)
	}
	// One producer-id allocator: idempotent producers (InitProducerId)
	// and the transaction coordinator draw from the same blocks.
	pids := idempotent.NewAllocator(func(ctx context.Context) (int64, int32, error) {
		return s.meta.AllocateProducerIDs(ctx, cfg.NodeID)
	})
	txnCfg.PeerTLS = peerTLS
	s.txn, err = txn.New(txnCfg, s.meta, txn.ReplicaStore(s.replicas), s.groups, pids.Next, logger.With().Str("component", "txn").Logger())
	if err != nil {
		return nil, fmt.Errorf("start transaction coordinator: %w", err)
	}
	s.shareC = share.NewCoordinator(cfg.Share, cfg.NodeID, s.meta, logger.With().Str("component", "share").Logger(), share.WithStore(s.groups))
	s.shareM = share.NewManager(cfg.Share, s.meta, share.ReplicaSource(s.replicas), logger.With().Str("component", "share").Logger())
	s.handlers = handlers.New(reg, handlers.Config{NodeID: cfg.NodeID, AutoCreateTopics: cfg.AutoCreateTopics, FetchMaxBytes: cfg.FetchMaxBytes, FetchSessionCacheSlots: cfg.FetchSessionCacheSlots, FollowerSessionWatch: cfg.FollowerSessionWatch, ControllerListenerName: ctrlName}, handlers.Deps{
		Meta: s.meta, Replicas: s.replicas, Controller: s.meta, ProducerIDs: pids,
		Groups: s.groups, Txn: s.txn, ShareCoord: s.shareC, ShareMgr: s.shareM, ShareCfg: cfg.Share,
		Quotas: s.watchQuotas(cfg.Quota), Authorizer: s.watchACLs(cfg.Authorizer), Observer: observer(cfg.Metrics),
		PeerTLS: peerTLS, PeerSASL: peerAuth,
	})
	pcfg := cfg.Protocol
	if pcfg.InterBrokerListener == "" {
		// Exempt from max.connections: the inter-broker listener.
		pcfg.InterBrokerListener = lns[interBroker].Name
	}
	s.srv = protocol.NewServer(pcfg, reg, logger.With().Str("component", "net").Logger())

	phase("asking to be unfenced")
	if err := s.meta.Unfence(ctx); err != nil {
		return nil, fmt.Errorf("register broker: %w", err)
	}
	logger.Info().Dur("since_start", time.Since(began)).Msg("start-up: unfenced, serving")
	// Kafka's listeners (handlers/roles.go): the controller's RPCs on the
	// CONTROLLER listener only, the other broker-to-broker APIs on the
	// inter-broker listener only.
	for i, ln := range s.listeners {
		lc := protocol.ListenerConfig{Name: s.names[i], SecurityProtocol: lns[i].SecurityProtocol, SASL: saslCfgs[i], Exposes: func(key int16) bool { return !handlers.InterBrokerAPI(key) }}
		if i == interBroker {
			lc.Exposes = func(key int16) bool { return !handlers.ControllerOnlyAPI(key) }
		}
		if st := stores[s.names[i]]; st != nil {
			if lc.TLS, err = st.ServerConfig(); err != nil {
				return nil, fmt.Errorf("listener %s: %w", s.names[i], err)
			}
			lc.TLSPrincipal = st.Principal
		}
		go func() { s.serveErr <- s.srv.ServeListener(ln, lc) }()
	}
	if cl := s.meta.ControllerListener(); cl != nil {
		// Its Kafka-protocol side; a one-node quorum has none.
		go func() {
			// A TLS controller listener hands over connections already
			// handshaken (cluster/mux.go).
			lc := protocol.ListenerConfig{Name: s.ctrlName, SecurityProtocol: ctrlProto, Exposes: handlers.ControllerAPI}
			if st := stores[s.ctrlName]; st != nil {
				lc.TLSPrincipal = st.Principal
			}
			s.serveErr <- s.srv.ServeListener(cl, lc)
		}()
	}
	if cfg.Metrics != nil {
		cfg.Metrics.Attach(metrics.Sources{Meta: s.meta, Logs: s.logs, Conns: s.srv, Replicas: s.replicas, Groups: s.groups})
	}
	return s, nil
}

// startController starts a controller-only node: its member of the
// metadata quorum and the controller APIs on its CONTROLLER listener.
func startController(ctx context.Context, cfg Config, qc cluster.QuorumConfig, ctrlName, ctrlProto string, st *tlsconf.Store, logger zerolog.Logger) (_ *Server, err error) {
	s := &Server{cfg: cfg, logger: logger, ctrlName: ctrlName, serveErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.closeAll()
		}
	}()
	qc.Dir = filepath.Join(cfg.LogDirs[0], cluster.MetadataDirName)
	s.meta, err = cluster.Open(ctx, cfg.clusterConfig(), qc, logger.With().Str("component", "cluster").Logger())
	if err != nil {
		return nil, fmt.Errorf("open metadata: %w", err)
	}
	s.reg = protocol.NewRegistry()
	s.handlers = handlers.New(s.reg, handlers.Config{NodeID: cfg.NodeID, ControllerListenerName: ctrlName}, handlers.Deps{
		Meta: s.meta, Controller: s.meta,
		Quotas: s.watchQuotas(cfg.Quota), Authorizer: s.watchACLs(cfg.Authorizer), Observer: observer(cfg.Metrics),
	})
	s.srv = protocol.NewServer(cfg.Protocol, s.reg, logger.With().Str("component", "net").Logger())
	lc := protocol.ListenerConfig{Name: ctrlName, SecurityProtocol: ctrlProto, Exposes: handlers.ControllerAPI}
	if st != nil {
		lc.TLSPrincipal = st.Principal
	}
	cl := s.meta.ControllerListener()
	go func() { s.serveErr <- s.srv.ServeListener(cl, lc) }()
	if cfg.Metrics != nil {
		cfg.Metrics.Attach(metrics.Sources{Meta: s.meta, Conns: s.srv, ControllerOnly: true})
	}
	return s, nil
}

// observer is the handlers' observer for m (none when m is nil).
func observer(m *metrics.Metrics) handlers.Observer {
	if m == nil {
		return nil
	}
	return m
}

func isTLS(securityProtocol string) bool {
	return securityProtocol == "SSL" || securityProtocol == "SASL_SSL"
}

// listenerTLS resolves the TLS settings of listener name, whose security
// protocol is SSL or SASL_SSL.
func listenerTLS(cfg *Config, name, securityProtocol string) (tlsconf.Config, error) {
	own := cfg.ListenerSettings[name]
	tc, err := tlsconf.Parse(tlsconf.Overlay(cfg.SSL, own))
	if err != nil {
		return tlsconf.Config{}, fmt.Errorf("listener %s: %w", name, err)
	}
	if !tc.HasKeystore() {
		return tlsconf.Config{}, fmt.Errorf("listener %s: a TLS listener needs ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key", name)
	}
	if _, ok := own["ssl.client.auth"]; securityProtocol == "SASL_SSL" && !ok {
		// As in Kafka (KIP-684): SASL authenticates a SASL_SSL client;
		// only the listener's own ssl.client.auth asks for certificates
		// there, never the broker-wide one.
		tc.ClientAuth = tlsconf.ClientAuthNone
	}
	if slices.Contains(cfg.ControllerListenerNames, name) && tc.ClientAuth == tlsconf.ClientAuthNone {
		// Raft peers authenticate with their certificates: the
		// controller listener asks for one whatever ssl.client.auth
		// says, and takes raft only from a verified peer (cluster/mux.go).
		tc.ClientAuth = tlsconf.ClientAuthRequested
	}
	return tc, nil
}

// tlsStore reads the TLS settings and stores of listener name.
func tlsStore(cfg *Config, name, securityProtocol string, logger zerolog.Logger) (*tlsconf.Store, error) {
	tc, err := listenerTLS(cfg, name, securityProtocol)
	if err != nil {
		return nil, err
	}
	st, err := tlsconf.New(tc, logger.With().Str("component", "tls").Str("listener", name).Logger())
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", name, err)
	}
	return st, nil
}

func quorumTLS(st *tlsconf.Store) (*cluster.QuorumTLS, error) {
	sc, err := st.ServerConfig()
	if err != nil {
		return nil, err
	}
	return &cluster.QuorumTLS{Server: sc, Client: st.ClientConfig}, nil
}

// watchQuotas returns the client quotas to enforce, kept in step with
// the metadata.
func (s *Server) watchQuotas(cfg quota.Config) *quota.Quotas {
	q := quota.New(cfg) // unset windowing takes Kafka's defaults
	// The first image is read after the watch is registered and may
	// race with it: only a newer image replaces the quotas.
	var mu sync.Mutex
	var applied *cluster.Image
	update := func(im *cluster.Image) {
		mu.Lock()
		defer mu.Unlock()
		if applied != nil && (im.Offset < applied.Offset || maps.Equal(im.ClientQuotas, applied.ClientQuotas)) {
			return
		}
		applied = im
		q.Update(im.QuotaLimits())
	}
	s.meta.Watch(func(_, next *cluster.Image) { update(next) })
	update(s.meta.Image())
	return q
}

// watchACLs returns an authorizer kept up to date with the ACLs of the
// metadata, or nil when cfg is nil (no authorization). As for quotas, the
// first image may race with the watch: only a newer image replaces the
// ACLs.
func (s *Server) watchACLs(cfg *acl.Config) *acl.Authorizer {
	if cfg == nil {
		return nil
	}
	a := acl.New(*cfg)
	var mu sync.Mutex
	var applied *cluster.Image
	update := func(im *cluster.Image) {
		mu.Lock()
		defer mu.Unlock()
		if applied != nil && (im.Offset < applied.Offset || cluster.SameACLs(im, applied)) {
			return
		}
		applied = im
		a.Update(im.ACLs)
	}
	s.meta.Watch(func(_, next *cluster.Image) { update(next) })
	update(s.meta.Image())
	return a
}

// unspecifiedHost reports whether host is a wildcard bind address (all
// interfaces), which no client can dial.
func unspecifiedHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// checkAdvertisable refuses, before anything is opened, a configuration
// under which clients would be told an address they cannot dial, as
// Kafka's KafkaConfig does ("advertised.listeners cannot use the
// nonroutable meta-address 0.0.0.0"): an advertised listener on a
// wildcard address, or a broker listener bound to one with no advertised
// listener standing for it. Kafka advertises the bound address and
// refuses 0.0.0.0; guessing 127.0.0.1 instead would hand clients in other
// containers or on other hosts an address that reaches themselves.
func checkAdvertisable(cfg *Config, lns []Listener) error {
	advertised := map[string]bool{}
	others := 0
	for _, a := range cfg.AdvertisedListeners {
		pl, err := ParseListener(a)
		if err != nil {
			return err
		}
		if unspecifiedHost(pl.Host) {
			return fmt.Errorf("advertised.listeners cannot use the nonroutable meta-address %q (%s): advertise the host name or address clients reach this broker at", pl.Host, a)
		}
		if slices.Contains(cfg.ControllerListenerNames, pl.Name) || pl.Name == "CONTROLLER" {
			continue
		}
		advertised[pl.Name] = true
		others++
	}
	for _, l := range lns {
		if !unspecifiedHost(l.Host) || advertised[l.Name] || (len(lns) == 1 && others > 0) {
			continue
		}
		host := l.Host
		if host == "" {
			host = "all interfaces"
		}
		return fmt.Errorf("listener %s binds %s, which clients cannot dial, and advertised.listeners (env GOKAFKA_ADVERTISED_LISTENERS) names no address for it: "+
			"set it to the address clients reach the broker at, e.g. %s://localhost:%d for clients on the host of a container run with -p %d:%d",
			l.Name, host, l.Name, l.Port, l.Port, l.Port)
	}
	return nil
}

// advertised returns the address listener i is registered with: the
// advertised listener of the same name, or the bound address with its
// real port. With a single broker listener, the first advertised
// listener that is not a controller listener stands for it, whatever its
// name.
func (s *Server) advertised(lns []Listener, i int) (Listener, error) {
	var first *Listener
	for _, a := range s.cfg.AdvertisedListeners {
		pl, err := ParseListener(a)
		if err != nil {
			return Listener{}, err
		}
		if slices.Contains(s.cfg.ControllerListenerNames, pl.Name) || pl.Name == "CONTROLLER" {
			continue
		}
		if pl.Name == lns[i].Name {
			return pl, nil
		}
		if first == nil {
			first = &pl
		}
	}
	if first != nil && len(lns) == 1 {
		adv := *first
		adv.Name = lns[i].Name
		return adv, nil
	}
	l := lns[i]
	l.Port = s.listeners[i].Addr().(*net.TCPAddr).Port
	if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
		l.Host = "127.0.0.1"
	}
	return l, nil
}

// Addrs returns the bound listener addresses.
func (s *Server) Addrs() []string {
	out := make([]string, 0, len(s.listeners))
	for _, ln := range s.listeners {
		out = append(out, ln.Addr().String())
	}
	return out
}

// Handler returns the handler this broker runs for key at version, as
// its listeners dispatch it, for callers that serve requests without a
// connection (fuzzing, embedding).
func (s *Server) Handler(key, version int16) (protocol.HandlerFunc, bool) {
	return s.reg.Handler(key, version)
}

// Versions lists the API keys and version ranges this broker serves.
func (s *Server) Versions() []kmsg.ApiVersionsResponseApiKey { return s.reg.Versions() }

// ClusterID returns the cluster id.
func (s *Server) ClusterID() string { return s.meta.Image().ClusterID }

// Err returns a channel that yields an error if a listener fails or a
// log dir the broker cannot do without fails; the caller should then shut
// the broker down.
func (s *Server) Err() <-chan error { return s.serveErr }

// Shutdown stops accepting, finishes in-flight requests, then flushes and
// checkpoints the logs.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	if s.meta != nil && !s.cfg.Roles.ControllerOnly && len(s.meta.Image().Brokers) > 1 {
		// Controlled shutdown: move leaderships away first, so clients
		// switch to other brokers before this one stops answering.
		cctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout/2)
		if err := s.meta.ControlledShutdown(cctx); err != nil {
			s.logger.Warn().Err(err).Msg("controlled shutdown incomplete")
		}
		cancel()
	}
	if s.srv != nil {
		if s.cfg.ShutdownTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
			defer cancel()
		}
		if err := s.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing connections: %w", err))
		}
	}
	if err := s.closeAll(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Kill stops the broker as abruptly as one process allows, for tests that
// need a node to die the way kill -9 kills a process: no controlled
// shutdown (its leaderships stay until the controller fences it when its
// session expires), no quorum leadership hand-over, every connection
// closed at once without waiting for in-flight requests, no
// clean-shutdown marker (the next start recovers its logs as after a
// crash), and log-dir failures seen while it stops are not reported to
// the controller. The logs are still closed so that the same directories
// can be opened again in this process; a caller that must keep unflushed
// data from reaching the disk makes the broker's LogFS fail every
// operation before it calls Kill (gokafkatest does). What differs from a
// real kill: goroutines already serving a request run on until they next
// touch the network or the log, and the metadata store is closed, not
// abandoned (its writes are not buffered in the process, so nothing is
// written that a killed process would not have written).
func (s *Server) Kill() {
	s.killed.Store(true)
	for _, ln := range s.listeners {
		ln.Close()
	}
	if s.srv != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.srv.Shutdown(ctx)
	}
	_ = s.closeAll()
}

// MoveLeadershipsAway asks the active controller to move every leadership
// of this broker to another ISR member, as a controlled shutdown does,
// without stopping anything: the controller fences the broker (which also
// takes it out of every ISR) and the broker's next heartbeat unfences it,
// after which it rejoins the ISRs as a follower once caught up. Kafka's
// controller moves leaderships this way for a broker that asks to shut
// down; gokafka has no ElectLeaders API yet, and this is what tests use
// to move a leader on purpose.
func (s *Server) MoveLeadershipsAway(ctx context.Context) error {
	_, _, err := s.meta.BrokerHeartbeat(ctx, s.cfg.NodeID, true, nil)
	return err
}

// Metadata returns the metadata image this broker has applied: brokers,
// topics, partitions with their leaders and ISRs. Treat it as read-only.
func (s *Server) Metadata() *cluster.Image { return s.meta.Image() }

func (s *Server) closeAll() error {
	var errs []error
	for _, ln := range s.listeners {
		ln.Close()
	}
	if s.handlers != nil {
		s.handlers.Close()
	}
	// The coordinators write through the logs: stop them before them.
	if s.txn != nil {
		s.txn.Close()
		s.txn = nil
	}
	if s.groups != nil {
		s.groups.Close()
		s.groups = nil
	}
	if s.shareC != nil {
		s.shareC.Close()
		s.shareC = nil
	}
	if s.shareM != nil {
		s.shareM.Close()
		s.shareM = nil
	}
	if s.replicas != nil {
		// Followers stop fetching and parked produces fail before the
		// logs close under them.
		s.replicas.Close()
		s.replicas = nil
	}
	if s.logs != nil {
		err := s.logs.Close()
		if s.killed.Load() {
			err = nil // a killed process neither flushes nor says so
		} else if err == nil && s.meta != nil {
			// Every log is flushed and closed: the next run may register
			// as after a clean shutdown (it stays an eligible leader).
			err = s.meta.RecordCleanShutdown()
		}
		errs = append(errs, err)
		s.logs = nil
	}
	if s.meta != nil {
		if s.killed.Load() {
			errs = append(errs, s.meta.Kill())
		} else {
			errs = append(errs, s.meta.Close())
		}
		s.meta = nil
	}
	return errors.Join(errs...)
}

// clusterConfig is the metadata controller's configuration, the same for
// every process.roles.
func (cfg *Config) clusterConfig() cluster.Config {
	return cluster.Config{
		NodeID: cfg.NodeID, Rack: cfg.Rack,
		NumPartitions: cfg.NumPartitions, DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		DeleteTopicEnable: cfg.DeleteTopicEnable, BrokerDefaults: cfg.BrokerDefaults,
		BootstrapScram:                     cfg.SASL.BootstrapScram,
		AutoLeaderRebalanceEnable:          cfg.LeaderRebalance.Enable,
		LeaderImbalanceCheckInterval:       cfg.LeaderRebalance.CheckInterval,
		LeaderImbalancePerBrokerPercentage: cfg.LeaderRebalance.PerBrokerPercentage,
	}
}
