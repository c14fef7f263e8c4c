package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
)

// Tests of the leader's ISR/HW state machine (isr.go), named after the
// DESIGN section 2 rule they check. Time is a number the test sets; no
// test waits. Most rules are scripts in testdata/isr (isr_script_test.go);
// the tests here are the ones a script does not express well.

const testLagMs = 100

// isrHarness drives one leaderState as broker 1 with replicas 1, 2, 3.
type isrHarness struct {
	t   *testing.T
	s   *leaderState
	now int64
	// props collects every proposal made; done every completed waiter.
	props []ISRProposal
	done  map[uint64]error
}

func newISR(t *testing.T, isr []int32, leo, hw int64, minISR int) *isrHarness {
	t.Helper()
	h := &isrHarness{t: t, done: map[uint64]error{}}
	var eff Effects
	h.s, eff = newLeaderState(1, testLagMs, LeaderAndISR{
		LeaderEpoch: 5, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: isr, MinISR: minISR,
	}, leo, hw, h.now)
	h.collect(eff)
	return h
}

func (h *isrHarness) collect(eff Effects) Effects {
	if eff.Propose != nil {
		h.props = append(h.props, *eff.Propose)
	}
	for _, d := range eff.Done {
		if _, dup := h.done[d.ID]; dup {
			h.t.Fatalf("waiter %d completed twice", d.ID)
		}
		h.done[d.ID] = d.Err
	}
	return eff
}

func (h *isrHarness) at(ms int64) *isrHarness { h.now = ms; return h }

func (h *isrHarness) append(leo int64) Effects { return h.collect(h.s.Appended(leo)) }

// fetch is a follower fetch at offset, served with the leader's current LEO.
func (h *isrHarness) fetch(id int32, offset int64) Effects {
	return h.collect(h.s.FollowerFetched(id, offset, 0, h.s.leo, h.now))
}

func (h *isrHarness) tick() Effects { return h.collect(h.s.Tick(h.now)) }

func (h *isrHarness) lastProposal() ISRProposal {
	h.t.Helper()
	if len(h.props) == 0 {
		h.t.Fatal("no ISR proposal made")
	}
	return h.props[len(h.props)-1]
}

func (h *isrHarness) wantHW(want int64) {
	h.t.Helper()
	if got := h.s.HW(); got != want {
		h.t.Fatalf("HW %d, want %d", got, want)
	}
}

func (h *isrHarness) wantProposals(n int) {
	h.t.Helper()
	if len(h.props) != n {
		h.t.Fatalf("%d ISR proposals (%v), want %d", len(h.props), h.props, n)
	}
}

// accept feeds back the controller accepting the last proposal.
func (h *isrHarness) accept() Effects {
	p := h.lastProposal()
	return h.collect(h.s.AlterPartitionDone(p.Seq, AlterOK, LeaderAndISR{
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, Replicas: []int32{1, 2, 3}, ISR: p.NewISR,
	}))
}

// Rule 3: a follower leaves the ISR once it has not caught up for more than
// replica.lag.time.max.ms — not one millisecond earlier.
// Rule 3: under steady load a follower's fetch offset is always behind the
// leader's current LEO, yet it reaches the LEO the leader had at its
// previous fetch; Kafka counts that as caught up at the previous fetch, so
// the follower is never shrunk.
func TestRule3_NoShrinkWhileFollowerKeepsCatchingUpUnderSteadyLoad(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	leo := int64(0)
	for ms := int64(0); ms <= 20*testLagMs; ms += 10 {
		h.at(ms)
		prevLEO := leo
		leo += 5
		h.append(leo)       // a produce lands just before each fetch...
		h.fetch(2, prevLEO) // ...so the follower only ever has the previous LEO
		h.tick()
	}
	h.wantProposals(0)
	h.wantHW(leo - 5)
}

