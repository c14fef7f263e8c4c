package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
)

// Tests of the leader's ISR/HW state machine (isr.go), named after the
// DESIGN section 2 rule they check. Time is a number the test sets; no
// test waits.

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

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Rule 3: a follower leaves the ISR once it has not caught up for more than
// replica.lag.time.max.ms — not one millisecond earlier.
func TestRule3_ShrinkExactlyAfterLagTime(t *testing.T) {
	h := newISR(t, []int32{1, 2, 3}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10) // both caught up at t=0
	h.at(1).append(20)
	h.at(50).fetch(3, 20) // 3 keeps up, 2 stops
	h.at(testLagMs).tick()
	h.wantProposals(0)
	h.at(testLagMs + 1).tick()
	h.wantProposals(1)
	if p := h.lastProposal(); !sameSet(p.NewISR, []int32{1, 3}) || p.LeaderEpoch != 5 || p.PartitionEpoch != 7 {
		t.Fatalf("proposal %+v, want ISR [1 3] at leader epoch 5, partition epoch 7", p)
	}
}

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
func TestRule3_ExpandWhenFollowerReachesHWAndCurrentEpoch(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.wantHW(10)
	h.append(15)
	h.fetch(3, 9)
	h.wantProposals(0)
	h.fetch(3, 10)
	h.wantProposals(1)
	if p := h.lastProposal(); !sameSet(p.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal %v, want ISR [1 2 3]", p.NewISR)
	}
	h.accept()
	if !sameSet(h.s.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("ISR %v after the controller accepted, want [1 2 3]", h.s.ISR())
	}
}

// Rule 3 (KIP-101): a follower that has reached the HW but not the offset
// where this leader's epoch starts may still hold records of an older epoch
// this leader does not have; it joins only once it passed that offset.
func TestRule3_NoExpandBeforeCurrentLeaderEpoch(t *testing.T) {
	// Leader of epoch 5 since offset 10; its HW (learnt as a follower) is 5.
	h := newISR(t, []int32{1}, 10, 5, 1)
	h.fetch(3, 7)
	h.wantProposals(0)
	h.fetch(3, 10)
	h.wantProposals(1)
}

// Rule 5: HW = min LEO over the ISR (the leader included); replicas
// outside the ISR do not hold it back.
func TestRule5_HWIsMinLEOOverISR(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.wantHW(0) // follower 2 has not fetched
	h.fetch(2, 6)
	h.wantHW(6)
	h.fetch(3, 0) // not in the ISR
	h.wantHW(6)
	h.fetch(2, 10)
	h.wantHW(10)
	h.append(12)
	h.wantHW(10)
}

// Rule 5: the HW only ratchets up, even when the minimum over the ISR goes
// down (a new leader epoch forgets follower positions; an ISR member's
// fetch offset drops after its own truncation).
func TestRule5_HWNeverMovesBackward(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 8)
	h.wantHW(8)
	h.fetch(2, 3)
	h.wantHW(8)
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 6, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}, h.now))
	h.wantHW(8)
	h.fetch(2, 9)
	h.wantHW(9)
}

// Rule 1: an acks=all produce is answered once the HW passes its last
// offset, not before.
func TestRule1_AcksAllWaiterReleasedWhenHWPasses(t *testing.T) {
	h := newISR(t, []int32{1, 2, 3}, 0, 0, 2)
	h.append(10) // batch 0..9
	h.collect(h.s.AddWaiter(1, 10))
	h.fetch(2, 10)
	h.fetch(3, 9)
	if _, ok := h.done[1]; ok {
		t.Fatal("waiter released at HW 9, below the batch's last offset + 1")
	}
	h.fetch(3, 10)
	if err, ok := h.done[1]; !ok || err != nil {
		t.Fatalf("waiter: done %v err %v, want released without error at HW 10", ok, err)
	}
}

// Rule 4: a produce parked with ISR >= min.insync.replicas whose ISR shrank
// below it by the time the HW passed it fails with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (it is in the log nonetheless).
func TestRule4_NotEnoughReplicasAfterAppendWhenISRShrinks(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 2)
	h.append(10)
	h.collect(h.s.AddWaiter(1, 10))
	h.at(testLagMs + 1).tick()
	h.wantProposals(1)
	if _, ok := h.done[1]; ok {
		t.Fatal("waiter released while the shrink was not yet accepted")
	}
	h.accept()
	if err := h.done[1]; !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("waiter error %v, want ErrNotEnoughReplicasAfterAppend", err)
	}
	// Below min.insync.replicas the HW stays where it was (KIP-966).
	h.wantHW(0)
}

// While an expansion is in flight the HW is computed over the ISR with the
// new member (Kafka's maximal ISR): if the controller accepts, that member
// counts as in sync at once, so the HW must not already have passed what
// it holds. And nothing else is proposed until the answer comes.
func TestMaximalISRDuringPendingExpansion(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.wantHW(10)
	h.fetch(3, 10) // reaches the HW: expansion proposed
	h.wantProposals(1)
	h.append(20)
	h.fetch(2, 20)
	h.wantHW(10) // held by 3, pending member of the maximal ISR
	h.at(testLagMs + 1).tick()
	h.wantProposals(1) // no shrink while the expansion is pending
	h.fetch(3, 15)
	h.wantHW(15)
	h.accept()
	h.fetch(3, 20)
	h.wantHW(20)
}

