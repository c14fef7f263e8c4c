package partition

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentName returns Kafka's 20-digit zero-padded file name stem.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

func parseSegmentName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	stem := strings.TrimSuffix(name, suffix)
	if len(stem) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// segment is one .log file and its two indexes. The log's handle is
// immutable after creation and the only descriptor a segment holds (the
// indexes live in memory, see index); every other field is guarded by
// Log.mu.
type segment struct {
	base int64
	log  File
	path string // .log path (with suffix)
	// suffix is "" for a live segment's files; a cleaned segment's are
	// ".cleaned" while written and ".swap" until swapped in (cleaner.go).
	suffix string
	idx    *index
	tidx   *index

	size int64 // bytes of whole batches in the file
	next int64 // offset after the last batch; base when empty
	// maxTs is the largest batch MaxTimestamp, offMaxTs the base offset of
	// the first batch that reached it (-1, -1 when empty).
	maxTs    int64
	offMaxTs int64
	// rollBaseTs is the MaxTimestamp of the segment's first batch (Kafka's
	// rollingBasedTimestamp), -1 before any; segment.ms is measured from it.
	rollBaseTs      int64
	created         time.Time
	bytesSinceIndex int64
	// unclean is set when a failed append could not be cut back from the
	// files; see repairLocked.
	unclean bool
}

func createSegment(fs FS, dir string, base int64, now time.Time) (*segment, error) {
	stem := filepath.Join(dir, segmentName(base))
	// A stale file of the same name (e.g. left by truncation) must not leak in.
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if ok, _, _ := fs.Stat(stem + suf); ok {
			if err := fs.Remove(stem + suf); err != nil {
				return nil, err
			}
		}
	}
	s, err := openSegmentFiles(fs, dir, base, "", now)
	if err != nil {
		// Leave no half-created segment (a .log without its indexes, say)
		// for the next open to mistake for the active one.
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			_ = fs.Remove(stem + suf)
		}
		return nil, err
	}
	return s, nil
}

// createFirstSegment creates the segment at base in a directory just made
// (a lazy log's first append), where no stale file can be: it creates the
// .log file only (the indexes are created by the first persist with
// entries, see index) and knows its size without asking.
func createFirstSegment(fs FS, dir string, base int64, now time.Time) (*segment, error) {
	path := filepath.Join(dir, segmentName(base)) + logSuffix
	stem := path[:len(path)-len(logSuffix)]
	lf, err := fs.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &segment{
		base: base, log: lf, path: path,
		idx:  newIndex(fs, stem, indexSuffix, offsetIndexEntrySize),
		tidx: newIndex(fs, stem, timeIndexSuffix, timeIndexEntrySize),
		next: base, maxTs: -1, offMaxTs: -1, rollBaseTs: -1, created: now,
	}, nil
}

// openSegment opens an existing segment (loading); an index file it lacks
// is not created (see index.absent).
func openSegment(fs FS, dir string, base int64, now time.Time) (*segment, error) {
	return openSegmentIndexes(fs, dir, base, "", now, false)
}

// openSegmentFiles opens the segment at base whose file names carry
// suffix, creating the files it lacks.
func openSegmentFiles(fs FS, dir string, base int64, suffix string, now time.Time) (*segment, error) {
	return openSegmentIndexes(fs, dir, base, suffix, now, true)
}

// openSegmentIndexes is openSegmentFiles creating missing index files only
// if create.
func openSegmentIndexes(fs FS, dir string, base int64, suffix string, now time.Time, create bool) (*segment, error) {
	path := filepath.Join(dir, segmentName(base)) + logSuffix + suffix
	// The indexes' names share path's bytes.
	stem := path[:len(path)-len(logSuffix)-len(suffix)]
	lf, err := fs.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	size, err := lf.Size()
	if err != nil {
		lf.Close()
		return nil, err
	}
	idx, err := openIndex(fs, stem, indexSuffix+suffix, offsetIndexEntrySize, create)
	if err != nil {
		lf.Close()
		return nil, err
	}
	tidx, err := openIndex(fs, stem, timeIndexSuffix+suffix, timeIndexEntrySize, create)
	if err != nil {
		lf.Close()
		return nil, err
	}
	return &segment{
		base: base, log: lf, path: path, suffix: suffix, idx: idx, tidx: tidx,
		size: size, next: base, maxTs: -1, offMaxTs: -1, rollBaseTs: -1, created: now,
	}, nil
}

