package integration

// A Jepsen-style checker for the soak: the producers and consumers record
// what they did and saw as a history, and check tells, after the faults
// were healed, what went wrong. It knows nothing of gokafka; its own unit
// tests (history_check_unit_test.go) feed it synthetic histories.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// writeID names one record: the producer that wrote it and its sequence
// number there.
type writeID struct {
	producer string
	seq      uint64
}

func (w writeID) String() string { return fmt.Sprintf("%s#%d", w.producer, w.seq) }

// encodeValue is the value a soak record carries: producer, sequence and
// transaction (-1 for none), so any read names what it saw.
func encodeValue(w writeID, txn int64) []byte {
	return []byte(w.producer + "/" + strconv.FormatUint(w.seq, 10) + "/" + strconv.FormatInt(txn, 10))
}

func decodeValue(v []byte) (writeID, int64, error) {
	f := strings.Split(string(v), "/")
	if len(f) != 3 {
		return writeID{}, 0, fmt.Errorf("value %q is not producer/seq/txn", v)
	}
	seq, err1 := strconv.ParseUint(f[1], 10, 64)
	txn, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return writeID{}, 0, fmt.Errorf("value %q is not producer/seq/txn", v)
	}
	return writeID{f[0], seq}, txn, nil
}

// writeStatus is what a producer learned of one record.
type writeStatus int8

const (
	writeUnknown writeStatus = iota // sent, no answer or an error: it may or may not be stored
	writeAcked                      // acknowledged (acks=all) at an offset
)

// txnOutcome is what a transactional producer learned of a transaction.
type txnOutcome int8

const (
	txnUnknown   txnOutcome = iota // EndTransaction failed or was never reached
	txnCommitted                   // EndTransaction(commit) succeeded
	txnAborted                     // EndTransaction(abort) succeeded
)

type hWrite struct {
	id        writeID
	partition int32
	txn       int64 // -1 outside transactions
	status    writeStatus
	offset    int64
}

// hRead is one record a consumer was given.
type hRead struct {
	partition int32
	offset    int64
	value     []byte
}

// history is everything the soak did and saw. Its methods are safe for
// concurrent use.
type history struct {
	mu     sync.Mutex
	writes map[writeID]*hWrite
	txns   map[int64]txnOutcome
	// live holds, per consumer, the records in the order it was given
	// them while the faults ran; final is one complete read_committed read
	// of every partition from its start to its end after the heal.
	live  map[string][]hRead
	final []hRead
	// ends are the partitions' end offsets (LSOs) the final read and every
	// live consumer read up to.
	ends map[int32]int64
}

func newHistory() *history {
	return &history{writes: map[writeID]*hWrite{}, txns: map[int64]txnOutcome{}, live: map[string][]hRead{}, ends: map[int32]int64{}}
}

// sent records a write handed to a producer; txn is -1 outside a
// transaction.
func (h *history) sent(id writeID, partition int32, txn int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes[id] = &hWrite{id: id, partition: partition, txn: txn, offset: -1}
}

// acked records the acknowledgement of a write at offset.
func (h *history) acked(id writeID, offset int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.writes[id]; w != nil {
		w.status, w.offset = writeAcked, offset
	}
}

func (h *history) txnEnded(txn int64, o txnOutcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.txns[txn] = o
}

func (h *history) read(consumer string, r hRead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live[consumer] = append(h.live[consumer], r)
}

// checkResult counts each kind of anomaly; every one must be 0.
type checkResult struct {
	// Lost: acknowledged outside a transaction, or in a committed
	// transaction, and absent from the final read (or found at another
	// offset than acknowledged).
	Lost int
	// Duplicated: one write stored at more than one offset.
	Duplicated int
	// UnseenAfterHeal: present in the final read below the end offsets,
	// but never given to a live consumer that read up to those ends.
	UnseenAfterHeal int
	// AbortedRead: a read_committed read returned a write of a
	// transaction that was aborted, or a record that no producer sent.
	AbortedRead int
	// NonMonotonic: a consumer was given offsets of a partition out of
	// increasing order, or one producer's acknowledged writes to a
	// partition sit in another order than it sent them.
	NonMonotonic int

	Acked, Committed, Aborted int // for the report
	Examples                  []string
}

func (r checkResult) ok() bool {
	return r.Lost+r.Duplicated+r.UnseenAfterHeal+r.AbortedRead+r.NonMonotonic == 0
}

func (r checkResult) String() string {
	return fmt.Sprintf("lost %d, duplicated %d, unseen-after-heal %d, aborted-read %d, non-monotonic %d (acked %d, committed txns %d, aborted txns %d)",
		r.Lost, r.Duplicated, r.UnseenAfterHeal, r.AbortedRead, r.NonMonotonic, r.Acked, r.Committed, r.Aborted)
}