// Rule 3: a follower outside the ISR is added back once its LEO reaches
// the HW (and the current epoch); not before.
// Rule 3 (KIP-101): a follower that has reached the HW but not the offset
// where this leader's epoch starts may still hold records of an older epoch
// this leader does not have; it joins only once it passed that offset.
// Rule 5: HW = min LEO over the ISR (the leader included); replicas
// outside the ISR do not hold it back.
// Rule 5: the HW only ratchets up, even when the minimum over the ISR goes
// down (a new leader epoch forgets follower positions; an ISR member's
// fetch offset drops after its own truncation).
// Rule 1: an acks=all produce is answered once the HW passes its last
// offset, not before.
// Rule 4: a produce parked with ISR >= min.insync.replicas whose ISR shrank
// below it by the time the HW passed it fails with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (it is in the log nonetheless).
// While an expansion is in flight the HW is computed over the ISR with the
// new member (Kafka's maximal ISR): if the controller accepts, that member
// counts as in sync at once, so the HW must not already have passed what
// it holds. And nothing else is proposed until the answer comes.
// A pending shrink does not let the HW advance past the follower being
// removed: until the controller accepts, that follower may still be
// counted in the ISR (and be elected).
// A stale-epoch answer (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION)
// keeps the proposal pending until metadata replaces the state; a rejected
// one restores the committed ISR so the next event proposes again.
// A new leader epoch forgets where followers were: the HW waits until each
// ISR member fetched under it, and ISR members get a full lag period.
// Losing leadership answers every parked produce with NOT_LEADER_OR_FOLLOWER.
// A sole replica's HW follows its LEO at once.
// Issue 11 item 1 (Kafka's Partition.handleAlterPartitionError): an
// expansion whose AlterPartition outcome is unknown (timed out, the
// controller lost leadership, NOT_CONTROLLER) may have been committed, so
// the leader keeps the maximal ISR and sends the very same change again.
// Forgetting it would let the HW pass records the added replica lacks
// although the controller may count it in the ISR and later elect it.
// Only a definitive refusal (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED)
// or a newer partition epoch from metadata ends a pending change whose
// send failed before.
// The errors an AlterPartition can end with, classified as Kafka's
// Partition.handleAlterPartitionError does: only INELIGIBLE_REPLICA and
// OPERATION_NOT_ATTEMPTED say "not applied"; stale-state answers wait for
// metadata; anything else is an unknown outcome.
func TestAlterPartitionErrorClassification(t *testing.T) {
	for _, c := range []struct {
		err  error
		want AlterPartitionOutcome
	}{
		{nil, AlterOK},
		{cluster.ErrIneligibleReplica, AlterRejected},
		{fmt.Errorf("forwarded: %w", kerr.OperationNotAttempted), AlterRejected},
		{cluster.ErrFencedLeaderEpoch, AlterWaitForMetadata},
		{cluster.ErrInvalidUpdateVersion, AlterWaitForMetadata},
		{cluster.ErrNotLeader, AlterWaitForMetadata},
		{cluster.ErrUnknownTopic, AlterWaitForMetadata},
		{cluster.ErrInvalidRequest, AlterWaitForMetadata},
		{kerr.InvalidRequest, AlterWaitForMetadata},
		{kerr.UnknownTopicID, AlterWaitForMetadata},
		{kerr.NewLeaderElected, AlterWaitForMetadata},
		{kerr.IneligibleReplica, AlterRejected},
		{cluster.ErrNotController, AlterRetry},
		{kerr.NotController, AlterRetry},
		{context.DeadlineExceeded, AlterRetry},
		{errors.New("connection reset by peer"), AlterRetry},
	} {
		if got := alterOutcome(c.err); got != c.want {
			t.Errorf("alterOutcome(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Rule 3: the state machine alone decides NOT_ENOUGH_REPLICAS: acks=all
// is refused while the committed ISR is below min.insync.replicas (not
// capped at the replica count), acks=0 and acks=1 never are.
func TestCanAppendRefusesAcksAllBelowMinISR(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 3)
	for _, acks := range []int16{0, 1} {
		if err := h.s.CanAppend(acks); err != nil {
			t.Fatalf("acks=%d with ISR [1 2], min.insync.replicas=3: %v", acks, err)
		}
	}
	if err := h.s.CanAppend(-1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR [1 2], min.insync.replicas=3: %v, want ErrNotEnoughReplicas", err)
	}
	h = newISR(t, []int32{1, 2, 3}, 0, 0, 4)
	if err := h.s.CanAppend(-1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with min.insync.replicas=4 over three replicas: %v, want ErrNotEnoughReplicas", err)
	}
	h = newISR(t, []int32{1, 2}, 0, 0, 2)
	if err := h.s.CanAppend(-1); err != nil {
		t.Fatalf("acks=all with ISR [1 2], min.insync.replicas=2: %v", err)
	}
}

// A min.insync.replicas change reaches the leader with a partition record
// older than the one an AlterPartition answer already gave it; the record
// is stale, the config is not, and the leader holds itself to it.
func TestMinISRChangeAppliesWithAStalePartitionRecord(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10)
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterOK, LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}))
	// The image still holds partition epoch 7, now with min.insync.replicas=4.
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 4}, h.now))
	if got := h.s.minISR; got != 4 {
		t.Fatalf("min.insync.replicas %d after the config change, want 4", got)
	}
	if !sameSet(h.s.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("stale partition record replaced the ISR: %v", h.s.ISR())
	}
	if err := h.s.CanAppend(-1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all under the new min.insync.replicas: %v, want ErrNotEnoughReplicas", err)
	}
}

