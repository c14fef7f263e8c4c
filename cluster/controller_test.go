package cluster

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func testConfig() Config {
	return Config{NodeID: 1, NumPartitions: 3, DefaultReplicationFactor: 1, DeleteTopicEnable: true}
}

// quorum is a quorum of one in dir whose brokers are never fenced for
// missing heartbeats while a test runs.
func quorum(dir string) QuorumConfig {
	return QuorumConfig{Dir: dir, SessionTimeout: time.Hour}
}

// openQuorum opens a controller on dir, closed when the test ends.
func openQuorum(t *testing.T, cfg Config, dir string) *Controller {
	t.Helper()
	c, err := Open(context.Background(), cfg, quorum(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openController opens a controller on dir and registers this broker.
func openController(t *testing.T, cfg Config, dir string) *Controller {
	t.Helper()
	c := openQuorum(t, cfg, dir)
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	return c
}

func newController(t *testing.T) *Controller {
	return openController(t, testConfig(), t.TempDir())
}

// addBroker registers another broker directly through the log, as a second
// node joining would.
func addBroker(t *testing.T, c *Controller, id int32) {
	t.Helper()
	if err := c.log.Propose(context.Background(), &Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: id, Host: "127.0.0.1", Port: 9090 + id}}); err != nil {
		t.Fatal(err)
	}
}

func str(s string) *string { return &s }

func createOne(t *testing.T, c *Controller, spec TopicSpec) error {
	t.Helper()
	errs := c.CreateTopics(context.Background(), []TopicSpec{spec}, false)
	if len(errs) != 1 {
		t.Fatalf("%d results for one topic", len(errs))
	}
	return errs[0]
}

func mustCreate(t *testing.T, c *Controller, spec TopicSpec) *TopicInfo {
	t.Helper()
	if err := createOne(t, c, spec); err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
	top := c.Image().Topic(spec.Name)
	if top == nil {
		t.Fatalf("topic %s missing after create", spec.Name)
	}
	return top
}

func TestRegisterRecordsBrokerAndIsIdempotent(t *testing.T) {
	c := newController(t)
	im := c.Image()
	b, ok := im.Brokers[1]
	if !ok || b.Host != "127.0.0.1" || b.Port != 9092 || b.Fenced || b.Incarnation == "" {
		t.Fatalf("broker 1: %+v (registered %v)", b, ok)
	}
	if im.ClusterID == "" {
		t.Fatal("no cluster id")
	}
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	if got := c.Image(); got.Offset != im.Offset || !reflect.DeepEqual(got.Brokers, im.Brokers) {
		t.Fatalf("re-registering the same incarnation changed the metadata: %+v", got.Brokers)
	}
}

func TestCreateTopicsAssignsPartitionsReplicasAndIDs(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	addBroker(t, c, 3)
	errs := c.CreateTopics(context.Background(), []TopicSpec{
		{Name: "a", NumPartitions: 4, ReplicationFactor: 2, Configs: map[string]*string{"retention.ms": str(" 1000 ")}},
		{Name: "b", NumPartitions: 1, ReplicationFactor: 3},
	}, false)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("topic %d: %v", i, err)
		}
	}
	im := c.Image()
	a, b := im.Topic("a"), im.Topic("b")
	if a == nil || b == nil {
		t.Fatal("topics missing")
	}
	if a.ID == (TopicID{}) || b.ID == (TopicID{}) || a.ID == b.ID {
		t.Fatalf("topic ids not unique and non-zero: %x %x", a.ID, b.ID)
	}
	if im.TopicByID(a.ID) != a || im.TopicByID(b.ID) != b {
		t.Fatal("topic ids not indexed")
	}
	if a.Configs["retention.ms"] != "1000" {
		t.Fatalf("configs %q, want the trimmed value", a.Configs)
	}
	for _, top := range []*TopicInfo{a, b} {
		rf := map[string]int{"a": 2, "b": 3}[top.Name]
		for i, p := range top.Partitions {
			if p.Partition != int32(i) {
				t.Fatalf("%s: partition %d at index %d", top.Name, p.Partition, i)
			}
			if len(p.Replicas) != rf {
				t.Fatalf("%s-%d: replicas %v, want %d", top.Name, i, p.Replicas, rf)
			}
			if p.Leader != p.Replicas[0] {
				t.Fatalf("%s-%d: leader %d, want first replica of %v", top.Name, i, p.Leader, p.Replicas)
			}
			if !reflect.DeepEqual(p.ISR, p.Replicas) {
				t.Fatalf("%s-%d: ISR %v, want replicas %v", top.Name, i, p.ISR, p.Replicas)
			}
			if p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
				t.Fatalf("%s-%d: epochs %d/%d, want 0", top.Name, i, p.LeaderEpoch, p.PartitionEpoch)
			}
			seen := map[int32]bool{}
			for _, r := range p.Replicas {
				if seen[r] || im.Brokers[r].NodeID != r {
					t.Fatalf("%s-%d: replicas %v duplicate or unknown", top.Name, i, p.Replicas)
				}
				seen[r] = true
			}
		}
	}
	if len(a.Partitions) != 4 || len(b.Partitions) != 1 {
		t.Fatalf("partition counts %d, %d", len(a.Partitions), len(b.Partitions))
	}
}

