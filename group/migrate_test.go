package group

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
)

// subscription is a classic consumer's JoinGroup metadata for topic "t",
// owning parts of it.
func subscription(owned ...int32) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version = 1
	s.Topics = []string{"t"}
	if len(owned) > 0 {
		s.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: owned}}
	}
	return s.AppendTo(nil)
}

// assignmentOf is a classic consumer's assignment of parts of "t".
func assignmentOf(parts ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: parts}}
	return a.AppendTo(nil)
}

// partsOf decodes an assignment of "t" to its sorted partitions.
func partsOf(t *testing.T, b []byte) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	var out []int32
	for _, tp := range a.Topics {
		if tp.Topic == "t" {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func classicJoinParams(id string, owned ...int32) JoinParams {
	return JoinParams{
		MemberID: id, ClientID: "classic", ClientHost: "/127.0.0.1", RebalanceTimeoutMs: 60000, SessionTimeoutMs: 10000,
		ProtocolType: "consumer", Protocols: []Protocol{{Name: "cooperative-sticky", Metadata: subscription(owned...)}},
	}
}

func newMigrationCoordinator(t *testing.T, meta *fake.Meta, lg *fake.Log, policy MigrationPolicy) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MigrationPolicy = policy
	c, err := New(cfg, meta, lg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// stableClassicMember makes a one-member classic group "g" whose member
// owns all four partitions of "t" in generation 1, and returns its id.
func stableClassicMember(t *testing.T, c *Coordinator) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jr := c.JoinGroup(ctx, "g", classicJoinParams(""))
	if jr.Err != nil || jr.Generation != 1 || jr.LeaderID != jr.MemberID {
		t.Fatalf("classic join: %+v", jr)
	}
	sr := c.SyncGroup(ctx, "g", SyncParams{MemberID: jr.MemberID, Generation: 1, Assignments: map[string][]byte{jr.MemberID: assignmentOf(0, 1, 2, 3)}})
	if sr.Err != nil {
		t.Fatalf("classic sync: %v", sr.Err)
	}
	return jr.MemberID
}

// The online upgrade (KIP-848): a consumer-protocol member joining a
// classic group with members converts it; the classic member stays,
// keeping its partitions until it rejoins and gives up those the new
// target moves, told by REBALANCE_IN_PROGRESS on Heartbeat; commits check
// its generation (its member epoch). A failover keeps it a classic member.
// When the consumer-protocol member leaves, the group is classic again and
// rebalances.
func TestClassicGroupUpgradesOnlineAndDowngradesWhenTheLastConsumerMemberLeaves(t *testing.T) {
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 4))
	c := newMigrationCoordinator(t, meta, fake.NewLog(), MigrationBidirectional)
	waitLoaded(t, c, "g")
	a := stableClassicMember(t, c)
	ctx := context.Background()

	b := c.ConsumerGroupHeartbeat("g", joinHB("b"))
	if b.Err != nil || b.MemberEpoch != 2 || count(b.Assignment) != 0 {
		t.Fatalf("consumer member joining the classic group: %+v, want epoch 2 and nothing yet (all owned by the classic member)", b)
	}
	d, _, err := c.DescribeConsumerGroup("g")
	if err != nil || d.Epoch != 2 || len(d.Members) != 2 {
		t.Fatalf("after the upgrade: %+v %v", d, err)
	}
	for _, m := range d.Members {
		if m.MemberID == a && (m.MemberEpoch != 1 || count(m.Assignment) != 4 || !m.Classic) {
			t.Fatalf("classic member after the upgrade: %+v, want a classic member at epoch 1 owning all four", m)
		}
		if m.MemberID == "b" && m.Classic {
			t.Fatalf("consumer-protocol member described as classic: %+v", m)
		}
	}
	if err := c.Heartbeat("g", a, nil, 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("classic heartbeat after the upgrade: %v, want REBALANCE_IN_PROGRESS", err)
	}
	// Rejoin still owning all four: two are to be revoked, the epoch
	// stays until they are.
	jr := c.JoinGroup(ctx, "g", classicJoinParams(a, 0, 1, 2, 3))
	if jr.Err != nil || jr.Generation != 1 || jr.LeaderID != "" || *jr.ProtocolName != "cooperative-sticky" {
		t.Fatalf("classic rejoin: %+v", jr)
	}
	sr := c.SyncGroup(ctx, "g", SyncParams{MemberID: a, Generation: 1})
	if sr.Err != nil {
		t.Fatal(sr.Err)
	}
	kept := partsOf(t, sr.Assignment)
	if len(kept) != 2 {
		t.Fatalf("sync while revoking: %v, want the two partitions kept", kept)
	}
	if err := c.Heartbeat("g", a, nil, 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat with partitions to revoke: %v", err)
	}
	jr = c.JoinGroup(ctx, "g", classicJoinParams(a, kept...))
	if jr.Err != nil || jr.Generation != 2 {
		t.Fatalf("rejoin after revoking: %+v, want generation 2", jr)
	}
	if sr = c.SyncGroup(ctx, "g", SyncParams{MemberID: a, Generation: 2}); sr.Err != nil || !slices.Equal(partsOf(t, sr.Assignment), kept) {
		t.Fatalf("sync at generation 2: %+v", sr)
	}
	if err := c.Heartbeat("g", a, nil, 2); err != nil {
		t.Fatalf("heartbeat once reconciled: %v", err)
	}
	b = c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "b", MemberEpoch: b.MemberEpoch, Owned: map[cluster.TopicID][]int32{}})
	if b.Err != nil || count(b.Assignment) != 2 {
		t.Fatalf("consumer member once the classic member released: %+v", b)
	}
	tp := TopicPartition{Topic: "t", Partition: kept[0]}
	commit := func(gen int32) error {
		return c.CommitOffsets(ctx, "g", CommitParams{MemberID: a, Generation: gen, APIVersion: 8, Offsets: []CommitOffset{
			{TP: tp, OffsetAndMetadata: OffsetAndMetadata{Offset: 5, LeaderEpoch: -1, ExpireTimestamp: -1}},
		}})[0]
	}
	if err := commit(1); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("classic commit at an old generation: %v, want ILLEGAL_GENERATION", err)
	}
	if err := commit(2); err != nil {
		t.Fatalf("classic commit (v8) at its generation: %v", err)
	}
	if _, err := c.FetchOffsetsAs("g", &a, 1, nil); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("classic offset fetch at an old generation: %v, want ILLEGAL_GENERATION", err)
	}
	if got, err := c.FetchOffsetsAs("g", &a, 2, []TopicPartition{tp}); err != nil || got[0].Offset != 5 {
		t.Fatalf("classic offset fetch at its generation: %+v %v", got, err)
	}

	// Failover: the classic member is still one, at its generation.
	before, _, _ := c.DescribeConsumerGroup("g")
	meta.Publish(imageWithTopic(2, 1, 4))
	meta.Publish(imageWithTopic(1, 2, 4))
	waitLoaded(t, c, "g")
	after, _, err := c.DescribeConsumerGroup("g")
	if err != nil || after.Epoch != before.Epoch || len(after.Members) != 2 {
		t.Fatalf("after failover: %+v %v", after, err)
	}
	if err := c.Heartbeat("g", a, nil, 2); err != nil {
		t.Fatalf("classic heartbeat after failover: %v", err)
	}

	// The consumer member leaves: back to a classic group, rebalancing,
	// the classic member keeping its assignment meanwhile.
	if r := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "b", MemberEpoch: leaveEpoch}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if _, _, err := c.DescribeConsumerGroup("g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("ConsumerGroupDescribe after the downgrade: %v", err)
	}
	s, err := c.DescribeGroup("g")
	if err != nil || s.State != StatePreparingRebalance || len(s.Members) != 1 || s.Members[0].MemberID != a {
		t.Fatalf("after the downgrade: %+v %v", s, err)
	}
	if err := c.Heartbeat("g", a, nil, 2); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after the downgrade: %v, want REBALANCE_IN_PROGRESS", err)
	}
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	jr = c.JoinGroup(jctx, "g", classicJoinParams(a, kept...))
	if jr.Err != nil || jr.Generation != 3 || jr.LeaderID != a {
		t.Fatalf("rejoin of the classic group: %+v", jr)
	}
	if got, err := c.FetchOffsets("g", []TopicPartition{tp}); err != nil || got[0].Offset != 5 {
		t.Fatalf("offsets across the conversions: %+v %v", got, err)
	}
}

