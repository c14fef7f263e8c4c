package partition

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/rs/zerolog"
)

// OpenOptions carries what the broker knows about a partition from the root
// checkpoint files.
type OpenOptions struct {
	RecoveryPoint  int64 // offset below which data is known to be fsynced; 0 if unknown
	LogStartOffset int64 // 0 if unknown
	HighWatermark  int64 // 0 if unknown
	CleanShutdown  bool
	Now            func() time.Time // nil = time.Now
	// Lazy opens a log whose directory does not exist without creating
	// it: the log is empty at offset 0 in memory, and its directory,
	// segment and partition.metadata are made by its first append (see
	// ensureFiles). A log whose directory exists opens as usual.
	Lazy bool
}

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	LogAppendTime           int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset          int64
	MaxTimestamp            int64
	// OffsetOfMaxTimestamp is the base offset of the first batch that carries
	// MaxTimestamp: finding the exact record would mean decompressing.
	OffsetOfMaxTimestamp int64
	NumRecords           int64
}

// ReadInfo is the result of a Read.
type ReadInfo struct {
	Records []byte
	// Region, set by ReadRegion instead of Records, holds the same whole
	// batches as a range of the segment file; the caller must close it.
	Region *Region
	// NextOffset is one past the last offset of the batches returned
	// (Records or Region), -1 when none are.
	NextOffset                                  int64
	LogStartOffset, HighWatermark, LogEndOffset int64
}

// Size is the number of bytes of batches returned.
func (ri ReadInfo) Size() int64 {
	if ri.Region != nil {
		return ri.Region.Len
	}
	return int64(len(ri.Records))
}

// Log is the on-disk log of one partition. See doc.go for the lock order.
type Log struct {
	// env is what every log of its log dir shares (a Manager's dir, or
	// one of its own when opened alone).
	env *logEnv
	tp  TopicPartition

	// lifeMu guards the lifetime of segment files: held shared by anything
	// doing I/O on a snapshot of segments outside mu (Read, fsync), held
	// exclusively by whatever truncates, closes or deletes segment files.
	lifeMu sync.RWMutex
	// ckMu serialises writes of leader-epoch-checkpoint so that the newest
	// snapshot is the one left on disk.
	ckMu sync.Mutex
	// createMu serialises the creation of a lazy log's files
	// (ensureFiles) with Delete and the topic id; taken before lifeMu.
	createMu sync.Mutex
	// lazy is set while the log's files do not exist yet: it was opened
	// with OpenOptions.Lazy and has had no append. Cleared (once, under
	// createMu) when ensureFiles has created them. While set the log is
	// empty at offset 0: segs holds one placeholder segment with no file
	// (noFile), and leo = hw = logStart = recoveryPoint = 0.
	lazy atomic.Bool
	// timedFlush mirrors mu.cfg.FlushMs != math.MaxInt64, so that the
	// Manager's flush.ms check skips, without a lock, the logs that have
	// no flush.ms (all of them by default).
	timedFlush atomic.Bool
	// topicID is the topic id recorded for a lazy log until its
	// partition.metadata is written (with its other files). Guarded by
	// createMu. The zero handle is none; a topic's partitions share the
	// one interned id instead of a 16-byte copy each.
	topicID unique.Handle[[16]byte]
	// fl is the group-commit state; see flushTo.
	fl struct {
		sync.Mutex
		// cond is made by the first caller to wait (most logs never
		// see two flushes at once); see wakeFlushWaitersLocked.
		cond    *sync.Cond
		running bool
	}

	mu struct {
		sync.Mutex
		// cfg is shared by every log with the same configuration (all
		// the partitions of a topic, usually): 8 bytes a log, not 104.
		cfg unique.Handle[Config]
		// segs is ordered by base offset; the last is the active segment.
		// Invariant: len(segs) >= 1 while open.
		segs []*segment
		// Invariants: segs[0].base <= logStart <= hw <= leo, recoveryPoint <= leo.
		leo, hw, logStart, recoveryPoint int64
		epochs                           epochCache
		lastFlush                        time.Time
		// newSegments is set when segment files were created (or, by a
		// truncation, removed) since the directory was last synced.
		newSegments bool
		// freshDir is set when ensureFiles created the log's directory
		// and it has not been flushed since: the next flush round syncs
		// the parent (the directory's own entry) and partition.metadata
		// before the recovery point passes any batch.
		freshDir bool
		// freshMeta is set with freshDir when ensureFiles wrote
		// partition.metadata.
		freshMeta bool
		// truncPending is set from a truncation until it is durable (see
		// syncTruncation); left holds what it left to do, nil if nothing.
		truncPending bool
		closed       bool
		left         *truncLeft
		// cleanGen counts the changes that remove or cut segments
		// (truncation, retention, DeleteRecords): a cleaning that began
		// before one abandons its swap (cleaner.go).
		cleanGen uint64
		// truncatedTo is the lowest offset a truncation cut the log to
		// since the cleaner last looked (math.MaxInt64 if none): the
		// cleaner's checkpoint may not stay above it (cleanerPoint).
		truncatedTo int64
		// deleteHorizon is the earliest delete horizon the last cleaning
		// left on a tombstone or marker, -1 if none (cleaner.go).
		deleteHorizon int64
	}
	// opening is what loading the log needs (nil once open), kept out of
	// the open log's struct.
	opening *openState
}

// truncLeft is what a truncation leaves for syncTruncation: kept apart
// from Log (a pointer instead of two slices) because nearly every log has
// none.
type truncLeft struct {
	// cut holds the segments whose files a truncation cut.
	cut []*segment
	// dead holds segments a truncation dropped whose files could not be
	// removed yet.
	dead []*segment
}

// leftLocked returns the log's truncLeft, making it. Under mu.
func (l *Log) leftLocked() *truncLeft {
	if l.mu.left == nil {
		l.mu.left = &truncLeft{}
	}
	return l.mu.left
}

// cutLocked returns the segments a truncation cut. Under mu.
func (l *Log) cutLocked() []*segment {
	if l.mu.left == nil {
		return nil
	}
	return l.mu.left.cut
}

// clearCutLocked forgets the cut segments, dropping the truncLeft when
// nothing is left in it. Under mu.
func (l *Log) clearCutLocked() {
	if l.mu.left == nil {
		return
	}
	l.mu.left.cut = nil
	if len(l.mu.left.dead) == 0 {
		l.mu.left = nil
	}
}

// openState is what a log needs only while it opens.
type openState struct {
	// forceRecover names segments to re-validate at open whatever the
	// recovery point: those a completed swap put in place (cleaner.go).
	forceRecover map[int64]bool
	// snapshots are the producer snapshots scanDir found, for load (saves
	// a second listing of the directory).
	snapshots []int64
	// created is set when open created the log's directory: a new,
	// empty log.
	created bool
}

// logEnv is what all logs of one log dir share, kept once per dir rather
// than once per log (an idle broker holds thousands of logs).
type logEnv struct {
	fs FS
	// parent is the log dir holding the partition directories (Log.dir).
	parent string
	now    func() time.Time
	// baseLog is the owner's logger; Log.logger adds the partition's
	// fields when something is logged.
	baseLog *zerolog.Logger
	// sync, if set (a Manager's dir), syncs the log dir for
	// syncFreshDir.
	sync *dirSyncer
	// owner, if set, rewrites the dir's root checkpoints at the end of
	// syncTruncation (Manager.afterTruncate).
	owner *Manager
}

// tpFields adds a partition's topic and partition fields to each event
// of its log's logger. A logger context built with With costs over half a
// kilobyte, and even a logger value with a hook over a hundred bytes,
// which thousands of idle partitions would each keep: a log builds its
// logger when it logs (rarely).
type tpFields TopicPartition

