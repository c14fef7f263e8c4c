package cluster

import "slices"

// Leader election, computed by the active controller and proposed as
// CmdChangePartitions so that every node applies the same records. It
// follows Kafka 4.x with eligible leader replicas (KIP-966) always on.
//
// Fencing a broker (missed heartbeats, controlled shutdown) removes it
// from every ISR it is in, even the last member, and moves each leadership
// it held. A restart (a registration with a new incarnation) does the same
// and also counts as an unclean shutdown: the broker may have lost what it
// had not flushed, so it also leaves every ELR.
//
// ELR: while a partition's ISR is smaller than its effective min ISR
// (min.insync.replicas capped at the replica count), the replicas that
// were in the ISR and left it are its eligible leader replicas. The
// leader's HW does not advance in that state (replication/isr.go), so each
// of them holds every committed record. An ISR back at min ISR clears the
// ELR.
//
// A leader is, in order: the current one if still valid; the first
// replica (in assignment order) that is live and in the ISR, or, with an
// empty ISR, in the ELR (it becomes the ISR alone); the last known leader
// (LastKnownELR, recorded when the ISR became empty) if ISR and ELR are
// both empty and it is live, since no replica can hold more than it did;
// with unclean.leader.election.enable, any live replica. Otherwise the
// partition is offline (leader -1). An ELR or last-known-leader election
// is logged; an unclean one clears ELR and LastKnownELR. Unfencing a
// broker runs the election for offline partitions it replicates. Every
// leader change bumps the leader epoch; every change bumps the partition
// epoch.

// policy is what an election reads from topic configs.
type policy struct {
	// unclean is unclean.leader.election.enable.
	unclean func(*TopicInfo) bool
	// minISR is min.insync.replicas (not yet capped at the replica count).
	minISR func(*TopicInfo) int
}

// partitionTarget is one partition change to compute.
type partitionTarget struct {
	// isr is the ISR wanted.
	isr []int32
	// uncleanShutdown are brokers that restarted: never ELR members.
	uncleanShutdown []int32
	// live reports whether a broker may lead.
	live func(int32) bool
	// minISR is the effective min ISR.
	minISR int
	// allowUnclean permits a leader from outside ISR and ELR.
	allowUnclean bool
}

// changePartition computes p's next record for target, like Kafka's
// PartitionChangeBuilder. changed is false when nothing would change.
func changePartition(p PartitionInfo, target partitionTarget) (next PartitionInfo, changed bool) {
	next = p
	next.Replicas = slices.Clone(p.Replicas)
	next.ISR = orderLike(p.Replicas, target.isr)
	// ELR: the ISR members (old and new ELR) not in the new ISR, while
	// it is below min ISR; none once it is back.
	next.ELR = nil
	if len(next.ISR) < target.minISR {
		for _, r := range p.Replicas {
			was := contains32(p.ELR, r) || contains32(p.ISR, r)
			if was && !contains32(next.ISR, r) && !contains32(target.uncleanShutdown, r) {
				next.ELR = append(next.ELR, r)
			}
		}
	}
	next.LastKnownELR = slices.Clone(p.LastKnownELR)

	valid := func(r int32) bool {
		inISR := contains32(next.ISR, r)
		inELR := len(next.ISR) == 0 && contains32(next.ELR, r)
		return r >= 0 && (inISR || inELR) && target.live(r)
	}
	leader, unclean := int32(-1), false
	if valid(p.Leader) {
		leader = p.Leader
	} else {
		for _, r := range p.Replicas {
			if valid(r) {
				leader = r
				break
			}
		}
		if leader < 0 && len(next.ISR) == 0 && len(next.ELR) == 0 && len(p.LastKnownELR) == 1 && target.live(p.LastKnownELR[0]) {
			leader, unclean = p.LastKnownELR[0], true
		}
		if leader < 0 && target.allowUnclean {
			for _, r := range p.Replicas {
				if target.live(r) {
					leader, unclean = r, true
					break
				}
			}
		}
	}
	if leader != p.Leader {
		switch {
		case leader >= 0 && unclean:
			next.ISR = []int32{leader}
			next.ELR = nil
		case leader >= 0 && contains32(next.ELR, leader):
			next.ISR = []int32{leader}
			next.ELR = removeID(next.ELR, leader)
		}
		next.Leader = leader
		next.LeaderEpoch++
	}
	// LastKnownELR holds the last leader from the moment the ISR becomes
	// empty until the partition has a leader again.
	if len(next.ISR) == 0 && len(p.ISR) > 0 {
		last := p.Leader
		if last < 0 && len(p.ISR) == 1 {
			last = p.ISR[0]
		}
		if last >= 0 {
			next.LastKnownELR = []int32{last}
		}
	} else if next.Leader >= 0 {
		next.LastKnownELR = nil
	}
	if len(next.ELR) == 0 {
		next.ELR = nil
	}
	if len(next.LastKnownELR) == 0 {
		next.LastKnownELR = nil
	}
	changed = next.Leader != p.Leader || !sameMembers(next.ISR, p.ISR) || !sameMembers(next.ELR, p.ELR) ||
		!sameMembers(next.LastKnownELR, p.LastKnownELR)
	if !changed {
		return p, false
	}
	next.PartitionEpoch++
	return next, true
}