func TestCreateTopicsExistingTopicIsTopicExists(t *testing.T) {
	c := newController(t)
	first := mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	if err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 2, ReplicationFactor: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("got %v, want ErrTopicExists", err)
	}
	if c.Image().Topic("a") != first {
		t.Fatal("failed create changed the topic")
	}
}

func TestCreateTopicsInvalidNamesAreInvalidTopic(t *testing.T) {
	c := newController(t)
	for _, name := range []string{"", ".", "..", strings.Repeat("x", 250), "a/b", "a b", "a\x00", "é"} {
		if err := createOne(t, c, TopicSpec{Name: name, NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("name %q: got %v, want ErrInvalidTopic", name, err)
		}
	}
	if n := len(c.Image().Topics); n != 0 {
		t.Fatalf("%d topics created from invalid names", n)
	}
	// The limit is inclusive: 249 characters and Kafka's legal characters are fine.
	for _, name := range []string{strings.Repeat("x", 249), "A-z_0.9", "..."} {
		if err := createOne(t, c, TopicSpec{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

func TestCreateTopicsDotUnderscoreCollisionIsInvalidTopic(t *testing.T) {
	c := newController(t)
	mustCreate(t, c, TopicSpec{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1})
	if err := createOne(t, c, TopicSpec{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("a_b after a.b: got %v, want ErrInvalidTopic", err)
	}
	// Within one request as well: the first wins, the second collides.
	errs := c.CreateTopics(context.Background(), []TopicSpec{
		{Name: "x_y", NumPartitions: 1, ReplicationFactor: 1},
		{Name: "x.y", NumPartitions: 1, ReplicationFactor: 1},
	}, false)
	if errs[0] != nil || !errors.Is(errs[1], ErrInvalidTopic) {
		t.Fatalf("same-request collision: %v", errs)
	}
	if c.Image().Topic("x.y") != nil || c.Image().Topic("a_b") != nil {
		t.Fatal("colliding topic created")
	}
}

// Kafka refuses to create the metadata log's topic (ControllerApis.createTopics:
// "Creation of internal topic __cluster_metadata is prohibited", INVALID_REQUEST).
// Here its partition directory would be the metadata directory itself.
func TestCreateTopicsClusterMetadataTopicIsRefused(t *testing.T) {
	c := newController(t)
	err := createOne(t, c, TopicSpec{Name: "__cluster_metadata", NumPartitions: 1, ReplicationFactor: 1})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("got %v, want ErrInvalidRequest", err)
	}
	if c.Image().Topic("__cluster_metadata") != nil {
		t.Fatal("__cluster_metadata created")
	}
}

func TestCreateTopicsNonPositivePartitionsIsInvalidPartitions(t *testing.T) {
	c := newController(t)
	for _, n := range []int32{0, -5} {
		if err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: n, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("partitions %d: got %v, want ErrInvalidPartitions", n, err)
		}
	}
}

func TestCreateTopicsBadReplicationFactorIsInvalidReplicationFactor(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	for _, rf := range []int16{0, -2, 3} {
		if err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: rf}); !errors.Is(err, ErrInvalidReplicationFactor) {
			t.Errorf("rf %d with 2 brokers: got %v, want ErrInvalidReplicationFactor", rf, err)
		}
	}
	// Fenced brokers are not live.
	if err := c.log.Propose(context.Background(), &Command{Type: CmdRegisterBroker, Broker: &BrokerInfo{NodeID: 2, Host: "h", Port: 1, Fenced: true}}); err != nil {
		t.Fatal(err)
	}
	if err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 2}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 2 with one live broker: got %v, want ErrInvalidReplicationFactor", err)
	}
}