// The epoch start is where the log ended when this leader's epoch began,
// held by the state machine.
func TestEpochStartIsTheLEOAtTheNewEpoch(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 7, 7, 1)
	if got := h.s.EpochStart(); got != 7 {
		t.Fatalf("epoch start %d, want 7", got)
	}
	h.append(12)
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 6, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}, h.now))
	if got := h.s.EpochStart(); got != 12 {
		t.Fatalf("epoch start %d after epoch 6 began at LEO 12, want 12", got)
	}
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// KIP-455: an AlterPartition that completes a reassignment changes the
// replica set, which its answer does not carry; the record that follows
// at the same partition epoch does. A replica it removed is no longer
// tracked, so a late fetch of it cannot bring it back into the ISR.
func TestReassignmentRemovedReplicaIsForgottenFromTheRecordAtTheSamePartitionEpoch(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 10, 10, 1)
	h.at(1).fetch(2, 10)
	// The leader proposes an ISR change; the controller completes a
	// reassignment of replicas [1 2 3] to [1 2] with it.
	h.s.partitionEpoch = 7
	prop := h.s.propose([]int32{1, 2}, false)
	h.collect(h.s.AlterPartitionDone(prop.Seq, AlterOK, LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}))
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1}, h.now))
	n := len(h.props)
	h.at(2).fetch(3, 10)
	if len(h.props) != n {
		t.Fatalf("removed replica 3 proposed for the ISR: %v", h.props[n:])
	}
	if slices.Contains(h.s.replicas, 3) {
		t.Fatalf("replicas %v still hold removed 3", h.s.replicas)
	}
}

// Rule 3 with fetch sessions: a follower found at the leader's LEO by a
// session fetch counts as fetching the partition, caught up, on every
// later fetch of its session (rounds, the session's latest fetch time)
// until the leader's LEO moves; from then on only its own fetches count.
// A follower the session did not count leaves the ISR as before.
func TestRule3_SessionFetchesCountAsCaughtUpUntilTheLEOMoves(t *testing.T) {
	h := newISR(t, []int32{1, 2, 3}, 10, 10, 1)
	var rounds atomic.Int64
	h.at(0).fetch(2, 10)
	h.fetch(3, 10)
	if !h.s.FollowerInSession(2, &rounds) {
		t.Fatal("follower 2 at the LEO and in the ISR is not settled")
	}
	rounds.Store(50 * testLagMs) // its session went on fetching
	h.at(50*testLagMs + 1).append(11)
	rounds.Store(60 * testLagMs) // fetches after the append do not count
	h.at(50*testLagMs + 2).tick()
	if p := h.lastProposal(); !slices.Equal(p.NewISR, []int32{1, 2}) {
		t.Fatalf("proposed %v, want follower 3 (not counted by any session) out and 2 kept", p.NewISR)
	}
	h.accept()
	h.at(51*testLagMs + 3).tick()
	if p := h.lastProposal(); !slices.Equal(p.NewISR, []int32{1}) {
		t.Fatalf("proposed %v, want follower 2 out once its last counted fetch is replica.lag.time.max.ms old", p.NewISR)
	}
	if h.s.FollowerInSession(3, &rounds) {
		t.Fatal("follower 3 behind the LEO is settled")
	}
}
