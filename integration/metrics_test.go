package integration

// The HTTP listener of real nodes: /metrics parsed with Prometheus's own
// text parser through a produce/consume run, a paused follower (the ISR
// shrinks, one partition under-replicated, then none after it resumes)
// and a killed leader (an election); /livez and /readyz.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scrapeMetrics fetches and parses /metrics of the HTTP listener at addr.
func scrapeMetrics(addr string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// metricValue sums the series of name whose labels include want (0 when
// there are none).
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
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
			sum += m.Gauge.GetValue()
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func TestMetricsShowTrafficISRShrinkAndElection(t *testing.T) {
	httpAddr := map[int32]string{}
	c := startClusterWith(t, clusterOpts{NodeEnv: func(id int) map[string]string {
		httpAddr[int32(id)] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		return map[string]string{"GOKAFKA_HTTP_LISTENER": httpAddr[int32(id)]}
	}})
	for id, addr := range httpAddr {
		resp, err := http.Get("http://" + addr + "/livez")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("node %d /livez: %v %v", id, err, resp)
		}
		resp.Body.Close()
		eventually(t, 30*time.Second, func() error {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var body struct {
				Ready   bool     `json:"ready"`
				Reasons []string `json:"reasons"`
			}
			b, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(b, &body); err != nil {
				return fmt.Errorf("readyz body %q: %v", b, err)
			}
			if resp.StatusCode != http.StatusOK || !body.Ready {
				return fmt.Errorf("node %d /readyz %s: %s", id, resp.Status, b)
			}
			return nil
		})
	}

	const topic = "metrics"
	c.createTopic(t, topic, 1, nil)
	leader := c.leader(t, topic, 0).Leader
	scrape := func(id int32) map[string]*dto.MetricFamily {
		t.Helper()
		fams, err := scrapeMetrics(httpAddr[id])
		if err != nil {
			t.Fatalf("scraping node %d: %v", id, err)
		}
		return fams
	}
	waitMetric := func(id int32, what string, cond func(map[string]*dto.MetricFamily) bool) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			fams, err := scrapeMetrics(httpAddr[id])
			if err != nil {
				return err
			}
			if !cond(fams) {
				return fmt.Errorf("node %d: not yet %s", id, what)
			}
			return nil
		})
	}

	// Produce and consume.
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx := testCtx(t, 60*time.Second)
	const n = 100
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("record-"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	fams := scrape(leader)
	topicLabel := map[string]string{"topic": topic}
	if v := metricValue(fams, "kafka_server_brokertopicmetrics_messagesin_total", topicLabel); v != n {
		t.Errorf("messagesin_total{topic=%q} = %v, want %d", topic, v, n)
	}
	if v := metricValue(fams, "kafka_server_brokertopicmetrics_bytesin_total", topicLabel); v <= 0 {
		t.Errorf("bytesin_total{topic=%q} = %v, want > 0", topic, v)
	}
	if v := metricValue(fams, "kafka_server_brokertopicmetrics_bytesout_total", topicLabel); v <= 0 {
		t.Errorf("bytesout_total{topic=%q} = %v, want > 0", topic, v)
	}
	if v := metricValue(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); v < 1 {
		t.Errorf("requests_total{request=Produce} = %v", v)
	}
	if v := metricValue(fams, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Fetch"}); v < 1 {
		t.Errorf("totaltimems{request=Fetch} has %v samples", v)
	}
	if v := metricValue(fams, "kafka_server_replicamanager_underreplicatedpartitions", nil); v != 0 {
		t.Errorf("underreplicatedpartitions = %v before any fault", v)
	}
	if v := metricValue(fams, "kafka_log_log_logendoffset", map[string]string{"topic": topic, "partition": "0"}); v != n {
		t.Errorf("logendoffset = %v, want %d", v, n)
	}

	// A consumer group's committed offset and lag, on whichever node
	// coordinates it.
	gc := c.client(t, kgo.ConsumerGroup("metrics-group"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		fs := gc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("group consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := gc.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("more-"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	groupLabels := map[string]string{"consumergroup": "metrics-group", "topic": topic, "partition": "0"}
	eventually(t, 30*time.Second, func() error {
		offset, lag := 0.0, 0.0
		for id := int32(1); id <= 3; id++ {
			f, err := scrapeMetrics(httpAddr[id])
			if err != nil {
				return err
			}
			offset += metricValue(f, "kafka_consumergroup_current_offset", groupLabels)
			lag += metricValue(f, "kafka_consumergroup_lag", groupLabels)
		}
		if offset != n || lag != 10 {
			return fmt.Errorf("group offset %v lag %v, want %d and 10", offset, lag, n)
		}
		return nil
	})
	gc.Close()

	shrinksBefore := metricValue(fams, "kafka_server_replicamanager_isrshrinks_total", nil)
	expandsBefore := metricValue(fams, "kafka_server_replicamanager_isrexpands_total", nil)

	// A paused follower leaves the ISR: one partition under-replicated on
	// the leader, until it resumes and catches up.
	follower := leader%3 + 1
	c.pause(t, follower)
	// The leader may lead __consumer_offsets partitions too, which the
	// paused node also leaves: the topic's own series says 1, the
	// broker-wide count at least 1.
	partLabels := map[string]string{"topic": topic, "partition": "0"}
	waitMetric(leader, "an ISR shrink and the partition under-replicated", func(f map[string]*dto.MetricFamily) bool {
		return metricValue(f, "kafka_server_replicamanager_isrshrinks_total", nil) > shrinksBefore &&
			metricValue(f, "kafka_cluster_partition_underreplicated", partLabels) == 1 &&
			metricValue(f, "kafka_cluster_partition_insyncreplicascount", partLabels) == 2 &&
			metricValue(f, "kafka_server_replicamanager_underreplicatedpartitions", nil) >= 1
	})
	c.resume(t, follower)
	waitMetric(leader, "an ISR expansion and no under-replicated partition", func(f map[string]*dto.MetricFamily) bool {
		return metricValue(f, "kafka_server_replicamanager_isrexpands_total", nil) > expandsBefore &&
			metricValue(f, "kafka_cluster_partition_underreplicated", partLabels) == 0 &&
			metricValue(f, "kafka_server_replicamanager_underreplicatedpartitions", nil) == 0
	})

	// A killed leader: another node leads, and the active controller
	// counts the election.
	electionsBefore := 0.0
	for id := int32(1); id <= 3; id++ {
		if id == leader {
			continue
		}
		electionsBefore += metricValue(scrape(id), "kafka_controller_controllerstats_leaderelectionrateandtimems_count", nil)
	}
	c.node(leader).Kill()
	newLeader := c.waitNewLeader(t, topic, 0, leader).Leader
	waitMetric(newLeader, "leading the partition", func(f map[string]*dto.MetricFamily) bool {
		return metricValue(f, "kafka_server_replicamanager_leadercount", nil) >= 1 &&
			metricValue(f, "kafka_cluster_partition_leaderepoch", map[string]string{"topic": topic, "partition": "0"}) > 0
	})
	eventually(t, 30*time.Second, func() error {
		elections, controllers := 0.0, 0.0
		for id := int32(1); id <= 3; id++ {
			if id == leader {
				continue
			}
			f, err := scrapeMetrics(httpAddr[id])
			if err != nil {
				return err
			}
			elections += metricValue(f, "kafka_controller_controllerstats_leaderelectionrateandtimems_count", nil)
			controllers += metricValue(f, "kafka_controller_kafkacontroller_activecontrollercount", nil)
		}
		if controllers != 1 {
			return fmt.Errorf("%v active controllers among the live nodes", controllers)
		}
		if elections <= electionsBefore {
			return fmt.Errorf("no election counted by the live nodes (before the kill: %v)", electionsBefore)
		}
		return nil
	})
}

// The HTTP listener answers before the broker can serve: a node whose
// quorum peers are not up yet is live, and not ready, saying why.
func TestHTTPListenerAnswersBeforeTheBrokerIsReady(t *testing.T) {
	port, ctrl, httpPort := freePort(t), freePort(t), freePort(t)
	voters := fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d,3@127.0.0.1:%d", ctrl, freePort(t), freePort(t))
	b := newBroker(t, brokerOpts{Port: port, Env: map[string]string{
		"GOKAFKA_NODE_ID":                  "1",
		"GOKAFKA_LISTENERS":                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl),
		"GOKAFKA_CONTROLLER_QUORUM_VOTERS": voters,
		"GOKAFKA_HTTP_LISTENER":            "127.0.0.1:" + strconv.Itoa(httpPort),
	}})
	b.launch()
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	eventually(t, 30*time.Second, func() error {
		resp, err := http.Get(base + "/livez")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/livez: %s", resp.Status)
		}
		return nil
	})
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Ready    bool     `json:"ready"`
		Reasons  []string `json:"reasons"`
		Starting string   `json:"starting"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("/readyz body %q: %v", raw, err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Ready || len(body.Reasons) == 0 || body.Starting == "" {
		t.Fatalf("/readyz of a node waiting for its quorum: %s %s", resp.Status, raw)
	}
}
