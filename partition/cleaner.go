package partition

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Log compaction (Kafka's LogCleaner), for logs whose cleanup.policy
// includes compact. A cleaning of one log:
//
//  1. finds the dirty section: from the cleaner checkpoint (the offset the
//     last cleaning reached, kept per log dir in cleaner-offset-checkpoint)
//     to the first uncleanable offset, the smallest of the active
//     segment's base, the high watermark, the first unstable offset (an
//     open transaction, or one whose marker is not yet committed) and the
//     first segment younger than min.compaction.lag.ms; only whole
//     segments below it are cleanable. It is cleaned when the dirty
//     share of the log reaches min.cleanable.dirty.ratio, or when its
//     oldest dirty record is older than max.compaction.lag.ms (KIP-354);
//  2. builds the key → latest offset map (offsetMap) over the dirty
//     section, stopping early when the map is full;
//  3. re-copies every segment from the log start up to where the map
//     reaches, in groups that fit one segment, keeping a record only if
//     no later record of its key is in the map; a tombstone (null value)
//     or a transaction marker with no batch of its transaction left only
//     until its delete horizon (KIP-534: delete.retention.ms after the
//     first cleaning that reached it, stamped in its batch; see
//     filterBatch), so that a consumer reading from the start within
//     delete.retention.ms sees the delete; records of aborted
//     transactions never; and the last data batch of every producer
//     always (empty if none of its records survive) so that producer
//     state rebuilt from the log keeps its sequence. A log whose earliest
//     delete horizon has passed is cleaned even with nothing dirty;
//  4. swaps each cleaned group in crash-safely (swapGroup) and repeats
//     from 2 until the dirty section is done.
//
// A batch keeps its offsets, leader epoch, producer fields and codec; it is
// copied verbatim when it keeps all its records and re-written (with
// rebuildBatch) only when it loses some. A cleaned segment always ends at
// the last offset of the segments it replaces (its last batch is kept
// empty if need be), so cleaned segments leave no gap between them that
// recovery could take for a lost tail.

// cleanable is what a cleaning of a log would cover now.
type cleanable struct {
	firstDirty int64 // where the dirty section starts
	end        int64 // first uncleanable offset (a segment base)
	cleanBytes int64 // bytes below firstDirty
	dirtyBytes int64 // bytes in [firstDirty, end)
	forced     bool  // max.compaction.lag.ms has passed for a dirty record
	// horizonDue is set when a delete horizon stamped by an earlier
	// cleaning has passed: tombstones or markers can go, so the log is
	// cleaned even with nothing dirty (Kafka's latestDeleteHorizon).
	horizonDue bool
}

func (c cleanable) ratio() float64 {
	if c.cleanBytes+c.dirtyBytes == 0 {
		return 0
	}
	return float64(c.dirtyBytes) / float64(c.cleanBytes+c.dirtyBytes)
}

// needsCleaning reports whether the dirty section should be cleaned now.
func (c cleanable) needsCleaning(cfg Config) bool {
	return c.dirtyBytes > 0 && (c.forced || c.ratio() >= cfg.MinCleanableDirtyRatio) || c.horizonDue
}

// cleanableLocked computes the dirty section from checkpoint firstDirty,
// not yet limited by the first unstable offset (which needs a scan).
func (l *Log) cleanableLocked(firstDirty int64, nowMs int64) cleanable {
	cfg := l.mu.cfg.Value()
	if firstDirty < l.mu.logStart || firstDirty > l.mu.leo {
		firstDirty = l.mu.logStart
	}
	c := cleanable{firstDirty: firstDirty, end: l.active().base}
	c.horizonDue = l.mu.deleteHorizon >= 0 && nowMs >= l.mu.deleteHorizon
	for _, s := range l.mu.segs[:len(l.mu.segs)-1] {
		if s.next > l.mu.hw || (cfg.MinCompactionLagMs > 0 && s.next > firstDirty && s.maxTs > nowMs-cfg.MinCompactionLagMs) {
			c.end = s.base
			break
		}
	}
	for _, s := range l.mu.segs[:len(l.mu.segs)-1] {
		switch {
		case s.next <= firstDirty:
			c.cleanBytes += s.size
		case s.base < c.end:
			if c.dirtyBytes == 0 && s.size > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 &&
				s.rollBaseTs >= 0 && nowMs-s.rollBaseTs > cfg.MaxCompactionLagMs {
				c.forced = true
			}
			c.dirtyBytes += s.size
		}
	}
	return c
}

// cleanerPoint returns the cleaner checkpoint cp lowered to the lowest
// offset the log was truncated to since the last call (Kafka's
// maybeTruncateCheckpoint): what a truncation replaced is dirty again.
func (l *Log) cleanerPoint(cp int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	cp = min(cp, l.mu.truncatedTo)
	l.mu.truncatedTo = math.MaxInt64
	return cp
}

// CleanStats describes one cleaning.
type CleanStats struct {
	FirstDirty      int64 // where the dirty section started
	End             int64 // the new cleaner checkpoint
	Passes          int   // times the key map was filled
	SizeBefore      int64 // bytes of the log's segments before the cleaning
	SizeAfter       int64 // and after
	BytesRead       int64
	RecordsRead     int64
	RecordsRetained int64
	Duration        time.Duration
	// Aborted is set when truncation, retention or closing changed the
	// log meanwhile: the cleaning stopped and is to be retried.
	Aborted bool
}

// cleanRun is the state one cleaning thread reuses between cleanings.
type cleanRun struct {
	m        *offsetMap
	throttle *throttler
	now      func() time.Time
	// hook, if set, runs at each step of a group's swap (tests simulate
	// a crash there by returning an error).
	hook func(step string) error
	// stop, if set, ends a cleaning early when closed (shutdown).
	stop <-chan struct{}
}

// errCleanStopped ends a cleaning the Manager is shutting down for.
var errCleanStopped = errors.New("log cleaning stopped by shutdown")

// txnScan is what a cleaning needs to know about transactions and
// producers, read from the batch headers (and markers) of the whole log:
// Kafka takes it from the producer state and the .txnindex.
type txnScan struct {
	aborted       map[int64][][2]int64 // producer id → [first offset, marker offset] of its aborted transactions
	lastData      map[int64]int64      // producer id → last offset of its last data batch
	firstUnstable int64                // -1 if none below the HW
}

func (t *txnScan) isAborted(pid, offset int64) bool {
	rs := t.aborted[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i][1] >= offset })
	return i < len(rs) && rs[i][0] <= offset
}