func (s *segment) close() error {
	return s.log.Close()
}

// persistIndexes writes out the index entries the files lack (snapshots
// taken under Log.mu, or the segment not yet shared) and, if sync, fsyncs
// them. The caller holds Log.lifeMu, so no truncation runs meanwhile.
func persistIndexes(s *segment, idx, tidx []byte, sync bool) error {
	if len(idx) == 0 {
		// With no offset-index entry, loading scans the whole segment and
		// rebuilds the time index from it: a time index with no file yet
		// (a lazy log's first segment closed with one small batch, say)
		// gets none for its closing entry.
		return errors.Join(s.idx.persist(idx, sync), s.tidx.persistIfPresent(tidx, sync))
	}
	return errors.Join(s.idx.persist(idx, sync), s.tidx.persist(tidx, sync))
}

// persistIndexesLocked is persistIndexes with Log.mu held (or the segment
// not shared).
func (s *segment) persistIndexesLocked(sync bool) error {
	return persistIndexes(s, s.idx.buf, s.tidx.buf, sync)
}

// removeFiles deletes the segment's files; the log file goes first so that
// a crash in between leaves an orphan index, which open discards.
func (s *segment) removeFiles(fs FS) error {
	s.idx.markGone()
	s.tidx.markGone()
	return removeSegmentFiles(fs, s.stem(), s.suffix)
}