func (f tpFields) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("topic", f.Topic).Int32("partition", f.Partition)
}

// logger returns the log's logger, with the partition's fields.
func (l *Log) logger() *zerolog.Logger {
	lg := l.env.baseLog.Hook(tpFields(l.tp))
	return &lg
}

// Open opens (creating if needed) the log of tp under the log dir dir,
// recovering it if the broker did not shut down cleanly.
func Open(fs FS, dir string, tp TopicPartition, cfg Config, logger zerolog.Logger, opts OpenOptions) (*Log, error) {
	return open(&logEnv{fs: fs, parent: dir, now: nowOr(opts.Now), baseLog: &logger}, tp, cfg, opts)
}

func nowOr(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// open is Open in env, which the caller keeps (a Manager's log dir,
// shared by its logs) for the log's lifetime; env.now stands for
// opts.Now.
func open(env *logEnv, tp TopicPartition, cfg Config, opts OpenOptions) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now, fs := env.now, env.fs
	l := &Log{env: env, tp: tp}
	l.mu.cfg = unique.Make(cfg)
	l.timedFlush.Store(cfg.FlushMs != math.MaxInt64)
	l.mu.lastFlush = now()
	l.mu.truncatedTo = math.MaxInt64
	l.mu.deleteHorizon = -1
	if opts.Lazy {
		exists, _, err := fs.Stat(l.dir())
		if err != nil {
			return nil, fmt.Errorf("open log %s: %w", tp, err)
		}
		if !exists {
			l.initLazy(now())
			return l, nil
		}
	}
	l.opening = &openState{}
	err := l.load(opts)
	l.opening = nil
	if err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("open log %s: %w", tp, err)
	}
	return l, nil
}

func (l *Log) closeFiles() {
	for _, s := range l.mu.segs {
		_ = s.close()
	}
	l.mu.segs = nil
}

// load opens the log's directory: it removes leftovers, opens the
// segments, recovers those an unclean shutdown may have left torn, settles
// the offsets and the leader-epoch cache, and makes what recovery changed
// durable. It runs before the log is shared, so it holds no lock.
func (l *Log) load(opts OpenOptions) error {
	bases, err := l.scanDir()
	if err != nil {
		return err
	}
	epochsOK, err := l.readEpochCheckpoint()
	if err != nil {
		return err
	}
	if l.opening.created {
		// A log this open created is empty: its leader-epoch cache is
		// empty and right without a checkpoint, which is written with
		// the first epoch (as Kafka's). Writing an empty one cost every
		// new partition two fsyncs.
		epochsOK = true
	}
	now := l.env.now()
	if err := l.openSegments(bases, now); err != nil {
		return err
	}
	recoverFrom := recoveryStart(l.mu.segs, opts)
	if len(l.opening.forceRecover) > 0 {
		for i, s := range l.mu.segs {
			if l.opening.forceRecover[s.base] {
				recoverFrom = min(recoverFrom, i)
				break
			}
		}
	}
	if err := l.recoverSegments(recoverFrom); err != nil {
		return err
	}
	if err := l.settleOffsets(opts, now); err != nil {
		return err
	}
	if err := l.settleEpochs(epochsOK, recoverFrom); err != nil {
		return err
	}
	if err := l.persistRecovery(opts, recoverFrom); err != nil {
		return err
	}
	l.logger().Debug().Int64("log_start_offset", l.mu.logStart).Int64("log_end_offset", l.mu.leo).
		Int64("recovery_point", l.mu.recoveryPoint).Int("segments", len(l.mu.segs)).Bool("clean", opts.CleanShutdown).Msg("log loaded")
	return nil
}