// scanTxns reads the batch headers of every segment in views.
func scanTxns(views []segView, hw int64) (*txnScan, error) {
	t := &txnScan{aborted: map[int64][][2]int64{}, lastData: map[int64]int64{}, firstUnstable: -1}
	open := map[int64]int64{}
	var buf []byte
	for _, v := range views {
		var rerr error
		_, err := scanHeaders(v.s.log, 0, v.size, func(h BatchHeader, pos int64) bool {
			if h.ProducerID < 0 {
				return true
			}
			if !h.IsControl() {
				t.lastData[h.ProducerID] = h.LastOffset()
				if h.IsTransactional() && h.BaseOffset < hw {
					if _, ok := open[h.ProducerID]; !ok {
						open[h.ProducerID] = h.BaseOffset
					}
				}
				return true
			}
			first, ok := open[h.ProducerID]
			if !ok || h.BaseOffset >= hw {
				return true
			}
			if cap(buf) < h.Size() {
				buf = make([]byte, h.Size())
			}
			b := buf[:h.Size()]
			if _, err := v.s.log.ReadAt(b, pos); err != nil {
				rerr = err
				return false
			}
			if m, _ := ReadControlMarker(b); !m.Commit {
				t.aborted[h.ProducerID] = append(t.aborted[h.ProducerID], [2]int64{first, h.BaseOffset})
			}
			delete(open, h.ProducerID)
			return true
		})
		if err = errors.Join(err, rerr); err != nil {
			return nil, err
		}
	}
	for _, first := range open {
		if t.firstUnstable < 0 || first < t.firstUnstable {
			t.firstUnstable = first
		}
	}
	return t, nil
}

