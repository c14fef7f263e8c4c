package cluster

import (
	mrand "math/rand/v2"
	"slices"
)

// placeReplicas chooses the replicas of new partitions (CreateTopics,
// CreatePartitions, auto-creation) among the live brokers: rack-aware
// when any of them has a broker.rack, Kafka's rack-unaware assignment
// otherwise. Brokers without a rack count as one rack of their own, as
// Kafka's KRaft placer counts them.
func placeReplicas(im *Image, live []int32, partitions, rf, firstPartition int) [][]int32 {
	racks := make(map[int32]string, len(live))
	anyRack := false
	for _, id := range live {
		if b, ok := im.Brokers[id]; ok && b.Rack != nil {
			racks[id] = *b.Rack
			anyRack = true
		}
	}
	if !anyRack {
		return assignReplicas(live, partitions, rf, firstPartition, -1)
	}
	return assignReplicasRackAware(live, racks, partitions, rf, firstPartition, -1)
}

// rackAlternated orders brokers so that consecutive ones sit in different
// racks while any rack has brokers left: the first broker (by id) of each
// rack in rack order, then the second of each, and so on. Kafka's
// rack-aware assignment walks this list.
func rackAlternated(brokers []int32, racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for _, id := range brokers {
		byRack[racks[id]] = append(byRack[racks[id]], id)
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		slices.Sort(ids)
		names = append(names, r)
	}
	slices.Sort(names)
	out := make([]int32, 0, len(brokers))
	for round := 0; len(out) < len(brokers); round++ {
		for _, r := range names {
			if ids := byRack[r]; round < len(ids) {
				out = append(out, ids[round])
			}
		}
	}
	return out
}

// assignReplicasRackAware is Kafka's rack-aware replica assignment: the
// leaders go round-robin over the rack-alternated broker list from a
// random start, and each further replica is the next broker on a shifted
// walk of that list whose rack holds no replica of the partition yet (once
// every rack holds one, any broker not already chosen). So a partition
// spans min(rf, racks) racks, leaders are spread evenly over the brokers
// and, when racks hold equal numbers of brokers, so are followers.
// startIndex < 0 picks the start and the shift at random.
func assignReplicasRackAware(brokers []int32, racks map[int32]string, partitions, rf, firstPartition, startIndex int) [][]int32 {
	list := rackAlternated(brokers, racks)
	n := len(list)
	numRacks := 0
	{
		seen := map[string]bool{}
		for _, id := range list {
			if !seen[racks[id]] {
				seen[racks[id]] = true
				numRacks++
			}
		}
	}
	shift := startIndex
	if startIndex < 0 {
		startIndex, shift = mrand.IntN(n), mrand.IntN(n)
	}
	out := make([][]int32, 0, partitions)
	cur := max(firstPartition, 0)
	for i := 0; i < partitions; i++ {
		if cur > 0 && cur%n == 0 {
			shift++
		}
		first := (cur + startIndex) % n
		replicas := []int32{list[first]}
		usedRacks := map[string]bool{racks[list[first]]: true}
		// Every n-1 steps of the walk visit every other broker, so rf <= n
		// (the callers' check) always completes; the bound only guards it.
		for k := 0; len(replicas) < rf && k < rf*n; k++ {
			b := list[(first+1+(shift*numRacks+k)%(n-1))%n]
			rackFree := !usedRacks[racks[b]] || len(usedRacks) == numRacks
			brokerFree := !slices.Contains(replicas, b)
			if rackFree && brokerFree {
				replicas = append(replicas, b)
				usedRacks[racks[b]] = true
			}
		}
		out = append(out, replicas)
		cur++
	}
	return out
}