// scanDir creates the log's directory if missing, removes leftovers of
// interrupted writes and indexes without a segment, and returns the
// segments' base offsets in order.
func (l *Log) scanDir() ([]int64, error) {
	dir := l.dir()
	exists, _, err := l.env.fs.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := l.env.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := l.env.fs.SyncDir(l.parentDir()); err != nil {
			return nil, err
		}
		l.opening.created = true
	}
	names, err := l.env.fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if names, err = l.completeSwaps(names); err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var bases []int64
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	l.opening.snapshots = producerSnapshotEnds(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		switch {
		case strings.HasSuffix(n, tmpSuffix), strings.HasSuffix(n, deletedSuffix),
			strings.HasSuffix(n, cleanedSuffix), strings.HasSuffix(n, swapSuffix):
			// Leftovers of an interrupted checkpoint write or of Kafka's own
			// segment replacement; never live data.
			if err := l.env.fs.Remove(p); err != nil {
				return nil, err
			}
		case strings.HasSuffix(n, indexSuffix) || strings.HasSuffix(n, timeIndexSuffix):
			b, ok := parseSegmentName(n, filepath.Ext(n))
			if ok && !logs[b] {
				l.logger().Warn().Str("file", n).Msg("removing index without a log segment")
				if err := l.env.fs.Remove(p); err != nil {
					return nil, err
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// readEpochCheckpoint loads the leader-epoch cache from its checkpoint. It
// returns false when there is none or it is unreadable: the cache is then
// rebuilt from the batches (settleEpochs).
func (l *Log) readEpochCheckpoint() (bool, error) {
	data, ok, err := readWholeFile(l.env.fs, filepath.Join(l.dir(), leaderEpochCheckpointFile))
	if err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	entries, err := decodeEpochCheckpoint(data)
	if err != nil {
		l.logger().Warn().Err(err).Msg("leader-epoch-checkpoint unreadable; rebuilding from batches")
		return false, nil
	}
	l.mu.epochs.entries = entries
	return true, nil
}

// openSegments opens the segment files with these bases, closing them all
// again if one fails.
func (l *Log) openSegments(bases []int64, now time.Time) error {
	segs := make([]*segment, 0, len(bases))
	for _, b := range bases {
		s, err := openSegment(l.env.fs, l.dir(), b, now)
		if err != nil {
			for _, o := range segs {
				o.close()
			}
			return err
		}
		segs = append(segs, s)
	}
	l.mu.segs = segs
	return nil
}

// recoveryStart returns the index of the first segment to re-validate:
// none after a clean shutdown; otherwise the one holding recoveryPoint-1
// and everything after it (the segment the recovery point ends may have an
// unsynced index, see Flush).
func recoveryStart(segs []*segment, opts OpenOptions) int {
	if opts.CleanShutdown {
		return len(segs)
	}
	from := 0
	for i, s := range segs {
		if s.base <= opts.RecoveryPoint-1 {
			from = i
		}
	}
	return from
}

// assignEpochLocked feeds a recovered batch to the leader-epoch cache.
func (l *Log) assignEpochLocked(h BatchHeader) {
	if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.mu.epochs.latestEpoch() {
		l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	}
}

// recoverSegments sanity-checks the segments before recoverFrom (recovering
// one that fails) and recovers those from it on. A segment truncated by
// recovery, or ending short of its successor, lost unsynced data: every
// later segment is deleted, as in Kafka.
func (l *Log) recoverSegments(recoverFrom int) error {
	cfg := l.mu.cfg.Value()
	for i := 0; i < len(l.mu.segs); i++ {
		s := l.mu.segs[i]
		if i < recoverFrom {
			if err := s.loadLocked(cfg); err == nil {
				if i+1 < len(l.mu.segs) {
					if s.next > l.mu.segs[i+1].base {
						err = fmt.Errorf("segment %d overlaps segment %d", s.base, l.mu.segs[i+1].base)
					}
				}
				if err == nil {
					continue
				}
				l.logger().Warn().Err(err).Int64("segment", s.base).Msg("segment failed its sanity check; recovering it")
			} else {
				l.logger().Warn().Err(err).Int64("segment", s.base).Msg("segment failed its sanity check; recovering it")
			}
		}
		res, err := s.recoverLocked(cfg, l.assignEpochLocked)
		if err != nil {
			return err
		}
		lostTail := i+1 < len(l.mu.segs) && s.next < l.mu.segs[i+1].base
		if res.truncatedBytes > 0 || lostTail {
			// A recovered segment that ends short of its successor lost
			// unsynced data (its successor's name was made durable by a
			// directory sync first); everything after it is unflushed.
			ev := l.logger().Warn().Int64("segment", s.base).Int64("truncated_bytes", res.truncatedBytes).Int64("valid_bytes", s.size).Int64("next_offset", s.next)
			if res.reason != nil {
				ev = ev.AnErr("reason", res.reason)
			}
			ev.Msg("truncated invalid tail of segment during recovery")
			// Everything after the first bad batch is suspect, as in Kafka.
			for _, later := range l.mu.segs[i+1:] {
				l.logger().Warn().Int64("segment", later.base).Msg("deleting segment after a truncated one")
				later.close()
				if err := later.removeFiles(l.env.fs); err != nil {
					return err
				}
			}
			l.mu.segs = l.mu.segs[:i+1]
		}
		if i+1 < len(l.mu.segs) && s.next > l.mu.segs[i+1].base {
			return fmt.Errorf("segment %d overlaps segment %d", s.base, l.mu.segs[i+1].base)
		}
	}
	// A segment's next offset, for all but the last, is the next one's base
	// (there may be a gap before it).
	for i := 0; i+1 < len(l.mu.segs); i++ {
		l.mu.segs[i].next = max(l.mu.segs[i].next, l.mu.segs[i+1].base)
	}
	return nil
}

// settleOffsets sets the log end, log start, high watermark and recovery
// point from the recovered segments and the checkpoints in opts, starting
// a segment if there is none and removing producer snapshots above the
// log end.
func (l *Log) settleOffsets(opts OpenOptions, now time.Time) error {
	// An empty trailing segment left after recovery stays: it is simply the
	// active segment. No segment at all: start one at the log start.
	if len(l.mu.segs) == 0 {
		s, err := createSegment(l.env.fs, l.dir(), max(opts.LogStartOffset, 0), now)
		if err != nil {
			return err
		}
		l.mu.segs = []*segment{s}
		l.mu.newSegments = true
	}
	l.mu.leo = l.mu.segs[len(l.mu.segs)-1].next
	l.mu.logStart = max(opts.LogStartOffset, l.mu.segs[0].base)
	if l.mu.logStart > l.mu.leo {
		// Data below the checkpointed log start was lost (or deleted): the
		// log is logically empty and must continue at the log start.
		l.logger().Warn().Int64("log_start_offset", l.mu.logStart).Int64("log_end_offset", l.mu.leo).Msg("log end below log start; starting empty at log start")
		if err := l.truncateFullyLocked(l.mu.logStart); err != nil {
			return err
		}
	}
	// Producer snapshots above the log end describe batches lost to a
	// crash or to a truncation interrupted before it removed them.
	if l.mu.truncPending {
		// A fresh start at the log start may have removed some.
		l.opening.snapshots = nil
	}
	if err := l.removeSnapshotsAboveLocked(l.mu.leo, l.opening.snapshots); err != nil {
		return err
	}
	l.opening.snapshots = nil
	l.mu.hw = min(max(opts.HighWatermark, l.mu.logStart), l.mu.leo)
	if opts.CleanShutdown {
		l.mu.recoveryPoint = l.mu.leo
	} else {
		l.mu.recoveryPoint = min(max(opts.RecoveryPoint, 0), l.mu.leo)
	}
	return nil
}

// settleEpochs rebuilds the leader-epoch cache from every segment when its
// checkpoint was unusable and some segments were not recovered (and so did
// not feed it), then cuts it to the log's offsets.
func (l *Log) settleEpochs(epochsOK bool, recoverFrom int) error {
	if !epochsOK && l.mu.leo > l.mu.logStart && recoverFrom > 0 {
		// The segments that were not recovered did not feed the cache.
		l.mu.epochs.entries = nil
		for _, s := range l.mu.segs {
			if _, err := scanHeaders(s.log, 0, s.size, func(h BatchHeader, _ int64) bool {
				l.assignEpochLocked(h)
				return true
			}); err != nil {
				return err
			}
		}
	}
	l.mu.epochs.truncateFromEnd(l.mu.leo)
	l.mu.epochs.truncateFromStart(l.mu.logStart)
	if l.mu.epochs.dirty || !epochsOK {
		l.mu.epochs.dirty = true
	}
	return nil
}

// persistRecovery makes what loading changed durable: recovered segments
// and rebuilt indexes after an unclean shutdown, a changed leader-epoch
// checkpoint, removed snapshots or a fresh start at the log start.
func (l *Log) persistRecovery(opts OpenOptions, recoverFrom int) error {
	if !opts.CleanShutdown {
		// Make the recovered state durable (truncations, rebuilt indexes)
		// so the recovery point can cover it.
		if err := l.syncRecoveredLocked(recoverFrom); err != nil {
			return err
		}
	}
	if l.mu.epochs.dirty {
		entries := l.mu.epochs.snapshot()
		if err := WriteFileAtomic(l.env.fs, filepath.Join(l.dir(), leaderEpochCheckpointFile), encodeEpochCheckpoint(entries)); err != nil {
			return err
		}
		l.mu.epochs.dirty = false
	}
	if l.mu.truncPending {
		// Removed snapshots or a fresh start at the log start (clean
		// shutdown; recovery above already synced everything otherwise).
		var views []segView
		for _, s := range l.cutLocked() {
			views = append(views, segView{s: s, idx: s.idx.buf, tidx: s.tidx.buf})
		}
		if err := syncFiles(l.env.fs, l.dir(), l.mu.newSegments, views); err != nil {
			return err
		}
		l.mu.truncPending, l.mu.newSegments = false, false
		l.clearCutLocked()
	}
	return nil
}

// syncRecoveredLocked is used only while opening, before the log is shared.
func (l *Log) syncRecoveredLocked(from int) error {
	for _, s := range l.mu.segs[min(from, len(l.mu.segs)):] {
		if err := errors.Join(s.log.Sync(), s.persistIndexesLocked(true)); err != nil {
			return err
		}
	}
	if err := l.env.fs.SyncDir(l.dir()); err != nil {
		return err
	}
	l.mu.newSegments = false
	l.mu.recoveryPoint = l.mu.leo
	return nil
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.leo
}

// LogStartOffset is the first offset a consumer may read.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.logStart
}

// HighWatermark is the offset below which records are committed.
func (l *Log) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.hw
}

// SetHighWatermark sets the HW, clamped to [log start, LEO]. Keeping the HW
// monotonic is the replication layer's job; this log only stores it.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.hw = min(max(hw, l.mu.logStart), l.mu.leo)
}

// RecoveryPoint is the offset below which the log is known to be fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recoveryPoint
}

// Config returns the current configuration.
func (l *Log) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cfg.Value()
}

// UpdateConfig replaces the configuration; it applies from the next append.
// Invalid configurations are ignored (the caller validates them first).
func (l *Log) UpdateConfig(cfg Config) {
	if err := cfg.Validate(); err != nil {
		l.logger().Warn().Err(err).Msg("ignoring invalid log config")
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cfg = unique.Make(cfg)
	timed := cfg.FlushMs != math.MaxInt64
	if !l.timedFlush.Swap(timed) && timed && l.env.owner != nil {
		l.env.owner.wakeFlush()
	}
}

// TopicPartition returns the partition this log belongs to.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir() }

// Size returns the total bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sizeLocked()
}

func (l *Log) sizeLocked() int64 {
	var n int64
	for _, s := range l.mu.segs {
		n += s.size
	}
	return n
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.segs)
}