// errCleanAborted stops a cleaning whose log changed under it.
var errCleanAborted = errors.New("log changed during cleaning")

// clean cleans the log from checkpoint firstDirty if it needs it (or
// always, with force). It returns the new checkpoint in stats.End; when
// nothing was cleanable End is the (validated) firstDirty.
func (l *Log) clean(run *cleanRun, firstDirty int64, force bool) (CleanStats, error) {
	start := time.Now()
	nowMs := run.now().UnixMilli()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return CleanStats{}, ErrLogClosed
	}
	cfg := l.mu.cfg.Value()
	c := l.cleanableLocked(firstDirty, nowMs)
	st := CleanStats{FirstDirty: c.firstDirty, End: c.firstDirty}
	if !cfg.Compact || (!force && !c.needsCleaning(cfg)) || (c.dirtyBytes == 0 && !c.horizonDue) {
		l.mu.Unlock()
		return st, nil
	}
	hw := l.mu.hw
	gen0 := l.mu.cleanGen
	st.SizeBefore = l.sizeLocked()
	views := l.viewsLocked(0)
	l.mu.Unlock()
	fail := func(err error) (CleanStats, error) {
		if err = l.cleanErr(err, gen0); errors.Is(err, errCleanAborted) {
			st.Aborted = true
			return st, nil
		}
		return st, err
	}

	txns, err := scanTxns(views, hw)
	if err != nil {
		return fail(err)
	}
	if u := txns.firstUnstable; u >= 0 && u < c.end {
		// Only whole segments below the first unstable offset.
		end := c.firstDirty
		for _, v := range views {
			if v.next > u || v.s.base >= c.end {
				break
			}
			end = v.next
		}
		c.end = end
	}
	dirtyStart := c.firstDirty
	nextHorizon := int64(-1)
	// With nothing dirty but a passed delete horizon, one pass re-copies
	// the clean section with an empty key map.
	for pass := 0; dirtyStart < c.end || (pass == 0 && c.horizonDue); pass++ {
		st.Passes++
		l.mu.Lock()
		if l.mu.closed {
			l.mu.Unlock()
			return st, ErrLogClosed
		}
		gen := l.mu.cleanGen
		views = l.viewsLocked(0)
		l.mu.Unlock()
		run.m.clear()
		stop, err := buildOffsetMap(run, views, dirtyStart, max(c.end, dirtyStart), txns, cfg.MaxMessageBytes, &st)
		if err != nil {
			return fail(err)
		}
		if err := l.cleanSegments(run, views, gen, stop, nowMs, txns, cfg, &st, &nextHorizon); err != nil {
			return fail(err)
		}
		dirtyStart = stop
		st.End = stop
	}
	l.mu.Lock()
	l.mu.deleteHorizon = nextHorizon
	st.SizeAfter = l.sizeLocked()
	l.mu.Unlock()
	st.Duration = time.Since(start)
	return st, nil
}

// cleanErr reports a failed cleaning as ErrLogClosed if the log was
// closed meanwhile, and as aborted (errCleanAborted) if a truncation,
// retention or DeleteRecords changed its segments since the cleaning
// began (gen): a read of a segment deleted under it fails, and is no
// error of the log's.
func (l *Log) cleanErr(err error, gen uint64) error {
	l.mu.Lock()
	closed, changed := l.mu.closed, l.mu.cleanGen != gen
	l.mu.Unlock()
	switch {
	case closed:
		return ErrLogClosed
	case changed && !errors.Is(err, errCleanStopped):
		return fmt.Errorf("%w: %v", errCleanAborted, err)
	}
	return err
}

