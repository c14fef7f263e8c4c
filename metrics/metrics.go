package metrics

import (
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// Meta is what the metrics read of the cluster metadata;
// cluster.Controller implements it.
type Meta interface {
	Image() *cluster.Image
	Watch(fn func(prev, next *cluster.Image))
	NodeID() int32
	BrokerDefaults() cluster.BrokerDefaults
	IsLeader() bool
	QuorumPosition() cluster.QuorumPosition
}

// Logs is what the metrics read of the local logs; partition.Manager
// implements it.
type Logs interface {
	Partitions() []partition.TopicPartition
	Get(tp partition.TopicPartition) *partition.Log
	LogDirs() []partition.LogDirInfo
}

// Conns counts open connections by listener; protocol.Server implements
// it.
type Conns interface {
	ConnectionCounts() map[string]int
}

// Replicas reports followers' lag; replication.Manager implements it.
type Replicas interface {
	FollowerLags() []replication.FollowerLag
}

// Groups lists the consumer groups this broker coordinates and their
// committed offsets; group.Coordinator implements it.
type Groups interface {
	ListGroups(states []string) ([]group.GroupOverview, error)
	FetchOffsets(groupID string, tps []partition.TopicPartition) ([]group.FetchedOffset, error)
}

// Sources are the broker's components the metrics and the readiness
// check read at scrape time. Attach them once the broker has started.
type Sources struct {
	Meta  Meta
	Logs  Logs
	Conns Conns
	// Replicas, if set, gives the followers' lag (per-partition series).
	Replicas Replicas
	// Groups, if set, gives the consumer groups' committed offsets
	// (per-partition series).
	Groups Groups
	// ControllerOnly is set for a node that is no broker
	// (process.roles=controller): it is ready without a registration.
	ControllerOnly bool
}

// Config configures the metrics.
type Config struct {
	// PartitionSeriesMax is metrics.partition.series.max: per-partition
	// series (log size, offsets, ISR) are exported while this broker
	// hosts at most this many partitions; 0 turns them off.
	PartitionSeriesMax int
}

// Metrics holds gokafka's Prometheus metrics: counters fed by the
// request path (it implements handlers.Observer) and by metadata
// changes, and gauges read from the broker's state when scraped.
type Metrics struct {
	cfg Config
	reg *prometheus.Registry
	src atomic.Pointer[Sources]
	// starting is what start-up is doing (SetStarting).
	starting atomic.Pointer[string]

	requests   *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	throttle   *prometheus.HistogramVec
	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter
	elections  prometheus.Counter
	parked     *prometheus.GaugeVec

	// names caches API names by key, errNames error names by code.
	names sync.Map // int16 → string
}

// New returns the metrics, with Go runtime and process collectors.
func New(cfg Config) *Metrics {
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests answered, by API (as Kafka names it) and version.",
	}, []string{"request", "version"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_errors_total",
		Help: "Error codes in responses, by API and error (a partition-level error counts once per partition); CONNECTION_CLOSED when the connection was closed instead.",
	}, []string{"request", "error"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_totaltimems",
		Help:    "Time from a request's decoding to its response, in milliseconds, by API and version (long-poll fetches and acks=all produces include their wait).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
	}, []string{"request", "version"})
	m.throttle = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_throttletimems",
		Help:    "Throttle time answered (client quotas), in milliseconds, by API, for the APIs whose responses carry one.",
		Buckets: []float64{0, 1, 10, 100, 1000, 5000, 30000},
	}, []string{"request"})
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesin_total",
		Help: "Bytes of record batches appended by producers, as leader, by topic.",
	}, []string{"topic"})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended by producers, as leader, by topic.",
	}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesout_total",
		Help: "Record bytes returned by fetches (consumers and followers), by topic.",
	}, []string{"topic"})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR changes that removed a replica from a partition this broker leads.",
	})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR changes that added a replica to a partition this broker leads.",
	})
	m.elections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_controller_controllerstats_leaderelectionrateandtimems_count",
		Help: "Partition leader changes committed while this node was the active controller.",
	})
	m.parked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kafka_server_delayedoperationpurgatory_purgatorysize",
		Help: "Requests parked now: acks=all produces waiting for the ISR (Produce) and fetches waiting for data (Fetch).",
	}, []string{"delayedOperation"})
	m.parked.WithLabelValues("Produce")
	m.parked.WithLabelValues("Fetch")
	m.reg.MustRegister(m.parked, m.requests, m.errors, m.latency, m.throttle, m.bytesIn, m.messagesIn, m.bytesOut,
		m.isrShrinks, m.isrExpands, m.elections, &stateCollector{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Attach makes the metrics read src from now on and counts the ISR
// changes and elections of every metadata change applied after it.
func (m *Metrics) Attach(src Sources) {
	if src.Meta != nil {
		self := src.Meta.NodeID()
		src.Meta.Watch(func(prev, next *cluster.Image) { m.metadataChanged(self, src.Meta, prev, next) })
	}
	m.src.Store(&src)
}

// sources returns the attached sources, nil before Attach.
func (m *Metrics) sources() *Sources { return m.src.Load() }

// metadataChanged counts ISR shrinks and expansions of the partitions
// this broker leads, and (on the active controller) leader elections.
// It runs on the metadata watcher goroutine: counting only. Images
// published while the watchers were busy arrive together, so a shrink
// undone before the next delivery is not counted.
func (m *Metrics) metadataChanged(self int32, meta Meta, prev, next *cluster.Image) {
	if prev == nil {
		return
	}
	controller := meta.IsLeader()
	for name, t := range next.Topics {
		pt := prev.Topics[name]
		if pt == nil || pt == t || pt.ID != t.ID {
			continue
		}
		// Only the partitions partition changes replaced, when that is
		// all that happened to the topic (cluster.TopicInfo.ChangedSince).
		changed, ok := t.ChangedSince(pt)
		n := len(t.Partitions)
		if ok {
			n = len(changed)
		}
		for j := range n {
			i := j
			if ok {
				i = int(changed[j])
			}
			if i >= len(pt.Partitions) || i >= len(t.Partitions) {
				continue
			}
			a, b := &pt.Partitions[i], &t.Partitions[i]
			if a.PartitionEpoch == b.PartitionEpoch {
				continue
			}
			if controller && a.Leader != b.Leader && b.Leader >= 0 {
				m.elections.Inc()
			}
			if b.Leader != self || a.Leader != self {
				continue
			}
			if removed(a.ISR, b.ISR) {
				m.isrShrinks.Inc()
			}
			if removed(b.ISR, a.ISR) {
				m.isrExpands.Inc()
			}
		}
	}
}

// removed reports whether a member of from is missing from to.
func removed(from, to []int32) bool {
	for _, x := range from {
		found := false
		for _, y := range to {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// Request implements handlers.Observer.
func (m *Metrics) Request(key, version int16, took time.Duration, resp kmsg.Response, err error) {
	name := m.apiName(key)
	v := strconv.Itoa(int(version))
	m.requests.WithLabelValues(name, v).Inc()
	m.latency.WithLabelValues(name, v).Observe(float64(took) / float64(time.Millisecond))
	if err != nil {
		m.errors.WithLabelValues(name, "CONNECTION_CLOSED").Inc()
		return
	}
	if resp != nil {
		if ms, ok := throttleMillis(resp); ok {
			m.throttle.WithLabelValues(name).Observe(float64(ms))
		}
		countErrors(reflect.ValueOf(resp), 0, func(code int16) {
			m.errors.WithLabelValues(name, errName(code)).Inc()
		})
	}
}

// BytesIn implements handlers.Observer.
func (m *Metrics) BytesIn(topic string, bytes, records int64) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
}

// Parked implements handlers.Observer.
func (m *Metrics) Parked(op string, delta int) {
	m.parked.WithLabelValues(op).Add(float64(delta))
}

// BytesOut implements handlers.Observer.
func (m *Metrics) BytesOut(topic string, bytes int64) {
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

func (m *Metrics) apiName(key int16) string {
	if v, ok := m.names.Load(key); ok {
		return v.(string)
	}
	name := kmsg.NameForKey(key)
	if name == "Unknown" || name == "" {
		name = "Unknown" + strconv.Itoa(int(key))
	}
	m.names.Store(key, name)
	return name
}

func errName(code int16) string {
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Message
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

// throttleMillis returns a response's ThrottleMillis, if it has one.
func throttleMillis(resp kmsg.Response) (int32, bool) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	f := v.Elem().FieldByName("ThrottleMillis")
	if !f.IsValid() || f.Kind() != reflect.Int32 {
		return 0, false
	}
	return int32(f.Int()), true
}

// countErrors calls fn with every non-zero ErrorCode field of a response,
// down to the per-partition level (depth 3: response, topic, partition).
// Byte slices and strings are not walked.
func countErrors(v reflect.Value, depth int, fn func(int16)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := t.Field(i)
			fv := v.Field(i)
			if f.Name == "ErrorCode" && fv.Kind() == reflect.Int16 {
				if c := int16(fv.Int()); c != 0 {
					fn(c)
				}
				continue
			}
			if depth < 3 && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct {
				for j := 0; j < fv.Len(); j++ {
					countErrors(fv.Index(j), depth+1, fn)
				}
			}
		}
	}
}