func (r *checkResult) example(format string, args ...any) {
	if len(r.Examples) < 20 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// check analyses the history. It must be called once the producers are
// done and the final read and the live consumers have read to ends.
func (h *history) check() checkResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	var res checkResult
	for _, o := range h.txns {
		switch o {
		case txnCommitted:
			res.Committed++
		case txnAborted:
			res.Aborted++
		}
	}

	// What the final read holds, per write.
	stored := map[writeID][]hRead{}
	for _, r := range h.final {
		id, txn, err := decodeValue(r.value)
		if w := h.writes[id]; err != nil || w == nil || w.txn != txn || w.partition != r.partition {
			res.AbortedRead++
			res.example("final read p%d@%d: %q was never sent there", r.partition, r.offset, r.value)
			continue
		}
		stored[id] = append(stored[id], r)
	}
	ids := make([]writeID, 0, len(h.writes))
	for id := range h.writes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].producer != ids[j].producer {
			return ids[i].producer < ids[j].producer
		}
		return ids[i].seq < ids[j].seq
	})
	for _, id := range ids {
		w := h.writes[id]
		at := stored[id]
		if len(at) > 1 {
			res.Duplicated++
			res.example("%s stored %d times (p%d@%d and p%d@%d)", id, len(at), at[0].partition, at[0].offset, at[1].partition, at[1].offset)
		}
		outcome := txnCommitted // a write outside a transaction counts once acknowledged
		if w.txn >= 0 {
			outcome = h.txns[w.txn]
		}
		if w.status == writeAcked && w.txn < 0 {
			res.Acked++
		}
		if outcome == txnAborted && len(at) > 0 {
			res.AbortedRead++
			res.example("%s of aborted transaction %d read at p%d@%d", id, w.txn, at[0].partition, at[0].offset)
		}
		mustBeThere := (w.txn < 0 && w.status == writeAcked) || (w.txn >= 0 && outcome == txnCommitted && w.status == writeAcked)
		if mustBeThere {
			switch {
			case len(at) == 0:
				res.Lost++
				res.example("%s acknowledged at p%d@%d, not in the final read", id, w.partition, w.offset)
			case !slices.ContainsFunc(at, func(r hRead) bool { return r.offset == w.offset }):
				res.Lost++
				res.example("%s acknowledged at p%d@%d, found at p%d@%d", id, w.partition, w.offset, at[0].partition, at[0].offset)
			}
		}
	}

	// One producer's acknowledged writes keep their order in a partition.
	type pp struct {
		producer  string
		partition int32
	}
	lastOff := map[pp]int64{}
	lastSeq := map[pp]uint64{}
	for _, id := range ids { // by producer, then sequence
		w := h.writes[id]
		if w.status != writeAcked {
			continue
		}
		k := pp{id.producer, w.partition}
		if prev, ok := lastOff[k]; ok && w.offset <= prev {
			res.NonMonotonic++
			res.example("%s sent after %s#%d but acknowledged at p%d@%d, not after %d", id, id.producer, lastSeq[k], w.partition, w.offset, prev)
		}
		lastOff[k], lastSeq[k] = w.offset, id.seq
	}

	// The live consumers: increasing offsets, nothing aborted or never
	// sent, and everything of the final read below the ends seen.
	names := make([]string, 0, len(h.live))
	for n := range h.live {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		seen := map[writeID]bool{}
		last := map[int32]int64{}
		for _, r := range h.live[name] {
			if prev, ok := last[r.partition]; ok && r.offset <= prev {
				res.NonMonotonic++
				res.example("consumer %s given p%d@%d after p%d@%d", name, r.partition, r.offset, r.partition, prev)
			}
			last[r.partition] = r.offset
			id, txn, err := decodeValue(r.value)
			w := h.writes[id]
			if err != nil || w == nil || w.txn != txn || w.partition != r.partition {
				res.AbortedRead++
				res.example("consumer %s read p%d@%d: %q was never sent there", name, r.partition, r.offset, r.value)
				continue
			}
			if w.txn >= 0 && h.txns[w.txn] == txnAborted {
				res.AbortedRead++
				res.example("consumer %s read %s of aborted transaction %d at p%d@%d", name, id, w.txn, r.partition, r.offset)
			}
			seen[id] = true
		}
		for _, r := range h.final {
			id, _, err := decodeValue(r.value)
			if err != nil || seen[id] || r.offset >= h.ends[r.partition] {
				continue
			}
			res.UnseenAfterHeal++
			res.example("consumer %s never given %s (p%d@%d)", name, id, r.partition, r.offset)
		}
	}
	return res
}