// removeSegmentFiles deletes the log and index files at stem whose names
// end in suffix, the log first; files already gone are no error.
func removeSegmentFiles(fs FS, stem, suffix string) error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fs.Remove(stem + suf + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stem is the segment's path without extension or suffix.
func (s *segment) stem() string {
	return strings.TrimSuffix(strings.TrimSuffix(s.path, s.suffix), logSuffix)
}

// renameFiles changes the suffix of the segment's three files, the log
// last (so that, as with removeFiles, the log's name is what counts). The
// open handles are unaffected.
func (s *segment) renameFiles(fs FS, suffix string) error {
	path := s.stem() + logSuffix + suffix
	stem := path[:len(path)-len(logSuffix)-len(suffix)]
	if err := s.idx.rename(fs, stem, indexSuffix+suffix); err != nil {
		return err
	}
	if err := s.tidx.rename(fs, stem, timeIndexSuffix+suffix); err != nil {
		return err
	}
	if err := fs.Rename(s.path, path); err != nil {
		return err
	}
	s.path, s.suffix = path, suffix
	return nil
}

func (s *segment) rel(offset int64) uint32 { return uint32(offset - s.base) }

// canHold reports whether offsets up to last fit the 32-bit relative
// offsets of the indexes.
func (s *segment) canHold(last int64) bool {
	return last-s.base >= 0 && last-s.base <= math.MaxUint32 && last-s.base < math.MaxInt32
}

func (s *segment) indexFull(cfg Config) bool {
	return s.idx.entries() >= int(cfg.SegmentIndexBytes)/offsetIndexEntrySize ||
		s.tidx.entries() >= int(cfg.SegmentIndexBytes)/timeIndexEntrySize
}

// appendLocked writes whole batches (already carrying their final offsets)
// at the end of the segment and extends the (in-memory) indexes. It is all
// or nothing: if the log write fails, the file is cut back and the
// in-memory state restored, so that a retry writes the same offsets once
// and the segment never runs ahead of the log end offset.
// appendLocked writes data, whole batches described by hdrs, at the end of
// the segment; uncached asks for a write the page cache drops once it is
// on disk (uncached.go).
func (s *segment) appendLocked(data []byte, hdrs []BatchHeader, cfg Config, uncached bool) error {
	if s.unclean {
		if err := s.repairLocked(); err != nil {
			return fmt.Errorf("undoing an earlier failed append: %w", err)
		}
	}
	saved := *s
	idxLen, tidxLen := len(s.idx.buf), len(s.tidx.buf)
	start := s.size
	n, err := s.writeData(data, uncached)
	if err == nil && n != len(data) {
		err = io.ErrShortWrite
	}
	if err == nil {
		s.size += int64(len(data))
		s.indexBatchesLocked(start, hdrs, cfg)
		return nil
	}
	// Undo: the in-memory state is the truth, the files are cut back to it.
	*s = saved
	s.idx.buf = s.idx.buf[:idxLen:idxLen]
	s.tidx.buf = s.tidx.buf[:tidxLen:tidxLen]
	if rerr := s.repairLocked(); rerr != nil {
		return fmt.Errorf("append failed (%w) and could not be undone yet: %v", err, rerr)
	}
	return err
}

// repairLocked cuts the segment's files back to the in-memory state after a
// failed append. While it has not succeeded the segment is unclean: the
// next append (or roll) retries it first, so that nothing is ever written
// after bytes that were never acknowledged.
func (s *segment) repairLocked() error {
	err := s.log.Truncate(s.size)
	s.unclean = err != nil
	return err
}

// indexBatchesLocked updates the in-memory state and the indexes for whole
// batches that are in the file starting at position start.
func (s *segment) indexBatchesLocked(start int64, hdrs []BatchHeader, cfg Config) {
	if len(hdrs) == 0 {
		return
	}
	var ie, te []byte
	maxIdx := int(cfg.SegmentIndexBytes) / offsetIndexEntrySize
	maxTidx := int(cfg.SegmentIndexBytes) / timeIndexEntrySize
	lastTs := int64(math.MinInt64)
	if n := s.tidx.entries(); n > 0 {
		lastTs, _ = timeEntry(s.tidx.buf, n-1)
	}
	pos := start
	for _, h := range hdrs {
		if s.rollBaseTs < 0 && pos == 0 {
			s.rollBaseTs = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offMaxTs = h.MaxTimestamp, h.BaseOffset
		}
		if s.bytesSinceIndex > int64(cfg.IndexIntervalBytes) && pos <= math.MaxUint32 {
			if s.idx.entries()+len(ie)/offsetIndexEntrySize < maxIdx {
				ie = putOffsetEntry(ie, s.rel(h.BaseOffset), uint32(pos))
			}
			if s.maxTs > lastTs && s.tidx.entries()+len(te)/timeIndexEntrySize < maxTidx {
				te = putTimeEntry(te, s.maxTs, s.rel(s.offMaxTs))
				lastTs = s.maxTs
			}
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += int64(h.Size())
		pos += int64(h.Size())
	}
	s.next = hdrs[len(hdrs)-1].NextOffset()
	s.idx.appendRaw(ie)
	s.tidx.appendRaw(te)
}

// finalTimeEntryLocked records the segment's max timestamp in the time index
// when it stops being active (roll, close), so that the last entry of an
// inactive segment's time index is its max timestamp (Kafka does the same in
// onBecomeInactiveSegment).
func (s *segment) finalTimeEntryLocked() {
	if s.maxTs < 0 || s.offMaxTs < s.base {
		return
	}
	if n := s.tidx.entries(); n > 0 {
		if ts, _ := timeEntry(s.tidx.buf, n-1); ts >= s.maxTs {
			return
		}
	}
	s.tidx.appendRaw(putTimeEntry(nil, s.maxTs, s.rel(s.offMaxTs)))
}

// readHeaderAt reads the batch header at pos. A short read is reported as
// io.ErrUnexpectedEOF.
func readHeaderAt(f io.ReaderAt, pos int64, buf []byte) (BatchHeader, error) {
	n, err := f.ReadAt(buf[:BatchHeaderSize], pos)
	if n < BatchHeaderSize {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return BatchHeader{}, err
	}
	if bl := int32(binary.BigEndian.Uint32(buf[offBatchLength:])); bl < minBatchLength {
		return BatchHeader{}, fmt.Errorf("%w: batch length %d at position %d", ErrCorruptMessage, bl, pos)
	}
	if err := checkMagic(int8(buf[offMagic])); err != nil {
		return BatchHeader{}, err
	}
	return parseHeaderUnchecked(buf), nil
}

var scanReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// scanHeaders walks the batch headers from position `from` to `to`,
// reading sequentially through a buffer, and calls fn for each whole batch.
// It returns the position after the last whole, sane batch and the error
// that stopped it early (nil at `to`).
func scanHeaders(f io.ReaderAt, from, to int64, fn func(h BatchHeader, pos int64) bool) (int64, error) {
	// Pooled: a start-up loading thousands of partitions scans thousands
	// of (mostly short) tails.
	br := scanReaders.Get().(*bufio.Reader)
	br.Reset(io.NewSectionReader(f, from, to-from))
	defer func() {
		br.Reset(nil)
		scanReaders.Put(br)
	}()
	var hb [BatchHeaderSize]byte
	pos := from
	for pos < to {
		if to-pos < BatchHeaderSize {
			return pos, fmt.Errorf("%w: %d trailing bytes", ErrCorruptMessage, to-pos)
		}
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			return pos, err
		}
		if err := checkMagic(int8(hb[offMagic])); err != nil {
			return pos, err
		}
		h := parseHeaderUnchecked(hb[:])
		if h.BatchLength < minBatchLength || int64(h.Size()) > to-pos {
			return pos, fmt.Errorf("%w: batch length %d at position %d", ErrCorruptMessage, h.BatchLength, pos)
		}
		if _, err := br.Discard(h.Size() - BatchHeaderSize); err != nil {
			return pos, err
		}
		if !fn(h, pos) {
			return pos, nil
		}
		pos += int64(h.Size())
	}
	return pos, nil
}

// findBatch returns the position of the first batch, at or after the index
// hint for offset, whose last offset is >= offset; found is false when the
// segment (up to size) holds no such batch.
func findBatch(f io.ReaderAt, idxBuf []byte, base, offset, size int64) (int64, BatchHeader, bool, error) {
	pos := lookupOffset(idxBuf, offset-base)
	var hb [BatchHeaderSize]byte
	for pos < size {
		h, err := readHeaderAt(f, pos, hb[:])
		if err != nil {
			return 0, BatchHeader{}, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.Size())
	}
	return 0, BatchHeader{}, false, nil
}

// recoverResult summarises a full scan of one segment.
type recoverResult struct {
	truncatedBytes int64
	reason         error
}

// recoverLocked re-reads the whole segment, checking every batch (frame,
// magic, CRC, offsets increasing and within the segment), cuts the file at
// the first bad batch and rebuilds both indexes. onBatch sees every good
// batch (to rebuild the leader-epoch cache).
func (s *segment) recoverLocked(cfg Config, onBatch func(h BatchHeader)) (recoverResult, error) {
	fileSize, err := s.log.Size()
	if err != nil {
		return recoverResult{}, err
	}
	// Sized to the file: after a crash, a broker with thousands of small
	// partitions recovers thousands of active segments.
	br := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, fileSize), int(min(max(fileSize, 4<<10), 1<<20)))
	var (
		pos      int64
		body     []byte
		hb       [BatchHeaderSize]byte
		reason   error
		prevNext = s.base
		kept     []BatchHeader
		keptPos  int64
	)
	s.size, s.next, s.maxTs, s.offMaxTs, s.rollBaseTs, s.bytesSinceIndex = 0, s.base, -1, -1, -1, 0
	if err := s.idx.reset(nil); err != nil {
		return recoverResult{}, err
	}
	if err := s.tidx.reset(nil); err != nil {
		return recoverResult{}, err
	}
	flushKept := func() {
		s.indexBatchesLocked(keptPos, kept, cfg)
		keptPos = pos
		kept = kept[:0]
	}
	for pos < fileSize {
		if fileSize-pos < BatchHeaderSize {
			reason = fmt.Errorf("%w: torn header (%d bytes)", ErrCorruptMessage, fileSize-pos)
			break
		}
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			return recoverResult{}, err
		}
		if err := checkMagic(int8(hb[offMagic])); err != nil {
			reason = err
			break
		}
		h := parseHeaderUnchecked(hb[:])
		if h.BatchLength < minBatchLength || int64(h.Size()) > fileSize-pos {
			reason = fmt.Errorf("%w: torn batch (length %d, %d bytes left)", ErrCorruptMessage, h.BatchLength, fileSize-pos)
			break
		}
		n := h.Size() - BatchHeaderSize
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return recoverResult{}, err
		}
		crc := crc32Update(hb[offAttributes:], body)
		if crc != h.CRC {
			reason = fmt.Errorf("%w: crc mismatch", ErrCorruptMessage)
			break
		}
		if h.LastOffsetDelta < 0 || h.NumRecords < 0 || h.BaseOffset < prevNext || !s.canHold(h.LastOffset()) {
			reason = fmt.Errorf("%w: offsets %d..%d out of order (expected >= %d)", ErrCorruptMessage, h.BaseOffset, h.LastOffset(), prevNext)
			break
		}
		kept = append(kept, h)
		prevNext = h.NextOffset()
		pos += int64(h.Size())
		if onBatch != nil {
			onBatch(h)
		}
		if len(kept) == 4096 {
			flushKept()
		}
	}
	flushKept()
	s.size = pos
	res := recoverResult{truncatedBytes: fileSize - pos, reason: reason}
	if pos < fileSize {
		if err := s.log.Truncate(pos); err != nil {
			return res, err
		}
	}
	return res, nil
}