func TestCreateTopicsBadConfigsAreInvalidConfig(t *testing.T) {
	c := newController(t)
	for _, tc := range []struct{ k, v string }{
		{"no.such.config", "1"},
		{"retention.ms", "abc"},
		{"cleanup.policy", "bogus"},
		{"cleanup.policy", "compact,bogus"},
		{"min.insync.replicas", "0"},
		{"segment.bytes", "13"},
		{"segment.bytes", "99999999999"},
		{"preallocate", "yes"},
		{"compression.type", "brotli"},
		{"min.cleanable.dirty.ratio", "1.5"},
		{"message.timestamp.type", "Wallclock"},
	} {
		err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{tc.k: str(tc.v)}})
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%q: got %v, want ErrInvalidConfig", tc.k, tc.v, err)
		}
	}
	err := createOne(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{"retention.ms": nil}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("null value: got %v, want ErrInvalidConfig", err)
	}
	if c.Image().Topic("a") != nil {
		t.Fatal("topic created with a bad config")
	}
	top := mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{
		"cleanup.policy": str("compact,delete"), "min.insync.replicas": str("2"), "retention.ms": str("-1"),
	}})
	if len(top.Configs) != 3 {
		t.Fatalf("configs %v", top.Configs)
	}
}

func TestCreateTopicsMinusOneTakesConfiguredDefaults(t *testing.T) {
	cfg := testConfig()
	cfg.NumPartitions = 5
	cfg.DefaultReplicationFactor = 2
	c := openController(t, cfg, t.TempDir())
	addBroker(t, c, 2)
	top := mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: -1, ReplicationFactor: -1})
	if len(top.Partitions) != 5 {
		t.Fatalf("%d partitions, want num.partitions=5", len(top.Partitions))
	}
	for _, p := range top.Partitions {
		if len(p.Replicas) != 2 {
			t.Fatalf("replicas %v, want default.replication.factor=2", p.Replicas)
		}
	}
}

func TestCreateTopicsValidateOnlyCreatesNothing(t *testing.T) {
	c := newController(t)
	before := c.Image()
	errs := c.CreateTopics(context.Background(), []TopicSpec{
		{Name: "a", NumPartitions: 2, ReplicationFactor: 1},
		{Name: "b", NumPartitions: 0, ReplicationFactor: 1},
	}, true)
	if errs[0] != nil || !errors.Is(errs[1], ErrInvalidPartitions) {
		t.Fatalf("validateOnly results %v", errs)
	}
	if after := c.Image(); after.Offset != before.Offset || len(after.Topics) != 0 {
		t.Fatal("validateOnly changed the metadata")
	}
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 2, ReplicationFactor: 1})
}