// buildOffsetMap fills the map from the data records in [from, end),
// stopping at the first batch that would overfill it; it returns the
// offset up to which the map covers the log.
func buildOffsetMap(run *cleanRun, views []segView, from, end int64, txns *txnScan, maxRecord int32, st *CleanStats) (int64, error) {
	m := run.m
	for _, v := range views {
		if v.next <= from || v.s.base >= end {
			continue
		}
		stop := int64(-1)
		err := eachBatch(run, v, func(h BatchHeader, batch []byte) (bool, error) {
			if h.LastOffset() < from {
				return true, nil
			}
			if h.BaseOffset >= end {
				return false, nil
			}
			if h.IsControl() || (h.IsTransactional() && txns.isAborted(h.ProducerID, h.BaseOffset)) {
				return true, nil
			}
			if int(h.NumRecords) > m.room() {
				if m.size() == 0 {
					return false, fmt.Errorf("a batch of %d records at offset %d does not fit the cleaner's key map of %d entries (log.cleaner.dedupe.buffer.size)", h.NumRecords, h.BaseOffset, m.maxUsed)
				}
				stop = h.BaseOffset
				return false, nil
			}
			return true, eachRecord(h, batch, maxRecord, func(off int64, _ int64, body []byte) {
				if key, hasKey, _, ok := recordKey(body); ok && hasKey {
					m.put(key, off)
				}
			})
		}, st)
		if err != nil {
			return 0, err
		}
		if stop >= 0 {
			return stop, nil
		}
	}
	return end, nil
}