func (l *Log) active() *segment { return l.mu.segs[len(l.mu.segs)-1] }

// Append appends batches as the leader. records must have passed
// ValidateBatches. Offsets are assigned from the LEO by rewriting each
// batch's baseOffset and partitionLeaderEpoch in the caller's buffer (and,
// for LogAppendTime topics, the timestamp type and MaxTimestamp, with a new
// CRC). If the log is configured with flush.messages and that many messages
// are unflushed, Append returns after they are fsynced.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendInfo, error) {
	info, sync, err := l.AppendDeferSync(records, leaderEpoch)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := sync.Sync(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// AppendAsFollower appends batches copied from the leader; they keep their
// offsets and leader epochs. The first batch must start at or after the LEO
// and each batch must start after the previous one ends (Kafka allows gaps,
// which compaction creates). CRCs are checked here, as Kafka does for
// replicated data.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	return l.appendAsFollower(records, false)
}

// AppendAsFollowerUncached is AppendAsFollower for a follower whose data
// nobody reads from this broker: the batches are written uncached, and the
// kernel drops them from the page cache once they are on disk, where it
// supports that (uncached.go).
func (l *Log) AppendAsFollowerUncached(records []byte) (AppendInfo, error) {
	return l.appendAsFollower(records, true)
}

func (l *Log) appendAsFollower(records []byte, uncached bool) (AppendInfo, error) {
	hdrs, err := ValidateReplicatedBatches(records, math.MaxInt32)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := l.ensureFiles(); err != nil {
		return AppendInfo{}, err
	}
	if err := l.lockForAppend(); err != nil {
		return AppendInfo{}, err
	}
	info, epochChanged, err := l.appendLocked(records, hdrs, -1, false, uncached)
	due := l.flushDueLocked()
	leo := l.mu.leo
	l.mu.Unlock()
	return l.afterAppend(info, epochChanged, due, leo, err)
}

// lockForAppend takes mu once no truncation is pending: batches written
// after a truncation that a crash could still undo would sit on top of the
// batches it removed. Normally TruncateTo has already made it durable; this
// completes one whose sync failed.
func (l *Log) lockForAppend() error {
	l.mu.Lock()
	for l.mu.truncPending && !l.mu.closed {
		l.mu.Unlock()
		if err := l.syncTruncation(); err != nil {
			return err
		}
		l.mu.Lock()
	}
	return nil
}

func (l *Log) afterAppend(info AppendInfo, epochChanged, flushDue bool, leo int64, err error) (AppendInfo, error) {
	if err != nil {
		return AppendInfo{}, err
	}
	// A new epoch leaves the cache dirty, written by the next flush
	// (syncRound) before the recovery point passes the batch: recovery
	// re-derives epochs from the batches past the recovery point, so a
	// checkpoint that misses them loses nothing. Writing it here, with
	// two fsyncs, on the append path was most of the cost of the first
	// record to each of thousands of new partitions, on the leader and
	// on every follower. Kafka too flushes it with the log (KAFKA-15046).
	_ = epochChanged
	if flushDue {
		if err := l.flushTo(leo); err != nil {
			return AppendInfo{}, err
		}
	}
	return info, nil
}

func (l *Log) flushDueLocked() bool {
	return !l.mu.closed && l.mu.leo-l.mu.recoveryPoint >= l.mu.cfg.Value().FlushMessages
}

func (l *Log) appendLocked(records []byte, hdrs []BatchHeader, leaderEpoch int32, leader, uncached bool) (AppendInfo, bool, error) {
	if l.mu.closed {
		return AppendInfo{}, false, ErrLogClosed
	}
	cfg := l.mu.cfg.Value()
	if int64(len(records)) > cfg.SegmentBytes {
		return AppendInfo{}, false, fmt.Errorf("%w: %d bytes exceed segment.bytes %d", ErrRecordListTooLarge, len(records), cfg.SegmentBytes)
	}
	now := l.env.now()
	nowMs := now.UnixMilli()
	var first, last int64
	if leader {
		first = l.mu.leo
		next := first
		for _, h := range hdrs {
			next += int64(h.LastOffsetDelta) + 1
		}
		last = next - 1
	} else {
		first = hdrs[0].BaseOffset
		if first < l.mu.leo {
			return AppendInfo{}, false, fmt.Errorf("%w: first offset %d below log end offset %d", ErrOffsetsOutOfOrder, first, l.mu.leo)
		}
		for i := 1; i < len(hdrs); i++ {
			if hdrs[i].BaseOffset <= hdrs[i-1].LastOffset() {
				return AppendInfo{}, false, fmt.Errorf("%w: batch at %d after batch ending at %d", ErrOffsetsOutOfOrder, hdrs[i].BaseOffset, hdrs[i-1].LastOffset())
			}
		}
		last = hdrs[len(hdrs)-1].LastOffset()
	}
	incomingMaxTs := int64(-1)
	for _, h := range hdrs {
		incomingMaxTs = max(incomingMaxTs, h.MaxTimestamp)
	}
	if leader && cfg.LogAppendTime {
		incomingMaxTs = nowMs
	}
	if err := l.maybeRollLocked(cfg, int64(len(records)), incomingMaxTs, first, last, now); err != nil {
		return AppendInfo{}, false, err
	}

	info := AppendInfo{FirstOffset: first, LastOffset: last, LogAppendTime: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1}
	if leader {
		pos := 0
		next := first
		for i := range hdrs {
			h := &hdrs[i]
			b := records[pos : pos+h.Size()]
			setBaseOffsetAndEpoch(b, next, leaderEpoch)
			h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
			if cfg.LogAppendTime {
				setLogAppendTime(b, nowMs)
				h.Attributes |= attrTimestampType
				h.MaxTimestamp = nowMs
			}
			next = h.NextOffset()
			pos += h.Size()
		}
		if cfg.LogAppendTime {
			info.LogAppendTime = nowMs
		}
	}
	for _, h := range hdrs {
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.BaseOffset
		}
		info.NumRecords += int64(h.NumRecords)
	}
	if err := l.active().appendLocked(records, hdrs, cfg, uncached); err != nil {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.active().path, err)
	}
	l.mu.leo = last + 1
	epochChanged := false
	if leader {
		if leaderEpoch >= 0 && leaderEpoch > l.mu.epochs.latestEpoch() {
			epochChanged = l.mu.epochs.assign(leaderEpoch, first)
		}
	} else {
		for _, h := range hdrs {
			if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.mu.epochs.latestEpoch() {
				epochChanged = l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) || epochChanged
			}
		}
	}
	info.LogStartOffset = l.mu.logStart
	return info, epochChanged, nil
}

// maybeRollLocked starts a new segment at first when Kafka's
// LogSegment.shouldRoll says so: the append would overflow segment.bytes,
// segment.ms has passed (measured from the segment's first batch timestamp
// to the incoming one, or wall-clock from creation if it has none), an
// index is full, or the offsets would not fit the 32-bit relative offsets.
func (l *Log) maybeRollLocked(cfg Config, size, incomingMaxTs, first, last int64, now time.Time) error {
	s := l.active()
	if s.size == 0 {
		if s.base == first {
			return nil
		}
		// A follower appending after a gap, or a first append after a
		// roll elsewhere: replace the empty segment by one based at first.
		return l.rollLocked(first, now)
	}
	var waited int64
	if s.rollBaseTs >= 0 {
		waited = incomingMaxTs - s.rollBaseTs
	} else {
		waited = now.Sub(s.created).Milliseconds()
	}
	if s.size > cfg.SegmentBytes-size || waited > cfg.maxSegmentMs() || s.indexFull(cfg) || !s.canHold(last) {
		return l.rollLocked(first, now)
	}
	return nil
}

