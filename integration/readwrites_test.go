package integration

// Read your own admin writes on every broker: once CreateTopics,
// CreatePartitions, IncrementalAlterConfigs and DeleteTopics answer, every
// broker of the cluster has applied the change, so a Metadata,
// DescribeConfigs, ListOffsets or Produce sent to any of them right
// afterwards sees it (handlers/propagate.go).

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/internal/testkit"
)

var readWritesRounds = flag.Int("readwrites.rounds", 200, "rounds of TestAdminWritesVisibleOnEveryBrokerAtOnce")

func TestAdminWritesVisibleOnEveryBrokerAtOnce(t *testing.T) {
	c := startCluster(t, nil)
	cl := c.client(t)
	ctx := testCtx(t, 10*time.Minute)
	knowEveryBroker(t, ctx, cl)
	batch := testkit.SimpleBatch(1, time.Now().UnixMilli(), 10)
	for round := range *readWritesRounds {
		topic := fmt.Sprintf("ryw-%d", round)
		// The admin request goes to each node in turn: the controller
		// answers some itself, the others forward them.
		admin := cl.Broker(round%3 + 1)

		create := kmsg.NewPtrCreateTopicsRequest()
		create.TimeoutMillis = 15000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 3
		create.Topics = append(create.Topics, ct)
		cresp, err := create.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(cresp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("round %d: CreateTopics %s: %v", round, topic, err)
		}
		for id := int32(1); id <= 3; id++ {
			checkTopicEverywhere(ctx, t, cl, id, round, "create", topic, 1, "", batch)
		}

		grow := kmsg.NewPtrCreatePartitionsRequest()
		grow.TimeoutMillis = 15000
		gt := kmsg.NewCreatePartitionsRequestTopic()
		gt.Topic, gt.Count = topic, 2
		grow.Topics = append(grow.Topics, gt)
		gresp, err := grow.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(gresp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("round %d: CreatePartitions %s: %v", round, topic, err)
		}
		for id := int32(1); id <= 3; id++ {
			checkTopicEverywhere(ctx, t, cl, id, round, "create partitions", topic, 2, "", batch)
		}

		retention := strconv.Itoa(3600000 + round)
		alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ar := kmsg.NewIncrementalAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ac.Name, ac.Value = "retention.ms", &retention
		ar.Configs = append(ar.Configs, ac)
		alter.Resources = append(alter.Resources, ar)
		aresp, err := alter.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(aresp.Resources[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("round %d: IncrementalAlterConfigs %s: %v", round, topic, err)
		}
		for id := int32(1); id <= 3; id++ {
			checkTopicEverywhere(ctx, t, cl, id, round, "alter configs", topic, 2, retention, batch)
		}

		del := kmsg.NewPtrDeleteTopicsRequest()
		del.TimeoutMillis = 15000
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = &topic
		del.Topics = append(del.Topics, dt)
		del.TopicNames = []string{topic}
		dresp, err := del.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(dresp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("round %d: DeleteTopics %s: %v", round, topic, err)
		}
		for id := int32(1); id <= 3; id++ {
			checkTopicGone(ctx, t, cl, id, round, topic, batch)
		}
	}
}

// checkTopicEverywhere asks broker id, and only it, about topic: Metadata
// lists its partitions with a leader and a full ISR, DescribeConfigs
// answers (with retention.ms = retention when set), and ListOffsets and
// an acks=all Produce of each partition succeed on the leader and get
// NOT_LEADER_OR_FOLLOWER elsewhere, never UNKNOWN_TOPIC_OR_PARTITION.
func checkTopicEverywhere(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, round int, after, topic string, partitions int, retention string, batch []byte) {
	t.Helper()
	b := cl.Broker(int(id))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %d, right after %s, broker %d: %s", round, after, id, fmt.Sprintf(format, args...))
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	meta.Topics = append(meta.Topics, mt)
	meta.AllowAutoTopicCreation = false
	mresp, err := meta.RequestWith(ctx, b)
	if err != nil {
		fail("Metadata: %v", err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		fail("Metadata: %+v", mresp.Topics)
	}
	leaders := map[int32]int32{}
	for _, p := range mresp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Leader < 1 || len(p.ISR) != 3 {
			fail("Metadata: partition %d leader %d ISR %v error %d", p.Partition, p.Leader, p.ISR, p.ErrorCode)
		}
		leaders[p.Partition] = p.Leader
	}
	if len(leaders) != partitions {
		fail("Metadata lists %d partitions, want %d", len(leaders), partitions)
	}

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dr.ConfigNames = []string{"retention.ms"}
	dc.Resources = append(dc.Resources, dr)
	dcresp, err := dc.RequestWith(ctx, b)
	if err != nil {
		fail("DescribeConfigs: %v", err)
	}
	if len(dcresp.Resources) != 1 || dcresp.Resources[0].ErrorCode != 0 {
		fail("DescribeConfigs: %+v", dcresp.Resources)
	}
	if retention != "" {
		got := ""
		for _, c := range dcresp.Resources[0].Configs {
			if c.Name == "retention.ms" && c.Value != nil {
				got = *c.Value
			}
		}
		if got != retention {
			fail("DescribeConfigs: retention.ms %q, want %q", got, retention)
		}
	}

	for p := range int32(partitions) {
		want := int16(0)
		if leaders[p] != id {
			want = kerr.NotLeaderForPartition.Code
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		loresp, err := lo.RequestWith(ctx, b)
		if err != nil {
			fail("ListOffsets: %v", err)
		}
		if code := loresp.Topics[0].Partitions[0].ErrorCode; code != want {
			fail("ListOffsets partition %d (leader %d): %v, want %v", p, leaders[p], kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}

		pr := kmsg.NewPtrProduceRequest()
		pr.Acks, pr.TimeoutMillis = -1, 10000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = topic
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p, batch
		pt.Partitions = append(pt.Partitions, pp)
		pr.Topics = append(pr.Topics, pt)
		presp, err := pr.RequestWith(ctx, b)
		if err != nil {
			fail("Produce: %v", err)
		}
		if code := presp.Topics[0].Partitions[0].ErrorCode; code != want {
			fail("Produce partition %d (leader %d): %v, want %v", p, leaders[p], kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
}

// checkTopicGone asks broker id, and only it, about a deleted topic:
// every answer is UNKNOWN_TOPIC_OR_PARTITION.
func checkTopicGone(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, round int, topic string, batch []byte) {
	t.Helper()
	b := cl.Broker(int(id))
	unknown := kerr.UnknownTopicOrPartition.Code
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %d, right after delete, broker %d: %s", round, id, fmt.Sprintf(format, args...))
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	meta.Topics = append(meta.Topics, mt)
	meta.AllowAutoTopicCreation = false
	mresp, err := meta.RequestWith(ctx, b)
	if err != nil {
		fail("Metadata: %v", err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != unknown {
		fail("Metadata: %+v", mresp.Topics)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dc.Resources = append(dc.Resources, dr)
	dcresp, err := dc.RequestWith(ctx, b)
	if err != nil {
		fail("DescribeConfigs: %v", err)
	}
	if dcresp.Resources[0].ErrorCode != unknown {
		fail("DescribeConfigs: %v", kerr.ErrorForCode(dcresp.Resources[0].ErrorCode))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	loresp, err := lo.RequestWith(ctx, b)
	if err != nil {
		fail("ListOffsets: %v", err)
	}
	if code := loresp.Topics[0].Partitions[0].ErrorCode; code != unknown {
		fail("ListOffsets: %v", kerr.ErrorForCode(code))
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, batch
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	presp, err := pr.RequestWith(ctx, b)
	if err != nil {
		fail("Produce: %v", err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != unknown {
		fail("Produce: %v", kerr.ErrorForCode(code))
	}
}

// A topic created by a Metadata request (auto.create.topics.enable) is
// likewise known to every broker, its leader serving, when the answer
// comes.
func TestAutoCreatedTopicVisibleOnEveryBrokerAtOnce(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_NUM_PARTITIONS": "1"})
	cl := c.client(t)
	ctx := testCtx(t, 5*time.Minute)
	knowEveryBroker(t, ctx, cl)
	batch := testkit.SimpleBatch(1, time.Now().UnixMilli(), 10)
	for round := range 20 {
		topic := fmt.Sprintf("auto-%d", round)
		meta := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &topic
		meta.Topics = append(meta.Topics, mt)
		meta.AllowAutoTopicCreation = true
		if _, err := meta.RequestWith(ctx, cl.Broker(round%3+1)); err != nil {
			t.Fatalf("round %d: Metadata creating %s: %v", round, topic, err)
		}
		for id := int32(1); id <= 3; id++ {
			checkTopicEverywhere(ctx, t, cl, id, round, "auto-creation", topic, 1, "", batch)
		}
	}
}

// knowEveryBroker waits until cl knows all three brokers and reaches each,
// so that a request can be addressed to any of them.
func knowEveryBroker(t *testing.T, ctx context.Context, cl *kgo.Client) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		for id := 1; id <= 3; id++ {
			if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl.Broker(id)); err != nil {
				return err
			}
		}
		return err
	})
}
