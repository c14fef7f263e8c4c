package cluster

import (
	"runtime"
	"slices"
	"testing"
)

func TestChangedSinceListsThePartitionsPartitionChangesReplaced(t *testing.T) {
	st := NewState()
	parts := make([]PartitionInfo, 100)
	for i := range parts {
		parts[i] = PartitionInfo{Partition: int32(i), Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}
	}
	if err := st.ApplyEntry(1, []*Command{{Type: CmdCreateTopic, Topic: &TopicInfo{Name: "t", ID: TopicID{1}, Partitions: parts}}}); err != nil {
		t.Fatal(err)
	}
	was := st.Image(1).Topic("t")
	// The records in between are held weakly: a reader holding them
	// (here the test) keeps the chain whole.
	var keep []*TopicInfo
	change := func(off int64, ps ...int32) {
		t.Helper()
		var chs []PartitionChange
		for _, p := range ps {
			cur := *st.Image(1).Partition("t", p)
			next := cur
			next.PartitionEpoch++
			next.ISR = []int32{1}
			chs = append(chs, PartitionChange{Topic: "t", ExpectPartitionEpoch: cur.PartitionEpoch, Next: next})
		}
		if err := st.ApplyEntry(off, []*Command{{Type: CmdChangePartitions, Changes: chs}}); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, st.Image(1).Topic("t"))
	}
	change(2, 7, 5)
	change(3, 7)
	mid := st.Image(1).Topic("t")
	change(4, 42)
	now := st.Image(1).Topic("t")
	if got, ok := now.ChangedSince(was); !ok || !slices.Equal(got, []int32{5, 7, 42}) {
		t.Fatalf("since creation: %v, %v; want [5 7 42]", got, ok)
	}
	if got, ok := now.ChangedSince(mid); !ok || !slices.Equal(got, []int32{42}) {
		t.Fatalf("since the second change: %v, %v; want [42]", got, ok)
	}
	if got, ok := now.ChangedSince(now); !ok || len(got) != 0 {
		t.Fatalf("since itself: %v, %v", got, ok)
	}
	// A config change is not a partition change: compare everything.
	if err := st.ApplyEntry(5, []*Command{{Type: CmdSetTopicConfigs, Name: "t", Configs: map[string]string{"retention.ms": "1"}}}); err != nil {
		t.Fatal(err)
	}
	change(6, 3)
	if _, ok := st.Image(1).Topic("t").ChangedSince(now); ok {
		t.Fatal("a config change in between was reported as partition changes only")
	}
	// An unrelated record of the topic (another incarnation) is no base.
	if _, ok := st.Image(1).Topic("t").ChangedSince(&TopicInfo{Name: "t"}); ok {
		t.Fatal("a record the chain does not reach was reported as a base")
	}
	runtime.KeepAlive(keep)
}
