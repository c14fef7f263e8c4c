package group

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/internal/testkit/fake"
	"github.com/gokafka/gokafka/partition"
)

// compactedCopy returns a log holding what the log cleaner leaves of the
// offsets partition of lg: records of aborted transactions are gone, of
// every key only the last record is kept (transactional ones with their
// producer, markers kept), and, with dropTombstones, the tombstones too
// (as after delete.retention.ms).
func compactedCopy(t *testing.T, lg *fake.Log, dropTombstones bool) *fake.Log {
	t.Helper()
	tp := TopicPartition{Topic: OffsetsTopic}
	var all []coordinator.LogRecord
	_, ok := coordinator.LoadPartition(lg, tp, 1<<20, nil, zerolog.Nop(), func(r coordinator.LogRecord) error {
		if r.Bad != nil {
			t.Fatalf("bad batch: %v", r.Bad)
		}
		r.Key, r.Value = slices.Clone(r.Key), slices.Clone(r.Value)
		all = append(all, r)
		return nil
	})
	if !ok {
		t.Fatal("reading the log failed")
	}
	aborted := map[int]bool{}
	pending := map[int64][]int{}
	for i, r := range all {
		switch {
		case r.Control:
			if !r.Commit {
				for _, j := range pending[r.ProducerID] {
					aborted[j] = true
				}
			}
			delete(pending, r.ProducerID)
		case r.ProducerID >= 0:
			pending[r.ProducerID] = append(pending[r.ProducerID], i)
		}
	}
	last := map[string]int{}
	for i, r := range all {
		if !r.Control && !aborted[i] {
			last[string(r.Key)] = i
		}
	}
	out := fake.NewLog()
	kept := 0
	for i, r := range all {
		if r.Control {
			out.Put(tp, partition.ControlBatch(r.ProducerID, 0, 0, r.Commit, 1))
			continue
		}
		if aborted[i] || last[string(r.Key)] != i || dropTombstones && r.Value == nil {
			continue
		}
		kept++
		out.Put(tp, buildProducerBatch([]record{{key: r.Key, value: r.Value}}, 1, r.ProducerID, 0))
	}
	if kept >= len(all)-1 {
		t.Fatalf("compaction kept %d of %d records: the workload supersedes too little to test it", kept, len(all))
	}
	return out
}

// coordinatorState is what a loaded coordinator reports of groups.
func coordinatorState(t *testing.T, c *Coordinator, groups []string) string {
	t.Helper()
	var b strings.Builder
	for _, g := range groups {
		offs, err := c.FetchOffsets(g, nil)
		if err != nil {
			t.Fatalf("fetch %s: %v", g, err)
		}
		slices.SortFunc(offs, func(a, b FetchedOffset) int {
			return strings.Compare(fmt.Sprint(a.TP), fmt.Sprint(b.TP))
		})
		for i := range offs {
			offs[i].CommitTimestamp = 0
		}
		s, err := c.DescribeGroup(g)
		fmt.Fprintf(&b, "%s offsets=%+v classic=%+v %v\n", g, offs, s, err)
		d, _, err := c.DescribeConsumerGroup(g)
		fmt.Fprintf(&b, "%s consumer=%+v %v\n", g, d, err)
	}
	return b.String()
}

