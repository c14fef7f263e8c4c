package integration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumer groups against a real broker with stock clients: kgo (cooperative
// sticky and range balancers), sarama's ConsumerGroup and kafka-go's Reader.
// Each test checks what users depend on: every record is consumed, members
// joining and leaving move partitions between them, committed offsets
// survive a restart and a new consumer resumes after them, and kadm's lag
// agrees.

// grpBroker starts a broker whose groups rebalance without the initial
// delay, as local setups configure it.
func grpBroker(t *testing.T) *broker {
	return startBroker(t, brokerOpts{Env: map[string]string{"GOKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"}})
}

// grpProduce writes n records with values "<prefix>-<i>" spread over the
// topic's partitions and returns the values.
func grpProduce(t *testing.T, b *broker, topic, prefix string, n int) map[string]bool {
	t.Helper()
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := testCtx(t, 60*time.Second)
	want := map[string]bool{}
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		v := prefix + "-" + strconv.Itoa(i)
		want[v] = true
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing %d records: %v", n, err)
	}
	return want
}

// grpSeen collects consumed values from several consumers.
type grpSeen struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *grpSeen) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.m[v]++
}

// missing returns how many of want have not been seen, and one example.
func (s *grpSeen) missing(want map[string]bool) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ex := 0, ""
	for v := range want {
		if s.m[v] == 0 {
			n++
			ex = v
		}
	}
	return n, ex
}

// grpAssignment returns member id → assigned partitions of topic, as the
// coordinator describes the group.
func grpAssignment(ctx context.Context, adm *kadm.Client, groupID, topic string) (map[string][]int32, string, error) {
	described, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return nil, "", err
	}
	g, ok := described[groupID]
	if !ok {
		return nil, "", fmt.Errorf("group %s not described", groupID)
	}
	if g.Err != nil {
		return nil, "", g.Err
	}
	out := map[string][]int32{}
	for _, m := range g.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, g.State, fmt.Errorf("member %s: assignment is not a consumer assignment", m.MemberID)
		}
		out[m.MemberID] = nil
		for _, tp := range ca.Topics {
			if tp.Topic == topic {
				out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
			}
		}
	}
	return out, g.State, nil
}

// grpWaitAssignment waits until the group is Stable with members members
// that together hold each of the topic's partitions exactly once, every
// member holding at least one.
func grpWaitAssignment(t *testing.T, adm *kadm.Client, groupID, topic string, members, partitions int) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		as, state, err := grpAssignment(ctx, adm, groupID, topic)
		if err != nil {
			return err
		}
		if state != "Stable" {
			return fmt.Errorf("group state %s", state)
		}
		if len(as) != members {
			return fmt.Errorf("%d members, want %d: %v", len(as), members, as)
		}
		seen := map[int32]bool{}
		for m, ps := range as {
			if len(ps) == 0 {
				return fmt.Errorf("member %s has no partitions: %v", m, as)
			}
			for _, p := range ps {
				if seen[p] {
					return fmt.Errorf("partition %d assigned twice: %v", p, as)
				}
				seen[p] = true
			}
		}
		if len(seen) != partitions {
			return fmt.Errorf("%d of %d partitions assigned: %v", len(seen), partitions, as)
		}
		return nil
	})
}

// grpKgoConsumer polls a kgo group consumer until ctx ends, recording
// values; it commits what it polled (kgo's default autocommit commits on
// revoke, so a rebalance does not re-deliver much).
func grpKgoConsumer(ctx context.Context, cl *kgo.Client, seen *grpSeen) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen.add(string(r.Value)) })
	}
}