// effectiveMinISR is min.insync.replicas capped at the replica count.
func effectiveMinISR(pol policy, t *TopicInfo, p PartitionInfo) int {
	return max(1, min(pol.minISR(t), len(p.Replicas)))
}

// liveExcept reports brokers registered, unfenced and not id.
func liveExcept(im *Image, id int32) func(int32) bool {
	return func(r int32) bool {
		b, ok := im.Brokers[r]
		return ok && !b.Fenced && r != id
	}
}

// fenceChanges returns the partition changes for fencing broker id in im.
func fenceChanges(im *Image, id int32, pol policy) []PartitionChange {
	return removeBrokerChanges(im, id, false, pol)
}

// restartChanges returns the partition changes for broker id registering
// a new incarnation: it is fenced and, having perhaps lost unflushed
// data, leaves every ELR too (Kafka's unclean shutdown handling).
func restartChanges(im *Image, id int32, pol policy) []PartitionChange {
	return removeBrokerChanges(im, id, true, pol)
}

func removeBrokerChanges(im *Image, id int32, uncleanShutdown bool, pol policy) []PartitionChange {
	var out []PartitionChange
	var gone []int32
	if uncleanShutdown {
		gone = []int32{id}
	}
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if !contains32(p.Replicas, id) {
				continue
			}
			next, changed := changePartition(p, partitionTarget{
				isr: removeID(p.ISR, id), uncleanShutdown: gone, live: liveExcept(im, id),
				minISR: effectiveMinISR(pol, t, p), allowUnclean: pol.unclean(t),
			})
			if changed {
				out = append(out, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
			}
		}
	}
	return out
}

// unfenceChanges returns the partition changes for unfencing broker id:
// offline partitions it replicates run their election again (im already
// shows id unfenced).
func unfenceChanges(im *Image, id int32, pol policy) []PartitionChange {
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader >= 0 || !contains32(p.Replicas, id) {
				continue
			}
			next, changed := changePartition(p, partitionTarget{
				isr: p.ISR, live: liveExcept(im, -1),
				minISR: effectiveMinISR(pol, t, p), allowUnclean: pol.unclean(t),
			})
			if changed && next.Leader >= 0 {
				out = append(out, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
			}
		}
	}
	return out
}

// clearELRChanges empties the ELR of every partition of the topics
// selected, as Kafka does when min.insync.replicas changes: the ELR was
// chosen under the old value, and with a lower one the HW may have moved
// past what its members hold. LastKnownELR stays: the last leader is
// still the best a leaderless partition with empty ISR and ELR can do.
func clearELRChanges(im *Image, topic func(string) bool) []PartitionChange {
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		if !topic(name) {
			continue
		}
		for _, p := range im.Topics[name].Partitions {
			if len(p.ELR) == 0 {
				continue
			}
			next := p
			next.ELR = nil
			next.PartitionEpoch++
			out = append(out, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
		}
	}
	return out
}

func removeID(s []int32, id int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, x := range s {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}
