package idempotent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Errors of Check; each wraps the Kafka error it answers as.
var (
	ErrOutOfOrderSequence   = kafkaerr.New(kerr.OutOfOrderSequenceNumber, "out of order sequence number")
	ErrInvalidProducerEpoch = kafkaerr.New(kerr.InvalidProducerEpoch, "invalid producer epoch")
	ErrInvalidTxnState      = kafkaerr.New(kerr.InvalidTxnState, "invalid transaction state")
	ErrCoordinatorFenced    = kafkaerr.New(kerr.TransactionCoordinatorFenced, "transaction coordinator fenced")
	ErrCorruptSnapshot      = errors.New("corrupt producer state snapshot")
)

// NoProducerID marks a batch written without idempotence.
const NoProducerID = -1

// maxCachedBatches is how many recent batches per producer are kept for
// duplicate detection: a producer has at most five in flight.
const maxCachedBatches = 5

// Batch describes a record batch as producer state sees it.
type Batch struct {
	ProducerID    int64
	Epoch         int16
	FirstSeq      int32
	LastSeq       int32
	Transactional bool
	// Control is set for transaction markers; Abort tells an abort marker
	// from a commit marker.
	Control bool
	Abort   bool
	// CoordinatorEpoch is a marker's transaction coordinator epoch: a
	// marker from an older coordinator than the last one seen is refused.
	CoordinatorEpoch int32
	// MaxTimestamp is the batch's max timestamp.
	MaxTimestamp int64
}

// BatchMeta is a cached batch.
type BatchMeta struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64
}

// Entry is the state of one producer id on one partition.
type Entry struct {
	ProducerID int64
	Epoch      int16
	// Batches holds the most recent batches, oldest first; at most five.
	Batches []BatchMeta
	// LastTimestamp is the time of the producer's last write, used for
	// expiry.
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction, or -1.
	CurrentTxnFirstOffset int64
	CoordinatorEpoch      int32
}

func (e *Entry) lastSeq() (int32, bool) {
	if len(e.Batches) == 0 {
		return 0, false
	}
	return e.Batches[len(e.Batches)-1].LastSeq, true
}

// TxnRange is a transaction of one producer on one partition: its first
// data offset and the offset of the marker that ended it.
type TxnRange struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// State is one partition's producer state.
type State struct {
	entries map[int64]*Entry
	// end is the log offset up to which the state includes the log.
	end int64
	// txns holds the ended transactions' ranges, nil until the first
	// transaction ends: a State is a 24-byte allocation instead of 64
	// for the partitions (most of them) that never see one.
	txns *txnRanges
}

// txnRanges are the ended transactions a State tracks.
type txnRanges struct {
	// aborted lists the aborted transactions still in the log, ordered by
	// marker offset: Kafka's .txnindex, which read_committed fetches
	// return so that consumers drop the aborted records.
	aborted []TxnRange
	// completed lists ended transactions whose marker may still be above
	// the high watermark. Until the marker is committed the transaction
	// holds the last stable offset back, as an open one does (Kafka's
	// unreplicatedTxns): a read_committed consumer must not read its
	// records before it can read its outcome.
	completed []TxnRange
}

func (s *State) aborted() []TxnRange {
	if s.txns == nil {
		return nil
	}
	return s.txns.aborted
}

func (s *State) completed() []TxnRange {
	if s.txns == nil {
		return nil
	}
	return s.txns.completed
}

// ranges returns s.txns, making it.
func (s *State) ranges() *txnRanges {
	if s.txns == nil {
		s.txns = &txnRanges{}
	}
	return s.txns
}

// NewState returns empty state covering no offsets. Its map is made with
// the first producer: a broker holds a state for every partition it
// hosts, and most never see an idempotent or transactional producer.
func NewState() *State { return &State{} }

// put adds e, making the map on first use.
func (s *State) put(e *Entry) {
	if s.entries == nil {
		s.entries = make(map[int64]*Entry)
	}
	s.entries[e.ProducerID] = e
}