func TestGroupKgoMembersJoinAndLeave(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := grpBroker(t)
			adm := b.admin(t)
			topic, groupID := "grp-kgo-"+tc.name, "g-kgo-"+tc.name
			const partitions = 6
			createTopic(t, adm, topic, partitions, nil)
			want := grpProduce(t, b, topic, "a", 300)

			seen := &grpSeen{}
			opts := []kgo.Opt{
				kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.Balancers(tc.balancer),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
			}
			ctx1, stop1 := context.WithCancel(context.Background())
			c1 := b.client(t, opts...)
			done1 := make(chan struct{})
			go func() { defer close(done1); grpKgoConsumer(ctx1, c1, seen) }()
			grpWaitAssignment(t, adm, groupID, topic, 1, partitions)

			// A second member joins: the partitions are split.
			ctx2, stop2 := context.WithCancel(context.Background())
			c2 := b.client(t, opts...)
			done2 := make(chan struct{})
			go func() { defer close(done2); grpKgoConsumer(ctx2, c2, seen) }()
			grpWaitAssignment(t, adm, groupID, topic, 2, partitions)

			more := grpProduce(t, b, topic, "b", 300)
			for v := range more {
				want[v] = true
			}
			eventually(t, 60*time.Second, func() error {
				if n, ex := seen.missing(want); n > 0 {
					return fmt.Errorf("%d of %d records not consumed yet, e.g. %s", n, len(want), ex)
				}
				return nil
			})

			// The second member leaves: the first takes every partition
			// again, and records produced afterwards all reach it.
			stop2()
			<-done2
			c2.Close()
			grpWaitAssignment(t, adm, groupID, topic, 1, partitions)
			last := grpProduce(t, b, topic, "c", 120)
			eventually(t, 60*time.Second, func() error {
				if n, ex := seen.missing(last); n > 0 {
					return fmt.Errorf("%d of %d records not consumed after the leave, e.g. %s", n, len(last), ex)
				}
				return nil
			})
			stop1()
			<-done1
		})
	}
}

// TestGroupCommitSurvivesRestart commits every offset, restarts the broker
// (the coordinator reloads the group from __consumer_offsets) and checks
// that a new consumer of the group reads only the records produced after
// the commit, and that kadm's lag follows.
func TestGroupCommitSurvivesRestart(t *testing.T) {
	b := grpBroker(t)
	adm := b.admin(t)
	const topic, groupID, partitions = "grp-resume", "g-resume", 4
	createTopic(t, adm, topic, partitions, nil)
	first := grpProduce(t, b, topic, "first", 200)

	seen := &grpSeen{}
	consumeAndCommit := func(want map[string]bool) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := testCtx(t, 60*time.Second)
		for {
			if n, _ := seen.missing(want); n == 0 {
				break
			}
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				n, ex := seen.missing(want)
				t.Fatalf("%d records never consumed, e.g. %s", n, ex)
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(string(r.Value)) })
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		// Leave the group so that the next consumer need not wait out this
		// one's session.
		if err := cl.LeaveGroupContext(ctx); err != nil {
			t.Fatalf("leave group: %v", err)
		}
	}
	consumeAndCommit(first)

	lag := func() (int64, error) {
		ctx := testCtx(t, 15*time.Second)
		lags, err := adm.Lag(ctx, groupID)
		if err != nil {
			return 0, err
		}
		l, ok := lags[groupID]
		if !ok {
			return 0, fmt.Errorf("no lag reported for %s", groupID)
		}
		if l.Error() != nil {
			return 0, l.Error()
		}
		return l.Lag.Total(), nil
	}
	if n, err := lag(); err != nil || n != 0 {
		t.Fatalf("lag after committing everything: %d, %v; want 0", n, err)
	}

	b.Restart()
	second := grpProduce(t, b, topic, "second", 100)
	eventually(t, 60*time.Second, func() error {
		n, err := lag()
		if err != nil {
			return err
		}
		if n != int64(len(second)) {
			return fmt.Errorf("lag %d, want %d", n, len(second))
		}
		return nil
	})

	consumeAndCommit(second)
	for v := range first {
		if c := seen.m[v]; c != 1 {
			t.Fatalf("record %s consumed %d times; committed records must not be read again after the restart", v, c)
		}
	}
	if n, err := lag(); err != nil || n != 0 {
		t.Fatalf("lag at the end: %d, %v; want 0", n, err)
	}
}

