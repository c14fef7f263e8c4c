package replication

import (
	"errors"
	"testing"
)

// KIP-966 (Kafka 4.x): while the ISR is below min.insync.replicas the HW
// does not advance, even for records every remaining ISR member has. The
// replicas that left the ISR meanwhile then hold everything below the HW,
// which is what makes them eligible leaders should the last ISR member
// fail.
func TestKIP966_HWStandsStillWhileISRBelowMinISR(t *testing.T) {
	h := newISR(t, []int32{1, 2, 3}, 0, 0, 2)
	h.append(10)
	h.fetch(2, 10)
	h.fetch(3, 10)
	h.wantHW(10)
	// 2 and 3 stop fetching; the leader writes on (acks=1) and drops them.
	h.append(20)
	h.at(testLagMs + 1).tick()
	h.accept()
	if isr := h.s.ISR(); !sameSet(isr, []int32{1}) {
		t.Fatalf("ISR %v, want [1]", isr)
	}
	h.append(30)
	h.wantHW(10)
	// A parked acks=all produce is answered at once: it cannot be
	// committed under this ISR.
	h.collect(h.s.AddWaiter(1, 30))
	if err, ok := h.done[1]; !ok || !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("waiter: done %v err %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", ok, err)
	}
	// 2 catches up and rejoins: with min.insync.replicas met again the HW
	// moves.
	h.at(testLagMs+2).fetch(2, 30)
	h.wantHW(10)
	h.accept()
	if isr := h.s.ISR(); !sameSet(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v, want [1 2]", isr)
	}
	h.wantHW(30)
}

// The effective min ISR is capped at the replica count, as in Kafka: a
// partition with fewer replicas than min.insync.replicas still advances
// its HW with all of them in sync.
func TestKIP966_EffectiveMinISRIsCappedAtReplicaCount(t *testing.T) {
	h := &isrHarness{t: t, done: map[uint64]error{}}
	var eff Effects
	h.s, eff = newLeaderState(1, testLagMs, LeaderAndISR{
		LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 2,
	}, 0, 0, 0)
	h.collect(eff)
	h.append(5)
	h.wantHW(5)
}
