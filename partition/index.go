package partition

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

const (
	offsetIndexEntrySize = 8  // relative offset uint32, position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

// index is an append-only sparse index file with an in-memory copy of its
// contents. The copy is what lookups search; the file exists so a restart
// does not have to rescan the segment. Invariant: buf equals the file's
// contents and len(buf) is a multiple of the entry size.
//
// Readers search a snapshot of buf (slice header copied under Log.mu). That
// is safe because appends only write beyond every snapshot's length and
// truncation happens under Log.lifeMu held exclusively, when no reader runs.
type index struct {
	f         File
	path      string
	entrySize int
	buf       []byte
}

func openIndex(fs FS, path string, entrySize int) (*index, error) {
	f, err := fs.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	data, _, err := readWholeFile(fs, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &index{f: f, path: path, entrySize: entrySize, buf: data}, nil
}

func (ix *index) entries() int { return len(ix.buf) / ix.entrySize }

// appendRaw writes pre-encoded entries.
func (ix *index) appendRaw(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := ix.f.Write(b); err != nil {
		// Leave the file as the in-memory copy says it is.
		_ = ix.f.Truncate(int64(len(ix.buf)))
		return err
	}
	ix.buf = append(ix.buf, b...)
	return nil
}

// truncateEntries keeps the first n entries.
func (ix *index) truncateEntries(n int) error {
	if n*ix.entrySize >= len(ix.buf) {
		return nil
	}
	if err := ix.f.Truncate(int64(n * ix.entrySize)); err != nil {
		return err
	}
	// A fresh array so that nothing can observe later appends through an
	// old snapshot's backing array.
	ix.buf = append([]byte(nil), ix.buf[:n*ix.entrySize]...)
	return nil
}

// reset replaces the whole index (rebuild after recovery).
func (ix *index) reset(b []byte) error {
	if err := ix.f.Truncate(0); err != nil {
		return err
	}
	ix.buf = nil
	return ix.appendRaw(b)
}

func (ix *index) close() error { return ix.f.Close() }

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
