package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminAPIs covers the topic and config administration APIs against one
// broker, then restarts it and checks that their effects persisted.
func TestAdminAPIs(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_NUM_PARTITIONS": "2"}})
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(15000)
	ctx := testCtx(t, 5*time.Minute)

	t.Run("create-topic-errors", func(t *testing.T) {
		createTopic(t, adm, "admin-exists", 1, nil)
		long := strings.Repeat("a", 250)
		cases := []struct {
			name       string
			topic      string
			partitions int32
			rf         int16
			configs    map[string]*string
			want       *kerr.Error
		}{
			{"already-exists", "admin-exists", 1, 1, nil, kerr.TopicAlreadyExists},
			{"slash", "bad/name", 1, 1, nil, kerr.InvalidTopicException},
			{"dotdot", "..", 1, 1, nil, kerr.InvalidTopicException},
			{"dot", ".", 1, 1, nil, kerr.InvalidTopicException},
			{"too-long", long, 1, 1, nil, kerr.InvalidTopicException},
			{"zero-partitions", "admin-zero", 0, 1, nil, kerr.InvalidPartitions},
			{"negative-partitions", "admin-negative", -5, 1, nil, kerr.InvalidPartitions},
			{"rf-above-brokers", "admin-rf3", 1, 3, nil, kerr.InvalidReplicationFactor},
			{"bad-config-value", "admin-badcfg", 1, 1, map[string]*string{"retention.ms": strp("abc")}, kerr.InvalidConfig},
			{"unknown-config", "admin-unknowncfg", 1, 1, map[string]*string{"no.such.config": strp("1")}, kerr.InvalidConfig},
		}
		for _, c := range cases {
			resps, err := adm.CreateTopics(ctx, c.partitions, c.rf, c.configs, c.topic)
			if err != nil {
				t.Errorf("%s: request failed: %v", c.name, err)
				continue
			}
			resp := resps[c.topic]
			if !errors.Is(resp.Err, c.want) {
				t.Errorf("%s: CreateTopics(%q, partitions=%d, rf=%d, %v) = %v (%s), want %s",
					c.name, clip([]byte(c.topic)), c.partitions, c.rf, showConfigs(c.configs), resp.Err, resp.ErrMessage, c.want.Message)
			}
		}
		ts, err := clusterTopics(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases[1:] {
			if _, ok := ts[c.topic]; ok {
				t.Errorf("%s: topic %q exists although its creation failed", c.name, clip([]byte(c.topic)))
			}
		}
	})

	t.Run("validate-only", func(t *testing.T) {
		resp, err := adm.ValidateCreateTopics(ctx, 3, 1, nil, "admin-validate-only")
		if err != nil || resp.Error() != nil {
			t.Fatalf("validate-only create: %v / %v", err, resp.Error())
		}
		bad, err := adm.ValidateCreateTopics(ctx, 0, 1, nil, "admin-validate-bad")
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := bad.On("admin-validate-bad", nil); !errors.Is(r.Err, kerr.InvalidPartitions) {
			t.Errorf("validate-only with 0 partitions: %v, want INVALID_PARTITIONS", r.Err)
		}
		ts, err := clusterTopics(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ts["admin-validate-only"]; ok {
			t.Errorf("validate-only CreateTopics created the topic")
		}
		// The name is still free.
		createTopic(t, adm, "admin-validate-only", 1, nil)
	})

	t.Run("delete-topics", func(t *testing.T) {
		topic := "admin-delete-me"
		createTopic(t, adm, topic, 2, nil)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("doomed")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		resp, err := adm.DeleteTopics(ctx, topic)
		if err != nil || resp.Error() != nil {
			t.Fatalf("DeleteTopics: %v / %v", err, resp.Error())
		}
		waitTopic(t, cl, topic, -1)
		again, err := adm.DeleteTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := again.On(topic, nil); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("deleting a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
		}
		// The name can be reused and the new topic starts empty.
		eventually(t, 30*time.Second, func() error {
			r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
			if err != nil {
				return err
			}
			return r.Err
		})
		waitTopic(t, cl, topic, 1)
		if ends := endOffsets(t, adm, topic); ends[0] != 0 {
			t.Errorf("recreated topic ends at %d, want 0 (old data leaked)", ends[0])
		}
	})

	t.Run("create-partitions", func(t *testing.T) {
		topic := "admin-grow"
		createTopic(t, adm, topic, 2, nil)
		resp, err := adm.UpdatePartitions(ctx, 5, topic)
		if err != nil || resp.Error() != nil {
			t.Fatalf("CreatePartitions to 5: %v / %v", err, resp.Error())
		}
		waitTopic(t, cl, topic, 5)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 4, Value: []byte("new partition")}).First()
		if err != nil || r.Partition != 4 || r.Offset != 0 {
			t.Errorf("producing to new partition 4: err %v, at p%d@%d", err, r.Partition, r.Offset)
		}
		shrink, err := adm.UpdatePartitions(ctx, 3, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := shrink.On(topic, nil); !errors.Is(r.Err, kerr.InvalidPartitions) {
			t.Errorf("shrinking 5 -> 3 partitions: %v, want INVALID_PARTITIONS", r.Err)
		}
	})

	t.Run("describe-and-alter-configs", func(t *testing.T) {
		topic := "admin-configs"
		createTopic(t, adm, topic, 1, map[string]*string{"retention.ms": strp("12345")})
		c := describeTopicConfig(t, adm, topic, "retention.ms")
		if c.MaybeValue() != "12345" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.ms = %q from %v, want 12345 from DYNAMIC_TOPIC_CONFIG", c.MaybeValue(), c.Source)
		}
		if c := describeTopicConfig(t, adm, topic, "cleanup.policy"); c.MaybeValue() != "delete" {
			t.Errorf("cleanup.policy = %q, want the default delete", c.MaybeValue())
		}

		alter := func(desc string, fn func() (kadm.AlterConfigsResponses, error)) {
			t.Helper()
			resp, err := fn()
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			r, err := resp.On(topic, nil)
			if err != nil || r.Err != nil {
				t.Fatalf("%s: %v / %v (%s)", desc, err, r.Err, r.ErrMessage)
			}
		}
		alter("IncrementalAlterConfigs set", func() (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("54321")}}, topic)
		})
		if c := describeTopicConfig(t, adm, topic, "retention.ms"); c.MaybeValue() != "54321" {
			t.Errorf("after IncrementalAlterConfigs retention.ms = %q, want 54321", c.MaybeValue())
		}

		alter("AlterConfigs (legacy, whole state)", func() (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("99999")}}, topic)
		})
		if c := describeTopicConfig(t, adm, topic, "retention.ms"); c.MaybeValue() != "99999" {
			t.Errorf("after AlterConfigs retention.ms = %q, want 99999", c.MaybeValue())
		}

		alter("IncrementalAlterConfigs delete", func() (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
		})
		c = describeTopicConfig(t, adm, topic, "retention.ms")
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.MaybeValue() == "99999" {
			t.Errorf("after deleting the override retention.ms = %q from %v, want the broker default", c.MaybeValue(), c.Source)
		}

		bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("abc")}}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := bad.On(topic, nil); !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Errorf("IncrementalAlterConfigs retention.ms=abc: %v, want INVALID_CONFIG", r.Err)
		}

		// Broker configs: the broker reports its own settings by Kafka name.
		md, err := adm.BrokerMetadata(ctx)
		if err != nil || len(md.Brokers) == 0 {
			t.Fatalf("BrokerMetadata: %v, %d brokers", err, len(md.Brokers))
		}
		id := md.Brokers[0].NodeID
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatalf("DescribeConfigs(broker %d): %v", id, err)
		}
		rc, err := rcs.On(strconv.Itoa(int(id)), nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("DescribeConfigs(broker %d): %v / %v", id, err, rc.Err)
		}
		if c, ok := configValue(rc, "num.partitions"); !ok || c.MaybeValue() != "2" {
			t.Errorf("broker config num.partitions = %q (present %v), want 2 as set by GOKAFKA_NUM_PARTITIONS", c.MaybeValue(), ok)
		}
		if _, ok := configValue(rc, "log.retention.ms"); !ok {
			if _, ok := configValue(rc, "log.retention.hours"); !ok {
				t.Errorf("broker configs list neither log.retention.ms nor log.retention.hours (%d configs)", len(rc.Configs))
			}
		}
	})

	t.Run("describe-cluster", func(t *testing.T) {
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeCluster: %v", err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("DescribeCluster error %d", resp.ErrorCode)
		}
		if resp.ClusterID == "" {
			t.Errorf("DescribeCluster: empty cluster id")
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("DescribeCluster lists %d brokers, want 1: %+v", len(resp.Brokers), resp.Brokers)
		}
		br := resp.Brokers[0]
		if br.Host != "127.0.0.1" || br.Port != int32(b.port) {
			t.Errorf("DescribeCluster broker at %s:%d, want %s", br.Host, br.Port, b.Addr())
		}
		if resp.ControllerID < 0 {
			t.Errorf("DescribeCluster controller id %d", resp.ControllerID)
		}
	})

	t.Run("delete-records", func(t *testing.T) {
		topic := "admin-delete-records"
		createTopic(t, adm, topic, 1, nil)
		sent := genRecords(100, 1, 1000)
		sent = produceAll(t, cl, topic, sent)

		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40, LeaderEpoch: -1})
		resp, err := adm.DeleteRecords(ctx, offs)
		if err != nil {
			t.Fatalf("DeleteRecords: %v", err)
		}
		r, ok := resp.Lookup(topic, 0)
		if !ok || r.Err != nil || r.LowWatermark != 40 {
			t.Errorf("DeleteRecords to 40: %+v (present %v), want low watermark 40", r, ok)
		}
		if s := startOffsets(t, adm, topic); s[0] != 40 {
			t.Errorf("log start offset %d after DeleteRecords, want 40", s[0])
		}
		got := consumeKgo(t, b, topic, []int32{0}, 60)
		checkRecords(t, sent[40:], got)

		var beyond kadm.Offsets
		beyond.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1000, LeaderEpoch: -1})
		resp, err = adm.DeleteRecords(ctx, beyond)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := resp.Lookup(topic, 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
			t.Errorf("DeleteRecords beyond the high watermark: %v, want OFFSET_OUT_OF_RANGE", r.Err)
		}
	})

	// Everything above was committed metadata or checkpointed state; a clean
	// restart must bring all of it back. (Not a subtest: the broker handle
	// belongs to this test, and a failed Stop must fail this goroutine.)
	createTopic(t, adm, "admin-persist", 2, map[string]*string{
		"retention.ms":      strp("7777777"),
		"max.message.bytes": strp("200000"),
	})
	b.Restart()
	var ts map[string]int
	eventually(t, 30*time.Second, func() error {
		var err error
		ts, err = clusterTopics(ctx, cl)
		return err
	})
	for topic, want := range map[string]int{"admin-persist": 2, "admin-grow": 5, "admin-delete-me": 1, "admin-exists": 1} {
		if ts[topic] != want {
			t.Errorf("after restart %q has %d partitions, want %d", topic, ts[topic], want)
		}
	}
	for _, gone := range []string{"bad/name", "admin-zero", "admin-validate-bad"} {
		if _, ok := ts[gone]; ok {
			t.Errorf("after restart %q exists", gone)
		}
	}
	if c := describeTopicConfig(t, adm, "admin-persist", "retention.ms"); c.MaybeValue() != "7777777" {
		t.Errorf("after restart retention.ms = %q, want 7777777", c.MaybeValue())
	}
	if c := describeTopicConfig(t, adm, "admin-persist", "max.message.bytes"); c.MaybeValue() != "200000" {
		t.Errorf("after restart max.message.bytes = %q, want 200000", c.MaybeValue())
	}
	// The override is enforced, not just reported.
	_, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "admin-persist", Partition: 0, Value: randomBytes(300_000, 9)}).First()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("after restart a 300000-byte record on max.message.bytes=200000: %v, want MESSAGE_TOO_LARGE", err)
	}
	// DeleteRecords moved the log start offset without deleting a segment;
	// only its checkpoint keeps it.
	if s := startOffsets(t, adm, "admin-delete-records"); s[0] != 40 {
		t.Errorf("after restart log start offset of admin-delete-records is %d, want 40", s[0])
	}
}