// rollLocked makes a new empty active segment at base. An empty active
// segment is replaced rather than kept. The new segment is created before
// anything of the old one goes, so a failure (EMFILE, ENOSPC) leaves the
// log as it was, never without a segment.
func (l *Log) rollLocked(base int64, now time.Time) error {
	old := l.active()
	if old.size == 0 && old.base == base {
		return nil
	}
	if old.unclean {
		if err := old.repairLocked(); err != nil {
			return fmt.Errorf("undoing an earlier failed append: %w", err)
		}
	}
	if old.size > 0 {
		if base < old.next {
			return fmt.Errorf("roll at %d below the active segment's end %d", base, old.next)
		}
		old.finalTimeEntryLocked()
	}
	s, err := createSegment(l.env.fs, l.dir(), base, now)
	if err != nil {
		return err
	}
	if old.size == 0 {
		// The empty segment's names go now; its handles are closed once no
		// reader can hold a snapshot of it (see retireLocked). It must not
		// stay behind the new one: recovery would take it for a segment
		// that lost its tail and delete everything after it.
		if err := old.removeFiles(l.env.fs); err != nil {
			_ = s.close()
			_ = s.removeFiles(l.env.fs)
			return err
		}
		l.mu.segs = l.mu.segs[:len(l.mu.segs)-1]
		l.retireLocked(old)
	}
	l.mu.segs = append(l.mu.segs, s)
	l.mu.newSegments = true
	if len(l.mu.segs) == 1 {
		l.mu.logStart = max(l.mu.logStart, base)
		l.mu.hw = max(l.mu.hw, l.mu.logStart)
		l.mu.recoveryPoint = max(l.mu.recoveryPoint, l.mu.logStart)
	}
	l.logger().Debug().Int64("base", base).Msg("rolled new segment")
	return nil
}

// retireLocked closes a segment that is no longer in the list. Readers
// holding lifeMu shared may still use its handles, so closing waits for
// them in a goroutine that takes lifeMu exclusively.
func (l *Log) retireLocked(s *segment) {
	go func() {
		l.lifeMu.Lock()
		defer l.lifeMu.Unlock()
		_ = s.close()
	}()
}

// segView is a snapshot of a segment for I/O outside mu.
type segView struct {
	s      *segment
	size   int64
	idx    []byte
	tidx   []byte
	maxTs  int64
	offMax int64
	next   int64
}

func (l *Log) viewsLocked(from int) []segView {
	vs := make([]segView, 0, len(l.mu.segs)-from)
	for _, s := range l.mu.segs[from:] {
		vs = append(vs, segView{s: s, size: s.size, idx: s.idx.buf, tidx: s.tidx.buf, maxTs: s.maxTs, offMax: s.offMaxTs, next: s.next})
	}
	return vs
}

// floorSegLocked returns the index of the last segment with base <= offset (0 if none).
func (l *Log) floorSegLocked(offset int64) int {
	i := sort.Search(len(l.mu.segs), func(i int) bool { return l.mu.segs[i].base > offset })
	return max(i-1, 0)
}

// Read returns whole batches starting with the batch that contains offset,
// up to maxBytes in total; with minOneBatch the first batch is returned even
// if it alone exceeds maxBytes. Batches whose base offset is >= maxOffset
// are never returned (the HW for consumers, the LEO for replicas). A read
// stays within one segment, as in Kafka; the caller reads again from the
// next offset.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, minOneBatch, false)
}

// ReadRegion is Read for a caller that can send file ranges without
// copying them (sendfile): when the batches span more than a small
// read, they come back as a Region of the segment file rather than as
// bytes. Only the batch headers are read to find where the whole batches
// end. A filesystem without file descriptors (the test MemFS) always
// gets bytes.
func (l *Log) ReadRegion(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, minOneBatch, true)
}

func (l *Log) read(offset int64, maxBytes int32, maxOffset int64, minOneBatch, region bool) (ReadInfo, error) {
	l.lifeMu.RLock()
	defer l.lifeMu.RUnlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ReadInfo{}, ErrLogClosed
	}
	info := ReadInfo{NextOffset: -1, LogStartOffset: l.mu.logStart, HighWatermark: l.mu.hw, LogEndOffset: l.mu.leo}
	if offset < l.mu.logStart || offset > l.mu.leo {
		l.mu.Unlock()
		return info, fmt.Errorf("%w: offset %d not in [%d, %d]", ErrOffsetOutOfRange, offset, info.LogStartOffset, info.LogEndOffset)
	}
	if offset == l.mu.leo || offset >= maxOffset {
		l.mu.Unlock()
		return info, nil
	}
	views := l.viewsLocked(l.floorSegLocked(offset))
	l.mu.Unlock()

	for _, v := range views {
		pos, h, found, err := findBatch(v.s.log, v.idx, v.s.base, offset, v.size)
		if err != nil {
			return info, err
		}
		if !found {
			continue
		}
		if h.BaseOffset >= maxOffset {
			return info, nil
		}
		if df, ok := v.s.log.(dupFile); ok && region {
			recs, reg, next, err := scanBatches(df, pos, v.size, h, maxBytes, maxOffset, minOneBatch)
			if err != nil {
				return info, err
			}
			info.Records, info.Region, info.NextOffset = recs, reg, next
			return info, nil
		}
		recs, err := readBatches(v.s.log, pos, v.size, h, maxBytes, maxOffset, minOneBatch)
		if err != nil {
			return info, err
		}
		info.Records, info.NextOffset = recs, lastNext(recs)
		return info, nil
	}
	return info, nil
}

// readBatches reads whole batches from pos (where batch first starts).
func readBatches(f File, pos, end int64, first BatchHeader, maxBytes int32, maxOffset int64, minOneBatch bool) ([]byte, error) {
	limit := min(int64(max(maxBytes, 0)), end-pos)
	if int64(first.Size()) > limit {
		if !minOneBatch {
			return nil, nil
		}
		limit = int64(first.Size())
	}
	buf := make([]byte, limit)
	if n, err := f.ReadAt(buf, pos); int64(n) < limit {
		return nil, fmt.Errorf("read %d bytes at %d: %w", limit, pos, err)
	}
	p := 0
	for p < len(buf) {
		size, err := frameSize(buf[p:])
		if err != nil {
			break // partial last batch within the limit
		}
		if len(buf)-p >= BatchHeaderSize && int64(binaryBase(buf[p:])) >= maxOffset {
			break
		}
		p += size
	}
	if p == 0 {
		return nil, nil
	}
	return buf[:p:p], nil
}

func binaryBase(b []byte) int64 {
	return parseHeaderUnchecked(b).BaseOffset
}

// Flush fsyncs the log up to the current LEO and advances the recovery
// point. Concurrent callers share fsyncs (group commit).
func (l *Log) Flush() error {
	return l.flushTo(l.LogEndOffset())
}

// flushTo returns once the recovery point is >= target (or >= the LEO, if
// the log was truncated below target meanwhile).
//
// wakeFlushWaitersLocked wakes the callers of flushTo waiting for a
// round; l.fl held.
func (l *Log) wakeFlushWaitersLocked() {
	if l.fl.cond != nil {
		l.fl.cond.Broadcast()
	}
}

// Group commit: at most one goroutine runs an fsync round at a time. A
// caller whose target is already durable returns at once; otherwise it
// waits for the running round and, if that did not cover it, runs the next
// round itself. A round syncs everything up to the LEO at the moment it
// starts, so all callers that queued up during one fsync are served by the
// next single one. No partition lock is held during the fsync.
func (l *Log) flushTo(target int64) error {
	l.fl.Lock()
	for {
		l.mu.Lock()
		closed := l.mu.closed
		done := l.mu.recoveryPoint >= min(target, l.mu.leo)
		l.mu.Unlock()
		if done {
			l.fl.Unlock()
			return nil
		}
		if closed {
			l.fl.Unlock()
			return ErrLogClosed
		}
		if !l.fl.running {
			break
		}
		if l.fl.cond == nil {
			l.fl.cond = sync.NewCond(&l.fl.Mutex)
		}
		l.fl.cond.Wait()
	}
	l.fl.running = true
	l.fl.Unlock()

	err := l.syncRound()

	l.fl.Lock()
	l.fl.running = false
	l.wakeFlushWaitersLocked()
	l.fl.Unlock()
	if err != nil {
		return err
	}
	// The round covered the LEO as of its start, which is >= target unless
	// a truncation intervened; re-check in that case.
	return l.flushTo(target)
}

