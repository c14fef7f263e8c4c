package cluster

import (
	"testing"
)

func shareCmd(ch ShareChange) *Command { return &Command{Type: CmdShareState, Share: &ch} }

// Checkpoints apply only under the group's current share epoch, which an
// administrator's reset or deletion moves; a snapshot keeps it all.
func TestShareStateEpochs(t *testing.T) {
	s := NewState()
	apply := func(ch ShareChange) {
		t.Helper()
		if err := s.Apply(s.offset+1, shareCmd(ch)); err != nil {
			t.Fatal(err)
		}
	}
	at := func(topic string, p int32) (int64, int32, bool) { return s.Image(-1).ShareOffset("g", topic, p) }

	apply(ShareChange{Group: "g", Epoch: 0, Offsets: map[string]map[int32]int64{"t": {0: 5}}})
	if off, e, ok := at("t", 0); !ok || off != 5 || e != 0 {
		t.Fatalf("checkpoint: %d %d %v", off, e, ok)
	}
	apply(ShareChange{Group: "g", Reset: true, Offsets: map[string]map[int32]int64{"t": {0: 2}}})
	if off, e, _ := at("t", 0); off != 2 || e != 1 {
		t.Fatalf("reset: offset %d epoch %d, want 2 at epoch 1", off, e)
	}
	// A leader's checkpoint taken before the reset is dropped.
	apply(ShareChange{Group: "g", Epoch: 0, Offsets: map[string]map[int32]int64{"t": {0: 9}}})
	if off, _, _ := at("t", 0); off != 2 {
		t.Fatalf("stale checkpoint applied: %d", off)
	}
	apply(ShareChange{Group: "g", Epoch: 1, Offsets: map[string]map[int32]int64{"t": {1: 7}}})
	if off, _, ok := at("t", 1); !ok || off != 7 {
		t.Fatalf("current checkpoint: %d %v", off, ok)
	}

	snap, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState()
	if err := restored.RestoreSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if off, e, ok := restored.Image(-1).ShareOffset("g", "t", 1); !ok || off != 7 || e != 1 {
		t.Fatalf("after restore: %d %d %v", off, e, ok)
	}

	apply(ShareChange{Group: "g", Reset: true, DeleteTopics: []string{"t"}})
	if _, e, ok := at("t", 0); ok || e != 2 {
		t.Fatalf("deleted topic still has offsets (epoch %d)", e)
	}
	apply(ShareChange{Group: "g", DeleteGroup: true})
	if e := s.Image(-1).ShareEpoch("g"); e != 3 {
		t.Fatalf("epoch after deleting the group %d, want 3", e)
	}
}

func TestDeletedTopicLosesShareOffsets(t *testing.T) {
	s := NewState()
	if err := s.Apply(1, &Command{Type: CmdCreateTopic, Topic: &TopicInfo{Name: "t", ID: TopicID{1}, Partitions: []PartitionInfo{{Partition: 0}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, shareCmd(ShareChange{Group: "g", Offsets: map[string]map[int32]int64{"t": {0: 4}, "u": {0: 1}}})); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(3, &Command{Type: CmdDeleteTopic, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	im := s.Image(-1)
	if _, _, ok := im.ShareOffset("g", "t", 0); ok {
		t.Fatal("deleted topic kept its share offsets")
	}
	if off, _, ok := im.ShareOffset("g", "u", 0); !ok || off != 1 {
		t.Fatalf("other topic's offset: %d %v", off, ok)
	}
}