func TestCreateTopicsExplicitAssignment(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	top := mustCreate(t, c, TopicSpec{Name: "ok", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{2, 1}, {1, 2}}})
	want := [][]int32{{2, 1}, {1, 2}}
	for i, p := range top.Partitions {
		if !reflect.DeepEqual(p.Replicas, want[i]) || p.Leader != want[i][0] || !reflect.DeepEqual(p.ISR, want[i]) {
			t.Fatalf("partition %d: %+v, want replicas %v", i, p, want[i])
		}
	}
	for _, tc := range []struct {
		name       string
		assignment [][]int32
	}{
		{"unknown-broker", [][]int32{{1, 7}}},
		{"duplicate-replica", [][]int32{{1, 1}}},
		{"uneven-rf", [][]int32{{1, 2}, {1}}},
		{"no-replicas", [][]int32{{1}, {}}},
	} {
		err := createOne(t, c, TopicSpec{Name: tc.name, NumPartitions: -1, ReplicationFactor: -1, Assignment: tc.assignment})
		if !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Errorf("%s: got %v, want ErrInvalidReplicaAssignment", tc.name, err)
		}
	}
	// Kafka: an assignment together with a partition count or RF is INVALID_REQUEST.
	err := createOne(t, c, TopicSpec{Name: "both", NumPartitions: 1, ReplicationFactor: -1, Assignment: [][]int32{{1}}})
	if !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("assignment with partition count: got %v, want ErrInvalidRequest", err)
	}
	if names := c.Image().TopicNames(); !reflect.DeepEqual(names, []string{"ok"}) {
		t.Fatalf("topics %v, want only ok", names)
	}
}

func TestDeleteTopics(t *testing.T) {
	c := newController(t)
	a := mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	errs := c.DeleteTopics(context.Background(), []string{"a", "nope"})
	if errs[0] != nil || !errors.Is(errs[1], ErrUnknownTopic) {
		t.Fatalf("results %v", errs)
	}
	if c.Image().Topic("a") != nil || c.Image().TopicByID(a.ID) != nil {
		t.Fatal("a still present")
	}
	// The name can be reused, with a new id.
	a2 := mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	if a2.ID == a.ID {
		t.Fatal("recreated topic reuses the old id")
	}
}

func TestDeleteTopicsDisabledIsTopicDeletionDisabled(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteTopicEnable = false
	c := openController(t, cfg, t.TempDir())
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	errs := c.DeleteTopics(context.Background(), []string{"a"})
	if !errors.Is(errs[0], ErrTopicDeletionDisabled) {
		t.Fatalf("got %v, want ErrTopicDeletionDisabled", errs[0])
	}
	if c.Image().Topic("a") == nil {
		t.Fatal("topic deleted although deletion is disabled")
	}
}

func TestCreatePartitions(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 2, ReplicationFactor: 2})
	ctx := context.Background()
	if err := c.CreatePartitions(ctx, "a", 2, nil, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("same count: got %v, want ErrInvalidPartitions", err)
	}
	if err := c.CreatePartitions(ctx, "a", 1, nil, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("fewer: got %v, want ErrInvalidPartitions", err)
	}
	if err := c.CreatePartitions(ctx, "nope", 3, nil, false); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: got %v, want ErrUnknownTopic", err)
	}
	before := c.Image().Topic("a")
	if err := c.CreatePartitions(ctx, "a", 4, nil, true); err != nil {
		t.Fatal(err)
	}
	if c.Image().Topic("a") != before {
		t.Fatal("validateOnly grew the topic")
	}
	if err := c.CreatePartitions(ctx, "a", 4, nil, false); err != nil {
		t.Fatal(err)
	}
	top := c.Image().Topic("a")
	if len(top.Partitions) != 4 {
		t.Fatalf("%d partitions, want 4", len(top.Partitions))
	}
	if !reflect.DeepEqual(top.Partitions[:2], before.Partitions) {
		t.Fatal("existing partitions changed")
	}
	for i, p := range top.Partitions {
		if p.Partition != int32(i) || len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Leader != p.Replicas[0] || !reflect.DeepEqual(p.ISR, p.Replicas) {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	if err := c.CreatePartitions(ctx, "a", 6, [][]int32{{2, 1}}, false); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("too few assignments: got %v, want ErrInvalidReplicaAssignment", err)
	}
	if err := c.CreatePartitions(ctx, "a", 5, [][]int32{{2, 1}}, false); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Partition("a", 4); p == nil || !reflect.DeepEqual(p.Replicas, []int32{2, 1}) || p.Leader != 2 {
		t.Fatalf("assigned partition 4: %+v", p)
	}
}

