package partition

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Region is a byte range of a segment file, sent to a client without
// being copied through user space. It holds its own file descriptor (a
// dup of the segment's), so a segment closed or deleted while the region
// is queued for sending stays readable; the owner must Close it.
type Region struct {
	File     *os.File
	Pos, Len int64
}

// Close releases the region's file descriptor.
func (r *Region) Close() error { return r.File.Close() }

// dupFile is a segment file backed by a real file descriptor.
type dupFile interface {
	File
	dup() (*os.File, error)
}

func (f osFile) dup() (*os.File, error) {
	rc, err := f.File.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = syscall.Dup(int(fd)) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup %s: %w", f.File.Name(), derr)
	}
	syscall.CloseOnExec(nfd)
	return os.NewFile(uintptr(nfd), f.File.Name()), nil
}

// scanWindow is how much of a segment scanBatches reads at a time to
// find batch boundaries. A range no longer than one window is returned as
// bytes (it was read anyway); a longer one as a Region, after reading
// only the headers of batches that do not fit a window.
const scanWindow = 32 << 10

var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanWindow); return &b }}

// scanBatches finds the whole batches from pos (where batch first starts)
// that readBatches would return, with the same limits, and returns them
// as bytes or as a Region, with the offset after the last of them.
func scanBatches(f dupFile, pos, end int64, first BatchHeader, maxBytes int32, maxOffset int64, minOneBatch bool) ([]byte, *Region, int64, error) {
	limit := min(int64(max(maxBytes, 0)), end-pos)
	if int64(first.Size()) > limit {
		if !minOneBatch {
			return nil, nil, -1, nil
		}
		limit = int64(first.Size())
	}
	bp := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(bp)
	win := (*bp)[:0]
	var winAt int64 // file position of win[0]
	next := int64(-1)
	p := int64(0) // bytes of whole batches found so far
	// After a batch larger than the window, read only the next header:
	// the window would hold nothing else of use.
	headerOnly := false
	for p < limit {
		at := pos + p
		if at < winAt || at+BatchHeaderSize > winAt+int64(len(win)) {
			want := min(int64(scanWindow), limit-p)
			if headerOnly {
				want = min(BatchHeaderSize, limit-p)
			}
			n, err := f.ReadAt((*bp)[:want], at)
			if n < BatchHeaderSize && err != nil && err != io.EOF {
				return nil, nil, -1, fmt.Errorf("read batch header at %d: %w", at, err)
			}
			win, winAt = (*bp)[:n], at
			if n < BatchHeaderSize {
				break // a partial last batch within the limit
			}
		}
		h := win[at-winAt:]
		bl := int32(binary.BigEndian.Uint32(h[offBatchLength:]))
		if bl < minBatchLength {
			break // as readBatches: stop at what does not parse
		}
		size := int64(logOverhead) + int64(bl)
		if size > limit-p {
			break
		}
		base := int64(binary.BigEndian.Uint64(h))
		if base >= maxOffset {
			break
		}
		next = base + int64(int32(binary.BigEndian.Uint32(h[offLastOffsetDelta:]))) + 1
		p += size
		headerOnly = size > scanWindow
	}
	if p == 0 {
		return nil, nil, -1, nil
	}
	if pos >= winAt && pos+p <= winAt+int64(len(win)) {
		// Everything is in the window: cheaper to copy than to send a
		// file range.
		out := make([]byte, p)
		copy(out, win[pos-winAt:])
		return out, nil, next, nil
	}
	df, err := f.dup()
	if err != nil {
		return nil, nil, -1, err
	}
	return nil, &Region{File: df, Pos: pos, Len: p}, next, nil
}

// lastNext returns the offset after the last whole batch in b, or -1.
func lastNext(b []byte) int64 {
	next := int64(-1)
	for len(b) >= BatchHeaderSize {
		size, err := frameSize(b)
		if err != nil {
			break
		}
		next = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))) + 1
		b = b[size:]
	}
	return next
}
