package cluster

// Leader election, computed by the active controller and proposed as
// CmdChangePartitions so that every node applies the same records.
//
// Fencing a broker (missed heartbeats, controlled shutdown, or a restart
// with a new incarnation) removes it from every ISR it is in, except where
// it is the last member, and moves each leadership it held to the first
// replica (in assignment order) that is in the remaining ISR and live. With
// no such replica the partition goes offline (leader -1) keeping its last
// ISR member, unless unclean.leader.election.enable lets a live replica
// outside the ISR take it. Unfencing a broker gives it the leadership of
// offline partitions whose ISR holds it (or, unclean, any it replicates).
// Every leader change bumps the leader epoch; every change bumps the
// partition epoch.

// fenceChanges returns the partition changes for fencing broker id in im.
func fenceChanges(im *Image, id int32, unclean func(*TopicInfo) bool) []PartitionChange {
	live := func(r int32) bool {
		b, ok := im.Brokers[r]
		return ok && !b.Fenced && r != id
	}
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if !contains32(p.Replicas, id) {
				continue
			}
			next := p
			next.Replicas = append([]int32(nil), p.Replicas...)
			if contains32(p.ISR, id) && len(p.ISR) > 1 {
				next.ISR = removeID(p.ISR, id)
			} else {
				next.ISR = append([]int32(nil), p.ISR...)
			}
			if p.Leader == id || p.Leader < 0 {
				leader := int32(-1)
				for _, r := range p.Replicas {
					if contains32(next.ISR, r) && live(r) {
						leader = r
						break
					}
				}
				if leader < 0 && unclean(t) {
					for _, r := range p.Replicas {
						if live(r) {
							leader = r
							next.ISR = []int32{r}
							break
						}
					}
				}
				if leader != p.Leader {
					next.Leader = leader
					next.LeaderEpoch++
				}
			}
			if next.Leader == p.Leader && sameMembers(next.ISR, p.ISR) {
				continue
			}
			next.PartitionEpoch++
			out = append(out, PartitionChange{Topic: name, ExpectPartitionEpoch: p.PartitionEpoch, Next: next})
		}
	}
	return out
}

// unfenceChanges returns the partition changes for unfencing broker id:
// offline partitions it can lead get it as leader.
func unfenceChanges(im *Image, id int32, unclean func(*TopicInfo) bool) []PartitionChange {
	var out []PartitionChange
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader >= 0 || !contains32(p.Replicas, id) {
				continue
			}
			next := p
			switch {
			case contains32(p.ISR, id):
				next.ISR = append([]int32(nil), p.ISR...)
			case unclean(t):
				next.ISR = []int32{id}
			default:
				continue
			}
			next.Replicas = append([]int32(nil), p.Replicas...)
			next.Leader = id
			next.LeaderEpoch++
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