// End returns the offset up to which the state covers the log.
func (s *State) End() int64 { return s.end }

// Entry returns the entry of a producer id, or nil.
func (s *State) Entry(pid int64) *Entry { return s.entries[pid] }

// Len returns the number of producers tracked.
func (s *State) Len() int { return len(s.entries) }

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// Check validates a client's batch before it is appended. A non-nil
// BatchMeta means the batch is a retry of one already in the log, to be
// answered with that batch's offsets and not appended.
func (s *State) Check(b Batch) (*BatchMeta, error) {
	if b.ProducerID == NoProducerID {
		return nil, nil
	}
	e := s.entries[b.ProducerID]
	if e == nil {
		// Unknown (new, or expired) producer: any sequence is accepted.
		return nil, nil
	}
	if b.Epoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, b.ProducerID, b.Epoch, e.Epoch)
	}
	if b.Control && b.CoordinatorEpoch < e.CoordinatorEpoch {
		return nil, fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, %d seen before", ErrCoordinatorFenced, b.ProducerID, b.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	if b.Epoch == e.Epoch {
		for i := range e.Batches {
			if e.Batches[i].FirstSeq == b.FirstSeq && e.Batches[i].LastSeq == b.LastSeq {
				dup := e.Batches[i]
				return &dup, nil
			}
		}
	}
	if !b.Control && b.FirstSeq >= 0 {
		if b.Epoch != e.Epoch {
			if b.FirstSeq != 0 {
				return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq)
			}
		} else if last, ok := e.lastSeq(); ok && !inSequence(last, b.FirstSeq) {
			return nil, fmt.Errorf("%w: producer %d sequence %d does not follow %d", ErrOutOfOrderSequence, b.ProducerID, b.FirstSeq, last)
		} else if !ok && b.FirstSeq != 0 {
			// The producer is known at this epoch but has written no batch
			// in it yet: a transaction marker bumped its epoch (which
			// forgets the batches of the old one). Kafka's checkSequence
			// then compares with NO_SEQUENCE, so only 0 follows.
			return nil, fmt.Errorf("%w: producer %d must start epoch %d at sequence 0, got %d", ErrOutOfOrderSequence, b.ProducerID, b.Epoch, b.FirstSeq)
		}
	}
	if !b.Control && e.CurrentTxnFirstOffset >= 0 && !b.Transactional && b.Epoch == e.Epoch {
		return nil, fmt.Errorf("%w: non-transactional write from producer %d inside its transaction", ErrInvalidTxnState, b.ProducerID)
	}
	return nil, nil
}

// InTxn reports whether the producer has an open transaction on this
// partition at exactly this epoch.
func (s *State) InTxn(pid int64, epoch int16) bool {
	e := s.entries[pid]
	return e != nil && e.Epoch == epoch && e.CurrentTxnFirstOffset >= 0
}

// Update records a batch appended at [firstOffset, lastOffset]. It is
// called on the leader after Check and the append, on followers as they
// replicate, and while rebuilding from the log; it does not validate.
func (s *State) Update(b Batch, firstOffset, lastOffset int64) {
	if lastOffset+1 > s.end {
		s.end = lastOffset + 1
	}
	if b.ProducerID == NoProducerID {
		return
	}
	e := s.entries[b.ProducerID]
	if e == nil {
		e = &Entry{ProducerID: b.ProducerID, Epoch: b.Epoch, CurrentTxnFirstOffset: -1}
		s.put(e)
	}
	if b.Epoch > e.Epoch {
		e.Epoch = b.Epoch
		e.Batches = e.Batches[:0]
	}
	e.LastTimestamp = max(e.LastTimestamp, b.MaxTimestamp)
	if b.Control {
		e.CoordinatorEpoch = max(e.CoordinatorEpoch, b.CoordinatorEpoch)
		// A transaction marker ends the producer's transaction.
		if e.CurrentTxnFirstOffset >= 0 {
			r := TxnRange{ProducerID: b.ProducerID, FirstOffset: e.CurrentTxnFirstOffset, LastOffset: lastOffset}
			t := s.ranges()
			if b.Abort {
				t.aborted = append(t.aborted, r)
			}
			t.completed = append(t.completed, r)
		}
		e.CurrentTxnFirstOffset = -1
		return
	}
	if b.FirstSeq < 0 {
		// Written by a coordinator (TxnOffsetCommit), not a producer's
		// sequence: it opens the transaction but is not a retry candidate.
		if b.Transactional && e.CurrentTxnFirstOffset < 0 {
			e.CurrentTxnFirstOffset = firstOffset
		}
		return
	}
	if b.Transactional && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = firstOffset
	}
	if len(e.Batches) == maxCachedBatches {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:maxCachedBatches-1]
	}
	e.Batches = append(e.Batches, BatchMeta{FirstSeq: b.FirstSeq, LastSeq: b.LastSeq, FirstOffset: firstOffset, LastOffset: lastOffset, Timestamp: b.MaxTimestamp})
}