// A pending shrink does not let the HW advance past the follower being
// removed: until the controller accepts, that follower may still be
// counted in the ISR (and be elected).
func TestMaximalISRDuringPendingShrink(t *testing.T) {
	h := newISR(t, []int32{1, 2, 3}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 4)
	h.wantHW(4)
	h.at(testLagMs + 1).tick()
	h.wantProposals(1)
	h.wantHW(4)
	h.accept()
	h.wantHW(10)
}

// A stale-epoch answer (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION)
// keeps the proposal pending until metadata replaces the state; a rejected
// one restores the committed ISR so the next event proposes again.
func TestAlterPartitionOutcomes(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10)
	h.wantProposals(1)
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterWaitForMetadata, LeaderAndISR{}))
	h.fetch(3, 10)
	h.wantProposals(1)
	// Metadata arrives with a newer partition epoch: the proposal is gone.
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}, h.now))
	if h.s.Inflight() {
		t.Fatal("proposal still in flight after newer metadata")
	}
	h.fetch(3, 10)
	h.wantProposals(2)
	if p := h.lastProposal(); p.PartitionEpoch != 8 {
		t.Fatalf("re-proposal at partition epoch %d, want 8", p.PartitionEpoch)
	}
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterRejected, LeaderAndISR{}))
	h.fetch(3, 10)
	h.wantProposals(3)
	// An answer for an older proposal is ignored.
	h.collect(h.s.AlterPartitionDone(h.props[1].Seq, AlterOK, LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 9, ISR: []int32{1, 2, 3}}))
	if !h.s.Inflight() || !sameSet(h.s.ISR(), []int32{1, 2}) {
		t.Fatalf("stale answer applied: ISR %v inflight %v", h.s.ISR(), h.s.Inflight())
	}
}

// A new leader epoch forgets where followers were: the HW waits until each
// ISR member fetched under it, and ISR members get a full lag period.
func TestNewLeaderEpochWaitsForISRToFetch(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.wantHW(10)
	h.at(1000).collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 6, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}, h.now))
	h.append(12)
	h.wantHW(10)
	h.at(1000 + testLagMs).tick()
	h.wantProposals(0)
	h.fetch(2, 12)
	h.wantHW(12)
}

// Losing leadership answers every parked produce with NOT_LEADER_OR_FOLLOWER.
func TestResignFailsParkedProduces(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.collect(h.s.AddWaiter(1, 10))
	h.collect(Effects{Done: h.s.Resign()})
	if err := h.done[1]; !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("waiter error %v, want ErrNotLeaderOrFollower", err)
	}
}

// A sole replica's HW follows its LEO at once.
func TestSoleReplicaHWFollowsLEO(t *testing.T) {
	h := newISR(t, []int32{1}, 0, 0, 1)
	h.append(3)
	h.wantHW(3)
}

// Issue 11 item 1 (Kafka's Partition.handleAlterPartitionError): an
// expansion whose AlterPartition outcome is unknown (timed out, the
// controller lost leadership, NOT_CONTROLLER) may have been committed, so
// the leader keeps the maximal ISR and sends the very same change again.
// Forgetting it would let the HW pass records the added replica lacks
// although the controller may count it in the ISR and later elect it.
func TestAlterPartitionUnknownOutcomeKeepsPendingExpansionAndResends(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10) // 3 reaches the HW: {1,2,3} proposed
	h.wantProposals(1)
	first := h.lastProposal()

	h.collect(h.s.AlterPartitionDone(first.Seq, AlterRetry, LeaderAndISR{}))
	if !h.s.Inflight() {
		t.Fatal("pending expansion dropped after an AlterPartition with an unknown outcome")
	}
	h.wantProposals(2)
	if p := h.lastProposal(); !sameSet(p.NewISR, first.NewISR) || p.LeaderEpoch != first.LeaderEpoch || p.PartitionEpoch != first.PartitionEpoch {
		t.Fatalf("resent %+v, want the same change %+v", p, first)
	}

	// Writes go on while the controller is unreachable: 3 stops fetching
	// (it is on the other side of the split), 2 keeps up.
	h.at(1).append(20)
	h.fetch(2, 20)
	h.wantHW(10) // still held by 3, a member of the maximal ISR
	h.at(testLagMs + 1).tick()
	h.wantProposals(2) // no shrink proposed from state the controller may not hold

	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterRetry, LeaderAndISR{}))
	h.wantProposals(3)
	h.wantHW(10)

	// The controller finally answers: it had committed the expansion.
	h.accept()
	if !sameSet(h.s.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("ISR %v, want [1 2 3]", h.s.ISR())
	}
	h.fetch(3, 20)
	h.wantHW(20)
}

// Only a definitive refusal (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED)
// or a newer partition epoch from metadata ends a pending change whose
// send failed before.
func TestAlterPartitionPendingChangeEndsOnlyOnRefusalOrNewerMetadata(t *testing.T) {
	h := newISR(t, []int32{1, 2}, 0, 0, 1)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10)
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterRetry, LeaderAndISR{}))
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterRejected, LeaderAndISR{}))
	if h.s.Inflight() {
		t.Fatal("a refused change is still pending")
	}
	h.append(12)
	h.fetch(2, 12)
	h.wantHW(12) // 3 is not in the ISR: it no longer holds the HW

	h.fetch(3, 12)
	h.collect(h.s.AlterPartitionDone(h.lastProposal().Seq, AlterRetry, LeaderAndISR{}))
	h.collect(h.s.UpdateLeaderAndISR(LeaderAndISR{LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1}, h.now))
	if h.s.Inflight() {
		t.Fatal("pending change kept after metadata at a newer partition epoch")
	}
}

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
	if got := h.s.MinISR(); got != 4 {
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
