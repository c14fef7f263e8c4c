package checkpoint

import "testing"

// A checkpoint applies only under the group's current epoch; a reset moves
// the epoch; neither modifies the state it was given.
func TestCheckpointRules(t *testing.T) {
	cur := &GroupState{Epoch: 1, Offsets: map[string]map[int32]int64{"t": {0: 5}}}
	if next, changed := Apply(cur, &Change{Group: "g", Epoch: 0, Offsets: map[string]map[int32]int64{"t": {0: 9}}}); changed || next != cur {
		t.Fatalf("stale checkpoint applied: %+v", next)
	}
	next, changed := Apply(cur, &Change{Group: "g", Epoch: 1, Offsets: map[string]map[int32]int64{"t": {1: 7}}})
	if !changed || next.Offsets["t"][0] != 5 || next.Offsets["t"][1] != 7 || next.Epoch != 1 {
		t.Fatalf("current checkpoint: %+v", next)
	}
	if _, ok := cur.Offsets["t"][1]; ok {
		t.Fatal("Apply modified the state it was given")
	}
	next, _ = Apply(next, &Change{Group: "g", Reset: true, DeleteTopics: []string{"t"}})
	if next.Epoch != 2 || len(next.Offsets) != 0 {
		t.Fatalf("reset deleting t: %+v", next)
	}
	if dropped, changed := DropTopic(cur, "t"); !changed || len(dropped.Offsets) != 0 || len(cur.Offsets) != 1 {
		t.Fatalf("DropTopic: %+v, changed %v, original %+v", dropped, changed, cur)
	}
	if same, changed := DropTopic(cur, "u"); changed || same != cur {
		t.Fatal("DropTopic of a topic the group has no offsets for changed it")
	}
}