// syncRound is one fsync round; see flushTo.
func (l *Log) syncRound() error {
	// The epoch cache must be on disk before the recovery point passes the
	// batches that changed it, since recovery re-derives it only from
	// batches past the recovery point.
	if err := l.writeEpochCheckpoint(); err != nil {
		return err
	}
	l.lifeMu.RLock()
	defer l.lifeMu.RUnlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrLogClosed
	}
	leo := l.mu.leo
	// From the segment holding recoveryPoint-1: the segment the previous
	// round ended in may have rolled since, and its index (not synced while
	// it was active) must be synced before the recovery point moves past it.
	from := l.floorSegLocked(l.mu.recoveryPoint - 1)
	segs := l.viewsLocked(from)
	dirSync := l.mu.newSegments
	l.mu.newSegments = false
	fresh, freshMeta := l.mu.freshDir, l.mu.freshMeta
	l.mu.freshDir, l.mu.freshMeta = false, false
	l.mu.Unlock()

	var err error
	if fresh {
		// A directory created by the first append (lazy.go): its own
		// entry must be durable before any batch in it counts as such.
		err = l.syncFreshDir(freshMeta)
	}
	if dirSync && err == nil {
		err = l.env.fs.SyncDir(l.dir())
	}
	for i, v := range segs {
		if err != nil {
			break
		}
		err = v.s.log.Sync()
		if err == nil {
			// The active segment's index is written but not synced:
			// recovery, which starts at the segment holding the recovery
			// point, rebuilds it. Writing it here keeps the file close to
			// the log (and its disk space taken) as entries accrue, one
			// per index.interval.bytes.
			err = persistIndexes(v.s, v.idx, v.tidx, i < len(segs)-1)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if dirSync {
			l.mu.newSegments = true
		}
		if fresh {
			l.mu.freshDir = true
			l.mu.freshMeta = l.mu.freshMeta || freshMeta
		}
		l.logger().Error().Err(err).Msg("fsync failed")
		return fmt.Errorf("flush %s: %w", l.tp, err)
	}
	if leo > l.mu.recoveryPoint && leo <= l.mu.leo {
		l.mu.recoveryPoint = leo
	}
	l.mu.lastFlush = l.env.now()
	return nil
}

// FlushIfDue flushes when flush.ms has passed since the last flush and
// something is unflushed.
func (l *Log) FlushIfDue(now time.Time) error {
	l.mu.Lock()
	due := !l.mu.closed && l.mu.leo > l.mu.recoveryPoint && now.Sub(l.mu.lastFlush).Milliseconds() >= l.mu.cfg.Value().FlushMs
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// writeEpochCheckpoint writes leader-epoch-checkpoint if the cache changed.
func (l *Log) writeEpochCheckpoint() error {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	l.mu.Lock()
	if !l.mu.epochs.dirty || l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	entries := l.mu.epochs.snapshot()
	l.mu.epochs.dirty = false
	l.mu.Unlock()
	err := WriteFileAtomic(l.env.fs, filepath.Join(l.dir(), leaderEpochCheckpointFile), encodeEpochCheckpoint(entries))
	if err != nil {
		l.mu.Lock()
		l.mu.epochs.dirty = true
		l.mu.Unlock()
	}
	return err
}

// LatestEpoch returns the latest leader epoch in the cache, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epochs.latestEpoch()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279) with Kafka's
// LeaderEpochFileCache.endOffsetFor semantics.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.leo)
}

// EpochForOffset returns the leader epoch that wrote offset, -1 if unknown.
func (l *Log) EpochForOffset(offset int64) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epochs.epochForOffset(offset)
}

// EpochEntries returns a copy of the leader-epoch cache as (epoch, start
// offset) pairs, oldest first.
func (l *Log) EpochEntries() [][2]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][2]int64, len(l.mu.epochs.entries))
	for i, e := range l.mu.epochs.entries {
		out[i] = [2]int64{int64(e.epoch), e.startOffset}
	}
	return out
}

// TruncateTo removes every batch at or after offset (a follower diverged
// from its leader). A batch that straddles offset is removed whole, so the
// LEO may end below offset. HW, recovery point, epoch cache and producer
// snapshots above the new end follow. The truncation is durable when
// TruncateTo returns (see syncTruncation): a follower fetches past the
// truncation point only after it, so a crash cannot bring the divergent
// batches back under data fetched since. A call that truncates nothing
// still completes an earlier truncation that failed to become durable.
func (l *Log) TruncateTo(offset int64) error {
	l.lifeMu.Lock()
	l.mu.Lock()
	err := l.truncateToLocked(offset)
	l.mu.Unlock()
	l.lifeMu.Unlock()
	if err != nil {
		return err
	}
	return l.syncTruncation()
}

func (l *Log) truncateToLocked(offset int64) error {
	if l.mu.closed {
		return ErrLogClosed
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.mu.leo {
		return nil
	}
	if offset < l.mu.segs[0].base {
		return l.truncateFullyLocked(offset)
	}
	l.logger().Info().Int64("offset", offset).Int64("log_end_offset", l.mu.leo).Msg("truncating log")
	l.mu.cleanGen++
	l.mu.truncatedTo = min(l.mu.truncatedTo, offset)
	// From here on the files change: whatever happens, the directory and
	// the cut segment must be synced before the truncation counts as done.
	l.mu.truncPending = true
	// Whole segments at or after offset go (one whose base == offset is
	// emptied and kept if it is the first); then the new last one is cut.
	// The list is shortened first, so that a failed removal leaves it
	// consistent; the files left behind are removed by syncTruncation
	// before the truncation counts as done.
	keep := len(l.mu.segs)
	for keep > 1 && l.mu.segs[keep-1].base >= offset {
		keep--
	}
	dead := l.mu.segs[keep:]
	l.mu.segs = l.mu.segs[:keep]
	if len(dead) > 0 {
		l.mu.newSegments = true
	}
	var errs []error
	for _, s := range dead {
		if err := s.close(); err != nil {
			l.logger().Warn().Err(err).Msg("closing truncated segment")
		}
		errs = append(errs, l.removeDeadLocked(s))
	}
	last := l.active()
	l.noteCutLocked(last)
	if _, err := last.truncateToLocked(offset); err != nil {
		// The LEO follows what the list now holds, even if the cut failed.
		errs = append(errs, err)
	}
	l.mu.leo = max(last.next, last.base)
	l.mu.hw = min(l.mu.hw, l.mu.leo)
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, l.mu.leo)
	l.mu.logStart = min(l.mu.logStart, l.mu.leo)
	l.mu.epochs.truncateFromEnd(l.mu.leo)
	errs = append(errs, l.removeProducerSnapshotsAboveLocked(l.mu.leo))
	return errors.Join(errs...)
}

// removeDeadLocked removes the files of a segment a truncation dropped
// from the list; if that fails, syncTruncation retries it, since files
// left above the new end would come back as data at the next open.
func (l *Log) removeDeadLocked(s *segment) error {
	err := s.removeFiles(l.env.fs)
	if err != nil {
		left := l.leftLocked()
		left.dead = append(left.dead, s)
	}
	return err
}