type grpSaramaHandler struct {
	seen *grpSeen
	// claims receives the partitions of each session.
	claims chan []int32
}

func (h *grpSaramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	var ps []int32
	for _, p := range s.Claims() {
		ps = append(ps, p...)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	select {
	case h.claims <- ps:
	default:
	}
	return nil
}
func (h *grpSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *grpSaramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.seen.add(string(m.Value))
		s.MarkMessage(m, "")
	}
	return nil
}

func TestGroupSaramaConsumerGroup(t *testing.T) {
	b := grpBroker(t)
	adm := b.admin(t)
	const topic, groupID, partitions = "grp-sarama", "g-sarama", 4
	createTopic(t, adm, topic, partitions, nil)
	want := grpProduce(t, b, topic, "s", 200)

	newGroup := func() sarama.ConsumerGroup {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_8_0_0
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = 6 * time.Second
		cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
		cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
		g, err := sarama.NewConsumerGroup([]string{b.Addr()}, groupID, cfg)
		if err != nil {
			t.Fatalf("sarama.NewConsumerGroup: %v", err)
		}
		return g
	}
	seen := &grpSeen{}
	run := func(ctx context.Context, g sarama.ConsumerGroup, h *grpSaramaHandler) chan error {
		errc := make(chan error, 1)
		go func() {
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		return errc
	}

	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	g1 := newGroup()
	h1 := &grpSaramaHandler{seen: seen, claims: make(chan []int32, 16)}
	errc1 := run(ctx1, g1, h1)
	grpWaitAssignment(t, adm, groupID, topic, 1, partitions)
	eventually(t, 60*time.Second, func() error {
		if n, ex := seen.missing(want); n > 0 {
			return fmt.Errorf("%d records not consumed, e.g. %s", n, ex)
		}
		return nil
	})

	ctx2, stop2 := context.WithCancel(context.Background())
	g2 := newGroup()
	h2 := &grpSaramaHandler{seen: seen, claims: make(chan []int32, 16)}
	errc2 := run(ctx2, g2, h2)
	grpWaitAssignment(t, adm, groupID, topic, 2, partitions)
	more := grpProduce(t, b, topic, "t", 200)
	eventually(t, 60*time.Second, func() error {
		if n, ex := seen.missing(more); n > 0 {
			return fmt.Errorf("%d records not consumed by two members, e.g. %s", n, ex)
		}
		return nil
	})

	stop2()
	if err := g2.Close(); err != nil {
		t.Fatalf("closing the second sarama member: %v", err)
	}
	if err := <-errc2; err != nil {
		t.Fatalf("second sarama member: %v", err)
	}
	grpWaitAssignment(t, adm, groupID, topic, 1, partitions)
	stop1()
	if err := g1.Close(); err != nil {
		t.Fatalf("closing the first sarama member: %v", err)
	}
	if err := <-errc1; err != nil {
		t.Fatalf("first sarama member: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		lags, err := adm.Lag(testCtx(t, 10*time.Second), groupID)
		if err != nil {
			return err
		}
		if l := lags[groupID]; l.Error() != nil || l.Lag.Total() != 0 {
			return fmt.Errorf("lag %d (%v), want 0 after sarama committed everything", l.Lag.Total(), l.Error())
		}
		return nil
	})
}

func TestGroupKafkaGoReader(t *testing.T) {
	b := grpBroker(t)
	adm := b.admin(t)
	const topic, groupID, partitions = "grp-kafkago", "g-kafkago", 3
	createTopic(t, adm, topic, partitions, nil)
	want := grpProduce(t, b, topic, "k", 150)

	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{b.Addr()}, GroupID: groupID, Topic: topic,
			StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
			SessionTimeout: 6 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
			RebalanceTimeout: 10 * time.Second, JoinGroupBackoff: 200 * time.Millisecond,
			CommitInterval: 0, // synchronous commits
		})
	}
	seen := &grpSeen{}
	read := func(r *kafka.Reader, want map[string]bool) {
		t.Helper()
		ctx := testCtx(t, 60*time.Second)
		for {
			if n, _ := seen.missing(want); n == 0 {
				return
			}
			m, err := r.FetchMessage(ctx)
			if err != nil {
				n, ex := seen.missing(want)
				t.Fatalf("kafka-go FetchMessage: %v (%d records not consumed, e.g. %s)", err, n, ex)
			}
			seen.add(string(m.Value))
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("kafka-go CommitMessages: %v", err)
			}
		}
	}
	r1 := newReader()
	read(r1, want)
	if err := r1.Close(); err != nil {
		t.Fatalf("closing kafka-go reader: %v", err)
	}

	// A new reader of the group resumes after the committed records.
	more := grpProduce(t, b, topic, "l", 60)
	r2 := newReader()
	defer r2.Close()
	read(r2, more)
	for v := range want {
		if c := seen.m[v]; c != 1 {
			t.Fatalf("record %s consumed %d times; the second reader must resume after the commits", v, c)
		}
	}
}

