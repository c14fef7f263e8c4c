package partition

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

// writeData writes p to f, uncached if asked and f can.
func writeData(f File, p []byte, uncached bool) (int, error) {
	if uncached {
		if w, ok := f.(interface {
			writeUncachedOrPlain(p []byte) (int, error)
		}); ok {
			return w.writeUncachedOrPlain(p)
		}
	}
	return f.Write(p)
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
