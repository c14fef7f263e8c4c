package protocol

// Zero-copy responses. A Fetch response is mostly record batches that sit
// in segment files. Instead of reading them into memory and copying them
// into the encoded response, a handler puts a short placeholder in each
// records field and attaches the file range it stands for. The response is
// encoded by kmsg as usual; the writer then sends the encoding up to each
// placeholder, the real length prefix, the file range with sendfile(2), and
// so on. Only the records fields' length prefixes change: nothing in the
// Kafka protocol encloses a records field in a byte count, only in element
// counts.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileRegion is a byte range of an open file that a response carries in
// place of a bytes field. The connection closes File once the response is
// written or dropped.
type FileRegion struct {
	File     *os.File
	Off, Len int64
}

// SplicedResponse is a response whose placeholder bytes fields (made by
// Placeholder) are replaced by file regions when it is written. Only
// nullable-bytes fields (records) may hold placeholders.
type SplicedResponse struct {
	kmsg.Response
	regions      []FileRegion
	placeholders [][]byte
}

// placeholderPrefix makes placeholders unlikely to occur in any other
// encoded bytes; the index after it tells them apart.
var placeholderPrefix = func() [12]byte {
	var p [12]byte
	if _, err := rand.Read(p[:]); err != nil {
		panic(err)
	}
	return p
}()

var placeholderSeq atomic.Uint32

const placeholderLen = 16

// Placeholder registers r and returns the bytes to put in the field that
// r's contents replace.
func (s *SplicedResponse) Placeholder(r FileRegion) []byte {
	ph := make([]byte, placeholderLen)
	copy(ph, placeholderPrefix[:])
	binary.BigEndian.PutUint32(ph[12:], placeholderSeq.Add(1))
	s.regions = append(s.regions, r)
	s.placeholders = append(s.placeholders, ph)
	return ph
}

// Close closes the regions of a response that will not be written.
func (s *SplicedResponse) Close() {
	for _, r := range s.regions {
		r.File.Close()
	}
	s.regions = nil
}

// frame is one encoded response queued for the writer: either plain bytes
// or, for a spliced response, pieces of bytes and file regions in order.
type frame struct {
	b      []byte
	pieces []piece
	// held is what the frame counts against its connection's
	// MaxQueuedResponseBytes while queued.
	held int64
}

// memBytes is how much memory f holds: its bytes, not its file regions.
func (f frame) memBytes() int64 {
	n := int64(len(f.b))
	for _, p := range f.pieces {
		n += int64(len(p.b))
	}
	return n
}

type piece struct {
	b      []byte
	region *FileRegion
}

func (f frame) close() {
	for _, p := range f.pieces {
		if p.region != nil {
			p.region.File.Close()
		}
	}
}