// The policy gates each direction: without upgrade the classic group stays
// classic (GROUP_ID_NOT_FOUND to the consumer-protocol member, as before
// online migration); without downgrade a consumer group keeps its classic
// members when the last consumer-protocol member leaves.
func TestMigrationPolicyGatesUpgradeAndDowngrade(t *testing.T) {
	for _, policy := range []MigrationPolicy{MigrationDisabled, MigrationDowngrade} {
		meta := fake.NewMeta(1, imageWithTopic(1, 0, 4))
		c := newMigrationCoordinator(t, meta, fake.NewLog(), policy)
		waitLoaded(t, c, "g")
		stableClassicMember(t, c)
		if r := c.ConsumerGroupHeartbeat("g", joinHB("b")); !errors.Is(r.Err, ErrGroupIDNotFound) {
			t.Fatalf("%s: consumer member joining a classic group: %v, want GROUP_ID_NOT_FOUND", policy, r.Err)
		}
	}
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 4))
	c := newMigrationCoordinator(t, meta, fake.NewLog(), MigrationUpgrade)
	waitLoaded(t, c, "g")
	a := stableClassicMember(t, c)
	if r := c.ConsumerGroupHeartbeat("g", joinHB("b")); r.Err != nil {
		t.Fatalf("upgrade: %v", r.Err)
	}
	if r := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "b", MemberEpoch: leaveEpoch}); r.Err != nil {
		t.Fatal(r.Err)
	}
	d, _, err := c.DescribeConsumerGroup("g")
	if err != nil || len(d.Members) != 1 || d.Members[0].MemberID != a {
		t.Fatalf("upgrade-only policy after the last consumer member left: %+v %v, want a consumer group of the classic member", d, err)
	}
}