// eachBatch calls fn with every batch of a segment view, in order,
// until fn returns false or an error; the batch bytes are reused.
func eachBatch(run *cleanRun, v segView, fn func(h BatchHeader, batch []byte) (bool, error), st *CleanStats) error {
	br := bufio.NewReaderSize(io.NewSectionReader(v.s.log, 0, v.size), 256<<10)
	var buf []byte
	for pos := int64(0); pos < v.size; {
		if cap(buf) < BatchHeaderSize {
			buf = make([]byte, BatchHeaderSize, 64<<10)
		}
		if _, err := io.ReadFull(br, buf[:BatchHeaderSize]); err != nil {
			return err
		}
		h := parseHeaderUnchecked(buf)
		if h.BatchLength < minBatchLength || int64(h.Size()) > v.size-pos {
			return fmt.Errorf("%w: batch length %d at position %d of segment %d", ErrCorruptMessage, h.BatchLength, pos, v.s.base)
		}
		if cap(buf) < h.Size() {
			nb := make([]byte, h.Size())
			copy(nb, buf[:BatchHeaderSize])
			buf = nb
		}
		b := buf[:h.Size()]
		if _, err := io.ReadFull(br, b[BatchHeaderSize:]); err != nil {
			return err
		}
		st.BytesRead += int64(len(b))
		run.throttle.wait(len(b))
		if run.stop != nil {
			select {
			case <-run.stop:
				return errCleanStopped
			default:
			}
		}
		pos += int64(len(b))
		more, err := fn(h, b)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// eachRecord calls fn with the offset, timestamp and bytes (after the
// length prefix) of every record of a batch.
func eachRecord(h BatchHeader, batch []byte, maxRecord int32, fn func(off, ts int64, body []byte)) error {
	if h.Compression() == CompressionNone {
		return eachPlainRecord(h, batch[BatchHeaderSize:], fn)
	}
	it, err := NewRecordIter(h, bytes.NewReader(batch[BatchHeaderSize:]), maxRecord, true)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		fn(it.Offset, it.Timestamp, it.Body)
	}
	return it.Err()
}

// eachPlainRecord is eachRecord for an uncompressed batch, reading the
// records in place.
func eachPlainRecord(h BatchHeader, b []byte, fn func(off, ts int64, body []byte)) error {
	for i := int32(0); i < h.NumRecords; i++ {
		n, k := binary.Varint(b)
		if k <= 0 || n < 0 || n > int64(len(b)-k) {
			return fmt.Errorf("%w: record %d of the batch at offset %d is truncated", ErrCorruptMessage, i, h.BaseOffset)
		}
		body := b[k : k+int(n)]
		b = b[k+int(n):]
		r := varintReader{b: body, ok: true}
		r.byte()
		tsDelta := r.varint()
		offDelta := r.varint()
		if !r.ok {
			return fmt.Errorf("%w: record %d of the batch at offset %d is truncated", ErrCorruptMessage, i, h.BaseOffset)
		}
		ts := h.FirstTimestamp + tsDelta
		if h.TimestampType() == 1 {
			ts = h.MaxTimestamp
		}
		fn(h.BaseOffset+offDelta, ts, body)
	}
	return nil
}

// cleaner holds the per-pass state of re-copying segments.
type cleaner struct {
	run   *cleanRun
	txns  *txnScan
	cfg   Config
	nowMs int64
	// retained tracks, per producer, whether any batch of its open
	// transaction was kept (its marker stays while one is).
	retained map[int64]bool
	st       *CleanStats
	// nextHorizon is the earliest delete horizon of a batch kept, -1 if
	// none: when the log is next due for cleaning for its tombstones.
	nextHorizon *int64
}

func (c *cleaner) noteHorizon(h int64) {
	if *c.nextHorizon < 0 || h < *c.nextHorizon {
		*c.nextHorizon = h
	}
}

// cleanSegments re-copies every segment whose base is below stop (from the
// log start), in groups, swapping each in as it is done.
func (l *Log) cleanSegments(run *cleanRun, views []segView, gen uint64, stop, nowMs int64, txns *txnScan, cfg Config, st *CleanStats, nextHorizon *int64) error {
	var todo []segView
	for _, v := range views[:len(views)-1] {
		if v.s.base >= stop {
			break
		}
		todo = append(todo, v)
	}
	c := &cleaner{run: run, txns: txns, cfg: cfg, nowMs: nowMs, retained: map[int64]bool{}, st: st, nextHorizon: nextHorizon}
	for _, group := range groupSegments(todo, cfg) {
		ns, err := c.cleanGroup(l, group)
		if err != nil {
			return err
		}
		if err := l.swapGroup(run, gen, group, ns); err != nil {
			return err
		}
	}
	return nil
}

// groupSegments groups consecutive segments whose cleaned copies fit one
// segment: total size within segment.bytes, indexes within
// segment.index.bytes, offsets within 32-bit relative offsets (Kafka's
// groupSegmentsBySize).
func groupSegments(vs []segView, cfg Config) [][]segView {
	var out [][]segView
	for len(vs) > 0 {
		n, size, idx, tidx := 1, vs[0].size, int64(len(vs[0].idx)), int64(len(vs[0].tidx))
		for n < len(vs) {
			v := vs[n]
			if size+v.size > cfg.SegmentBytes || idx+int64(len(v.idx)) > int64(cfg.SegmentIndexBytes) ||
				tidx+int64(len(v.tidx)) > int64(cfg.SegmentIndexBytes) || v.next-1-vs[0].s.base > math.MaxInt32-1 {
				break
			}
			size, idx, tidx = size+v.size, idx+int64(len(v.idx)), tidx+int64(len(v.tidx))
			n++
		}
		out = append(out, vs[:n])
		vs = vs[n:]
	}
	return out
}

// cleanGroup writes the cleaned copy of a group of segments into
// "<base>.log.cleaned" and its indexes, synced.
func (c *cleaner) cleanGroup(l *Log, group []segView) (*segment, error) {
	if err := removeSegmentFiles(l.env.fs, filepath.Join(l.dir(), segmentName(group[0].s.base)), cleanedSuffix); err != nil {
		return nil, err
	}
	ns, err := openSegmentFiles(l.env.fs, l.dir(), group[0].s.base, cleanedSuffix, l.env.now())
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = ns.close()
			_ = ns.removeFiles(l.env.fs)
		}
	}()
	var (
		out   []byte
		hdrs  []BatchHeader
		last  BatchHeader
		lastW = int64(-1)
		kept  []byte
	)
	flush := func() error {
		if len(hdrs) == 0 {
			return nil
		}
		err := ns.appendLocked(out, hdrs, c.cfg, false)
		out, hdrs = out[:0], hdrs[:0]
		return err
	}
	write := func(b []byte) error {
		h := parseHeaderUnchecked(b)
		out = append(out, b...)
		hdrs = append(hdrs, h)
		lastW = h.LastOffset()
		if len(out) >= 1<<20 {
			return flush()
		}
		return nil
	}
	for _, v := range group {
		err := eachBatch(c.run, v, func(h BatchHeader, batch []byte) (bool, error) {
			last = h
			kept = kept[:0]
			b, err := c.filterBatch(h, batch, &kept)
			if err != nil || b == nil {
				return err == nil, err
			}
			return true, write(b)
		}, c.st)
		if err != nil {
			return nil, err
		}
	}
	if last.BatchLength > 0 && lastW < last.LastOffset() {
		if err := write(fillerBatch(last)); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	ns.finalTimeEntryLocked()
	if err := errors.Join(ns.log.Sync(), ns.persistIndexesLocked(true)); err != nil {
		return nil, err
	}
	ok = true
	return ns, nil
}

