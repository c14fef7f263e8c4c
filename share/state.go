package share

// The share-partition state machine (KIP-932): what one share group knows
// of one topic-partition. It does no I/O and reads no clock; every call
// that depends on time takes "now" in Unix milliseconds, so the
// transitions are tested deterministically.
//
//	Available --acquire--> Acquired --accept--> Acknowledged
//	    ^                     |  |--reject/gap-> Archived
//	    |                     |--release or lock expiry, deliveries < limit
//	    +---------------------+
//	                          |--release or lock expiry, deliveries >= limit -> Archived
//
// Acknowledged and Archived are final: once every offset below one of them
// is final too, the start offset moves past it and its entry is dropped.

// RecordState is the state of one in-flight record.
type RecordState int8

const (
	// Available records may be acquired.
	Available RecordState = iota
	// Acquired records are locked by one member until acknowledged,
	// released or the lock expires.
	Acquired
	// Acknowledged records were accepted: consumed for good.
	Acknowledged
	// Archived records were rejected, delivered too often, or are not
	// records at all (transaction markers, aborted records).
	Archived
	// Finished is what State reports for an offset below the end offset
	// with no entry: final, its entry already dropped (or a gap in the log).
	Finished
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	case Finished:
		return "Finished"
	}
	return "Unknown"
}

// AckType is an acknowledgement type of ShareFetch/ShareAcknowledge.
type AckType int8

const (
	// AckGap marks an offset that is not a record (the client saw none).
	AckGap AckType = 0
	// AckAccept consumes the record.
	AckAccept AckType = 1
	// AckRelease makes the record available again.
	AckRelease AckType = 2
	// AckReject archives the record as unprocessable.
	AckReject AckType = 3
	// AckRenew extends the acquisition lock (KIP-1222, v2).
	AckRenew AckType = 4
)

// Limits are the per-group settings the state machine applies.
type Limits struct {
	// LockMs is the acquisition lock duration.
	LockMs int64
	// DeliveryLimit is share.delivery.count.limit.
	DeliveryLimit int16
	// MaxInFlight bounds EndOffset-StartOffset for new acquisitions.
	MaxInFlight int64
}

type inflight struct {
	state      RecordState
	member     string
	deliveries int16
	lockUntil  int64 // Unix ms; meaningful while Acquired
}

// Span is one record batch of the log as the reader saw it.
type Span struct {
	First, Last int64
	// Skip marks offsets that are never delivered: control batches
	// (transaction markers) and, under read_committed, aborted records.
	Skip bool
}

// AcquiredRange is a run of acquired offsets with one delivery count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch acknowledges [First, Last]; Types has one type for the whole
// range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Partition is the share-partition state of one group on one
// topic-partition.
//
// Invariants: start <= end; every offset in [start, end) with no entry in
// recs is final; recs has no entry outside [start, end); the entry at
// start, if any, is Available or Acquired (final entries there are
// dropped by advance).
type Partition struct {
	start int64 // the share-partition start offset (SPSO)
	end   int64 // the share-partition end offset (SPEO): never acquired from here on
	recs  map[int64]*inflight

	// TopicID, LeaderEpoch and GroupEpoch are what the state was built
	// under; the manager rebuilds it when one of them changes (a topic
	// deleted and created again, a new leader, an administrator's reset).
	TopicID     [16]byte
	LeaderEpoch int32
	GroupEpoch  int32
	// Dirty is set when the start offset moved since the last checkpoint.
	Dirty bool
}

// NewPartition starts a share partition at offset start.
func NewPartition(start int64) *Partition {
	return &Partition{start: start, end: start, recs: map[int64]*inflight{}, Dirty: true}
}

// StartOffset is the SPSO: every offset below it is final.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the SPEO: the first offset never acquired.
func (p *Partition) EndOffset() int64 { return p.end }