// Kafka (ReplicationControlManager.createPartitions) requires new partitions
// to have the topic's replication factor: "The manual partition assignment
// includes a partition with 1 replica(s), but this is not consistent with
// previous partitions, which have 2 replica(s)."
func TestCreatePartitionsAssignmentWithOtherReplicationFactorIsInvalid(t *testing.T) {
	c := newController(t)
	addBroker(t, c, 2)
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 2})
	err := c.CreatePartitions(context.Background(), "a", 2, [][]int32{{1}}, false)
	if !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("got %v, want ErrInvalidReplicaAssignment", err)
	}
}

func TestSetTopicConfigs(t *testing.T) {
	c := newController(t)
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]*string{"segment.ms": str("100")}})
	ctx := context.Background()
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"retention.ms": "abc"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad value: got %v, want ErrInvalidConfig", err)
	}
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"nope": "1"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("unknown config: got %v, want ErrInvalidConfig", err)
	}
	if err := c.SetTopicConfigs(ctx, "zz", map[string]string{"retention.ms": "1"}, false); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: got %v, want ErrUnknownTopic", err)
	}
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"retention.ms": "1"}, true); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().Topic("a").Configs; !reflect.DeepEqual(got, map[string]string{"segment.ms": "100"}) {
		t.Fatalf("validateOnly changed configs to %v", got)
	}
	in := map[string]string{"retention.ms": "1"}
	if err := c.SetTopicConfigs(ctx, "a", in, false); err != nil {
		t.Fatal(err)
	}
	in["retention.ms"] = "2"
	if got := c.Image().Topic("a").Configs; !reflect.DeepEqual(got, map[string]string{"retention.ms": "1"}) {
		t.Fatalf("configs %v, want the overrides replaced by retention.ms=1", got)
	}
}

func TestSetBrokerConfigs(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBrokerConfigs(ctx, "1", map[string]string{"message.max.bytes": "2000"}, false); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if im.BrokerConfigs[""]["log.retention.ms"] != "1000" || im.BrokerConfigs["1"]["message.max.bytes"] != "2000" {
		t.Fatalf("broker configs %v", im.BrokerConfigs)
	}
	for _, tc := range []struct {
		resource string
		configs  map[string]string
		want     error
	}{
		{"1", map[string]string{"log.dirs": "/x"}, ErrInvalidRequest},
		{"1", map[string]string{"retention.ms": "1"}, ErrInvalidRequest}, // the topic name, not the broker one
		{"x", map[string]string{"log.retention.ms": "1"}, ErrInvalidRequest},
		{"-1", map[string]string{"log.retention.ms": "1"}, ErrInvalidRequest},
		{"", map[string]string{"log.retention.ms": "abc"}, ErrInvalidConfig},
		{"", map[string]string{"min.insync.replicas": "0"}, ErrInvalidConfig},
	} {
		if err := c.SetBrokerConfigs(ctx, tc.resource, tc.configs, false); !errors.Is(err, tc.want) {
			t.Errorf("%q %v: got %v, want %v", tc.resource, tc.configs, err, tc.want)
		}
	}
	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "5"}, true); err != nil {
		t.Fatal(err)
	}
	if after := c.Image(); after.Offset != im.Offset || !reflect.DeepEqual(after.BrokerConfigs, im.BrokerConfigs) {
		t.Fatal("rejected or validateOnly changes altered the metadata")
	}
	// An empty set removes the resource's overrides.
	if err := c.SetBrokerConfigs(ctx, "1", nil, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().BrokerConfigs["1"]; ok {
		t.Fatal("overrides of broker 1 not removed")
	}
}