// filterBatch returns what of batch h is kept: the batch itself, a
// re-written one, an empty one, or nil.
//
// Tombstones and markers follow KIP-534: the first cleaning that keeps a
// batch holding a tombstone (or a marker whose transaction has no batch
// left) stamps it with a delete horizon, now plus delete.retention.ms
// (the delete-horizon attribute, the horizon in the first-timestamp
// field, record timestamp deltas re-based so that every record keeps its
// timestamp); a later cleaning drops them once the horizon has passed.
func (c *cleaner) filterBatch(h BatchHeader, batch []byte, kept *[]byte) ([]byte, error) {
	lastOfProducer := h.ProducerID >= 0 && !h.IsControl() && c.txns.lastData[h.ProducerID] == h.LastOffset()
	horizon, hasHorizon := h.FirstTimestamp, h.Attributes&attrDeleteHorizon != 0
	expired := hasHorizon && c.nowMs >= horizon
	if h.IsControl() {
		pid := h.ProducerID
		hadData := c.retained[pid]
		delete(c.retained, pid)
		c.st.RecordsRead += int64(h.NumRecords)
		if !hadData && expired {
			return nil, nil
		}
		c.st.RecordsRetained += int64(h.NumRecords)
		if !hadData && !hasHorizon {
			c.noteHorizon(c.nowMs + c.cfg.DeleteRetentionMs)
			return c.withHorizon(h, batch)
		}
		if !hadData {
			c.noteHorizon(horizon)
		}
		return batch, nil
	}
	aborted := h.IsTransactional() && c.txns.isAborted(h.ProducerID, h.BaseOffset)
	var n int32
	tombs := false
	maxTs := int64(-1)
	if !aborted {
		err := eachRecord(h, batch, c.cfg.MaxMessageBytes, func(off, ts int64, body []byte) {
			key, hasKey, tomb, ok := recordKey(body)
			if !ok || !hasKey {
				return // Kafka drops records without a key from a compacted log
			}
			if latest := c.run.m.get(key); latest > off {
				return
			}
			if tomb && expired {
				return
			}
			tombs = tombs || tomb
			*kept = binary.AppendVarint(*kept, int64(len(body)))
			*kept = append(*kept, body...)
			n++
			maxTs = max(maxTs, ts)
		})
		if err != nil {
			return nil, err
		}
	}
	c.st.RecordsRead += int64(h.NumRecords)
	c.st.RecordsRetained += int64(n)
	if tombs {
		if hasHorizon {
			c.noteHorizon(horizon)
		} else {
			c.noteHorizon(c.nowMs + c.cfg.DeleteRetentionMs)
		}
	}
	var out []byte
	var err error
	switch {
	case n > 0 && tombs && !hasHorizon:
		out, err = rebuildBatchWithHorizon(h, *kept, n, maxTs, c.nowMs+c.cfg.DeleteRetentionMs)
	case n == h.NumRecords:
		out = batch
	case n > 0:
		out, err = rebuildBatch(h, *kept, n, maxTs)
	case lastOfProducer:
		out = emptyBatch(h)
	}
	if out != nil && h.IsTransactional() {
		// A batch of the transaction stays (if only empty): so does its
		// marker, or the batch would reopen the transaction for whoever
		// rebuilds producer state from the log.
		c.retained[h.ProducerID] = true
	}
	return out, err
}

