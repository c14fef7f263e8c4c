package partition

import "os"

// Uncached writes: a follower writes the batches it replicates with
// RWF_DONTCACHE (Linux 6.14 and later, on file systems that support it:
// ext4, xfs, btrfs and others), so the kernel starts writing them back at
// once and drops their pages from the page cache once they are on disk.
// Kafka keeps a follower's data in the page cache like a leader's, but
// nothing reads it there unless the follower becomes leader or serves
// consumers (replica.selector.class); the page cache is better spent on
// the data consumers read from this broker's leaders.
//
// It also makes the write itself cheaper where filling fresh page-cache
// pages is costly. On a virtual machine whose free memory goes back to the
// host (free page reporting, ballooning) every new page costs a fault in
// the host on its first touch: on the 2-core VM gokafka-bench runs on,
// writing 1 GB into new page-cache pages costs 2.5 s of CPU and the same
// write into pages freed a moment before 0.27 s. Pages dropped behind the
// writer are reused by the next writes instead.
//
// Where the kernel or the file system refuses the flag (EOPNOTSUPP, or
// EINVAL from a kernel that does not know it) nothing is written, and the
// log dir falls back to plain writes for good.

// uncachedWriter is a File that can write with RWF_DONTCACHE. ok is false,
// with nothing written, when the kernel or the file system does not
// support it.
type uncachedWriter interface {
	WriteUncached(p []byte) (n int, ok bool, err error)
}

// uncachedMinBytes is the least a write must carry to go uncached. A
// follower keeping up with a light load appends a few kilobytes at a time;
// an uncached write starts the write-back of its pages at once, a block
// device request for every append, which made such a follower's appends
// (and so acks=all latency) slower. Big appends are where filling the page
// cache costs.
const uncachedMinBytes = 64 << 10

var pageSize = int64(os.Getpagesize())

// writeData appends p to the segment's log file, whose size is s.size. If
// uncached, p is big enough and the file can, the whole pages it fills are
// written uncached and the partial page it ends in through the page cache:
// the next append continues that page, which would otherwise be read back
// from the disk once dropped.
func (s *segment) writeData(p []byte, uncached bool) (int, error) {
	w, ok := s.log.(interface {
		writeUncachedOrPlain(p []byte) (int, error)
	})
	cut := int64(len(p)) - (s.size+int64(len(p)))%pageSize
	if !uncached || !ok || cut < uncachedMinBytes {
		return s.log.Write(p)
	}
	n, err := w.writeUncachedOrPlain(p[:cut])
	if err != nil || n < int(cut) || cut == int64(len(p)) {
		return n, err
	}
	m, err := s.log.Write(p[cut:])
	return n + m, err
}

// writeUncachedOrPlain writes p uncached while the dir's file system takes
// it, plainly from the first refusal on.
func (f dirFile) writeUncachedOrPlain(p []byte) (int, error) {
	uw, ok := f.File.(uncachedWriter)
	if !ok || f.d.plainWrites.Load() {
		return f.Write(p)
	}
	if f.d.offline.Load() {
		return 0, f.d.offlineErr()
	}
	n, supported, err := uw.WriteUncached(p)
	if !supported {
		if !f.d.plainWrites.Swap(true) && f.d.m != nil {
			f.d.m.logger.Info().Str("log_dir", f.d.path).Msg("the file system does not take uncached writes (RWF_DONTCACHE); followers write through the page cache")
		}
		return f.Write(p)
	}
	return n, f.d.check("write", f.name, err)
}