// splitBatches splits a read of the log into its batches.
func splitBatches(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		h, err := partition.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

// A coordinator that fails over at any point of a migration loads a
// consistent group: for every prefix of the log (cut between batches, as
// a new leader holds whole batches), the group is either the classic
// group of the classic member or the consumer group of both members, each
// member with its assignment, never a mix and never neither.
func TestFailoverMidMigrationLoadsEitherTheClassicOrTheConsumerGroup(t *testing.T) {
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 4))
	lg := fake.NewLog()
	c := newMigrationCoordinator(t, meta, lg, MigrationBidirectional)
	waitLoaded(t, c, "g")
	a := stableClassicMember(t, c)
	if r := c.ConsumerGroupHeartbeat("g", joinHB("b")); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := c.Heartbeat("g", a, nil, 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatal(err)
	}
	if r := c.ConsumerGroupHeartbeat("g", ConsumerHeartbeat{Version: 1, MemberID: "b", MemberEpoch: leaveEpoch}); r.Err != nil {
		t.Fatal(r.Err)
	}
	c.Close()

	tp := TopicPartition{Topic: OffsetsTopic}
	_, leo, _, _ := lg.Bounds(tp)
	raw, err := lg.Read(tp, 0, leo, 0)
	if err != nil {
		t.Fatal(err)
	}
	batches := splitBatches(t, raw)
	var kinds []string
	for n := 1; n <= len(batches); n++ {
		prefix := fake.NewLog()
		for _, b := range batches[:n] {
			prefix.Put(tp, b)
		}
		c2 := newMigrationCoordinator(t, fake.NewMeta(1, imageWithTopic(1, 5, 4)), prefix, MigrationBidirectional)
		waitLoaded(t, c2, "g")
		d, _, cerr := c2.DescribeConsumerGroup("g")
		s, _ := c2.DescribeGroup("g")
		switch {
		case cerr == nil:
			if len(d.Members) != 2 || len(s.Members) != 0 {
				t.Fatalf("prefix of %d batches: consumer group %+v with classic %+v", n, d, s)
			}
			for _, m := range d.Members {
				if m.MemberID == a && count(m.Assignment) != 4 {
					t.Fatalf("prefix of %d batches: classic member lost its assignment: %+v", n, m)
				}
			}
			// The classic member is known as one after the load.
			if err := c2.Heartbeat("g", a, nil, 1); !errors.Is(err, ErrRebalanceInProgress) {
				t.Fatalf("prefix of %d batches: classic heartbeat: %v", n, err)
			}
			kinds = append(kinds, "consumer")
		case errors.Is(cerr, ErrGroupIDNotFound):
			if len(s.Members) != 1 || s.Members[0].MemberID != a || !slices.Equal(partsOf(t, s.Members[0].Assignment), []int32{0, 1, 2, 3}) {
				t.Fatalf("prefix of %d batches: classic group %+v", n, s)
			}
			kinds = append(kinds, "classic")
		default:
			t.Fatalf("prefix of %d batches: %v", n, cerr)
		}
		c2.Close()
	}
	if !slices.Contains(kinds, "consumer") || kinds[len(kinds)-1] != "classic" {
		t.Fatalf("groups loaded by prefix: %v, want the consumer group then the classic group again", kinds)
	}
}