// State reports the state of offset o: Available past the end offset,
// Finished below the start offset or for a dropped entry.
func (p *Partition) State(o int64) RecordState {
	if o >= p.end {
		return Available
	}
	if r := p.recs[o]; r != nil && o >= p.start {
		return r.state
	}
	return Finished
}

// DeliveryCount is how often offset o was delivered, 0 if never or no
// longer tracked.
func (p *Partition) DeliveryCount(o int64) int16 {
	if r := p.recs[o]; r != nil {
		return r.deliveries
	}
	return 0
}

// InFlight counts the Available and Acquired records below the end offset.
func (p *Partition) InFlight() (available, acquired int) {
	for _, r := range p.recs {
		switch r.state {
		case Available:
			available++
		case Acquired:
			acquired++
		}
	}
	return
}

// Lag is Kafka's share-partition lag: records up to hw not yet final.
func (p *Partition) Lag(hw int64) int64 {
	if hw <= p.start {
		return 0
	}
	av, acq := p.InFlight()
	lag := int64(av+acq) + max(hw-p.end, 0)
	return lag
}

// Reset moves the partition to start with nothing in flight (an
// administrator's AlterShareGroupOffsets).
func (p *Partition) Reset(start int64) {
	p.start, p.end = start, start
	clear(p.recs)
	p.Dirty = true
}

// FetchOffset is where a read for acquisition should begin: the first
// Available offset, or the end offset if none is.
func (p *Partition) FetchOffset() int64 {
	best := p.end
	for o, r := range p.recs {
		if r.state == Available && o < best {
			best = o
		}
	}
	return best
}

// HasAvailable reports whether acquisition below limit could succeed
// without new records being written.
func (p *Partition) HasAvailable(limit int64, lim Limits) bool {
	if p.end < limit && p.end-p.start < lim.MaxInFlight {
		return true
	}
	for _, r := range p.recs {
		if r.state == Available {
			return true
		}
	}
	return false
}

// Acquire locks up to maxRecords deliverable offsets of spans below limit
// for member. spans are the batches read from the log, in offset order;
// offsets between them are gaps (compacted away) and become final. A
// record at its delivery limit is archived instead of acquired; new
// offsets past the end are taken only while the in-flight window is below
// lim.MaxInFlight.
func (p *Partition) Acquire(member string, now int64, spans []Span, limit int64, maxRecords int, lim Limits) []AcquiredRange {
	var out []AcquiredRange
	n := 0
	add := func(o int64, dc int16) {
		n++
		if k := len(out); k > 0 && out[k-1].Last == o-1 && out[k-1].DeliveryCount == dc {
			out[k-1].Last = o
			return
		}
		out = append(out, AcquiredRange{First: o, Last: o, DeliveryCount: dc})
	}
spans:
	for _, s := range spans {
		for o := max(s.First, p.start); o <= s.Last && o < limit; o++ {
			if n >= maxRecords {
				break spans
			}
			if o < p.end {
				r := p.recs[o]
				if r == nil || r.state != Available {
					continue
				}
				if s.Skip || r.deliveries >= lim.DeliveryLimit {
					r.state, r.member = Archived, ""
					continue
				}
				r.state, r.member, r.lockUntil = Acquired, member, now+lim.LockMs
				r.deliveries++
				add(o, r.deliveries)
				continue
			}
			if p.end-p.start >= lim.MaxInFlight {
				break spans
			}
			// o >= end: a new offset. Offsets skipped between the old end
			// and o are gaps and stay without an entry, i.e. final.
			p.end = o + 1
			if s.Skip {
				continue
			}
			p.recs[o] = &inflight{state: Acquired, member: member, deliveries: 1, lockUntil: now + lim.LockMs}
			add(o, 1)
		}
	}
	p.advance()
	return out
}

