package metrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

// meta is the fake metadata with the quorum view the metrics read.
type meta struct {
	*fake.Meta
	leader bool
	q      cluster.QuorumPosition
}

func (m *meta) IsLeader() bool                         { return m.leader }
func (m *meta) QuorumPosition() cluster.QuorumPosition { return m.q }

type lags []replication.FollowerLag

func (l lags) FollowerLags() []replication.FollowerLag { return l }

// image is three brokers and topic t with one partition per entry of
// isrs, replicas 1,2,3, led by broker 1, with min.insync.replicas 2.
func image(offset int64, fenced []int32, isrs ...[]int32) *cluster.Image {
	im := &cluster.Image{ClusterID: "c", ControllerID: 1, Offset: offset,
		Brokers: map[int32]cluster.BrokerInfo{}, Topics: map[string]*cluster.TopicInfo{}, IDs: map[cluster.TopicID]string{}}
	for id := int32(1); id <= 3; id++ {
		im.Brokers[id] = cluster.BrokerInfo{NodeID: id, Fenced: slices.Contains(fenced, id)}
	}
	t := &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{1}, Configs: map[string]string{"min.insync.replicas": "2"}}
	for i, isr := range isrs {
		t.Partitions = append(t.Partitions, cluster.PartitionInfo{Partition: int32(i), Leader: 1, LeaderEpoch: 1,
			PartitionEpoch: int32(offset), Replicas: []int32{1, 2, 3}, ISR: isr})
	}
	im.Topics["t"] = t
	im.IDs[t.ID] = "t"
	return im
}

func newMeta(im *cluster.Image) *meta {
	return &meta{Meta: fake.NewMeta(1, im), leader: true, q: cluster.QuorumPosition{Term: 3, CommitIndex: 10, AppliedIndex: 10, LastIndex: 10, Leader: 1}}
}

// scrape serves m's registry and parses the answer with Prometheus's
// text parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of name whose labels include
// want, failing if there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s series with labels %v", name, want)
	return 0
}