// migrationView is topic "t" of four partitions, as imageWithTopic has it.
func migrationView() *TopicsView {
	return testView(TopicMeta{Name: "t", ID: cluster.TopicID{9}, Partitions: 4})
}

func shortSession(p JoinParams) JoinParams {
	p.SessionTimeoutMs, p.RebalanceTimeoutMs = 10000, 30000
	return p
}

// A classic member's ClassicMemberMetadata (session timeout, protocols)
// goes into its member record and comes back on load, its session
// restarting with its own timeout.
func TestClassicMemberMetadataRoundTripsThroughItsRecord(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	if r := g.classicJoin(0, view, shortSession(classicJoinParams("a"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	got, ok, err := loadConsumerGroup("g", g.deps, g.consumerRecords(), view, 100)
	if err != nil || !ok {
		t.Fatalf("load: %v %v", ok, err)
	}
	m := got.members["a"]
	if m == nil || m.classic == nil || m.classic.sessionTimeoutMs != 10000 || len(m.classic.protocols) != 1 ||
		m.classic.protocols[0].Name != "cooperative-sticky" || string(m.classic.protocols[0].Metadata) != string(subscription()) {
		t.Fatalf("classic member after load: %+v", m)
	}
	if m.sessionDeadline != 100+10000 {
		t.Fatalf("session deadline %d after load, want the classic session timeout from load time", m.sessionDeadline)
	}
	if err := got.classicHeartbeat(200, "a", nil, m.epoch); err != nil {
		t.Fatalf("heartbeat after load: %v", err)
	}
	// A torn member record is an error, never a panic or a classic
	// member with half its metadata.
	key := string(consumerMemberKey(recConsumerGroupMemberMetadata, "g", "a"))
	full := g.consumerRecords()
	for i := range len(full[key]) {
		recs := g.consumerRecords()
		recs[key] = full[key][:i]
		if _, _, err := loadConsumerGroup("g", g.deps, recs, view, 0); err == nil {
			t.Fatalf("member record cut at %d of %d loaded", i, len(full[key]))
		}
	}
}

// A classic member's session is its JoinGroup session timeout, not
// group.consumer.session.timeout.ms; each Heartbeat restarts it.
func TestClassicMemberExpiresAtItsOwnSessionTimeout(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	r := g.classicJoin(0, view, shortSession(classicJoinParams("a")))
	if s := g.classicSync(0, view, SyncParams{MemberID: "a", Generation: r.Generation}); s.Err != nil || len(partsOf(t, s.Assignment)) != 4 {
		t.Fatalf("sync: %+v", s)
	}
	if err := g.classicHeartbeat(5000, "a", nil, r.Generation); err != nil {
		t.Fatal(err)
	}
	if g.tick(14999); g.members["a"] == nil {
		t.Fatalf("removed before its session ran out")
	}
	if g.tick(15000); g.members["a"] != nil {
		t.Fatalf("kept after its session ran out")
	}
}

// A classic member told to rejoin (REBALANCE_IN_PROGRESS) must do so
// within its rebalance timeout, heartbeats notwithstanding; one that
// joined must sync within it.
func TestClassicMemberThatDoesNotRejoinOrSyncInTimeIsRemoved(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	ra := g.classicJoin(0, view, shortSession(classicJoinParams("a")))
	g.classicSync(0, view, SyncParams{MemberID: "a", Generation: ra.Generation})
	// b joins and never syncs.
	rb := g.classicJoin(1000, view, shortSession(classicJoinParams("b")))
	if rb.Err != nil {
		t.Fatal(rb.Err)
	}
	if err := g.classicHeartbeat(2000, "a", nil, ra.Generation); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after the epoch moved: %v", err)
	}
	for now := int64(4000); now <= 32000; now += 4000 {
		_ = g.classicHeartbeat(now, "a", nil, ra.Generation)
		_ = g.classicHeartbeat(now, "b", nil, rb.Generation)
		if g.tick(now); now < 31000 && len(g.members) != 2 {
			t.Fatalf("a member removed at %d, before its rebalance timeout", now)
		}
	}
	if g.members["a"] != nil || g.members["b"] != nil {
		t.Fatalf("members left after their rebalance timeouts: %v", sortedKeys(g.members))
	}
}

// Downgrade builds a classic group of the remaining classic members: the
// generation it is given, a protocol every member supports, each member's
// subscription and current assignment.
func TestConsumerGroupOfClassicMembersBecomesTheirClassicGroup(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	pa := shortSession(classicJoinParams("a"))
	pa.Protocols = append([]Protocol{{Name: "range", Metadata: subscription()}}, pa.Protocols...)
	ra := g.classicJoin(0, view, pa)
	g.classicSync(0, view, SyncParams{MemberID: "a", Generation: ra.Generation})
	v := g.classicValue(view, 7, 5)
	if v.ProtocolType != "consumer" || *v.Protocol != "range" || v.Generation != 5 || len(v.Members) != 1 {
		t.Fatalf("classic value: %+v", v)
	}
	if m := v.Members[0]; m.MemberID != "a" || m.SessionTimeoutMs != 10000 || !slices.Equal(partsOf(t, m.Assignment), []int32{0, 1, 2, 3}) {
		t.Fatalf("classic member: %+v", m)
	}
	rb := g.classicJoin(0, view, shortSession(classicJoinParams("b")))
	if rb.Err != nil {
		t.Fatal(rb.Err)
	}
	if v = g.classicValue(view, 7, 5); *v.Protocol != "cooperative-sticky" {
		t.Fatalf("protocol with a member supporting only cooperative-sticky: %s", *v.Protocol)
	}
}

// A static classic member (group.instance.id) coming back under a new
// member id takes over its predecessor's place: epoch and partitions.
func TestStaticClassicMemberRejoiningUnderANewIDKeepsItsPlace(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	inst := "i1"
	p := shortSession(classicJoinParams("old"))
	p.InstanceID = &inst
	r := g.classicJoin(0, view, p)
	g.classicSync(0, view, SyncParams{MemberID: "old", Generation: r.Generation})
	p.MemberID = "new"
	r2 := g.classicJoin(1000, view, p)
	if r2.Err != nil || r2.Generation != r.Generation || g.members["old"] != nil || g.static[inst] != "new" {
		t.Fatalf("static rejoin: %+v, members %v", r2, sortedKeys(g.members))
	}
	if s := g.classicSync(1000, view, SyncParams{MemberID: "new", InstanceID: &inst, Generation: r2.Generation}); s.Err != nil || len(partsOf(t, s.Assignment)) != 4 {
		t.Fatalf("sync of the new instance: %+v", s)
	}
	if err := g.classicHeartbeat(1000, "old", nil, r.Generation); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("heartbeat of the replaced member: %v", err)
	}
}

// ClassicMemberMetadata is tagged field 0 of the member record, written as
// Kafka writes a nullable struct in a tagged field: the size, a presence
// varint 1, then SessionTimeoutMs and SupportedProtocols; a record without
// it (a consumer-protocol member) ends with no tagged fields.
func TestClassicMemberMetadataIsWrittenAsKafkasNullableTaggedStruct(t *testing.T) {
	m := &consumerMember{classic: &classicMemberMeta{sessionTimeoutMs: 10000, protocols: []Protocol{{Name: "r", Metadata: []byte{0xab}}}}}
	want := []byte{
		0x01, 0x00, 0x0c, // one tagged field, tag 0, 12 bytes
		0x01,                   // present
		0x00, 0x00, 0x27, 0x10, // SessionTimeoutMs 10000
		0x02, 0x02, 'r', 0x02, 0xab, 0x00, // one protocol: Name "r", Metadata [ab], no tags
		0x00, // the struct's tags
	}
	got := encodeMemberMetadataValue(m)
	if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
		t.Fatalf("member record % x, want it to end with % x", got, want)
	}
	var back consumerMember
	if err := decodeMemberMetadataValue(got, &back); err != nil || back.classic == nil || back.classic.sessionTimeoutMs != 10000 {
		t.Fatalf("decoded %+v %v", back.classic, err)
	}
	m.classic = nil
	if got := encodeMemberMetadataValue(m); got[len(got)-1] != 0 {
		t.Fatalf("consumer-protocol member record % x, want no tagged fields", got)
	}
}