// noteCutLocked records that s's files were cut and must be synced before
// the truncation is durable.
func (l *Log) noteCutLocked(s *segment) {
	for _, c := range l.cutLocked() {
		if c == s {
			return
		}
	}
	left := l.leftLocked()
	left.cut = append(left.cut, s)
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset (a follower far behind a leader whose log start passed it). Like
// TruncateTo, it is durable when it returns.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if l.lazy.Load() {
		l.createMu.Lock()
		if l.lazy.Load() && offset == 0 {
			// Empty at 0 already, with nothing on disk to make durable.
			l.mu.Lock()
			closed := l.mu.closed
			l.mu.Unlock()
			l.createMu.Unlock()
			if closed {
				return ErrLogClosed
			}
			return nil
		}
		l.createMu.Unlock()
		// A log start past 0 must survive a restart: it needs the files.
		if err := l.ensureFiles(); err != nil {
			return err
		}
	}
	l.lifeMu.Lock()
	l.mu.Lock()
	var err error
	if l.mu.closed {
		err = ErrLogClosed
	} else {
		err = l.truncateFullyLocked(offset)
	}
	l.mu.Unlock()
	l.lifeMu.Unlock()
	if err != nil {
		return err
	}
	return l.syncTruncation()
}

// truncateFullyLocked replaces every segment by an empty one at offset. The
// new segment exists before any old one goes, so a failure to create it
// (EMFILE, ENOSPC) leaves the log unchanged rather than without segments;
// a segment already based at offset is emptied and kept instead.
func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	l.logger().Info().Int64("offset", offset).Msg("truncating log fully")
	l.mu.cleanGen++
	l.mu.truncatedTo = min(l.mu.truncatedTo, offset)
	var ns *segment
	for _, s := range l.mu.segs {
		if s.base == offset {
			ns = s
		}
	}
	if ns != nil {
		l.mu.truncPending = true
		l.noteCutLocked(ns)
		if _, err := ns.truncateToLocked(offset); err != nil {
			return err
		}
		ns.unclean = false
		ns.created = l.env.now()
	} else {
		s, err := createSegment(l.env.fs, l.dir(), offset, l.env.now())
		if err != nil {
			return err
		}
		ns = s
		l.mu.truncPending = true
	}
	old := l.mu.segs
	l.mu.segs = []*segment{ns}
	l.leftLocked().cut = []*segment{ns}
	l.mu.newSegments = true
	l.mu.leo, l.mu.hw, l.mu.logStart, l.mu.recoveryPoint = offset, offset, offset, offset
	l.mu.epochs.clear()
	var errs []error
	for _, s := range old {
		if s == ns {
			continue
		}
		if err := s.close(); err != nil {
			l.logger().Warn().Err(err).Msg("closing truncated segment")
		}
		errs = append(errs, l.removeDeadLocked(s))
	}
	// Kafka's truncateFullyAndStartAt drops every producer snapshot too.
	errs = append(errs, l.removeProducerSnapshotsAboveLocked(-1))
	return errors.Join(errs...)
}

// syncTruncation makes the last truncation durable: the partition
// directory (removed segments and snapshots, a created segment), the files
// of the segment that was cut, the leader-epoch checkpoint, and then the
// root checkpoints through afterTruncate, so that the recovery point on
// disk is not above the new end either. Until all of that succeeded the
// truncation stays pending and the next TruncateTo or
// TruncateFullyAndStartAt call retries it.
func (l *Log) syncTruncation() error {
	if err := l.writeEpochCheckpoint(); err != nil {
		return err
	}
	l.lifeMu.RLock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		l.lifeMu.RUnlock()
		return ErrLogClosed
	}
	if !l.mu.truncPending {
		l.mu.Unlock()
		l.lifeMu.RUnlock()
		return nil
	}
	for left := l.mu.left; left != nil && len(left.dead) > 0; {
		if err := left.dead[0].removeFiles(l.env.fs); err != nil {
			l.mu.Unlock()
			l.lifeMu.RUnlock()
			return fmt.Errorf("sync truncation of %s: %w", l.tp, err)
		}
		left.dead = left.dead[1:]
	}
	l.mu.truncPending = false
	// Only segments still in the list: the others' files are gone.
	var segs []*segment
	var views []segView
	for _, c := range l.cutLocked() {
		for _, s := range l.mu.segs {
			if s == c {
				segs = append(segs, s)
				views = append(views, segView{s: s, idx: s.idx.buf, tidx: s.tidx.buf})
			}
		}
	}
	l.clearCutLocked()
	dirSync := l.mu.newSegments
	l.mu.newSegments = false
	l.mu.Unlock()
	err := syncFiles(l.env.fs, l.dir(), dirSync, views)
	l.lifeMu.RUnlock()
	if err == nil && l.env.owner != nil {
		err = l.env.owner.afterTruncate(l)
	}
	if err != nil {
		l.mu.Lock()
		l.mu.truncPending = true
		l.mu.newSegments = l.mu.newSegments || dirSync
		for _, s := range segs {
			l.noteCutLocked(s)
		}
		l.mu.Unlock()
		l.logger().Error().Err(err).Msg("making truncation durable failed")
		return fmt.Errorf("sync truncation of %s: %w", l.tp, err)
	}
	return nil
}

// syncFiles fsyncs dir (if dirSync) and the log file of each segment and
// persists and fsyncs its indexes (from the snapshots in the views).
func syncFiles(fs FS, dir string, dirSync bool, segs []segView) error {
	if dirSync {
		if err := fs.SyncDir(dir); err != nil {
			return err
		}
	}
	for _, v := range segs {
		if err := errors.Join(v.s.log.Sync(), persistIndexes(v.s, v.idx, v.tidx, true)); err != nil {
			return err
		}
	}
	return nil
}

// DeleteRecordsBefore advances the log start offset to offset (DeleteRecords;
// -1 means the HW) and deletes the segments wholly below it. offset above
// the HW is ErrOffsetOutOfRange, as in Kafka.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.lifeMu.Lock()
	defer l.lifeMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, ErrLogClosed
	}
	if offset == -1 {
		offset = l.mu.hw
	}
	if offset < 0 || offset > l.mu.hw {
		hw := l.mu.hw
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: cannot move log start to %d beyond high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset > l.mu.logStart {
		l.mu.logStart = offset
		l.mu.epochs.truncateFromStart(offset)
	}
	_, err := l.deleteSegmentsLocked(func(s, next *segment) bool { return next.base <= l.mu.logStart })
	ls := l.mu.logStart
	l.mu.Unlock()
	if err != nil {
		return ls, err
	}
	return ls, l.writeEpochCheckpoint()
}