// A log the cleaner compacted (only the last record of every key, with
// or without tombstones) loads to the same groups, offsets and pending
// transactional offsets as the whole log: every record gokafka writes is
// keyed by what it replaces, and every deletion is a tombstone.
func TestCompactedOffsetsLogLoadsTheSameState(t *testing.T) {
	lg := fake.NewLog()
	meta := fake.NewMeta(1, imageWithTopic(1, 0, 3))
	c := newTestCoordinator(t, meta, lg)
	waitLoaded(t, c, "classic")
	ctx := context.Background()
	otp := TopicPartition{Topic: OffsetsTopic}
	tp := func(p int32) TopicPartition { return TopicPartition{Topic: "t", Partition: p} }
	commit := func(g, member string, gen int32, version int16, p int32, o int64) {
		t.Helper()
		errs := c.CommitOffsets(ctx, g, CommitParams{MemberID: member, Generation: gen, APIVersion: version, Offsets: []CommitOffset{
			{TP: tp(p), OffsetAndMetadata: OffsetAndMetadata{Offset: o, LeaderEpoch: -1, ExpireTimestamp: -1}},
		}})
		if errs[0] != nil {
			t.Fatalf("commit %s: %v", g, errs[0])
		}
	}

	// A classic group, stable with one member, committing over and over.
	jr := c.JoinGroup(ctx, "classic", JoinParams{SessionTimeoutMs: 30000, RebalanceTimeoutMs: 30000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte("sub")}}})
	if jr.Err != nil {
		t.Fatal(jr.Err)
	}
	if sr := c.SyncGroup(ctx, "classic", SyncParams{MemberID: jr.MemberID, Generation: jr.Generation, Assignments: map[string][]byte{jr.MemberID: []byte("asg")}}); sr.Err != nil {
		t.Fatal(sr.Err)
	}
	for o := int64(1); o <= 20; o++ {
		commit("classic", jr.MemberID, jr.Generation, 8, int32(o%3), o)
	}
	// A group whose offsets are deleted one by one, then the group.
	for o := int64(1); o <= 5; o++ {
		commit("gone", "", -1, 8, 0, o)
		commit("gone", "", -1, 8, 1, o)
	}
	if _, errs := c.DeleteOffsets(ctx, "gone", []TopicPartition{tp(1)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if errs := c.DeleteGroups(ctx, []string{"gone"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	// Transactional commits: one committed, one aborted, one still open.
	txn := func(g string, pid int64, o int64) {
		t.Helper()
		errs := c.TxnCommitOffsets(ctx, g, TxnCommitParams{ProducerID: pid, CommitParams: CommitParams{Generation: -1, APIVersion: 3, Offsets: []CommitOffset{
			{TP: tp(2), OffsetAndMetadata: OffsetAndMetadata{Offset: o, LeaderEpoch: -1, ExpireTimestamp: -1}},
		}}})
		if errs[0] != nil {
			t.Fatalf("txn commit: %v", errs[0])
		}
	}
	marker := func(pid int64, commit bool) {
		lg.Put(otp, partition.ControlBatch(pid, 0, 0, commit, 1))
		c.CompleteTxn(otp, pid, commit)
	}
	txn("txn", 7, 100)
	marker(7, true)
	txn("txn", 8, 200)
	marker(8, false)
	txn("open", 9, 300)
	// A consumer-protocol group: members join, reconcile, commit, and one
	// leaves; another consumer group is emptied and deleted.
	hb := func(g string, p ConsumerHeartbeat) ConsumerHeartbeatResult {
		t.Helper()
		r := c.ConsumerGroupHeartbeat(g, p)
		if r.Err != nil {
			t.Fatalf("heartbeat %s/%s: %v", g, p.MemberID, r.Err)
		}
		// What was written is the group's whole state, whether the
		// heartbeat wrote the whole diff or only its member's.
		e, _ := c.entry(g, false)
		e.mu.Lock()
		want := map[string][]byte{}
		if e.cg != nil {
			want = e.cg.consumerRecords()
		}
		if !reflect.DeepEqual(e.cgWritten, want) {
			t.Errorf("after heartbeat of %s/%s the records written are not the group's state", g, p.MemberID)
		}
		e.mu.Unlock()
		return r
	}
	owned := map[string]map[cluster.TopicID][]int32{}
	epochs := map[string]int32{}
	step := func(g, m string) {
		r := hb(g, ConsumerHeartbeat{Version: 1, MemberID: m, MemberEpoch: epochs[m], Owned: owned[m]})
		epochs[m] = r.MemberEpoch
		if r.Assignment != nil {
			owned[m] = r.Assignment
		}
	}
	for _, m := range []string{"a", "b", "c"} {
		r := hb("cg", joinHB(m))
		epochs[m], owned[m] = r.MemberEpoch, r.Assignment
		for range 3 {
			for _, m2 := range []string{"a", "b", "c"} {
				if _, ok := epochs[m2]; ok {
					step("cg", m2)
				}
			}
		}
	}
	commit("cg", "a", epochs["a"], 9, 0, 42)
	hb("cg", ConsumerHeartbeat{Version: 1, MemberID: "c", MemberEpoch: leaveEpoch})
	delete(epochs, "c")
	for range 3 {
		step("cg", "a")
		step("cg", "b")
	}
	hb("cg2", joinHB("z"))
	hb("cg2", ConsumerHeartbeat{Version: 1, MemberID: "z", MemberEpoch: leaveEpoch})
	if errs := c.DeleteGroups(ctx, []string{"cg2"}); errs[0] != nil {
		t.Fatal(errs[0])
	}

	// A consumer group emptied and taken over by a classic member: its
	// consumer records go.
	hb("conv", joinHB("y"))
	hb("conv", ConsumerHeartbeat{Version: 1, MemberID: "y", MemberEpoch: leaveEpoch})
	jr = c.JoinGroup(ctx, "conv", JoinParams{SessionTimeoutMs: 30000, RebalanceTimeoutMs: 30000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte("sub")}}})
	if jr.Err != nil {
		t.Fatal(jr.Err)
	}
	if sr := c.SyncGroup(ctx, "conv", SyncParams{MemberID: jr.MemberID, Generation: jr.Generation, Assignments: map[string][]byte{jr.MemberID: []byte("asg")}}); sr.Err != nil {
		t.Fatal(sr.Err)
	}

	groups := []string{"classic", "gone", "txn", "open", "cg", "cg2", "conv"}
	want := coordinatorState(t, c, groups)
	if !strings.Contains(want, "MemberID:a") || !strings.Contains(want, "Offset:42") {
		t.Fatalf("the workload did not leave the expected state:\n%s", want)
	}
	c.Close()

	for _, drop := range []bool{false, true} {
		for name, l := range map[string]*fake.Log{"whole": lg, "compacted": compactedCopy(t, lg, drop)} {
			c2 := newTestCoordinator(t, fake.NewMeta(1, imageWithTopic(1, 0, 3)), l)
			waitLoaded(t, c2, "classic")
			if got := coordinatorState(t, c2, groups); got != want {
				t.Errorf("%s log (tombstones dropped: %v) loads to\n%s\nwant\n%s", name, drop, got, want)
			}
			c2.Close()
		}
	}
}
