package integration

import (
	"strings"
	"testing"
)

// synth builds histories for the checker's own tests: producer "i"
// (idempotent) and "t" (transactional), partition 0 unless said.
type synth struct{ h *history }

func newSynth() synth { return synth{newHistory()} }

func (s synth) ack(p string, seq uint64, txn int64, off int64) {
	id := writeID{p, seq}
	s.h.sent(id, 0, txn)
	s.h.acked(id, off)
}

func (s synth) unknown(p string, seq uint64, txn int64) { s.h.sent(writeID{p, seq}, 0, txn) }

func (s synth) stored(p string, seq uint64, txn int64, off int64) {
	s.h.final = append(s.h.final, hRead{0, off, encodeValue(writeID{p, seq}, txn)})
}

func (s synth) live(consumer, p string, seq uint64, txn int64, off int64) {
	s.h.read(consumer, hRead{0, off, encodeValue(writeID{p, seq}, txn)})
}

// clean is a history with nothing wrong: two acknowledged writes, a
// committed transaction of two, an aborted one whose record sits in the
// log (below its abort marker) but was never read, and one write whose
// outcome is unknown and which did not land.
func clean() synth {
	s := newSynth()
	s.ack("i", 0, -1, 0)
	s.ack("i", 1, -1, 1)
	s.ack("t", 0, 7, 2)
	s.ack("t", 1, 7, 3)
	s.h.txnEnded(7, txnCommitted)
	s.ack("t", 2, 8, 5)
	s.h.txnEnded(8, txnAborted)
	s.unknown("i", 2, -1)
	for _, w := range []struct {
		p   string
		seq uint64
		txn int64
		off int64
	}{{"i", 0, -1, 0}, {"i", 1, -1, 1}, {"t", 0, 7, 2}, {"t", 1, 7, 3}} {
		s.stored(w.p, w.seq, w.txn, w.off)
		s.live("c", w.p, w.seq, w.txn, w.off)
	}
	s.h.ends[0] = 7
	return s
}

func TestHistoryCheckCleanHistoryHasNoAnomaly(t *testing.T) {
	res := clean().h.check()
	if !res.ok() {
		t.Fatalf("clean history: %s; %v", res, res.Examples)
	}
	if res.Acked != 2 || res.Committed != 1 || res.Aborted != 1 {
		t.Errorf("counts: %s", res)
	}
}

func TestHistoryCheckUnknownOutcomesMayLandOrNot(t *testing.T) {
	s := clean()
	s.stored("i", 2, -1, 6) // the write whose answer was lost did land
	s.live("c", "i", 2, -1, 6)
	s.unknown("t", 3, 9) // a transaction with an unknown outcome, never read
	if res := s.h.check(); !res.ok() {
		t.Fatalf("%s; %v", res, res.Examples)
	}
}

func TestHistoryCheckCountsEachAnomaly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(s synth)
		want  func(r checkResult) int
	}{
		{"lost acknowledged write", func(s synth) {
			s.h.final = s.h.final[1:] // i#0 gone
		}, func(r checkResult) int { return r.Lost }},
		{"lost committed transactional write", func(s synth) {
			s.h.final = s.h.final[:2] // t#0, t#1 gone
		}, func(r checkResult) int { return r.Lost / 2 }},
		{"acknowledged write found elsewhere", func(s synth) {
			s.h.final[1].offset = 9
		}, func(r checkResult) int { return r.Lost }},
		{"duplicate", func(s synth) {
			s.stored("i", 1, -1, 6)
		}, func(r checkResult) int { return r.Duplicated }},
		{"aborted write in the final read", func(s synth) {
			s.stored("t", 2, 8, 5)
		}, func(r checkResult) int { return r.AbortedRead }},
		{"aborted write read live", func(s synth) {
			s.live("c", "t", 2, 8, 5)
		}, func(r checkResult) int { return r.AbortedRead }},
		{"record nobody sent", func(s synth) {
			s.live("c", "x", 0, -1, 6)
		}, func(r checkResult) int { return r.AbortedRead }},
		{"unseen after heal", func(s synth) {
			s.h.live["c"] = s.h.live["c"][:3] // t#1 at offset 3 < end 7 never given
		}, func(r checkResult) int { return r.UnseenAfterHeal }},
		{"consumer offsets go back", func(s synth) {
			s.h.live["c"] = append(s.h.live["c"], s.h.live["c"][0])
		}, func(r checkResult) int { return r.NonMonotonic }},
		{"producer order not kept", func(s synth) {
			s.h.writes[writeID{"i", 1}].offset = 0
			s.h.writes[writeID{"i", 0}].offset = 1
			s.h.final[0].value, s.h.final[1].value = s.h.final[1].value, s.h.final[0].value
		}, func(r checkResult) int { return r.NonMonotonic }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := clean()
			tc.spoil(s)
			res := s.h.check()
			if got := tc.want(res); got != 1 {
				t.Fatalf("want exactly this anomaly once, got %s; %s", res, strings.Join(res.Examples, "; "))
			}
			if len(res.Examples) == 0 {
				t.Error("no example given")
			}
		})
	}
}

func TestHistoryValueRoundTrip(t *testing.T) {
	id, txn, err := decodeValue(encodeValue(writeID{"txn-1", 42}, 7))
	if err != nil || id != (writeID{"txn-1", 42}) || txn != 7 {
		t.Fatalf("got %v %d %v", id, txn, err)
	}
	if _, _, err := decodeValue([]byte("garbage")); err == nil {
		t.Fatal("garbage decoded")
	}
}