// FirstUnstableOffset returns the first offset a read_committed consumer
// may not read yet: the start of the earliest open transaction, or of an
// ended one whose marker is at or above hw. -1 if there is none. Ended
// transactions whose marker is below hw are forgotten here.
func (s *State) FirstUnstableOffset(hw int64) int64 {
	s.PruneCompleted(hw)
	first := int64(-1)
	for _, e := range s.entries {
		if o := e.CurrentTxnFirstOffset; o >= 0 && (first < 0 || o < first) {
			first = o
		}
	}
	for _, r := range s.completed() {
		if first < 0 || r.FirstOffset < first {
			first = r.FirstOffset
		}
	}
	return first
}

// PruneCompleted forgets ended transactions whose marker is below hw.
func (s *State) PruneCompleted(hw int64) {
	if s.txns == nil {
		return
	}
	kept := s.txns.completed[:0]
	for _, r := range s.txns.completed {
		if r.LastOffset >= hw {
			kept = append(kept, r)
		}
	}
	s.txns.completed = kept
}

// AbortedIn returns the aborted transactions overlapping [from, to): those
// a consumer reading that range must skip.
func (s *State) AbortedIn(from, to int64) []TxnRange {
	var out []TxnRange
	// aborted is ordered by LastOffset; skip those ending before from.
	aborted := s.aborted()
	i := sort.Search(len(aborted), func(i int) bool { return aborted[i].LastOffset >= from })
	for _, r := range aborted[i:] {
		if r.FirstOffset < to {
			out = append(out, r)
		}
	}
	return out
}

// DropAbortedBefore forgets aborted transactions whose marker is below
// the log start offset: their records are gone.
func (s *State) DropAbortedBefore(logStart int64) {
	aborted := s.aborted()
	i := sort.Search(len(aborted), func(i int) bool { return aborted[i].LastOffset >= logStart })
	if i > 0 {
		s.txns.aborted = append(aborted[:0], aborted[i:]...)
	}
}