// A classic member joins a consumer group only with a protocol every other
// classic member supports (INCONSISTENT_GROUP_PROTOCOL otherwise), as a
// classic group would have it.
func TestClassicJoinNeedsAProtocolTheOtherClassicMembersSupport(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	if r := g.classicJoin(0, view, shortSession(classicJoinParams("a"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	p := shortSession(classicJoinParams("b"))
	p.Protocols[0].Name = "range"
	if r := g.classicJoin(0, view, p); !errors.Is(r.Err, ErrInconsistentProtocol) {
		t.Fatalf("join with no protocol in common: %v", r.Err)
	}
	p.Protocols = append(p.Protocols, Protocol{Name: "cooperative-sticky", Metadata: subscription()})
	if r := g.classicJoin(0, view, p); r.Err != nil || *r.ProtocolName != "range" {
		t.Fatalf("join with a protocol in common: %+v", r)
	}
	p.ProtocolType = "connect"
	if r := g.classicJoin(0, view, p); !errors.Is(r.Err, ErrInconsistentProtocol) {
		t.Fatalf("join with another protocol type: %v", r.Err)
	}
}

// A static consumer-protocol member that left for now, replaced by a
// classic instance of the same group.instance.id: the classic one takes
// its place (partitions, target epoch) and is served by the classic
// protocol from then on.
func TestClassicInstanceReplacesAStaticConsumerProtocolMember(t *testing.T) {
	view := migrationView()
	g := newTestConsumerGroup(10)
	inst := "i1"
	hb := joinHB("cons")
	hb.InstanceID = &inst
	r := g.heartbeat(0, view, &hb)
	if r.Err != nil || count(r.Assignment) != 4 {
		t.Fatalf("consumer join: %+v", r)
	}
	// It leaves for now (static leave, epoch -2), keeping its partitions.
	if lr := g.heartbeat(500, view, &ConsumerHeartbeat{Version: 1, MemberID: "cons", InstanceID: &inst, MemberEpoch: staticLeaveEpoch}); lr.Err != nil {
		t.Fatal(lr.Err)
	}
	p := shortSession(classicJoinParams("classic"))
	p.InstanceID = &inst
	jr := g.classicJoin(1000, view, p)
	if jr.Err != nil || jr.Generation != r.MemberEpoch || g.members["cons"] != nil {
		t.Fatalf("classic replacement: %+v, members %v", jr, sortedKeys(g.members))
	}
	if s := g.classicSync(1000, view, SyncParams{MemberID: "classic", InstanceID: &inst, Generation: jr.Generation}); s.Err != nil || len(partsOf(t, s.Assignment)) != 4 {
		t.Fatalf("sync: %+v", s)
	}
	if err := g.classicHeartbeat(2000, "classic", &inst, jr.Generation); err != nil {
		t.Fatalf("classic heartbeat: %v", err)
	}
}

// group.consumer.migration.policy defaults to bidirectional, as in Kafka
// 4, and takes only Kafka's four values.
func TestMigrationPolicyConfig(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.MigrationPolicy != MigrationBidirectional || cfg.Validate() != nil {
		t.Fatalf("default policy %q: %v", cfg.MigrationPolicy, cfg.Validate())
	}
	for _, p := range []MigrationPolicy{MigrationUpgrade, MigrationDowngrade, MigrationDisabled} {
		cfg.MigrationPolicy = p
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	cfg.MigrationPolicy = "sideways"
	if cfg.Validate() == nil {
		t.Fatal("an unknown policy was accepted")
	}
	for p, want := range map[MigrationPolicy][2]bool{
		MigrationBidirectional: {true, true}, MigrationUpgrade: {true, false},
		MigrationDowngrade: {false, true}, MigrationDisabled: {false, false},
	} {
		if got := [2]bool{p.upgradeEnabled(), p.downgradeEnabled()}; got != want {
			t.Errorf("%s: upgrade, downgrade = %v, want %v", p, got, want)
		}
	}
}

// The last consumer-protocol member expiring (its session runs out) also
// turns a group of classic members back into a classic group, written as
// one batch with the consumer group's tombstones.
func TestLastConsumerMemberExpiringDowngradesTheGroup(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = 5*time.Second, time.Second
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 4))
	c, err := New(cfg, meta, fake.NewLog(), zerolog.Nop(), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitLoaded(t, c, "g")
	a := stableClassicMember(t, c)
	if r := c.ConsumerGroupHeartbeat("g", joinHB("b")); r.Err != nil {
		t.Fatal(r.Err)
	}
	advance(3 * time.Second)
	if err := c.Heartbeat("g", a, nil, 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatal(err)
	}
	advance(3 * time.Second) // b's session is over, a's is not
	c.mu.Lock()
	e := c.mu.groups["g"]
	c.mu.Unlock()
	c.fire(e)
	if _, _, err := c.DescribeConsumerGroup("g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("ConsumerGroupDescribe after the last consumer member expired: %v", err)
	}
	s, err := c.DescribeGroup("g")
	if err != nil || s.State != StatePreparingRebalance || len(s.Members) != 1 || s.Members[0].MemberID != a {
		t.Fatalf("after the downgrade: %+v %v", s, err)
	}
}