func TestDynamicBrokerConfigsAreTheTopicSynonyms(t *testing.T) {
	got := DynamicBrokerConfigs()
	if !slices.IsSorted(got) {
		t.Fatalf("not sorted: %v", got)
	}
	for _, want := range []string{"log.retention.ms", "message.max.bytes", "min.insync.replicas", "log.cleanup.policy"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %v", want, got)
		}
	}
}

func findConfig(t *testing.T, cvs []ConfigValue, name string) ConfigValue {
	t.Helper()
	for _, cv := range cvs {
		if cv.Name == name {
			return cv
		}
	}
	t.Fatalf("config %s not described", name)
	return ConfigValue{}
}

func TestEffectiveTopicConfigsPrecedence(t *testing.T) {
	cfg := testConfig()
	cfg.BrokerDefaults = BrokerDefaults{
		Values: map[string]string{"log.retention.ms": "4000", "log.roll.ms": "77"},
		Set:    map[string]bool{"log.retention.ms": true},
	}
	c := openController(t, cfg, t.TempDir())
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	ctx := context.Background()
	check := func(step string, wantValue string, wantSource ConfigSource, wantChain ...ConfigSource) {
		t.Helper()
		im := c.Image()
		cv := findConfig(t, EffectiveTopicConfigs(im, im.Topic("a"), c.NodeID(), c.BrokerDefaults()), "retention.ms")
		if cv.Value != wantValue || cv.Source != wantSource || cv.Type != TypeLong {
			t.Fatalf("%s: retention.ms = %q source %d type %d, want %q source %d", step, cv.Value, cv.Source, cv.Type, wantValue, wantSource)
		}
		var chain []ConfigSource
		for _, s := range cv.Synonyms {
			chain = append(chain, s.Source)
		}
		if !slices.Equal(chain, wantChain) {
			t.Fatalf("%s: synonym sources %v, want %v", step, chain, wantChain)
		}
		if got := TopicConfigValue(im, im.Topic("a"), c.NodeID(), c.BrokerDefaults(), "retention.ms"); got != wantValue {
			t.Fatalf("%s: TopicConfigValue %q, want %q", step, got, wantValue)
		}
	}
	check("static", "4000", SourceStaticBroker, SourceStaticBroker)
	// Another node's dynamic config does not apply here.
	if err := c.SetBrokerConfigs(ctx, "2", map[string]string{"log.retention.ms": "9"}, false); err != nil {
		t.Fatal(err)
	}
	check("other node", "4000", SourceStaticBroker, SourceStaticBroker)
	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "3000"}, false); err != nil {
		t.Fatal(err)
	}
	check("dynamic default", "3000", SourceDynamicDefaultBroker, SourceDynamicDefaultBroker, SourceStaticBroker)
	if err := c.SetBrokerConfigs(ctx, "1", map[string]string{"log.retention.ms": "2000"}, false); err != nil {
		t.Fatal(err)
	}
	check("dynamic broker", "2000", SourceDynamicBroker, SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker)
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"retention.ms": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	check("topic", "1000", SourceDynamicTopic, SourceDynamicTopic, SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker)

	im := c.Image()
	all := EffectiveTopicConfigs(im, im.Topic("a"), c.NodeID(), c.BrokerDefaults())
	if len(all) != len(TopicConfigDefs()) {
		t.Fatalf("%d configs described, want %d", len(all), len(TopicConfigDefs()))
	}
	// A broker value the operator did not set is still the default.
	if cv := findConfig(t, all, "segment.ms"); cv.Value != "77" || cv.Source != SourceDefault {
		t.Fatalf("segment.ms = %q source %d, want 77 from the default", cv.Value, cv.Source)
	}
	// Nothing anywhere: Kafka's default.
	if cv := findConfig(t, all, "cleanup.policy"); cv.Value != "delete" || cv.Source != SourceDefault || len(cv.Synonyms) != 0 {
		t.Fatalf("cleanup.policy = %+v, want delete from the default", cv)
	}
	if got := TopicConfigValue(im, im.Topic("a"), 1, c.BrokerDefaults(), "no.such.config"); got != "" {
		t.Fatalf("unknown config resolved to %q", got)
	}
}

