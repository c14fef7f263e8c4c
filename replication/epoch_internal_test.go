package replication

import (
	"slices"
	"testing"
)

// KIP-903 on the leader: a proposal names, for each ISR member, the broker
// epoch of the fetch that made it look in sync. A fetch from a restarted
// follower (a new epoch) after the proposal was made must not lend the
// proposal its epoch, or the controller would accept a replica on the
// strength of offsets its previous run held.
func TestKIP903_ProposalKeepsTheEpochsOfTheFetchesThatJustifiedIt(t *testing.T) {
	h := newISR(t, []int32{1}, 10, 10, 1)
	p := &Partition{}
	p.mu.st = h.s
	p.noteReplicaEpoch(2, 42)
	prop := p.applyLocked(h.at(1).fetch(2, 10))
	if prop == nil || !slices.Equal(prop.NewISR, []int32{1, 2}) {
		t.Fatalf("proposal %+v, want the expansion to [1 2]", prop)
	}
	if !slices.Equal(p.mu.busy.proposalEpochs, []int64{-1, 42}) {
		t.Fatalf("proposal epochs %v, want [-1 42]", p.mu.busy.proposalEpochs)
	}
	// Broker 2 restarts and fetches again; the same proposal goes out
	// again (it is still pending).
	p.noteReplicaEpoch(2, 57)
	p.applyLocked(Effects{Propose: prop})
	if !slices.Equal(p.mu.busy.proposalEpochs, []int64{-1, 42}) {
		t.Fatalf("resent proposal epochs %v, want the original [-1 42]", p.mu.busy.proposalEpochs)
	}
	// A new leadership starts its proposals at sequence 1 again: they are
	// new proposals and take the epochs known now.
	h2 := newISR(t, []int32{1}, 10, 10, 1)
	p.mu.st = h2.s
	if prop := p.applyLocked(h2.at(2).fetch(2, 10)); prop == nil || prop.Seq != h.props[0].Seq {
		t.Fatalf("proposal %+v, want one with the same sequence as the first leadership's", prop)
	}
	if !slices.Equal(p.mu.busy.proposalEpochs, []int64{-1, 57}) {
		t.Fatalf("new leadership's proposal epochs %v, want [-1 57]", p.mu.busy.proposalEpochs)
	}
	// A fetch that carried no epoch is unknown to the controller's check.
	p.noteReplicaEpoch(3, 0)
	if e := p.mu.replicaEpochs.get(3); e != -1 {
		t.Fatalf("epoch 0 recorded as %d, want -1", e)
	}
}