// deleteSegmentsLocked deletes the longest prefix of non-active segments
// for which pred holds (given the segment and its successor). Needs lifeMu
// held exclusively.
func (l *Log) deleteSegmentsLocked(pred func(s, next *segment) bool) (int, error) {
	n := 0
	for n < len(l.mu.segs)-1 && pred(l.mu.segs[n], l.mu.segs[n+1]) {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	dead := l.mu.segs[:n]
	l.mu.segs = append([]*segment(nil), l.mu.segs[n:]...)
	l.mu.cleanGen++
	if l.mu.segs[0].base > l.mu.logStart {
		l.mu.logStart = l.mu.segs[0].base
		l.mu.hw = max(l.mu.hw, l.mu.logStart)
		l.mu.recoveryPoint = max(l.mu.recoveryPoint, min(l.mu.logStart, l.mu.leo))
		l.mu.epochs.truncateFromStart(l.mu.logStart)
	}
	var errs []error
	for _, s := range dead {
		l.logger().Info().Int64("segment", s.base).Int64("size", s.size).Msg("deleting segment")
		errs = append(errs, s.close(), s.removeFiles(l.env.fs))
	}
	return n, errors.Join(errs...)
}

// ApplyRetention deletes old segments by retention.ms (segment max
// timestamp), retention.bytes and log start offset. Only whole segments
// wholly below the HW go, never the active one; the log start moves up to
// the first remaining segment.
func (l *Log) ApplyRetention(now time.Time) (int, error) {
	l.lifeMu.Lock()
	defer l.lifeMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, ErrLogClosed
	}
	cfg := l.mu.cfg.Value()
	nowMs := now.UnixMilli()
	total := 0
	belowHW := func(next *segment) bool { return next.base <= l.mu.hw }
	var errs []error
	if cfg.RetentionMs >= 0 {
		n, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
			return belowHW(next) && nowMs-s.maxTs > cfg.RetentionMs
		})
		total += n
		errs = append(errs, err)
	}
	if cfg.RetentionBytes >= 0 {
		var size int64
		for _, s := range l.mu.segs {
			size += s.size
		}
		diff := size - cfg.RetentionBytes
		n, err := l.deleteSegmentsLocked(func(s, next *segment) bool {
			if belowHW(next) && diff-s.size >= 0 {
				diff -= s.size
				return true
			}
			return false
		})
		total += n
		errs = append(errs, err)
	}
	n, err := l.deleteSegmentsLocked(func(s, next *segment) bool { return next.base <= l.mu.logStart })
	total += n
	errs = append(errs, err)
	l.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return total, err
	}
	if total > 0 {
		return total, l.writeEpochCheckpoint()
	}
	return 0, nil
}

// OffsetForTimestamp answers ListOffsets. ts >= 0: the first record whose
// timestamp is >= ts (ok=false if none). -1: the LEO; -2 (and -4, earliest
// local): the log start; -3: the record with the largest timestamp
// (KIP-734). leaderEpoch is the epoch of the batch found, or from the epoch
// cache for -1/-2; -1 when unknown.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, leaderEpoch int32, ok bool, err error) {
	l.lifeMu.RLock()
	defer l.lifeMu.RUnlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, 0, -1, false, ErrLogClosed
	}
	logStart, leo := l.mu.logStart, l.mu.leo
	maxRecord := l.mu.cfg.Value().MaxMessageBytes
	switch {
	case ts == -1:
		ep := l.mu.epochs.latestEpoch()
		l.mu.Unlock()
		return leo, -1, ep, true, nil
	case ts == -2 || ts == -4:
		ep := l.mu.epochs.epochForOffset(logStart)
		l.mu.Unlock()
		return logStart, -1, ep, true, nil
	case ts < 0 && ts != -3:
		l.mu.Unlock()
		return 0, 0, -1, false, nil
	}
	views := l.viewsLocked(0)
	l.mu.Unlock()

	if ts == -3 {
		best := -1
		for i, v := range views {
			if v.maxTs >= 0 && (best < 0 || v.maxTs > views[best].maxTs) && v.offMax >= logStart {
				best = i
			}
		}
		if best < 0 {
			return 0, 0, -1, false, nil
		}
		v := views[best]
		return v.findTimestamp(v.maxTs, v.offMax, logStart, true, maxRecord)
	}
	for _, v := range views {
		if v.maxTs < ts || v.size == 0 {
			continue
		}
		from := max(v.s.base+lookupTime(v.tidx, ts), logStart)
		off, t, ep, ok, err := v.findTimestamp(ts, from, logStart, false, maxRecord)
		if err != nil || ok {
			return off, t, ep, ok, err
		}
	}
	return 0, 0, -1, false, nil
}

// findTimestamp scans the segment's batches from the one holding offset
// `from` for the first record with timestamp >= ts (== ts if exact) at or
// after minOffset. A batch's records are streamed from the file
// (RecordIter), never read whole, with records up to maxRecord bytes.
func (v segView) findTimestamp(ts, from, minOffset int64, exact bool, maxRecord int32) (int64, int64, int32, bool, error) {
	pos, _, found, err := findBatch(v.s.log, v.idx, v.s.base, from, v.size)
	if err != nil || !found {
		return 0, 0, -1, false, err
	}
	for pos < v.size {
		var hb [BatchHeaderSize]byte
		h, err := readHeaderAt(v.s.log, pos, hb[:])
		if err != nil {
			return 0, 0, -1, false, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			if pos+int64(h.Size()) > v.size {
				return 0, 0, -1, false, fmt.Errorf("%w: batch at offset %d runs past the segment", ErrCorruptMessage, h.BaseOffset)
			}
			body := io.NewSectionReader(v.s.log, pos+BatchHeaderSize, int64(h.Size()-BatchHeaderSize))
			it, err := NewRecordIter(h, body, maxRecord, false)
			if err != nil {
				return 0, 0, -1, false, err
			}
			var hit struct {
				off, ts int64
				ok      bool
			}
			for it.Next() {
				o, t := it.Offset, it.Timestamp
				if o >= minOffset && ((exact && t == ts) || (!exact && t >= ts)) {
					hit.off, hit.ts, hit.ok = o, t, true
					break
				}
			}
			it.Close()
			if err := it.Err(); err != nil {
				return 0, 0, -1, false, err
			}
			if hit.ok {
				ep := h.PartitionLeaderEpoch
				if ep < 0 {
					ep = -1
				}
				return hit.off, hit.ts, ep, true, nil
			}
		}
		pos += int64(h.Size())
	}
	return 0, 0, -1, false, nil
}

// Close flushes the log, records the active segment's max timestamp in its
// time index, syncs the indexes and closes every file. Idempotent.
func (l *Log) Close() error {
	ferr := l.Flush()
	if errors.Is(ferr, ErrLogClosed) {
		return nil
	}
	eerr := l.writeEpochCheckpoint()
	l.lifeMu.Lock()
	defer l.lifeMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	var errs []error
	errs = append(errs, ferr, eerr)
	if len(l.mu.segs) > 0 {
		l.active().finalTimeEntryLocked()
	}
	// Every index the files lack goes out now (those already durable cost
	// nothing), so that the next start after this clean shutdown loads
	// them instead of scanning the segments.
	for _, s := range l.mu.segs {
		errs = append(errs, s.persistIndexesLocked(true))
	}
	for _, s := range l.mu.segs {
		errs = append(errs, s.close())
	}
	l.mu.segs = nil
	l.fl.Lock()
	l.wakeFlushWaitersLocked()
	l.fl.Unlock()
	return errors.Join(errs...)
}

// Delete closes the log without flushing and removes its directory: it is
// renamed to "<topic>-<partition>.<id>-delete" first (Kafka's naming), so
// that a crash mid-removal leaves a directory the manager finishes deleting
// at startup rather than a half-deleted partition.
func (l *Log) Delete() error {
	_, err := l.delete()
	return err
}

// delete is Delete, reporting whether the log was lazy (had no files).
func (l *Log) delete() (lazy bool, err error) {
	l.createMu.Lock()
	l.closeUnflushed()
	lazy = l.lazy.Load()
	l.createMu.Unlock()
	if lazy {
		return true, nil // never created on disk
	}
	return false, l.removeDir()
}

// removeDir removes the closed log's directory (see Delete).
func (l *Log) removeDir() error {
	var id [16]byte
	_, _ = rand.Read(id[:])
	dead := l.dir() + "." + hex.EncodeToString(id[:]) + deleteDirSuffix
	if err := l.env.fs.Rename(l.dir(), dead); err != nil {
		return err
	}
	if err := l.env.fs.SyncDir(l.parentDir()); err != nil {
		return err
	}
	return l.env.fs.RemoveAll(dead)
}

const deleteDirSuffix = "-delete"

// dir is the partition directory, in its log dir: made when a file
// operation needs it (none does while the log is idle).
func (l *Log) dir() string { return filepath.Join(l.env.parent, l.tp.String()) }
