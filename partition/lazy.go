package partition

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unique"
)

// Lazily created logs.
//
// A partition that is new to this broker (created by CreateTopics, or a
// replica added by a reassignment) gets a log that exists only in memory
// until its first append: the Manager opens it with OpenOptions.Lazy, which
// creates nothing when the partition's directory is absent. Creating a
// log's directory and files costs about a millisecond of kernel CPU here
// (mkdir, three creations, fsyncs), which for 10,000 partitions RF=3 was
// nearly all the time CreateTopics took; an empty log needs none of it.
//
// While lazy, the log is empty at offset 0 and everything that reads it
// works on its in-memory state: reads at the log end return nothing,
// ListOffsets and OffsetForLeaderEpoch answer from the (empty) offsets and
// epoch cache, Size is 0, truncation to 0 and retention have nothing to
// do, Close and Flush have nothing to sync, checkpoints leave it out and
// Delete has nothing to remove. The topic id is kept in memory
// (SetTopicID) and written with the other files.
//
// The first append (leader or follower) calls ensureFiles before taking
// mu: it creates the directory, the segment's .log file and
// partition.metadata, with no fsync, and looks for no stale file in the
// directory it has just made. The segment's two index files are not
// created with it: the first persist that writes offset-index entries
// creates each (a small partition's segment may never have one, and then
// no index file is made, not even at close), and loading takes a missing
// index of a segment too short for an offset-index entry as an empty one:
// it scans the whole segment and rebuilds both (segment.loadLocked). ensureFiles then swaps the real segment
// in for the placeholder under mu.
// The durability of the new directory (its entry in the log dir, and
// partition.metadata) is left to the log's first flush round, which syncs
// them before the recovery point passes any batch (freshDir). A crash
// before that loses nothing that was durable: the log is found, at the
// next start, either as a directory with unflushed batches (recovered
// from offset 0 as usual) or not at all, and then the partition, still
// assigned, is taken up as a new empty log again.
//
// A truncation to a non-zero offset (a follower whose leader's log start
// is past 0) creates the files first, so that the log start it sets is
// kept across a restart.

// noFile is the segment file of a lazy log: empty, and never written (an
// append creates the real file first).
type noFile struct{}

var errNoFile = errors.New("lazy log has no segment file")

func (noFile) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }
func (noFile) Write([]byte) (int, error)         { return 0, errNoFile }
func (noFile) Close() error                      { return nil }
func (noFile) Sync() error                       { return nil }
func (noFile) Size() (int64, error)              { return 0, nil }
func (noFile) Truncate(size int64) error {
	if size == 0 {
		return nil
	}
	return errNoFile
}

// The placeholder segment's two indexes are shared by every lazy log: an
// idle broker holds thousands of lazy logs, and two index structs each
// were 224 bytes a replica. Nothing writes them: entries are added only by
// an append, which swaps the real segment in first (ensureFiles); they are
// empty, so truncation and recovery find nothing to cut; and they are
// gone from the start, so persisting writes nothing and removing the
// placeholder's files (Delete) only sets gone again, under their ioMu.
var (
	lazyOffsetIndex = &index{entrySize: offsetIndexEntrySize, durable: true, gone: true}
	lazyTimeIndex   = &index{entrySize: timeIndexEntrySize, durable: true, gone: true}
)

// initLazy makes l an open, empty log at offset 0 with no files. Its
// placeholder segment has no path: any file operation on it would fail
// rather than create a stray file.
func (l *Log) initLazy(now time.Time) {
	l.mu.segs = []*segment{{
		log:        noFile{},
		idx:        lazyOffsetIndex,
		tidx:       lazyTimeIndex,
		maxTs:      -1,
		offMaxTs:   -1,
		rollBaseTs: -1,
		created:    now,
	}}
	l.lazy.Store(true)
}

// Lazy reports whether the log's files have not been created yet.
func (l *Log) Lazy() bool { return l.lazy.Load() }

// ensureFiles creates the files of a lazy log: its directory, its first
// segment's .log and partition.metadata, none of them fsynced (see
// freshDir). It
// takes createMu, and mu only to swap the segment in; no fsync runs.
func (l *Log) ensureFiles() error {
	if !l.lazy.Load() {
		return nil
	}
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if !l.lazy.Load() {
		return nil
	}
	l.mu.Lock()
	closed := l.mu.closed
	l.mu.Unlock()
	if closed {
		return ErrLogClosed
	}
	if err := l.env.fs.MkdirAll(l.dir(), 0o755); err != nil {
		return fmt.Errorf("create log %s: %w", l.tp, err)
	}
	s, err := createFirstSegment(l.env.fs, l.dir(), 0, l.env.now())
	if err != nil {
		return fmt.Errorf("create log %s: %w", l.tp, err)
	}
	meta := l.topicID != (unique.Handle[[16]byte]{})
	if meta {
		if err := writeNewFile(l.env.fs, filepath.Join(l.dir(), partitionMetadataFile), topicIDFileData(l.topicID.Value())); err != nil {
			_ = s.close()
			return fmt.Errorf("create log %s: %w", l.tp, err)
		}
	}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		_ = s.close()
		return ErrLogClosed
	}
	s.created = l.mu.segs[0].created
	l.mu.segs = []*segment{s}
	l.mu.newSegments = true
	l.mu.freshDir = true
	l.mu.freshMeta = meta
	l.lazy.Store(false)
	l.mu.Unlock()
	l.topicID = unique.Handle[[16]byte]{}
	l.logger().Debug().Msg("created the files of a new log")
	return nil
}

// syncFreshDir makes a directory ensureFiles created durable: the
// partition.metadata it wrote, and the directory's entry in the log dir.
// No lock is held.
func (l *Log) syncFreshDir(meta bool) error {
	if meta {
		f, err := l.env.fs.OpenFile(filepath.Join(l.dir(), partitionMetadataFile), os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	if l.env.sync != nil {
		return l.env.sync.sync()
	}
	return l.env.fs.SyncDir(l.parentDir())
}

// writeNewFile writes data to a new file name, without fsync.
func writeNewFile(fs FS, name string, data []byte) error {
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// dirSyncer group-commits the fsyncs of one log dir that make the
// directories of new logs durable (their first flush, see syncFreshDir):
// a caller returns once a sync that began after it called has completed,
// and the callers arriving during one sync share the next. Flushing
// thousands of new logs at once (a shutdown closes every log side by
// side) costs a few syncs of the log dir, not one per log.
type dirSyncer struct {
	fs  FS
	dir string

	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	// started counts the syncs begun, done those completed (in order:
	// one runs at a time); err is the result of the last completed.
	started, done uint64
	err           error
}

func newDirSyncer(fs FS, dir string) *dirSyncer {
	d := &dirSyncer{fs: fs, dir: dir}
	d.cond = sync.NewCond(&d.mu)
	return d
}

// sync returns once the directory has been synced after the call.
func (d *dirSyncer) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	target := d.started + 1 // the next sync to begin
	for d.done < target {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		d.started++
		n := d.started
		d.mu.Unlock()
		err := d.fs.SyncDir(d.dir)
		d.mu.Lock()
		d.running = false
		d.done, d.err = n, err
		d.cond.Broadcast()
	}
	// Every sync completed since began after the call: the last one's
	// result is the answer.
	return d.err
}