func TestReopenKeepsClusterIDTopicsAndConfigs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.ClusterID = "configured-id"
	c := openController(t, cfg, dir)
	ctx := context.Background()
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 2, ReplicationFactor: 1, Configs: map[string]*string{"retention.ms": str("123")}})
	mustCreate(t, c, TopicSpec{Name: "gone", NumPartitions: 1, ReplicationFactor: 1})
	if err := c.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "9"}, false); err != nil {
		t.Fatal(err)
	}
	if errs := c.DeleteTopics(ctx, []string{"gone"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	want := c.Image()
	if want.ClusterID != "configured-id" {
		t.Fatalf("cluster id %q, want the configured one", want.ClusterID)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.ClusterID = "" // a reopened log keeps its own id
	r := openQuorum(t, cfg, dir)
	got := r.Image()
	if got.ClusterID != want.ClusterID || got.Offset < want.Offset {
		t.Fatalf("reopened cluster id %q offset %d, want %q and at least %d", got.ClusterID, got.Offset, want.ClusterID, want.Offset)
	}
	if !reflect.DeepEqual(got.Topics, want.Topics) || !reflect.DeepEqual(got.IDs, want.IDs) {
		t.Fatalf("topics after reopen %v, want %v", got.Topics, want.Topics)
	}
	if !reflect.DeepEqual(got.BrokerConfigs, want.BrokerConfigs) || !reflect.DeepEqual(got.Brokers, want.Brokers) {
		t.Fatalf("brokers/configs after reopen %v %v", got.Brokers, got.BrokerConfigs)
	}
	// And it keeps going from there.
	before := r.Image().Offset
	mustCreate(t, r, TopicSpec{Name: "b", NumPartitions: 1, ReplicationFactor: 1})
	if r.Image().Offset <= before || r.Image().Topic("a") == nil {
		t.Fatalf("offset %d after one more change, want above %d", r.Image().Offset, before)
	}
}

func TestOpenWithoutClusterIDGeneratesOne(t *testing.T) {
	dir := t.TempDir()
	c := openController(t, testConfig(), dir)
	id := c.Image().ClusterID
	if len(id) != 22 {
		t.Fatalf("cluster id %q, want 22 base64url characters", id)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r := openQuorum(t, testConfig(), dir)
	if r.Image().ClusterID != id {
		t.Fatalf("reopened cluster id %q, want %q", r.Image().ClusterID, id)
	}
	if other := openController(t, testConfig(), t.TempDir()).Image().ClusterID; other == id {
		t.Fatal("two new clusters got the same id")
	}
}

// Over a MemLog watchers run once per entry; over raft they may be given
// several entries at once (watch_test.go).
func TestWatchSeesEveryChangeInOrder(t *testing.T) {
	c, _, err := OpenInMemory(context.Background(), testConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Register(context.Background(), "127.0.0.1", 9092); err != nil {
		t.Fatal(err)
	}
	type call struct{ prev, next *Image }
	var (
		mu    sync.Mutex
		calls []call
	)
	c.Watch(func(prev, next *Image) {
		mu.Lock()
		calls = append(calls, call{prev, next})
		mu.Unlock()
	})
	ctx := context.Background()
	mustCreate(t, c, TopicSpec{Name: "a", NumPartitions: 1, ReplicationFactor: 1})
	if err := c.SetTopicConfigs(ctx, "a", map[string]string{"retention.ms": "5"}, false); err != nil {
		t.Fatal(err)
	}
	if errs := c.DeleteTopics(ctx, []string{"a"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	// Rejected changes publish nothing.
	createOne(t, c, TopicSpec{Name: "", NumPartitions: 1, ReplicationFactor: 1})
	mu.Lock()
	defer mu.Unlock()
	// Every call continues from the one before; the image may also be
	// republished unchanged (a new controller id), which is not a change.
	var changes []call
	for i, cl := range calls {
		if i > 0 && cl.prev != calls[i-1].next {
			t.Fatalf("call %d's prev is not call %d's next", i, i-1)
		}
		if cl.next.Offset < cl.prev.Offset {
			t.Fatalf("call %d goes back from offset %d to %d", i, cl.prev.Offset, cl.next.Offset)
		}
		if cl.next.Offset != cl.prev.Offset {
			changes = append(changes, cl)
		}
	}
	if len(changes) != 3 {
		t.Fatalf("%d changes seen, want 3", len(changes))
	}
	if changes[0].prev.Topic("a") != nil || changes[0].next.Topic("a") == nil {
		t.Fatal("first change does not show the creation")
	}
	if changes[1].next.Topic("a").Configs["retention.ms"] != "5" || changes[1].prev.Topic("a").Configs["retention.ms"] == "5" {
		t.Fatal("second change does not show the config change")
	}
	if changes[2].prev.Topic("a") == nil || changes[2].next.Topic("a") != nil {
		t.Fatal("third change does not show the deletion")
	}
	if last := calls[len(calls)-1].next; last.Offset != c.Image().Offset {
		t.Fatalf("last call ends at offset %d, the current image is at %d", last.Offset, c.Image().Offset)
	}
}

func TestAssignReplicasSpreadsLeadersAndReplicas(t *testing.T) {
	brokers := []int32{1, 2, 3}
	for start := -1; start < 3; start++ {
		for round := 0; round < 20; round++ { // the shift is random
			got := assignReplicas(brokers, 6, 3, 0, start)
			if len(got) != 6 {
				t.Fatalf("%d partitions, want 6", len(got))
			}
			leads := map[int32]int{}
			for p, replicas := range got {
				if len(replicas) != 3 {
					t.Fatalf("partition %d: replicas %v", p, replicas)
				}
				seen := map[int32]bool{}
				for _, r := range replicas {
					if seen[r] || !slices.Contains(brokers, r) {
						t.Fatalf("partition %d: replicas %v not 3 distinct brokers", p, replicas)
					}
					seen[r] = true
				}
				leads[replicas[0]]++
			}
			for _, b := range brokers {
				if leads[b] != 2 {
					t.Fatalf("start %d: leaders %v, want each broker leading 2 (%v)", start, leads, got)
				}
			}
		}
	}
	// RF below the broker count: replicas stay distinct and followers spread.
	got := assignReplicas([]int32{1, 2, 3, 4}, 8, 2, 0, 0)
	followers := map[int32]int{}
	for p, r := range got {
		if r[0] == r[1] {
			t.Fatalf("partition %d: replicas %v", p, r)
		}
		followers[r[1]]++
	}
	for _, b := range []int32{1, 2, 3, 4} {
		if followers[b] != 2 {
			t.Fatalf("followers %v, want each broker following 2 (%v)", followers, got)
		}
	}
	// Continuing from partition 6 leads where partition 6 would have.
	all := assignReplicas(brokers, 9, 1, 0, 1)
	more := assignReplicas(brokers, 3, 1, 6, 1)
	for i := range more {
		if more[i][0] != all[6+i][0] {
			t.Fatalf("partition %d led by %d, want %d", 6+i, more[i][0], all[6+i][0])
		}
	}
}