// withHorizon re-writes a whole batch (a marker) with a delete horizon.
func (c *cleaner) withHorizon(h BatchHeader, batch []byte) ([]byte, error) {
	var recs []byte
	var n int32
	maxTs := int64(-1)
	err := eachRecord(h, batch, c.cfg.MaxMessageBytes, func(_, ts int64, body []byte) {
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
		n++
		maxTs = max(maxTs, ts)
	})
	if err != nil {
		return nil, err
	}
	return rebuildBatchWithHorizon(h, recs, n, maxTs, c.nowMs+c.cfg.DeleteRetentionMs)
}

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	deletedSuffix = ".deleted"
)

// swapGroup replaces the segments of group by their cleaned copy ns, so
// that a crash at any point leaves either the old segments or the new one
// (Kafka's replaceSegments, with the same file names):
//
//  1. the cleaned files are renamed to ".swap", and the directory synced;
//     from here recovery completes the swap: a ".swap" log replaces every
//     segment in its offset range;
//  2. the segment list takes ns in place of the group, the old files are
//     renamed to ".deleted" (recovery removes those) and the directory
//     synced;
//  3. ns's files lose their ".swap" suffix; the old files are removed.
//
// Each step holds only mu, and for renames only (fsyncs run without a
// lock). Readers that took a view of an old segment keep reading its open
// handle (a dup'ed one, for sendfile), whose file lives on until closed;
// retireLocked closes the handles once no reader holds lifeMu. If the
// log was truncated, had segments deleted or was closed since the
// cleaning took its views (cleanGen), the swap is abandoned.
func (l *Log) swapGroup(run *cleanRun, gen uint64, group []segView, ns *segment) (err error) {
	step := func(name string) error {
		if run.hook != nil {
			return run.hook(name)
		}
		return nil
	}
	abandon := func() {
		_ = ns.close()
		_ = ns.removeFiles(l.env.fs)
	}
	l.mu.Lock()
	if l.mu.closed || l.mu.cleanGen != gen {
		l.mu.Unlock()
		abandon()
		return errCleanAborted
	}
	if err := step("rename-swap"); err != nil {
		l.mu.Unlock()
		return err
	}
	err = ns.renameFiles(l.env.fs, swapSuffix)
	l.mu.Unlock()
	if err != nil {
		abandon()
		return err
	}
	if err := step("sync-swap"); err != nil {
		return err
	}
	if err := l.env.fs.SyncDir(l.dir()); err != nil {
		abandon()
		return err
	}

	l.mu.Lock()
	first := -1
	for i, s := range l.mu.segs {
		if s == group[0].s {
			first = i
		}
	}
	if l.mu.closed || l.mu.cleanGen != gen || first < 0 || first+len(group) >= len(l.mu.segs) {
		l.mu.Unlock()
		abandon()
		return errCleanAborted
	}
	for i, v := range group {
		if l.mu.segs[first+i] != v.s {
			l.mu.Unlock()
			abandon()
			return errCleanAborted
		}
	}
	if err := step("rename-deleted"); err != nil {
		l.mu.Unlock()
		return err
	}
	var old []*segment
	for _, v := range group {
		if err := v.s.renameFiles(l.env.fs, deletedSuffix); err != nil {
			// The old segments whose files were renamed stay in the
			// list under their new names; the swap files, kept,
			// complete the replacement at the next start, as after a
			// crash.
			l.mu.Unlock()
			_ = ns.close()
			return err
		}
		old = append(old, v.s)
	}
	ns.next = max(ns.next, l.mu.segs[first+len(group)].base)
	segs := make([]*segment, 0, len(l.mu.segs)-len(group)+1)
	segs = append(segs, l.mu.segs[:first]...)
	segs = append(segs, ns)
	segs = append(segs, l.mu.segs[first+len(group):]...)
	l.mu.segs = segs
	for _, s := range old {
		l.retireLocked(s)
	}
	l.mu.Unlock()

	if err := step("sync-deleted"); err != nil {
		return err
	}
	if err := l.env.fs.SyncDir(l.dir()); err != nil {
		return err
	}
	if err := step("rename-final"); err != nil {
		return err
	}
	l.mu.Lock()
	live := false
	for _, s := range l.mu.segs {
		live = live || s == ns
	}
	if live && !l.mu.closed {
		err = ns.renameFiles(l.env.fs, "")
	}
	l.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range old {
		errs = append(errs, s.removeFiles(l.env.fs))
	}
	return errors.Join(errs...)
}