// TestGroupAdminAPIs checks ListGroups, DescribeGroups, OffsetDelete and
// DeleteGroups through kadm.
func TestGroupAdminAPIs(t *testing.T) {
	b := grpBroker(t)
	adm := b.admin(t)
	ctx := testCtx(t, 60*time.Second)
	const topic, groupID = "grp-admin", "g-admin"
	createTopic(t, adm, topic, 2, nil)
	grpProduce(t, b, topic, "x", 10)

	// Commit offsets as a group without members (generation -1).
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "m0"})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 4, LeaderEpoch: -1})
	resps, err := adm.CommitOffsets(ctx, groupID, os)
	if err != nil || resps.Error() != nil {
		t.Fatalf("CommitOffsets: %v %v", err, resps.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, groupID)
	if err != nil || fetched.Error() != nil {
		t.Fatalf("FetchOffsets: %v %v", err, fetched.Error())
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 3 || o.Metadata != "m0" {
		t.Fatalf("fetched offset of partition 0: %+v, want 3 with metadata m0", o)
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if g, ok := listed[groupID]; !ok || g.State != "Empty" {
		t.Fatalf("ListGroups: %v; want %s in state Empty", listed, groupID)
	}
	described, err := adm.DescribeGroups(ctx, groupID)
	if err != nil || described[groupID].State != "Empty" {
		t.Fatalf("DescribeGroups: %v %+v; want state Empty", err, described[groupID])
	}

	dresp, err := adm.DeleteOffsets(ctx, groupID, kadm.TopicsSet{topic: {1: {}}})
	if err != nil || dresp.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, dresp.Error())
	}
	fetched, _ = adm.FetchOffsets(ctx, groupID)
	if _, ok := fetched.Lookup(topic, 1); ok {
		t.Fatalf("offset of partition 1 still there after OffsetDelete: %v", fetched)
	}

	// A group with a member cannot be deleted.
	cl := b.client(t, kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic))
	go cl.PollFetches(ctx)
	grpWaitAssignment(t, adm, groupID, topic, 1, 2)
	if del, err := adm.DeleteGroup(ctx, groupID); err == nil && !errors.Is(del.Err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteGroup of a group with a member: %v, want NON_EMPTY_GROUP", del.Err)
	}
	if err := cl.LeaveGroupContext(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		del, err := adm.DeleteGroup(ctx, groupID)
		if err != nil {
			return err
		}
		return del.Err
	})
	described, err = adm.DescribeGroups(ctx, groupID)
	if err != nil || described[groupID].State != "Dead" {
		t.Fatalf("DescribeGroups after delete: %v %+v; want Dead", err, described[groupID])
	}
	fetched, err = adm.FetchOffsets(ctx, groupID)
	if err != nil || len(fetched) != 0 {
		t.Fatalf("offsets after DeleteGroups: %v %v; want none", fetched, err)
	}
}