func crc32Update(head, body []byte) uint32 {
	c := crc32UpdateTable(0, head)
	return crc32UpdateTable(c, body)
}

// loadLocked fills the in-memory state of a segment whose indexes passed
// their sanity check, without reading it all: the tail after the last index
// entry is scanned to find the end, the max timestamp comes from the time
// index plus that tail. The indexes are extended over the tail, so that an
// index file that lags its log (written only at flushes, or lost in a
// crash) ends up as a rebuild would make it. A torn tail is reported as an
// error, and the caller falls back to recoverLocked.
func (s *segment) loadLocked(cfg Config) error {
	fileSize := s.size
	if err := checkOffsetIndex(s.idx.buf, fileSize); err != nil {
		return err
	}
	if err := checkTimeIndex(s.tidx.buf); err != nil {
		return err
	}
	s.next, s.maxTs, s.offMaxTs, s.rollBaseTs = s.base, -1, -1, -1
	if fileSize == 0 {
		if s.idx.entries() > 0 || s.tidx.entries() > 0 {
			return fmt.Errorf("index entries for an empty segment")
		}
		return nil
	}
	// A missing index file is an empty index when the segment is too
	// short to have had an offset-index entry: its file is created only
	// with its first entry (see index). Then the scan below starts at 0
	// and rebuilds both indexes whole; otherwise the segment is recovered.
	missing := s.idx.missing || s.tidx.missing
	if missing && s.idx.entries() > 0 {
		return fmt.Errorf("index file missing")
	}
	var from int64
	if n := s.idx.entries(); n > 0 {
		_, p := offsetEntry(s.idx.buf, n-1)
		from = int64(p)
	}
	if n := s.tidx.entries(); n > 0 {
		s.maxTs, _ = timeEntry(s.tidx.buf, n-1)
		_, rel := timeEntry(s.tidx.buf, n-1)
		s.offMaxTs = s.base + int64(rel)
	}
	var hb [BatchHeaderSize]byte
	first, err := readHeaderAt(s.log, 0, hb[:])
	if err != nil {
		return err
	}
	if first.BaseOffset < s.base {
		return fmt.Errorf("first batch offset %d below segment base %d", first.BaseOffset, s.base)
	}
	s.rollBaseTs = first.MaxTimestamp
	var last BatchHeader
	// The batch at from carries the last offset-index entry (or is the
	// first batch): indexing restarts there as appending left it.
	s.bytesSinceIndex = 0
	var (
		kept    []BatchHeader
		keptPos = from
		bad     error
	)
	end, err := scanHeaders(s.log, from, fileSize, func(h BatchHeader, pos int64) bool {
		if h.BaseOffset < s.base || !s.canHold(h.LastOffset()) || (last.BatchLength > 0 && h.BaseOffset < last.NextOffset()) {
			bad = fmt.Errorf("batch at %d..%d out of range or order in segment %d", h.BaseOffset, h.LastOffset(), s.base)
			return false
		}
		kept = append(kept, h)
		last = h
		if len(kept) == 4096 {
			s.indexBatchesLocked(keptPos, kept, cfg)
			keptPos = pos + int64(h.Size())
			kept = kept[:0]
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	s.indexBatchesLocked(keptPos, kept, cfg)
	if missing && s.idx.entries() > 0 {
		return fmt.Errorf("index file missing")
	}
	if end != fileSize || last.BatchLength == 0 {
		return fmt.Errorf("segment tail does not end on a batch boundary")
	}
	if !s.canHold(last.LastOffset()) {
		return fmt.Errorf("last offset %d out of range for segment %d", last.LastOffset(), s.base)
	}
	s.next = last.NextOffset()
	if n := s.tidx.entries(); n > 0 {
		if _, rel := timeEntry(s.tidx.buf, n-1); s.base+int64(rel) >= s.next {
			return fmt.Errorf("time index entry beyond segment end")
		}
	}
	if n := s.idx.entries(); n > 0 {
		if rel, _ := offsetEntry(s.idx.buf, n-1); s.base+int64(rel) >= s.next {
			return fmt.Errorf("offset index entry beyond segment end")
		}
	}
	return nil
}

// truncateToLocked removes every batch whose last offset is >= offset and
// the index entries that point at them; returns the new next offset.
func (s *segment) truncateToLocked(offset int64) (bool, error) {
	pos, h, found, err := findBatch(s.log, s.idx.buf, s.base, offset, s.size)
	if err != nil {
		return false, err
	}
	if !found {
		return false, nil
	}
	if err := s.log.Truncate(pos); err != nil {
		return false, err
	}
	s.size = pos
	s.next = min(h.BaseOffset, offset)
	if pos == 0 {
		s.next = s.base
	}
	// Offset index: drop entries at or beyond the cut.
	n := s.idx.entries()
	for n > 0 {
		if _, p := offsetEntry(s.idx.buf, n-1); int64(p) < pos {
			break
		}
		n--
	}
	if err := s.idx.truncateEntries(n); err != nil {
		return false, err
	}
	n = s.tidx.entries()
	for n > 0 {
		if _, rel := timeEntry(s.tidx.buf, n-1); s.base+int64(rel) < s.next {
			break
		}
		n--
	}
	if err := s.tidx.truncateEntries(n); err != nil {
		return false, err
	}
	return true, s.restatLocked()
}

// restatLocked recomputes maxTs, rollBaseTs and bytesSinceIndex after a
// truncation by scanning from the last time-index entry's batch.
func (s *segment) restatLocked() error {
	s.maxTs, s.offMaxTs, s.rollBaseTs, s.bytesSinceIndex = -1, -1, -1, 0
	if s.size == 0 {
		return nil
	}
	var from int64
	if n := s.tidx.entries(); n > 0 {
		ts, rel := timeEntry(s.tidx.buf, n-1)
		s.maxTs, s.offMaxTs = ts, s.base+int64(rel)
		from = lookupOffset(s.idx.buf, int64(rel))
	}
	var hb [BatchHeaderSize]byte
	if first, err := readHeaderAt(s.log, 0, hb[:]); err == nil {
		s.rollBaseTs = first.MaxTimestamp
	}
	var lastIdxPos int64
	if n := s.idx.entries(); n > 0 {
		_, p := offsetEntry(s.idx.buf, n-1)
		lastIdxPos = int64(p)
	}
	from = min(from, lastIdxPos)
	_, err := scanHeaders(s.log, from, s.size, func(h BatchHeader, pos int64) bool {
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offMaxTs = h.MaxTimestamp, h.BaseOffset
		}
		return true
	})
	s.bytesSinceIndex = s.size - lastIdxPos
	return err
}