// ValidateAcks checks acknowledgement batches against the state without
// changing it: offsets ascending and not overlapping, one type or one per
// offset, types known (AckRenew only when renew is allowed), and every
// acknowledged offset acquired by member. Offsets already final below the
// start offset are ignored, as are gap acknowledgements of final offsets.
func (p *Partition) ValidateAcks(member string, batches []AckBatch, allowRenew bool) error {
	prev := int64(-1)
	maxType := AckReject
	if allowRenew {
		maxType = AckRenew
	}
	for _, b := range batches {
		if b.First > b.Last || b.First <= prev || len(b.Types) == 0 {
			return ErrInvalidRequest
		}
		if len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return ErrInvalidRequest
		}
		for _, t := range b.Types {
			if t < int8(AckGap) || t > int8(maxType) {
				return ErrInvalidRequest
			}
		}
		prev = b.Last
		if b.Last >= p.end {
			return ErrInvalidRecordState
		}
		for o := max(b.First, p.start); o <= b.Last; o++ {
			r := p.recs[o]
			if r == nil {
				if ackType(b, o) == AckGap {
					continue
				}
				return ErrInvalidRecordState
			}
			if r.state != Acquired || r.member != member {
				return ErrInvalidRecordState
			}
		}
	}
	return nil
}

func ackType(b AckBatch, o int64) AckType {
	if len(b.Types) == 1 {
		return AckType(b.Types[0])
	}
	return AckType(b.Types[o-b.First])
}

// Acknowledge validates then applies batches for member, all or nothing.
// It reports whether a record became available again.
func (p *Partition) Acknowledge(member string, now int64, batches []AckBatch, allowRenew bool, lim Limits) (released bool, err error) {
	if err := p.ValidateAcks(member, batches, allowRenew); err != nil {
		return false, err
	}
	for _, b := range batches {
		for o := max(b.First, p.start); o <= b.Last; o++ {
			r := p.recs[o]
			if r == nil {
				continue
			}
			switch ackType(b, o) {
			case AckAccept:
				r.state, r.member = Acknowledged, ""
			case AckGap, AckReject:
				r.state, r.member = Archived, ""
			case AckRelease:
				released = p.release(r, lim) || released
			case AckRenew:
				r.lockUntil = now + lim.LockMs
			}
		}
	}
	p.advance()
	return released, nil
}

// release hands an acquired record back: Available, or Archived at the
// delivery limit.
func (p *Partition) release(r *inflight, lim Limits) bool {
	r.member = ""
	if r.deliveries >= lim.DeliveryLimit {
		r.state = Archived
		return false
	}
	r.state = Available
	return true
}

// Expire releases every record whose lock ended at or before now and
// reports whether one became available.
func (p *Partition) Expire(now int64, lim Limits) (released bool) {
	changed := false
	for _, r := range p.recs {
		if r.state == Acquired && r.lockUntil <= now {
			released = p.release(r, lim) || released
			changed = true
		}
	}
	if changed {
		p.advance()
	}
	return released
}

// ReleaseMember releases every record member holds (its session closed or
// its connection dropped) and reports whether one became available.
func (p *Partition) ReleaseMember(member string, lim Limits) (released bool) {
	changed := false
	for _, r := range p.recs {
		if r.state == Acquired && r.member == member {
			released = p.release(r, lim) || released
			changed = true
		}
	}
	if changed {
		p.advance()
	}
	return released
}

// advance moves the start offset past final records and drops them.
func (p *Partition) advance() {
	before := p.start
	for p.start < p.end {
		if len(p.recs) == 0 {
			p.start = p.end
			break
		}
		r := p.recs[p.start]
		if r != nil && (r.state == Available || r.state == Acquired) {
			break
		}
		delete(p.recs, p.start)
		p.start++
	}
	if p.start != before {
		p.Dirty = true
	}
}

// SkipTo moves the partition past offsets below off that the log no
// longer has (retention or DeleteRecords removed them).
func (p *Partition) SkipTo(off int64) {
	if off <= p.start {
		return
	}
	for o := range p.recs {
		if o < off {
			delete(p.recs, o)
		}
	}
	p.start = off
	p.end = max(p.end, off)
	p.Dirty = true
}
