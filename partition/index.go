package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
)

const (
	offsetIndexEntrySize = 8  // relative offset uint32, position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

// index is a sparse index kept in memory and written out to its file
// without holding a descriptor: entries are appended to buf only, and
// persist copies what the file lacks with an open-append-close (plus an
// fsync when asked) when the log is flushed, its truncation made durable,
// or the log closed. A partition therefore holds one descriptor per
// segment (the log file) instead of three. Like Kafka's mmapped indexes,
// the file may lag the log after a crash: loading checks it and recovery
// rebuilds it (Log.load).
//
// buf is guarded by Log.mu. Readers search a snapshot of buf (slice header
// copied under Log.mu). That is safe because appends only write beyond
// every snapshot's length and truncation happens under Log.lifeMu held
// exclusively, when no reader runs; for the same reason persist reads a
// snapshot taken under Log.mu without it.
type index struct {
	fs  FS
	buf []byte

	// ioMu guards the file's name and state below; it is taken after
	// Log.mu (never Log.mu while holding it) and held across the file's
	// open, write or truncate and close, never across an fsync.
	ioMu sync.Mutex
	// The file's name is stem+ext: stem shares the segment's path string,
	// so that an index keeps no name of its own (thousands of idle
	// partitions would each keep two).
	stem, ext string
	// disk is how many bytes of buf the file holds; junk is set when it
	// may hold more after a failed write or truncation (cut at the next
	// persist); durable when it has been fsynced since it last changed.
	disk    int
	junk    bool
	durable bool
	// gone is set once the segment's files are removed: persist must not
	// bring them back.
	gone bool
	// missing is set when open found no file: loading accepts that only
	// for a segment too short to have had an index entry (segment.go).
	missing bool
	// absent is set while the file has not been created: a new segment's
	// indexes, and those open found missing, are created by the first
	// persist that has entries to write (an empty index is no file).
	absent bool
	// changes counts writes and truncations, so that an fsync run without
	// ioMu marks the file durable only if nothing changed it meanwhile.
	changes uint64
	// entrySize, the bytes of one entry, is fixed at open (it sits here,
	// beside the flags, so that an index fits a smaller allocation).
	entrySize int32
}

// openIndex reads the index file stem+ext into memory. A missing file is
// created empty if create (a segment being created, as Kafka lays out a
// segment's files); otherwise (loading) it stays absent until persist has
// entries to write. No descriptor stays open.
func openIndex(fs FS, stem, ext string, entrySize int, create bool) (*index, error) {
	path := stem + ext
	data, ok, err := readWholeFile(fs, path)
	if err != nil {
		return nil, err
	}
	if !ok && create {
		f, err := fs.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	// A file just created empty has no contents to fsync (its name is the
	// directory sync's business).
	return &index{fs: fs, stem: stem, ext: ext, entrySize: int32(entrySize), buf: data, disk: len(data), durable: true, missing: !ok, absent: !ok && !create}, nil
}

// newIndex is the index of a segment being created: empty, with no file
// yet (persist creates it at the first entries it writes).
func newIndex(fs FS, stem, ext string, entrySize int) *index {
	return &index{fs: fs, stem: stem, ext: ext, entrySize: int32(entrySize), durable: true, absent: true}
}

func (ix *index) entries() int { return len(ix.buf) / int(ix.entrySize) }

// appendRaw adds pre-encoded entries to the in-memory index; persist
// writes them out.
func (ix *index) appendRaw(b []byte) {
	ix.buf = append(ix.buf, b...)
}

// truncateEntries keeps the first n entries, cutting the file at once if
// it holds more (so that, as for the log file, the cut needs only an fsync
// to be durable).
func (ix *index) truncateEntries(n int) error {
	if n*int(ix.entrySize) >= len(ix.buf) {
		return nil
	}
	// A fresh array so that nothing can observe later appends through an
	// old snapshot's backing array.
	ix.buf = append([]byte(nil), ix.buf[:n*int(ix.entrySize)]...)
	return ix.cutFile(len(ix.buf))
}

// reset replaces the whole in-memory index (rebuild after recovery) and
// empties the file.
func (ix *index) reset(b []byte) error {
	ix.buf = append([]byte(nil), b...)
	return ix.cutFile(0)
}

// cutFile truncates the file to size bytes if it may hold more.
func (ix *index) cutFile(size int) error {
	ix.ioMu.Lock()
	defer ix.ioMu.Unlock()
	if ix.disk <= size && !ix.junk {
		return nil
	}
	ix.disk = min(ix.disk, size)
	ix.junk, ix.durable = true, false
	ix.changes++
	if ix.gone || ix.absent {
		ix.junk = false
		return nil
	}
	f, err := ix.fs.OpenFile(ix.path(), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		ix.junk = false
	}
	return err
}

// persist writes the entries of snap (a snapshot of buf) that the file
// lacks and, if sync, fsyncs it (after releasing ioMu: the descriptor stays
// valid whatever a rename does meanwhile). The file is opened only when
// there is something to do.
func (ix *index) persist(snap []byte, sync bool) error {
	ix.ioMu.Lock()
	if ix.gone {
		ix.ioMu.Unlock()
		return nil
	}
	if ix.disk > len(snap) {
		// The file is ahead of this snapshot (another caller persisted a
		// newer one): a snapshot is always a prefix of the newer buf.
		snap = nil
	}
	write := snap != nil && ix.disk < len(snap)
	if !write && !ix.junk && (!sync || ix.durable) {
		ix.ioMu.Unlock()
		return nil
	}
	if ix.absent && !write {
		// No file and nothing to write: an empty index is no file.
		ix.junk, ix.durable = false, true
		ix.ioMu.Unlock()
		return nil
	}
	flag := os.O_WRONLY | os.O_APPEND
	if ix.absent {
		// disk is 0: a stale file of the name holds nothing of ours.
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := ix.fs.OpenFile(ix.path(), flag, 0o644)
	if err != nil {
		ix.ioMu.Unlock()
		return err
	}
	ix.absent = false
	err = ix.writeLocked(f, snap, write)
	changes := ix.changes
	ix.ioMu.Unlock()
	if err == nil && sync {
		if err = f.Sync(); err == nil {
			ix.ioMu.Lock()
			if ix.changes == changes {
				ix.durable = true
			}
			ix.ioMu.Unlock()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// persistIfPresent is persist for an index whose file exists; an absent
// one stays absent.
func (ix *index) persistIfPresent(snap []byte, sync bool) error {
	ix.ioMu.Lock()
	absent := ix.absent
	ix.ioMu.Unlock()
	if absent {
		return nil
	}
	return ix.persist(snap, sync)
}

func (ix *index) writeLocked(f File, snap []byte, write bool) error {
	if ix.junk {
		ix.changes++
		ix.durable = false
		if err := f.Truncate(int64(ix.disk)); err != nil {
			return err
		}
		ix.junk = false
	}
	if !write {
		return nil
	}
	ix.durable = false
	ix.changes++
	n, err := f.Write(snap[ix.disk:])
	if err == nil && n != len(snap)-ix.disk {
		err = errors.New("short write to index")
	}
	if err != nil {
		// Leave the file as disk says it is, or note that it is not.
		if terr := f.Truncate(int64(ix.disk)); terr != nil {
			ix.junk = true
		}
		return err
	}
	ix.disk = len(snap)
	return nil
}

// rename moves the file (a segment's suffix change) under ioMu so that no
// persist writes to the old name meanwhile.
func (ix *index) rename(fs FS, stem, ext string) error {
	ix.ioMu.Lock()
	defer ix.ioMu.Unlock()
	if !ix.absent {
		if err := fs.Rename(ix.path(), stem+ext); err != nil {
			return err
		}
	}
	ix.stem, ix.ext = stem, ext
	return nil
}

// path is the index file's name; ioMu held.
func (ix *index) path() string { return ix.stem + ix.ext }

// markGone records that the segment's files are being removed.
func (ix *index) markGone() {
	ix.ioMu.Lock()
	ix.gone = true
	ix.ioMu.Unlock()
}

func putOffsetEntry(dst []byte, rel uint32, pos uint32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, rel)
	return binary.BigEndian.AppendUint32(dst, pos)
}

func putTimeEntry(dst []byte, ts int64, rel uint32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return binary.BigEndian.AppendUint32(dst, rel)
}

func offsetEntry(buf []byte, i int) (rel uint32, pos uint32) {
	e := buf[i*offsetIndexEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

func timeEntry(buf []byte, i int) (ts int64, rel uint32) {
	e := buf[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// lookupOffset returns the position of the last entry whose relative offset
// is <= rel, or 0: scanning forward from there reaches the batch holding rel.
func lookupOffset(buf []byte, rel int64) int64 {
	n := len(buf) / offsetIndexEntrySize
	i := sort.Search(n, func(i int) bool {
		r, _ := offsetEntry(buf, i)
		return int64(r) > rel
	})
	if i == 0 {
		return 0
	}
	_, pos := offsetEntry(buf, i-1)
	return int64(pos)
}

// lookupTime returns the relative offset of the last entry whose timestamp
// is < ts, or 0. Every record before that entry's batch has a timestamp at
// most the entry's, hence below ts, so a scan may start at that batch.
func lookupTime(buf []byte, ts int64) int64 {
	n := len(buf) / timeIndexEntrySize
	i := sort.Search(n, func(i int) bool {
		t, _ := timeEntry(buf, i)
		return t >= ts
	})
	if i == 0 {
		return 0
	}
	_, rel := timeEntry(buf, i-1)
	return int64(rel)
}

// checkOffsetIndex is the sanity check run on open: whole entries, strictly
// increasing offsets and positions, every position inside the log file.
// The one entry that could be all zeros, (0, 0), is also true.
func checkOffsetIndex(buf []byte, logSize int64) error {
	if len(buf)%offsetIndexEntrySize != 0 {
		return fmt.Errorf("offset index size %d not a multiple of %d", len(buf), offsetIndexEntrySize)
	}
	n := len(buf) / offsetIndexEntrySize
	for i := 0; i < n; i++ {
		r, p := offsetEntry(buf, i)
		if int64(p) >= logSize && !(p == 0 && logSize == 0) {
			return fmt.Errorf("offset index entry %d position %d beyond log size %d", i, p, logSize)
		}
		if i > 0 {
			pr, pp := offsetEntry(buf, i-1)
			if r <= pr || p <= pp {
				return fmt.Errorf("offset index entry %d (%d,%d) not above (%d,%d)", i, r, p, pr, pp)
			}
		}
	}
	return nil
}

// checkTimeIndex: whole entries, timestamps strictly and offsets weakly increasing.
func checkTimeIndex(buf []byte) error {
	if len(buf)%timeIndexEntrySize != 0 {
		return fmt.Errorf("time index size %d not a multiple of %d", len(buf), timeIndexEntrySize)
	}
	n := len(buf) / timeIndexEntrySize
	for i := 1; i < n; i++ {
		t, r := timeEntry(buf, i)
		pt, pr := timeEntry(buf, i-1)
		if t <= pt || r < pr {
			return fmt.Errorf("time index entry %d (%d,%d) not above (%d,%d)", i, t, r, pt, pr)
		}
	}
	return nil
}