// splice turns the encoding of a spliced response (size prefix included)
// into the pieces to send, fixing the size prefix and each records
// field's length prefix.
func splice(buf []byte, flexible bool, s *SplicedResponse) (frame, error) {
	var pieces []piece
	pos := 0
	size := int64(len(buf) - 4)
	search := 4
	for i, ph := range s.placeholders {
		idx := bytes.Index(buf[search:], ph)
		if idx < 0 {
			return frame{}, fmt.Errorf("placeholder %d not found in the encoded response", i)
		}
		idx += search
		r := &s.regions[i]
		var prefixStart int
		var prefix []byte
		if flexible {
			// compact bytes: uvarint(len+1), one byte for a placeholder
			if idx < 1 || buf[idx-1] != placeholderLen+1 {
				return frame{}, errors.New("placeholder without its compact length prefix")
			}
			prefixStart = idx - 1
			prefix = binary.AppendUvarint(nil, uint64(r.Len)+1)
		} else {
			if idx < 4 || binary.BigEndian.Uint32(buf[idx-4:]) != placeholderLen {
				return frame{}, errors.New("placeholder without its length prefix")
			}
			prefixStart = idx - 4
			prefix = binary.BigEndian.AppendUint32(nil, uint32(r.Len))
		}
		pieces = append(pieces, piece{b: buf[pos:prefixStart]}, piece{b: prefix}, piece{region: r})
		size += int64(len(prefix)) + r.Len - int64(idx+placeholderLen-prefixStart)
		pos = idx + placeholderLen
		search = pos
	}
	pieces = append(pieces, piece{b: buf[pos:]})
	if size > 1<<31-1 {
		return frame{}, fmt.Errorf("spliced response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(buf, uint32(size))
	return frame{pieces: pieces}, nil
}

// write sends f on nc: plain bytes with writes (writev for runs of
// pieces), regions with sendfile where nc is a real socket. On any other
// connection (TLS) the pieces go through writeChunked.
func (f frame) write(nc net.Conn) error {
	if f.pieces == nil {
		_, err := nc.Write(f.b)
		return err
	}
	defer f.close()
	if _, ok := nc.(syscall.Conn); !ok {
		return f.writeChunked(nc)
	}
	var run net.Buffers
	for _, p := range f.pieces {
		if p.region == nil {
			if len(p.b) > 0 {
				run = append(run, p.b)
			}
			continue
		}
		if len(run) > 0 {
			if _, err := run.WriteTo(nc); err != nil {
				return err
			}
			run = run[:0]
		}
		if err := sendRegion(nc, p.region); err != nil {
			return err
		}
	}
	if len(run) > 0 {
		_, err := run.WriteTo(nc)
		return err
	}
	return nil
}

// chunkSize is how much writeChunked hands to one Write: a TLS
// connection seals it as 16 KiB records, so the chunk only needs to be
// large enough that the per-call costs vanish.
const chunkSize = 256 << 10

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// writeChunked sends the pieces of f through w in chunks of chunkSize:
// the encoded bytes and the short length prefixes are gathered with the
// file bytes that follow them, and a region is read from its file
// (pread, the file's position untouched) straight into the chunk. Each
// byte of a record batch is copied once, from the page cache into the
// chunk, and the TLS layer encrypts it from there; no record is copied
// into the encoded response, and no small piece becomes a TLS record of
// its own.
func (f frame) writeChunked(w io.Writer) error {
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := (*bp)[:0]
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, p := range f.pieces {
		for b := p.b; len(b) > 0; {
			n := copy(buf[len(buf):cap(buf)], b)
			buf, b = buf[:len(buf)+n], b[n:]
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if r := p.region; r != nil {
			off, remain := r.Off, r.Len
			for remain > 0 {
				room := min(int64(cap(buf)-len(buf)), remain)
				n, err := r.File.ReadAt(buf[len(buf):len(buf)+int(room)], off)
				buf = buf[:len(buf)+n]
				off, remain = off+int64(n), remain-int64(n)
				if err != nil && (err != io.EOF || remain > 0) {
					if err == io.EOF {
						err = fmt.Errorf("file ends %d bytes short of the region", remain)
					}
					return err
				}
				if len(buf) == cap(buf) {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
	return flush()
}

// sendRegion copies r to nc in the kernel, at r's offsets (the file's own
// position is neither used nor moved).
func sendRegion(nc net.Conn, r *FileRegion) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		_, err := io.Copy(nc, io.NewSectionReader(r.File, r.Off, r.Len))
		return err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	frc, err := r.File.SyscallConn()
	if err != nil {
		return err
	}
	off, remain := r.Off, r.Len
	var serr error
	cerr := frc.Control(func(infd uintptr) {
		werr := rc.Write(func(outfd uintptr) bool {
			for remain > 0 {
				n, err := syscall.Sendfile(int(outfd), int(infd), &off, int(min(remain, 1<<30)))
				if n > 0 {
					remain -= int64(n)
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket is writable
				case err == syscall.EINTR:
				case err != nil:
					serr = err
					return true
				case n == 0:
					serr = fmt.Errorf("sendfile: file ends %d bytes short of the region", remain)
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr == nil {
		serr = cerr
	}
	return serr
}