// completeSwaps finishes, at open, segment replacements a crash
// interrupted (Kafka's Log recovery of swap files). A "<base>.log.swap" was
// fully written and synced before it got that name: it replaces every
// segment whose base lies in its offset range, whose files are removed,
// and loses its suffix; the segment is then re-validated, rebuilding its
// indexes. Index ".swap" files without their log were left by a
// completed swap's renames and go with the (then stale) indexes of that
// base. ".cleaned" files (an unfinished copy) and ".deleted" files (old
// segments already replaced) are removed by scanDir. It returns the
// directory's names afterwards.
func (l *Log) completeSwaps(names []string) ([]string, error) {
	dir := l.dir()
	var swaps []int64
	logs := map[int64]bool{}
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			logs[b] = true
		}
		if b, ok := parseSegmentName(strings.TrimSuffix(n, swapSuffix), logSuffix); ok && strings.HasSuffix(n, swapSuffix) {
			swaps = append(swaps, b)
		}
	}
	if len(swaps) == 0 {
		// Stray index swaps only: their log was renamed already.
		strays := false
		for _, n := range names {
			strays = strays || strings.HasSuffix(n, swapSuffix)
		}
		if !strays {
			return names, nil
		}
	}
	if l.opening.forceRecover == nil {
		l.opening.forceRecover = map[int64]bool{}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, b := range swaps {
		stem := filepath.Join(dir, segmentName(b))
		f, err := l.env.fs.OpenFile(stem+logSuffix+swapSuffix, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		size, err := f.Size()
		end := b
		if err == nil {
			_, err = scanHeaders(f, 0, size, func(h BatchHeader, _ int64) bool {
				end = h.NextOffset()
				return true
			})
			if errors.Is(err, ErrCorruptMessage) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = nil // recovery of the segment cuts it there
			}
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		for o := range logs {
			if o >= b && o < end {
				if err := removeSegmentFiles(l.env.fs, filepath.Join(dir, segmentName(o)), ""); err != nil {
					return nil, err
				}
				delete(logs, o)
			}
		}
		l.logger().Warn().Int64("segment", b).Int64("end_offset", end).Msg("completing a segment swap interrupted by a crash")
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := l.env.fs.Remove(stem + suf); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			if err := l.env.fs.Rename(stem+suf+swapSuffix, stem+suf); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		if err := l.env.fs.Rename(stem+logSuffix+swapSuffix, stem+logSuffix); err != nil {
			return nil, err
		}
		l.opening.forceRecover[b] = true
	}
	names, err := l.env.fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	// Index swaps whose log was already renamed: the swap completed but
	// for them; the indexes of that base are rebuilt.
	for _, n := range names {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if !strings.HasSuffix(n, suf+swapSuffix) {
				continue
			}
			b, ok := parseSegmentName(strings.TrimSuffix(n, swapSuffix), suf)
			if !ok {
				continue
			}
			stem := filepath.Join(dir, segmentName(b))
			for _, rm := range []string{stem + indexSuffix, stem + timeIndexSuffix, filepath.Join(dir, n)} {
				if err := l.env.fs.Remove(rm); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, err
				}
			}
			l.opening.forceRecover[b] = true
		}
	}
	if err := l.env.fs.SyncDir(dir); err != nil {
		return nil, err
	}
	return l.env.fs.ReadDir(dir)
}
