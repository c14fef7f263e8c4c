package cluster

import (
	"context"
	"slices"
	"testing"

	"github.com/rs/zerolog"
)

// racksOf maps each broker to its rack.
func racksOf(racks map[string][]int32) map[int32]string {
	out := map[int32]string{}
	for r, ids := range racks {
		for _, id := range ids {
			out[id] = r
		}
	}
	return out
}

func TestRackAlternatedInterleavesRacks(t *testing.T) {
	racks := racksOf(map[string][]int32{"a": {1, 4}, "b": {2, 5}, "c": {3}})
	got := rackAlternated([]int32{5, 4, 3, 2, 1}, racks)
	want := []int32{1, 2, 3, 4, 5}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Unequal racks: the rack with more brokers fills the tail.
	racks = racksOf(map[string][]int32{"a": {1, 2, 3}, "b": {4}})
	if got := rackAlternated([]int32{1, 2, 3, 4}, racks); !slices.Equal(got, []int32{1, 4, 2, 3}) {
		t.Fatalf("got %v, want [1 4 2 3]", got)
	}
}

func TestRackAwareAssignmentSpreadsEveryPartitionOverRacks(t *testing.T) {
	cases := []struct {
		name  string
		racks map[string][]int32
		rf    int
	}{
		{"three racks of one, rf 3", map[string][]int32{"a": {1}, "b": {2}, "c": {3}}, 3},
		{"three racks of two, rf 3", map[string][]int32{"a": {1, 2}, "b": {3, 4}, "c": {5, 6}}, 3},
		{"three racks of two, rf 2", map[string][]int32{"a": {1, 2}, "b": {3, 4}, "c": {5, 6}}, 2},
		{"two racks of three, rf 3", map[string][]int32{"a": {1, 2, 3}, "b": {4, 5, 6}}, 3},
		{"unequal racks, rf 2", map[string][]int32{"a": {1, 2, 3}, "b": {4}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			racks := racksOf(tc.racks)
			var brokers []int32
			for id := range racks {
				brokers = append(brokers, id)
			}
			slices.Sort(brokers)
			n := len(brokers)
			wantRacks := min(tc.rf, len(tc.racks))
			for start := -1; start < n; start++ {
				for round := 0; round < 10; round++ { // the start and shift may be random
					parts := 4 * n
					got := assignReplicasRackAware(brokers, racks, parts, tc.rf, 0, start)
					if len(got) != parts {
						t.Fatalf("%d partitions, want %d", len(got), parts)
					}
					leads := map[int32]int{}
					for p, replicas := range got {
						if len(replicas) != tc.rf {
							t.Fatalf("partition %d: replicas %v, want %d", p, replicas, tc.rf)
						}
						seen := map[int32]bool{}
						used := map[string]bool{}
						for _, r := range replicas {
							if seen[r] {
								t.Fatalf("partition %d: replicas %v not distinct", p, replicas)
							}
							seen[r] = true
							used[racks[r]] = true
						}
						if len(used) != wantRacks {
							t.Fatalf("partition %d: replicas %v span racks %v, want %d racks", p, replicas, used, wantRacks)
						}
						leads[replicas[0]]++
					}
					for _, b := range brokers {
						if leads[b] != 4 {
							t.Fatalf("start %d: leaders %v, want each broker leading 4", start, leads)
						}
					}
				}
			}
		})
	}
}

func TestRackAwareAssignmentContinuesLeadersWhereCreationLeftOff(t *testing.T) {
	racks := racksOf(map[string][]int32{"a": {1, 2}, "b": {3, 4}, "c": {5, 6}})
	brokers := []int32{1, 2, 3, 4, 5, 6}
	all := assignReplicasRackAware(brokers, racks, 12, 3, 0, 2)
	more := assignReplicasRackAware(brokers, racks, 4, 3, 8, 2)
	for i := range more {
		if more[i][0] != all[8+i][0] {
			t.Fatalf("partition %d led by %d, want %d as a creation of all 12 would place it", 8+i, more[i][0], all[8+i][0])
		}
	}
}

// registerInRack registers and unfences broker id in rack (nil: none).
func registerInRack(t *testing.T, c *Controller, id int32, rack *string) {
	t.Helper()
	ctx := context.Background()
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Rack: rack, Incarnation: newIncarnation()}); err != nil {
		t.Fatal(err)
	}
	if fenced, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil || fenced {
		t.Fatalf("unfence %d: fenced %v, %v", id, fenced, err)
	}
}

func TestCreateTopicsAndPartitionsPlaceReplicasByRack(t *testing.T) {
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, testConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rackOf := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	for id := int32(1); id <= 4; id++ {
		r := rackOf[id]
		registerInRack(t, c, id, &r)
	}
	check := func(what string) {
		t.Helper()
		for _, p := range c.Image().Topic("t").Partitions {
			if rackOf[p.Replicas[0]] == rackOf[p.Replicas[1]] {
				t.Fatalf("%s: partition %d replicas %v share rack %s", what, p.Partition, p.Replicas, rackOf[p.Replicas[0]])
			}
		}
	}
	// With brokers 1 and 2 first in id order, the rack-unaware
	// assignment puts both replicas of some partition in rack a.
	for round := 0; round < 10; round++ {
		if errs := c.CreateTopics(ctx, []TopicSpec{{Name: "t", NumPartitions: 8, ReplicationFactor: 2}}, false); errs[0] != nil {
			t.Fatal(errs[0])
		}
		check("created")
		if err := c.CreatePartitions(ctx, "t", 16, nil, false); err != nil {
			t.Fatal(err)
		}
		check("added")
		if errs := c.DeleteTopics(ctx, []string{"t"}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
}

// Brokers without a rack count as one rack of their own, as Kafka's KRaft
// placer counts them, and with no rack at all the assignment is the
// rack-unaware one.
func TestPlaceReplicasCountsBrokersWithoutRackAsOneRack(t *testing.T) {
	a := "a"
	im := &Image{Brokers: map[int32]BrokerInfo{1: {NodeID: 1, Rack: &a}, 2: {NodeID: 2, Rack: &a}, 3: {NodeID: 3}, 4: {NodeID: 4}}}
	for round := 0; round < 20; round++ {
		for p, r := range placeReplicas(im, []int32{1, 2, 3, 4}, 8, 2, 0) {
			if (r[0] <= 2) == (r[1] <= 2) {
				t.Fatalf("partition %d: replicas %v both in rack a or both without a rack", p, r)
			}
		}
	}
	none := &Image{Brokers: map[int32]BrokerInfo{1: {NodeID: 1}, 2: {NodeID: 2}, 3: {NodeID: 3}}}
	if got := placeReplicas(none, []int32{1, 2, 3}, 3, 3, 0); len(got) != 3 || len(got[0]) != 3 {
		t.Fatalf("no racks: %v", got)
	}
}