// Entries returns copies of the producers' entries, by producer id.
func (s *State) Entries() []Entry {
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		c := *e
		c.Batches = append([]BatchMeta(nil), e.Batches...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// Advance records that the log up to end holds nothing for producer state
// (batches without producer ids are folded into Update already).
func (s *State) Advance(end int64) {
	if end > s.end {
		s.end = end
	}
}

// Expire forgets producers whose last write is older than now minus
// expirationMs and that have no open transaction.
func (s *State) Expire(nowMs, expirationMs int64) int {
	n := 0
	for pid, e := range s.entries {
		if e.CurrentTxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs {
			delete(s.entries, pid)
			n++
		}
	}
	return n
}

// TruncateTo drops what the state knows of offsets at and after offset.
// Cached batches at or past it are removed; a producer left with none is
// forgotten, as its epoch can no longer be trusted. Callers that need the
// exact state rebuild it from a snapshot and the log instead.
func (s *State) TruncateTo(offset int64) {
	for pid, e := range s.entries {
		kept := e.Batches[:0]
		for _, b := range e.Batches {
			if b.LastOffset < offset {
				kept = append(kept, b)
			}
		}
		e.Batches = kept
		if e.CurrentTxnFirstOffset >= offset {
			e.CurrentTxnFirstOffset = -1
		}
		if len(e.Batches) == 0 && e.CurrentTxnFirstOffset < 0 {
			delete(s.entries, pid)
		}
	}
	if s.txns != nil {
		s.txns.aborted = truncateRanges(s.txns.aborted, offset)
		s.txns.completed = truncateRanges(s.txns.completed, offset)
	}
	if s.end > offset {
		s.end = offset
	}
}

func truncateRanges(rs []TxnRange, offset int64) []TxnRange {
	kept := rs[:0]
	for _, r := range rs {
		if r.LastOffset < offset {
			kept = append(kept, r)
		}
	}
	return kept
}

// Snapshot encoding: a version, the end offset, the entries, the aborted
// and the ended-but-unreplicated transactions, and a CRC-32C of everything
// before it. Version 1 lacked the transaction lists; such a snapshot is
// refused and the state rebuilt from the whole log, which recovers them.
const snapshotVersion = 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalSnapshot encodes the state.
func (s *State) MarshalSnapshot() []byte {
	pids := make([]int64, 0, len(s.entries))
	for pid := range s.entries {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	b := binary.BigEndian.AppendUint16(nil, snapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(s.end))
	b = binary.BigEndian.AppendUint32(b, uint32(len(pids)))
	for _, pid := range pids {
		e := s.entries[pid]
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = append(b, byte(len(e.Batches)))
		for _, m := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	for _, rs := range [][]TxnRange{s.aborted(), s.completed()} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(rs)))
		for _, r := range rs {
			b = binary.BigEndian.AppendUint64(b, uint64(r.ProducerID))
			b = binary.BigEndian.AppendUint64(b, uint64(r.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(r.LastOffset))
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// UnmarshalSnapshot decodes a snapshot written by MarshalSnapshot.
func UnmarshalSnapshot(b []byte) (*State, error) {
	if len(b) < 18 {
		return nil, ErrCorruptSnapshot
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	r := reader{b: body}
	if v := r.u16(); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorruptSnapshot, v)
	}
	s := NewState()
	s.end = int64(r.u64())
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		e := &Entry{ProducerID: int64(r.u64()), Epoch: int16(r.u16()), LastTimestamp: int64(r.u64()), CurrentTxnFirstOffset: int64(r.u64()), CoordinatorEpoch: int32(r.u32())}
		nb := int(r.u8())
		if nb > maxCachedBatches {
			return nil, fmt.Errorf("%w: %d batches for producer %d", ErrCorruptSnapshot, nb, e.ProducerID)
		}
		for j := 0; j < nb; j++ {
			e.Batches = append(e.Batches, BatchMeta{FirstSeq: int32(r.u32()), LastSeq: int32(r.u32()), FirstOffset: int64(r.u64()), LastOffset: int64(r.u64()), Timestamp: int64(r.u64())})
		}
		s.put(e)
	}
	var t txnRanges
	for _, rs := range []*[]TxnRange{&t.aborted, &t.completed} {
		n := r.u32()
		if int(n) > len(r.b)/24 {
			return nil, fmt.Errorf("%w: %d transactions", ErrCorruptSnapshot, n)
		}
		for i := uint32(0); i < n && r.err == nil; i++ {
			*rs = append(*rs, TxnRange{ProducerID: int64(r.u64()), FirstOffset: int64(r.u64()), LastOffset: int64(r.u64())})
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: truncated or trailing data", ErrCorruptSnapshot)
	}
	if len(t.aborted) > 0 || len(t.completed) > 0 {
		s.txns = &t
	}
	return s, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = ErrCorruptSnapshot
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *reader) u8() uint8   { return r.take(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }
