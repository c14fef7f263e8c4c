package integration

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describe848 asks for a consumer-protocol group's description.
func describe848(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	g := resp.Groups[0]
	return g, kerr.ErrorForCode(g.ErrorCode)
}

// waitStable848 waits up to timeout for the group to be stableWith n
// members over partitions partitions, and returns the description that was.
func waitStable848(t *testing.T, timeout time.Duration, ctx context.Context, cl *kgo.Client, group string, n int, partitions int32) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	var stable kmsg.ConsumerGroupDescribeResponseGroup
	eventually(t, timeout, func() error {
		g, err := describe848(ctx, cl, group)
		if err != nil {
			return err
		}
		stable = g
		return stableWith(g, n, partitions)
	})
	return stable
}

// waitCoordinatorMoved waits until a node other than from is named the
// group's coordinator.
func waitCoordinatorMoved(t *testing.T, ctx context.Context, adm *kadm.Client, group string, from int32) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		now := adm.FindGroupCoordinators(ctx, group)[group]
		if now.Err == nil && now.NodeID == from {
			return fmt.Errorf("node %d still named coordinator", from)
		}
		return now.Err
	})
}

// committedSum checks that the group's committed offsets add up to want.
func committedSum(ctx context.Context, adm *kadm.Client, group string, want int64) error {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != want {
		return fmt.Errorf("committed offsets sum to %d, want %d", sum, want)
	}
	return nil
}

// stableWith checks that the group is Stable with n members, each at the
// group epoch, and that every partition of a topic with partitions
// partitions is assigned to exactly one of them.
func stableWith(g kmsg.ConsumerGroupDescribeResponseGroup, n int, partitions int32) error {
	if g.State != "Stable" || len(g.Members) != n {
		return fmt.Errorf("state %s with %d members, want Stable with %d", g.State, len(g.Members), n)
	}
	owner := map[int32]string{}
	for _, m := range g.Members {
		if m.MemberEpoch != g.Epoch {
			return fmt.Errorf("member %s at epoch %d, group at %d", m.MemberID, m.MemberEpoch, g.Epoch)
		}
		for _, t := range m.Assignment.TopicPartitions {
			for _, p := range t.Partitions {
				if o, ok := owner[p]; ok {
					return fmt.Errorf("partition %d assigned to %s and %s", p, o, m.MemberID)
				}
				owner[p] = m.MemberID
			}
		}
	}
	if int32(len(owner)) != partitions {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), partitions)
	}
	return nil
}

// group848 is the setting of a consumer-protocol group test: a cluster,
// a topic with a producer, and what the test's members read (seen, by
// topic/value, guarded by mu).
type group848 struct {
	t    *testing.T
	c    *cluster
	ctx  context.Context
	prod *kgo.Client
	mu   sync.Mutex
	seen map[string]int
}

// newGroup848 starts a cluster, creates topic and produces its records 0
// to first-1.
func newGroup848(t *testing.T, topic string, partitions int32, first int) *group848 {
	t.Helper()
	f := &group848{t: t, c: startCluster(t, nil), seen: map[string]int{}}
	f.c.createTopic(t, topic, partitions, nil)
	f.ctx = testCtx(t, 3*time.Minute)
	f.prod = f.c.client(t, kgo.DefaultProduceTopic(topic))
	f.produce(0, first)
	return f
}

// produce produces records from to to-1 (key k<i>, value v<i> zero-padded
// to five digits) and waits for them to be acknowledged.
func (f *group848) produce(from, to int) {
	f.t.Helper()
	for i := from; i < to; i++ {
		f.prod.Produce(f.ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%05d", i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				f.t.Errorf("produce: %v", err)
			}
		})
	}
	if err := f.prod.Flush(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// read is a check for eventually: nil once the members have read at
// least n distinct records.
func (f *group848) read(n int) func() error {
	return func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.seen) < n {
			return fmt.Errorf("read %d of %d distinct records", len(f.seen), n)
		}
		return nil
	}
}

// consumer848 is a kgo group member using the consumer protocol that
// records what it reads and commits after every poll.
type consumer848 struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startConsumer848(t *testing.T, c *cluster, group string, mu *sync.Mutex, seen map[string]int, opts ...kgo.Opt) *consumer848 {
	t.Helper()
	cl := c.client(t, append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ServerSideBalancer(), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	cc := &consumer848{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(cc.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen[r.Topic+"/"+string(r.Value)]++ })
			mu.Unlock()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
		}
	}()
	return cc
}

// stop commits what it read and leaves the group.
func (cc *consumer848) stop() {
	cc.cancel()
	<-cc.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = cc.cl.CommitUncommittedOffsets(ctx)
	cc.cl.Close()
}

// TestConsumerProtocolGroup drives a KIP-848 group with kgo members on a
// three-node cluster: the first member gets every partition, a second one
// gets half once the first revoked them, a leaving member's partitions move
// to the other, every record is read and committed, a new member resumes
// from the committed offsets, the group is listed and described as a
// consumer group, and a classic member may join and leave it.
func TestConsumerProtocolGroup(t *testing.T) {
	const topic, group, partitions, total = "g848", "g848-group", 6, 600
	f := newGroup848(t, topic, partitions, total/2)
	c, ctx, mu, seen := f.c, f.ctx, &f.mu, f.seen
	adm := c.client(t)

	a := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic))
	waitStable848(t, 60*time.Second, ctx, adm, group, 1, partitions)

	b := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic))
	eventually(t, 60*time.Second, func() error {
		g, err := describe848(ctx, adm, group)
		if err != nil {
			return err
		}
		if err := stableWith(g, 2, partitions); err != nil {
			return err
		}
		for _, m := range g.Members {
			if n := len(m.Assignment.TopicPartitions[0].Partitions); n != partitions/2 {
				return fmt.Errorf("member %s has %d partitions, want %d", m.MemberID, n, partitions/2)
			}
		}
		return nil
	})
	f.produce(total/2, total)
	eventually(t, 60*time.Second, f.read(total))

	// Listed as a consumer group; the classic APIs do not serve it.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"consumer"}
	shards := adm.RequestSharded(ctx, lreq)
	listed := false
	for _, s := range shards {
		if s.Err != nil {
			t.Fatalf("ListGroups: %v", s.Err)
		}
		for _, g := range s.Resp.(*kmsg.ListGroupsResponse).Groups {
			if g.Group == group {
				listed = g.GroupType == "consumer" && g.ProtocolType == "consumer" && g.GroupState == "Stable"
				if !listed {
					t.Errorf("listed as %+v", g)
				}
			}
		}
	}
	if !listed {
		t.Error("group not listed with the consumer type filter")
	}
	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Group, jreq.ProtocolType, jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	jreq.Protocols = append(jreq.Protocols, jp)
	jreq.MemberID = "classic-intruder"
	// A classic member joins a consumer group as one of its members
	// (KIP-848's online migration), here subscribing to nothing; the
	// coordinator assigns, so there is no leader.
	if jresp, err := jreq.RequestWith(ctx, adm); err != nil || jresp.ErrorCode != 0 || jresp.LeaderID != "" || jresp.ProtocolType == nil || *jresp.ProtocolType != "consumer" {
		t.Errorf("classic JoinGroup to a consumer group: %v %+v", err, jresp)
	}
	lreqLeave := kmsg.NewPtrLeaveGroupRequest()
	lreqLeave.Group = group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "classic-intruder"
	lreqLeave.Members = append(lreqLeave.Members, lm)
	if lresp, err := lreqLeave.RequestWith(ctx, adm); err != nil || lresp.ErrorCode != 0 || len(lresp.Members) != 1 || lresp.Members[0].ErrorCode != 0 {
		t.Errorf("classic LeaveGroup from a consumer group: %v %+v", err, lresp)
	}
	// Metadata that is not a consumer subscription is refused.
	jreq.Protocols[0].Metadata = []byte{0xff}
	if jresp, err := jreq.RequestWith(ctx, adm); err != nil || jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic JoinGroup with a malformed subscription: %v %v", err, kerr.ErrorForCode(jresp.ErrorCode))
	}

	// a leaves: b gets everything.
	a.stop()
	waitStable848(t, 60*time.Second, ctx, adm, group, 1, partitions)
	b.stop()

	// Every record was read; the committed offsets are the end offsets.
	committed := map[int32]int64{}
	eventually(t, 30*time.Second, func() error {
		freq := kmsg.NewPtrOffsetFetchRequest()
		freq.Group = group
		fresp, err := freq.RequestWith(ctx, adm)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(fresp.ErrorCode); err != nil {
			return err
		}
		var sum int64
		for _, t := range fresp.Topics {
			for _, p := range t.Partitions {
				committed[p.Partition] = p.Offset
				sum += p.Offset
			}
		}
		if sum != total {
			return fmt.Errorf("committed offsets sum to %d, want %d", sum, total)
		}
		return nil
	})

	// A new member resumes from there: it reads only what comes next.
	f.produce(total, total+60)
	mu.Lock()
	before := len(seen)
	clear(seen)
	mu.Unlock()
	if before != total {
		t.Fatalf("read %d distinct records, want %d", before, total)
	}
	resumed := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic))
	eventually(t, 60*time.Second, f.read(60))
	resumed.stop()
	mu.Lock()
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	mu.Unlock()
	sort.Strings(keys)
	if len(keys) != 60 || keys[0] != fmt.Sprintf("%s/v%05d", topic, total) {
		t.Fatalf("resumed member read %d records starting at %v, want the 60 after the commit", len(keys), keys[:min(3, len(keys))])
	}
}

// TestConsumerProtocolRegexSubscription: a member subscribed by regex
// (resolved by the broker against whole topic names) consumes the topics
// that match, including one created after it joined, and not the others.
func TestConsumerProtocolRegexSubscription(t *testing.T) {
	c := startCluster(t, nil)
	ctx := testCtx(t, 2*time.Minute)
	c.createTopic(t, "re848-a", 2, nil)
	c.createTopic(t, "other848", 1, nil)
	prod := c.client(t)
	produceTo := func(topic string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	produceTo("re848-a")
	produceTo("other848")

	var mu sync.Mutex
	seen := map[string]int{}
	cons := startConsumer848(t, c, "re848-group", &mu, seen, kgo.ConsumeRegex(), kgo.ConsumeTopics("re848-.*"), kgo.MetadataMinAge(200*time.Millisecond))
	defer cons.stop()
	has := func(k string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if seen[k] == 0 {
				return fmt.Errorf("%s not read; read %v", k, seen)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, has("re848-a/re848-a"))

	c.createTopic(t, "re848-b", 3, nil)
	produceTo("re848-b")
	eventually(t, 60*time.Second, has("re848-b/re848-b"))

	eventually(t, 30*time.Second, func() error {
		g, err := describe848(ctx, c.client(t), "re848-group")
		if err != nil {
			return err
		}
		if len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil {
			return fmt.Errorf("members %+v", g.Members)
		}
		n := 0
		for _, tp := range g.Members[0].Assignment.TopicPartitions {
			if tp.Topic == "other848" {
				return fmt.Errorf("assigned %s", tp.Topic)
			}
			n += len(tp.Partitions)
		}
		if n != 5 {
			return fmt.Errorf("%d partitions assigned, want 5", n)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if seen["other848/other848"] != 0 {
		t.Error("read a topic the regex does not match")
	}
}

// TestConsumerProtocolCoordinatorFailover: the broker coordinating a
// consumer-protocol group is killed while two members consume and records
// keep coming: the members find the new coordinator, which loaded their
// membership; they must carry on, read every record, end up Stable with
// every partition assigned once, and commit to the end.
func TestConsumerProtocolCoordinatorFailover(t *testing.T) {
	const topic, group, partitions, total = "g848-failover", "g848-failover-group", 3, 900
	f := newGroup848(t, topic, partitions, total/2)
	c, ctx, mu, seen := f.c, f.ctx, &f.mu, f.seen
	// kgo's consumer-protocol heartbeat keeps its cached coordinator
	// across dial errors (a member with partitions drops it when a commit
	// fails to dial); it looks the coordinator up again once the dead
	// broker leaves its metadata, which an idle member refreshes only every
	// metadata.max.age (5 minutes by default).
	refresh := kgo.MetadataMaxAge(2 * time.Second)
	a := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic), refresh)
	b := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic), refresh)
	eventually(t, 60*time.Second, f.read(total/2))

	adm := c.admin(t)
	r := adm.FindGroupCoordinators(ctx, group)[group]
	if r.Err != nil {
		t.Fatalf("FindGroupCoordinators: %v", r.Err)
	}
	t.Logf("killing coordinator %d", r.NodeID)
	c.node(r.NodeID).Kill()
	f.produce(total/2, total)

	eventually(t, 90*time.Second, f.read(total))
	// A client caches a group's coordinator and does not look again after
	// dial errors; ask for the probe's only once another node coordinates.
	waitCoordinatorMoved(t, ctx, adm, group, r.NodeID)
	probe := c.client(t)
	waitStable848(t, 90*time.Second, ctx, probe, group, 2, partitions)
	a.stop()
	b.stop()
	eventually(t, 60*time.Second, func() error { return committedSum(ctx, adm, group, total) })
}

// TestConsumerProtocolMembersSurviveCoordinatorKill kills the coordinator
// of a KIP-848 group with SIGKILL: the new coordinator loads the group's
// records, so the members keep their ids, epochs and partitions (the group
// epoch does not move, as it would if anyone rejoined) and consumption
// goes on with no record read twice, everything having been committed.
func TestConsumerProtocolMembersSurviveCoordinatorKill(t *testing.T) {
	const topic, group, partitions, total = "g848-kill", "g848-kill-group", 4, 800
	f := newGroup848(t, topic, partitions, total/2)
	c, ctx, mu, seen := f.c, f.ctx, &f.mu, f.seen
	refresh := kgo.MetadataMaxAge(2 * time.Second)
	a := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic), refresh)
	b := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic), refresh)
	x := startConsumer848(t, c, group, mu, seen, kgo.ConsumeTopics(topic), refresh)
	probe := c.client(t)
	waitStable848(t, 60*time.Second, ctx, probe, group, 3, partitions)
	// A member leaving moves the group epoch past what two members
	// joining afresh would reach.
	x.stop()
	eventually(t, 60*time.Second, f.read(total/2))
	adm := c.admin(t)
	var before kmsg.ConsumerGroupDescribeResponseGroup
	eventually(t, 60*time.Second, func() error {
		g, err := describe848(ctx, probe, group)
		if err != nil {
			return err
		}
		if err := stableWith(g, 2, partitions); err != nil {
			return err
		}
		if err := committedSum(ctx, adm, group, total/2); err != nil {
			return err
		}
		before = g
		return nil
	})
	if before.Epoch < 4 {
		t.Fatalf("group epoch %d before the kill, want at least 4", before.Epoch)
	}
	mu.Lock()
	seenBefore := make(map[string]int, len(seen))
	for v, n := range seen {
		seenBefore[v] = n
	}
	mu.Unlock()

	r := adm.FindGroupCoordinators(ctx, group)[group]
	if r.Err != nil {
		t.Fatalf("FindGroupCoordinators: %v", r.Err)
	}
	t.Logf("killing coordinator %d at group epoch %d", r.NodeID, before.Epoch)
	c.node(r.NodeID).Kill()
	f.produce(total/2, total)
	eventually(t, 90*time.Second, f.read(total))

	waitCoordinatorMoved(t, ctx, adm, group, r.NodeID)
	probe2 := c.client(t)
	after := waitStable848(t, 90*time.Second, ctx, probe2, group, 2, partitions)
	if after.Epoch != before.Epoch {
		t.Errorf("group epoch %d after the failover, %d before: members rejoined", after.Epoch, before.Epoch)
	}
	ids := func(g kmsg.ConsumerGroupDescribeResponseGroup) map[string]int32 {
		out := map[string]int32{}
		for _, m := range g.Members {
			out[m.MemberID] = m.MemberEpoch
		}
		return out
	}
	if got, want := ids(after), ids(before); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("members (id: epoch) after the failover %v, before %v", got, want)
	}
	a.stop()
	b.stop()
	mu.Lock()
	defer mu.Unlock()
	var dups []string
	for v, n := range seen {
		if n0 := seenBefore[v]; n > n0 && n0 > 0 || n > n0+1 {
			dups = append(dups, v)
		}
	}
	sort.Strings(dups)
	if len(dups) > 0 {
		t.Errorf("%d records read again after the kill (%d read and committed before it): %v", len(dups), len(seenBefore), dups)
	}
}

