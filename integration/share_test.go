package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setGroupConfigs sets GROUP resource configs and waits until DescribeConfigs
// shows them.
func setGroupConfigs(t testing.TB, cl *kgo.Client, group string, kv map[string]string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range kv {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dres := kmsg.NewDescribeConfigsRequestResource()
		dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		dreq.Resources = append(dreq.Resources, dres)
		dresp, err := dreq.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, c := range dresp.Resources[0].Configs {
			if c.Value != nil {
				got[c.Name] = *c.Value
			}
		}
		for k, v := range kv {
			if got[k] != v {
				return fmt.Errorf("%s is %q, want %q", k, got[k], v)
			}
		}
		return nil
	})
}

func topicID(t testing.TB, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, resp)
	}
	return resp.Topics[0].TopicID
}

// rawShareFetch opens a share session for member on the leader of
// topic-partition 0 and acquires up to maxRecords records there, without
// ever acknowledging them: a consumer that stalls while keeping its
// connection open. It returns the acquired offsets.
func rawShareFetch(t testing.TB, cl *kgo.Client, leader int32, group, member string, tid [16]byte, maxRecords int32) []int64 {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 5000, 1, 1<<20
	req.MaxRecords, req.BatchSize = maxRecords, maxRecords
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = tid
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl.Broker(int(leader)))
	if err != nil {
		t.Fatalf("ShareFetch: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("ShareFetch: %v", err)
	}
	var out []int64
	for _, t2 := range resp.Topics {
		for _, p := range t2.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("ShareFetch partition %d: %v", p.Partition, err)
			}
			for _, a := range p.AcquiredRecords {
				if a.DeliveryCount != 1 {
					t.Fatalf("first acquisition of %d-%d has delivery count %d", a.FirstOffset, a.LastOffset, a.DeliveryCount)
				}
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

type shareDelivery struct {
	consumer string
	key      string
	part     int32
	offset   int64
	count    int32
	ack      kgo.AckStatus
}

// TestShareGroupDelivery: two share consumers of one group read a topic
// together while a third member has taken records and stalls. Every record
// is accepted exactly once (an accepted record is never delivered again);
// a record one consumer releases is delivered again, with a higher delivery
// count; the stalled member's records come back once their acquisition
// lock expires; and a consumer joining afterwards gets nothing.
func TestShareGroupDelivery(t *testing.T) {
	c := startCluster(t, nil)
	const topic, group, total = "share-delivery", "share-delivery-group", 400
	c.createTopic(t, topic, 2, nil)
	admin := c.client(t)
	setGroupConfigs(t, admin, group, map[string]string{
		"share.auto.offset.reset":       "earliest",
		"share.record.lock.duration.ms": "2000",
	})

	prod := c.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testCtx(t, 3*time.Minute)
	for i := range total {
		if err := prod.ProduceSync(ctx, kgo.StringRecord("k"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	stalled := rawShareFetch(t, admin, c.leader(t, topic, 0).Leader, group, "stalled-member", topicID(t, admin, topic), 20)
	if len(stalled) == 0 {
		t.Fatal("the stalled member acquired nothing")
	}

	var mu sync.Mutex
	var log []shareDelivery
	accepted := map[string]int{}
	consume := func(name string, releaseFirst func(r *kgo.Record) bool) {
		// Ten records per fetch, so that the two consumers take turns.
		cl := c.client(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ShareMaxRecords(10))
		defer cl.Close()
		for ctx.Err() == nil {
			mu.Lock()
			done := len(accepted) == total
			mu.Unlock()
			if done {
				return
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			for _, e := range fs.Errors() {
				if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
					t.Errorf("%s: fetch error: %v", name, e.Err)
				}
			}
			for _, r := range fs.Records() {
				d := shareDelivery{consumer: name, key: string(r.Value), part: r.Partition, offset: r.Offset, count: r.DeliveryCount(), ack: kgo.AckAccept}
				if releaseFirst(r) && r.DeliveryCount() == 1 {
					d.ack = kgo.AckRelease
				}
				r.Ack(d.ack)
				mu.Lock()
				log = append(log, d)
				if d.ack == kgo.AckAccept {
					accepted[d.key]++
				}
				mu.Unlock()
			}
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := cl.FlushAcks(fctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: flush acks: %v", name, err)
			}
			cancel()
		}
	}
	released := func(r *kgo.Record) bool { return r.Offset%10 == 3 }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); consume("c1", released) }()
	go func() { defer wg.Done(); consume("c2", func(*kgo.Record) bool { return false }) }()
	wg.Wait()

	if len(accepted) != total {
		t.Fatalf("%d of %d records accepted before the deadline", len(accepted), total)
	}
	for k, n := range accepted {
		if n != 1 {
			t.Errorf("%s accepted %d times", k, n)
		}
	}
	perConsumer := map[string]int{}
	redelivered := map[[2]int64]int32{} // partition, offset -> highest delivery count
	for _, d := range log {
		perConsumer[d.consumer]++
		k := [2]int64{int64(d.part), d.offset}
		redelivered[k] = max(redelivered[k], d.count)
	}
	for _, d := range log {
		if d.ack == kgo.AckRelease && redelivered[[2]int64{int64(d.part), d.offset}] < 2 {
			t.Errorf("released %s (%d/%d) was not delivered again", d.key, d.part, d.offset)
		}
	}
	for _, o := range stalled {
		if redelivered[[2]int64{0, o}] < 2 {
			t.Errorf("offset %d held by the stalled member was not delivered again after its lock expired", o)
		}
	}
	t.Logf("deliveries per consumer: %v", perConsumer)

	// A consumer joining now gets nothing: everything was accepted.
	late := c.client(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	lctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	for lctx.Err() == nil {
		fs := late.PollFetches(lctx)
		for _, r := range fs.Records() {
			t.Errorf("accepted record %s (%d/%d) delivered again", r.Value, r.Partition, r.Offset)
		}
	}
}

// describeStartOffset asks the group's coordinator for the share-partition
// start offset of topic-partition 0.
func describeStartOffset(ctx context.Context, cl *kgo.Client, group, topic string) (int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return -1, err
	}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			return p.StartOffset, kerr.ErrorForCode(p.ErrorCode)
		}
	}
	return -1, fmt.Errorf("no partition in the answer")
}

// TestShareGroupLeaderFailover: a member acquires 100 records and accepts
// only the first 40; the partition's leader is then killed. The new leader
// resumes from the start offset the old one checkpointed: the 60 records
// never accepted are all delivered again (the start offset did not jump
// past them, as a fresh "latest" start would), and the accepted ones are
// not.
func TestShareGroupLeaderFailover(t *testing.T) {
	c := startCluster(t, map[string]string{"GOKAFKA_GROUP_SHARE_CHECKPOINT_INTERVAL_MS": "200"})
	const topic, group, total, acked = "share-failover", "share-failover-group", 100, 40
	admin := c.client(t)
	ctx := testCtx(t, 3*time.Minute)

	// Put the partition's leader on a node that does not coordinate the
	// group, so that the coordinator's answer comes from the checkpoint.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	var coord int32
	eventually(t, 30*time.Second, func() error {
		resp, err := fc.RequestWith(ctx, admin)
		if err != nil {
			return err
		}
		coord = resp.NodeID
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	leader := coord%3 + 1
	c.createTopicAssigned(t, topic, [][]int32{{leader, leader%3 + 1, (leader+1)%3 + 1}})
	setGroupConfigs(t, admin, group, map[string]string{"share.auto.offset.reset": "earliest"})

	prod := c.client(t, kgo.DefaultProduceTopic(topic))
	for i := range total {
		if err := prod.ProduceSync(ctx, kgo.StringRecord("k"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tid := topicID(t, admin, topic)
	got := rawShareFetch(t, admin, leader, group, "early-member", tid, total)
	if len(got) != total {
		t.Fatalf("acquired %d records, want %d", len(got), total)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("early-member"), 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = tid
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
		FirstOffset: 0, LastOffset: acked - 1, AcknowledgeTypes: []int8{1},
	})
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	aresp, err := ack.RequestWith(ctx, admin.Broker(int(leader)))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(aresp.ErrorCode); err != nil {
		t.Fatalf("ShareAcknowledge: %v", err)
	}
	if err := kerr.ErrorForCode(aresp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("ShareAcknowledge partition: %v", err)
	}
	// The coordinator does not lead the partition: it answers from the
	// checkpoint in the metadata, which is what a new leader starts from.
	eventually(t, 30*time.Second, func() error {
		off, err := describeStartOffset(ctx, admin, group, topic)
		if err != nil {
			return err
		}
		if off != acked {
			return fmt.Errorf("checkpointed start offset %d, want %d", off, acked)
		}
		return nil
	})

	c.node(leader).Kill()
	c.waitNewLeader(t, topic, 0, leader)

	cons := c.client(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	seen := map[int64]int{}
	for len(seen) < total-acked && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		for _, r := range fs.Records() {
			seen[r.Offset]++
			r.Ack(kgo.AckAccept)
		}
	}
	var offsets []int64
	for o := range seen {
		offsets = append(offsets, o)
	}
	slices.Sort(offsets)
	want := make([]int64, 0, total-acked)
	for o := int64(acked); o < total; o++ {
		want = append(want, o)
	}
	if !slices.Equal(offsets, want) {
		t.Fatalf("after failover the group got offsets %v, want %d-%d", offsets, acked, total-1)
	}
}

// TestShareGroupMembersSurviveCoordinatorKill: a share group's coordinator
// is killed with SIGKILL; the new coordinator loads the membership from
// __consumer_offsets, so the members' next heartbeats, at the epochs they
// had, are answered with those epochs instead of UNKNOWN_MEMBER_ID.
func TestShareGroupMembersSurviveCoordinatorKill(t *testing.T) {
	c := startCluster(t, nil)
	const topic, group = "share-coord-kill", "share-coord-kill-group"
	c.createTopic(t, topic, 2, nil)
	admin := c.client(t)
	ctx := testCtx(t, 2*time.Minute)
	coordinatorOf := func(cl *kgo.Client) (int32, error) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = group
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			return -1, err
		}
		return resp.NodeID, kerr.ErrorForCode(resp.ErrorCode)
	}
	var coord int32
	eventually(t, 30*time.Second, func() (err error) { coord, err = coordinatorOf(admin); return err })
	heartbeat := func(cl *kgo.Client, node int32, member string, epoch int32) (*kmsg.ShareGroupHeartbeatResponse, error) {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{topic}
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		if err != nil {
			return nil, err
		}
		return resp, kerr.ErrorForCode(resp.ErrorCode)
	}
	epochs := map[string]int32{}
	for _, m := range []string{"share-member-a", "share-member-b"} {
		eventually(t, 30*time.Second, func() error {
			resp, err := heartbeat(admin, coord, m, 0)
			if err == nil {
				epochs[m] = resp.MemberEpoch
			}
			return err
		})
	}
	for m, e := range epochs {
		resp, err := heartbeat(admin, coord, m, e)
		if err != nil {
			t.Fatalf("heartbeat of %s: %v", m, err)
		}
		epochs[m] = resp.MemberEpoch
	}

	t.Logf("killing coordinator %d with members at %v", coord, epochs)
	c.node(coord).Kill()
	probe := c.client(t)
	var next int32
	eventually(t, 60*time.Second, func() (err error) {
		next, err = coordinatorOf(probe)
		if err == nil && next == coord {
			return fmt.Errorf("node %d still named coordinator", coord)
		}
		return err
	})
	for m, e := range epochs {
		var resp *kmsg.ShareGroupHeartbeatResponse
		eventually(t, 60*time.Second, func() (err error) {
			resp, err = heartbeat(probe, next, m, e)
			if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.FencedMemberEpoch) {
				t.Fatalf("heartbeat of %s at epoch %d after the failover: %v", m, e, err)
			}
			return err
		})
		if resp.MemberEpoch != e {
			t.Errorf("member %s at epoch %d after the failover, was %d", m, resp.MemberEpoch, e)
		}
	}
}
