package idempotent

import (
	"runtime"
	"testing"

	"github.com/gokafka/gokafka/internal/testkit"
)

// A broker holds a producer state for every partition it hosts, and most
// never see a transaction: the ended transactions' lists are made with
// the first, so that an empty state is a 24-byte allocation (64 before).
func TestEmptyStateIsSmall(t *testing.T) {
	const n = 10000
	sts := make([]*State, n)
	grown := testkit.HeapGrowth(func() {
		for i := range sts {
			sts[i] = NewState()
		}
	})
	per := grown / n
	t.Logf("heap per empty producer state: %d bytes", per)
	if per > 32 {
		t.Fatalf("an empty producer state keeps %d bytes, want at most 32", per)
	}
	// The lists are there once a transaction ends, and survive a
	// snapshot.
	s := sts[0]
	s.Update(Batch{ProducerID: 7, Epoch: 0, FirstSeq: -1, LastSeq: -1, Transactional: true}, 10, 10)
	s.Update(Batch{ProducerID: 7, Epoch: 0, FirstSeq: -1, LastSeq: -1, Control: true, Abort: true}, 11, 11)
	if got := s.AbortedIn(0, 100); len(got) != 1 || got[0].FirstOffset != 10 || got[0].LastOffset != 11 {
		t.Fatalf("aborted %v, want [10, 11] of producer 7", got)
	}
	back, err := UnmarshalSnapshot(s.MarshalSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got := back.AbortedIn(0, 100); len(got) != 1 || got[0].ProducerID != 7 {
		t.Fatalf("aborted after a snapshot %v", got)
	}
	if empty, err := UnmarshalSnapshot(NewState().MarshalSnapshot()); err != nil || empty.txns != nil {
		t.Fatalf("an empty snapshot loaded as %+v, %v", empty, err)
	}
	runtime.KeepAlive(sts)
}