func TestPartitionStateGaugesFollowTheMetadata(t *testing.T) {
	mt := newMeta(image(1, nil, []int32{1, 2, 3}, []int32{1, 2}, []int32{1}))
	m := New(Config{PartitionSeriesMax: 10})
	m.Attach(Sources{Meta: mt, Replicas: lags{{TP: partition.TopicPartition{Topic: "t", Partition: 2}, Follower: 3, Offsets: 42, Time: 1500 * time.Millisecond}}})
	fams := scrape(t, m)
	if got := value(t, fams, "kafka_cluster_partition_replicalag", map[string]string{"topic": "t", "partition": "2", "replica": "3"}); got != 42 {
		t.Errorf("replicalag = %v, want 42", got)
	}
	if got := value(t, fams, "kafka_cluster_partition_replicalagtimems", map[string]string{"topic": "t", "partition": "2", "replica": "3"}); got != 1500 {
		t.Errorf("replicalagtimems = %v, want 1500", got)
	}
	for name, want := range map[string]float64{
		"kafka_server_replicamanager_underreplicatedpartitions":   2,
		"kafka_server_replicamanager_underminisrpartitioncount":   1,
		"kafka_server_replicamanager_atminisrpartitioncount":      1,
		"kafka_server_replicamanager_leadercount":                 3,
		"kafka_controller_kafkacontroller_activecontrollercount":  1,
		"kafka_controller_kafkacontroller_offlinepartitionscount": 0,
		"kafka_controller_kafkacontroller_activebrokercount":      3,
		"kafka_server_raft_metrics_current_epoch":                 3,
	} {
		if got := value(t, fams, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, fams, "kafka_cluster_partition_underreplicated", map[string]string{"topic": "t", "partition": "2"}); got != 1 {
		t.Errorf("partition 2 underreplicated = %v, want 1", got)
	}

	// Past the bound, the per-partition series go.
	m = New(Config{PartitionSeriesMax: 2})
	m.Attach(Sources{Meta: mt})
	fams = scrape(t, m)
	if fams["kafka_cluster_partition_underreplicated"] != nil {
		t.Errorf("per-partition series exported for 3 partitions with metrics.partition.series.max 2")
	}
	if got := value(t, fams, "gokafka_metrics_partition_series_enabled", nil); got != 0 {
		t.Errorf("gokafka_metrics_partition_series_enabled = %v, want 0", got)
	}
}

func TestISRShrinksExpandsAndElectionsAreCountedFromMetadataChanges(t *testing.T) {
	mt := newMeta(image(1, nil, []int32{1, 2, 3}))
	m := New(Config{PartitionSeriesMax: 10})
	m.Attach(Sources{Meta: mt})
	mt.Publish(image(2, nil, []int32{1, 2}))    // shrink
	mt.Publish(image(3, nil, []int32{1, 2, 3})) // expand
	elected := image(4, []int32{1}, []int32{2, 3})
	elected.Topics["t"].Partitions[0].Leader = 2
	mt.Publish(elected) // broker 1 fenced, 2 elected
	fams := scrape(t, m)
	if got := value(t, fams, "kafka_server_replicamanager_isrshrinks_total", nil); got != 1 {
		t.Errorf("isrshrinks_total = %v, want 1", got)
	}
	if got := value(t, fams, "kafka_server_replicamanager_isrexpands_total", nil); got != 1 {
		t.Errorf("isrexpands_total = %v, want 1", got)
	}
	if got := value(t, fams, "kafka_controller_controllerstats_leaderelectionrateandtimems_count", nil); got != 1 {
		t.Errorf("leader elections = %v, want 1", got)
	}
}

func TestRequestsAreCountedByAPIVersionAndErrorCode(t *testing.T) {
	m := New(Config{})
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "t"
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code} {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.ErrorCode = code
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	resp.ThrottleMillis = 250
	m.Request(0, 9, 3*time.Millisecond, resp, nil)
	m.Request(0, 9, time.Millisecond, nil, nil) // acks=0
	m.Parked("Produce", 1)
	m.Parked("Fetch", 1)
	m.Parked("Fetch", -1)
	m.BytesIn("t", 100, 4)
	m.BytesOut("t", 60)
	fams := scrape(t, m)
	if got := value(t, fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce", "version": "9"}); got != 2 {
		t.Errorf("requests_total = %v, want 2", got)
	}
	if got := value(t, fams, "kafka_network_requestmetrics_errors_total", map[string]string{"request": "Produce", "error": "NOT_LEADER_FOR_PARTITION"}); got != 2 {
		t.Errorf("errors_total = %v, want 2", got)
	}
	if got := value(t, fams, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}); got != 2 {
		t.Errorf("latency samples = %v, want 2", got)
	}
	if f := fams["kafka_network_requestmetrics_throttletimems"]; f == nil || f.Metric[0].Histogram.GetSampleSum() != 250 {
		t.Errorf("throttle time histogram %v, want one sample of 250", f)
	}
	if got := value(t, fams, "kafka_server_delayedoperationpurgatory_purgatorysize", map[string]string{"delayedOperation": "Produce"}); got != 1 {
		t.Errorf("produce purgatory = %v, want 1", got)
	}
	if got := value(t, fams, "kafka_server_delayedoperationpurgatory_purgatorysize", map[string]string{"delayedOperation": "Fetch"}); got != 0 {
		t.Errorf("fetch purgatory = %v, want 0", got)
	}
	if got := value(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": "t"}); got != 4 {
		t.Errorf("messagesin_total = %v, want 4", got)
	}
	if got := value(t, fams, "kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": "t"}); got != 60 {
		t.Errorf("bytesout_total = %v, want 60", got)
	}
}

func TestReadyzSaysWhyNotReady(t *testing.T) {
	m := New(Config{})
	get := func() (int, Readiness) {
		rec := httptest.NewRecorder()
		readyHandler(m).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		var r Readiness
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("readyz body %q: %v", rec.Body.String(), err)
		}
		return rec.Code, r
	}
	m.SetStarting("recovering logs: 3/10 segments")
	if code, r := get(); code != http.StatusServiceUnavailable || r.Ready || len(r.Reasons) != 1 || r.Starting == "" {
		t.Fatalf("while starting: %d %+v", code, r)
	}

	mt := newMeta(image(1, []int32{1}, []int32{1, 2}))
	m.Attach(Sources{Meta: mt})
	if code, r := get(); code != http.StatusServiceUnavailable || r.Ready || len(r.Reasons) != 1 {
		t.Fatalf("fenced: %d %+v", code, r)
	}

	mt.Publish(image(2, []int32{3}, []int32{1, 2}))
	code, r := get()
	if code != http.StatusOK || !r.Ready {
		t.Fatalf("unfenced, caught up: %d %+v", code, r)
	}
	if len(r.UnderReplicated) != 1 || len(r.UnderReplicated[0].Reasons) != 1 || r.UnderReplicated[0].Reasons[0] != "replica 3: broker fenced" {
		t.Fatalf("under-replicated partitions: %+v", r.UnderReplicated)
	}

	mt.q.CommitIndex = 20
	if code, r := get(); code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("behind the quorum: %d %+v", code, r)
	}
}

func TestReadyzOfAControllerOnlyNodeNeedsNoRegistration(t *testing.T) {
	m := New(Config{})
	im := image(2, nil)
	delete(im.Brokers, 1)
	m.Attach(Sources{Meta: newMeta(im), ControllerOnly: true})
	if r := m.Readiness(); !r.Ready {
		t.Fatalf("controller-only node, caught up: %+v", r)
	}
}