// TestOffsetCommitAndFetchByTopicID drives OffsetCommit and OffsetFetch v10
// (Kafka 4.1), which name topics by id: a commit by id is fetched back by
// id and by name (older versions), fetching every offset answers with the
// topic's id, and an unknown id answers UNKNOWN_TOPIC_ID.
func TestOffsetCommitAndFetchByTopicID(t *testing.T) {
	b := grpBroker(t)
	ctx := testCtx(t, 60*time.Second)
	adm := b.admin(t)
	createTopic(t, adm, "by-id", 2, nil)
	cl := b.client(t)
	td, err := adm.ListTopics(ctx, "by-id")
	if err != nil || td["by-id"].Err != nil {
		t.Fatalf("metadata: %v %v", err, td["by-id"].Err)
	}
	id := [16]byte(td["by-id"].ID)
	unknown := [16]byte{0xde, 0xad}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "by-id-group", -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 42
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	var cresp *kmsg.OffsetCommitResponse
	eventually(t, 30*time.Second, func() error {
		cresp, err = commit.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(cresp.Topics[0].Partitions[0].ErrorCode)
	})
	if cresp.Topics[0].TopicID != id {
		t.Errorf("commit answer names topic %x, want its id %x", cresp.Topics[0].TopicID, id)
	}
	if got := cresp.Topics[1].Partitions[0].ErrorCode; got != kerr.UnknownTopicID.Code {
		t.Errorf("commit to an unknown topic id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(got))
	}

	fetch := func(topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 10
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberEpoch, g.Topics = "by-id-group", -1, topics
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("OffsetFetch v10: %v %+v", err, resp)
		}
		return resp.Groups[0]
	}
	all := fetch(nil)
	if len(all.Topics) != 1 || all.Topics[0].TopicID != id || len(all.Topics[0].Partitions) != 1 || all.Topics[0].Partitions[0].Offset != 42 {
		t.Errorf("fetch of every offset: %+v, want by-id (by its id) partition 1 at 42", all.Topics)
	}
	byID := kmsg.NewOffsetFetchRequestGroupTopic()
	byID.TopicID, byID.Partitions = id, []int32{0, 1}
	unk := kmsg.NewOffsetFetchRequestGroupTopic()
	unk.TopicID, unk.Partitions = unknown, []int32{0}
	some := fetch([]kmsg.OffsetFetchRequestGroupTopic{byID, unk})
	offsets := map[[16]byte]map[int32]int64{}
	codes := map[[16]byte]int16{}
	for _, rt := range some.Topics {
		offsets[rt.TopicID] = map[int32]int64{}
		for _, p := range rt.Partitions {
			offsets[rt.TopicID][p.Partition] = p.Offset
			codes[rt.TopicID] = max(codes[rt.TopicID], p.ErrorCode)
		}
	}
	if o := offsets[id]; len(o) != 2 || o[0] != -1 || o[1] != 42 || codes[id] != 0 {
		t.Errorf("fetch by id: %v (error %d), want partition 0 uncommitted and 1 at 42", o, codes[id])
	}
	if codes[unknown] != kerr.UnknownTopicID.Code {
		t.Errorf("fetch of an unknown topic id: error %d, want UNKNOWN_TOPIC_ID", codes[unknown])
	}
	// Older versions see the same commit by name.
	offs, err := adm.FetchOffsets(ctx, "by-id-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("by-id", 1); !ok || o.At != 42 {
		t.Errorf("fetch by name: %+v %v, want 42", o, ok)
	}
}
