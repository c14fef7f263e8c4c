package partition

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ManagerConfig configures a Manager; names follow Kafka's broker properties.
type ManagerConfig struct {
	// Progress, if set, is told how far start-up is in loading the logs
	// after each partition it loads (from several goroutines, one call
	// at a time per partition; it must not block).
	Progress func(RecoveryProgress)

	Dirs      []string // log.dirs
	NodeID    int32    // node.id, checked against meta.properties
	ClusterID string   // cluster.id, checked against meta.properties ("" accepts any)
	Defaults  Config   // used by GetOrCreate when configFor is nil
	// RetentionCheckInterval is log.retention.check.interval.ms (default 5m).
	RetentionCheckInterval time.Duration
	// CheckpointInterval is log.flush.offset.checkpoint.interval.ms (default 1m).
	CheckpointInterval time.Duration
	// FlushSchedulerInterval is how often flush.ms is checked (Kafka's
	// log.flush.scheduler.interval.ms defaults to Long.MAX_VALUE, which
	// would never apply flush.ms; 1s here).
	FlushSchedulerInterval time.Duration
	// Now is the clock for retention and flush.ms; nil = time.Now.
	Now func() time.Time
	// Cleaner configures the log cleaner (log.cleaner.*).
	Cleaner CleanerConfig
}

// Manager owns every partition log of a broker across its log dirs.
type Manager struct {
	fs        FS
	cfg       ManagerConfig
	configFor func(topic string) Config
	logger    zerolog.Logger
	now       func() time.Time

	// ckMu serialises WriteCheckpoints.
	ckMu sync.Mutex
	// rpOnDisk is, per log dir, what its recovery-point checkpoint holds
	// as far as this process knows; a dir is absent when that is unknown
	// (not written since open, or the write failed). Guarded by ckMu.
	rpOnDisk map[string]rpCheckpoint

	// ldirs tracks each log dir's health (logdir.go); fixed at open.
	ldirs  map[string]*logDir
	failMu sync.Mutex
	onFail func(dir string, err error)

	mu struct {
		sync.Mutex
		// logs holds every partition found or created here: its log
		// dir and its log. One map, not one for each: at 10,000
		// partitions a second map costs over half a megabyte.
		logs map[TopicPartition]hostedLog
		// creating guards against two GetOrCreate calls opening one log.
		creating map[TopicPartition]*sync.WaitGroup
		// creatingIn is the log dir of each log in creating: a log
		// being created counts where it goes, so logs created side by
		// side still spread over the dirs.
		creatingIn map[TopicPartition]string
		closed     bool
	}

	// cleaner is the log cleaner's state (cleaner_manager.go).
	cleaner *cleanerState

	// flushWake tells the flush.ms scheduler that a log may have a
	// flush.ms now (wakeFlush); flushScans counts its scans (tests).
	flushWake  chan struct{}
	flushScans atomic.Int64

	stop    chan struct{}
	done    sync.WaitGroup
	started bool
}

// hostedLog is a partition this broker holds: the log dir it is in and
// its log, nil while the log opens at start-up and once its log dir went
// offline (the partition still counts as being there).
type hostedLog struct {
	l   *Log
	dir *logDir
}

// path is the log dir's path ("" if none).
func (h hostedLog) path() string {
	if h.dir == nil {
		return ""
	}
	return h.dir.path
}

// offline reports whether the log dir is offline.
func (h hostedLog) offline() bool { return h.dir != nil && h.dir.offline.Load() }

// OpenManager opens every log dir: validates or writes meta.properties,
// reads the root checkpoints, notes (and removes) the clean-shutdown marker,
// removes "-delete" directories and opens every "<topic>-<partition>"
// directory, recovering logs after an unclean shutdown.
func OpenManager(fs FS, cfg ManagerConfig, configFor func(topic string) Config, logger zerolog.Logger) (*Manager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("no log dirs")
	}
	cfg, configFor = managerDefaults(cfg, configFor)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	m := &Manager{fs: fs, cfg: cfg, configFor: configFor, logger: logger, now: now, stop: make(chan struct{}), flushWake: make(chan struct{}, 1)}
	m.rpOnDisk = map[string]rpCheckpoint{}
	m.mu.logs = map[TopicPartition]hostedLog{}
	m.mu.creating = map[TopicPartition]*sync.WaitGroup{}
	m.mu.creatingIn = map[TopicPartition]string{}
	m.initLogDirs()

	var jobs []openJob
	var markers, staleDirs []string
	for _, dir := range cfg.Dirs {
		dirJobs, marker, stale, err := m.scanLogDir(dir)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, dirJobs...)
		if marker != "" {
			markers = append(markers, marker)
		}
		if stale {
			staleDirs = append(staleDirs, dir)
		}
	}

	start := time.Now()
	if err := m.openLogs(jobs); err != nil {
		return nil, err
	}
	if err := m.finishOpen(staleDirs, markers); err != nil {
		m.closeOpened()
		return nil, err
	}
	m.initCleaner()
	logger.Info().Int("partitions", len(jobs)).Bool("clean", len(markers) == len(cfg.Dirs)).
		Dur("took", time.Since(start)).Msg("logs loaded")
	return m, nil
}

// managerDefaults fills in the intervals and topic configs cfg and
// configFor leave unset.
func managerDefaults(cfg ManagerConfig, configFor func(topic string) Config) (ManagerConfig, func(topic string) Config) {
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 300 * time.Second
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = 60 * time.Second
	}
	if cfg.FlushSchedulerInterval <= 0 {
		cfg.FlushSchedulerInterval = time.Second
	}
	if cfg.Defaults == (Config{}) {
		cfg.Defaults = DefaultConfig()
	}
	if configFor == nil {
		def := cfg.Defaults
		configFor = func(string) Config { return def }
	}
	return cfg, configFor
}

// openJob is one partition directory to open.
type openJob struct {
	dir  string
	tp   TopicPartition
	opts OpenOptions
}

// scanLogDir prepares one log dir for opening: it creates the dir if
// missing, checks meta.properties and the dir id, reads the root
// checkpoints, removes temporary files and "-delete" directories, and
// records which dir holds each partition. It returns the partitions to
// open, the clean-shutdown marker's path ("" if there is none: the last
// shutdown was unclean) and whether a checkpoint names partitions whose
// directory is gone.
func (m *Manager) scanLogDir(dir string) (jobs []openJob, marker string, stale bool, err error) {
	fs := m.fsFor(dir)
	existed, _, err := fs.Stat(dir)
	if err != nil {
		return nil, "", false, err
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, "", false, err
	}
	if !existed {
		if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, "", false, err
		}
	}
	if err := m.checkMeta(dir); err != nil {
		return nil, "", false, err
	}
	if err := m.loadDirID(dir); err != nil {
		return nil, "", false, err
	}
	mk := filepath.Join(dir, cleanShutdownFile)
	clean, _, err := fs.Stat(mk)
	if err != nil {
		return nil, "", false, err
	}
	if clean {
		marker = mk
	}
	rp, rpRead := m.readCheckpoint(dir, recoveryPointCheckpointFile)
	if rpRead {
		// What is on disk is known from here on, so a truncation above
		// every recovery point needs no checkpoint rewrite (attach).
		m.ckMu.Lock()
		m.rpOnDisk[dir] = newRPCheckpoint(rp)
		m.ckMu.Unlock()
	}
	hw, _ := m.readCheckpoint(dir, replicationCheckpointFile)
	ls, _ := m.readCheckpoint(dir, logStartCheckpointFile)
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil, "", false, err
	}
	stale = hasStaleEntries(names, rp, hw, ls)
	for _, n := range names {
		p := filepath.Join(dir, n)
		_, isDir, err := fs.Stat(p)
		if err != nil {
			return nil, "", false, err
		}
		if !isDir {
			if strings.HasSuffix(n, tmpSuffix) {
				_ = fs.Remove(p)
			}
			continue
		}
		if strings.HasSuffix(n, deleteDirSuffix) {
			m.logger.Info().Str("dir", p).Msg("removing deleted partition directory")
			if err := fs.RemoveAll(p); err != nil {
				return nil, "", false, err
			}
			continue
		}
		tp, ok := parsePartitionDir(n)
		if !ok || tp.Topic == MetadataTopic {
			continue
		}
		// Under mu: a dir failing meanwhile is handled concurrently.
		m.mu.Lock()
		other, dup := m.mu.logs[tp]
		if !dup {
			m.mu.logs[tp] = hostedLog{dir: m.dirFor(dir)}
		}
		m.mu.Unlock()
		if dup {
			return nil, "", false, fmt.Errorf("partition %s found in both %s and %s", tp, other.path(), dir)
		}
		jobs = append(jobs, openJob{dir: dir, tp: tp, opts: OpenOptions{
			RecoveryPoint: rp[tp], LogStartOffset: ls[tp], HighWatermark: hw[tp], CleanShutdown: clean, Now: m.cfg.Now,
		}})
	}
	return jobs, marker, stale, nil
}

// openLogs opens the logs in parallel (recovery is CPU (CRC) and I/O bound
// per log), at most GOMAXPROCS at once. On any failure it closes those it
// opened.
func (m *Manager) openLogs(jobs []openJob) error {
	var (
		wg   sync.WaitGroup
		lmu  sync.Mutex
		errs []error
		sem  = make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
		rec  = m.newRecoveryTracker(jobs)
	)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l, err := open(m.envFor(j.dir), j.tp, m.configFor(j.tp.Topic), j.opts)
			lmu.Lock()
			defer lmu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			m.mu.Lock()
			m.mu.logs[j.tp] = hostedLog{l: l, dir: m.dirFor(j.dir)}
			m.mu.Unlock()
			m.noteLog(l)
			rec.opened(l.NumSegments(), l.Size())
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, m.offlineAtOpen())...); err != nil {
		m.closeOpened()
		return err
	}
	return nil
}

// closeOpened closes the logs of a Manager that failed to open. A dir
// failing meanwhile removes its logs from the map in its own goroutine,
// so the map is read only through snapshot, under its lock.
func (m *Manager) closeOpened() {
	for _, e := range m.snapshot() {
		_ = e.l.Close()
	}
}

// finishOpen rewrites the checkpoints of staleDirs and then removes the
// clean-shutdown markers.
func (m *Manager) finishOpen(staleDirs, markers []string) error {
	// Entries of partitions whose directory is gone (deleted just before a
	// crash) go before any log is created: a new log of the same name must
	// not inherit them after the next crash.
	for _, dir := range staleDirs {
		if err := m.writeDirCheckpoints(dir); err != nil {
			return err
		}
	}
	// The marker goes only once every log is loaded; from here on the logs
	// may change, and a crash must be seen as unclean.
	for _, mk := range markers {
		fs := m.fsFor(filepath.Dir(mk))
		if err := fs.Remove(mk); err != nil {
			return err
		}
		if err := fs.SyncDir(filepath.Dir(mk)); err != nil {
			return err
		}
	}
	return nil
}

// hasStaleEntries reports whether a root checkpoint of a log dir names a
// partition that has no directory there.
func hasStaleEntries(names []string, cps ...map[TopicPartition]int64) bool {
	present := map[TopicPartition]bool{}
	for _, n := range names {
		if tp, ok := parsePartitionDir(n); ok {
			present[tp] = true
		}
	}
	for _, cp := range cps {
		for tp := range cp {
			if !present[tp] {
				return true
			}
		}
	}
	return false
}

// rpCheckpoint is a recovery-point checkpoint as written, sorted by
// partition: 32 bytes an entry, where a map of 10,000 partitions costs
// about three times as much.
type rpCheckpoint []rpEntry

type rpEntry struct {
	tp TopicPartition
	rp int64
}

func tpLess(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func newRPCheckpoint(m map[TopicPartition]int64) rpCheckpoint {
	c := make(rpCheckpoint, 0, len(m))
	for tp, rp := range m {
		c = append(c, rpEntry{tp, rp})
	}
	slices.SortFunc(c, func(a, b rpEntry) int { return tpLess(a.tp, b.tp) })
	return c
}

// get returns tp's recovery point in the checkpoint.
func (c rpCheckpoint) get(tp TopicPartition) (int64, bool) {
	i, ok := slices.BinarySearchFunc(c, tp, func(e rpEntry, tp TopicPartition) int { return tpLess(e.tp, tp) })
	if !ok {
		return 0, false
	}
	return c[i].rp, true
}

// afterTruncate rewrites the root checkpoints of l's log dir at the end
// of its truncation (Log.syncTruncation) when the recovery point on disk
// may be above the truncated log's. Usually it is not (a follower
// truncates what it has not flushed yet), and nothing is written.
func (m *Manager) afterTruncate(l *Log) error {
	dir := l.parentDir()
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	if onDisk, known := m.rpOnDisk[dir]; known {
		// No entry opens with a full recovery, which is safe too.
		if v, ok := onDisk.get(l.tp); !ok || v <= l.RecoveryPoint() {
			return nil
		}
	}
	return m.writeDirCheckpointsLocked(dir)
}

// MetadataTopic is the reserved name of the cluster metadata log, whose
// directory sits beside the partitions as in Kafka but is not one of them.
const MetadataTopic = "__cluster_metadata"

// parsePartitionDir splits "<topic>-<partition>"; topics may contain '-'.
func parsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// checkMeta validates meta.properties or writes it for a fresh dir.
func (m *Manager) checkMeta(dir string) error {
	path := filepath.Join(dir, metaPropertiesFile)
	data, ok, err := readWholeFile(m.fsFor(dir), path)
	if err != nil {
		return err
	}
	if ok {
		props := parseProperties(data)
		if v := props["version"]; v != "1" {
			return fmt.Errorf("%s: unsupported version %q", path, v)
		}
		if m.cfg.ClusterID != "" && props["cluster.id"] != "" && props["cluster.id"] != m.cfg.ClusterID {
			return fmt.Errorf("%s: cluster.id %q does not match configured %q", path, props["cluster.id"], m.cfg.ClusterID)
		}
		if id := props["node.id"]; id != "" && id != strconv.Itoa(int(m.cfg.NodeID)) {
			return fmt.Errorf("%s: node.id %s does not match configured %d", path, id, m.cfg.NodeID)
		}
		return nil
	}
	body := fmt.Sprintf("#\n#%s\nversion=1\ncluster.id=%s\nnode.id=%d\n", time.Now().UTC().Format(time.RFC1123), m.cfg.ClusterID, m.cfg.NodeID)
	return WriteFileAtomic(m.fsFor(dir), path, []byte(body))
}

// readCheckpoint returns the entries of a root checkpoint; an unreadable one
// is logged and treated as empty, which is always safe: a zero recovery
// point means full recovery, a zero HW is raised again by replication, a
// zero log start is raised to the first segment.
func (m *Manager) readCheckpoint(dir, name string) (cp map[TopicPartition]int64, read bool) {
	path := filepath.Join(dir, name)
	data, ok, err := readWholeFile(m.fsFor(dir), path)
	if err != nil {
		m.logger.Warn().Err(err).Str("file", path).Msg("cannot read checkpoint")
		return map[TopicPartition]int64{}, false
	}
	if !ok {
		return map[TopicPartition]int64{}, true
	}
	cp, err = decodeOffsetCheckpoint(data)
	if err != nil {
		// Read as empty by every open, so what it holds is as good as
		// nothing.
		m.logger.Warn().Err(err).Str("file", path).Msg("ignoring malformed checkpoint")
		return map[TopicPartition]int64{}, true
	}
	return cp, true
}

// Get returns the log of tp, nil if this broker has none.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.logs[tp].l
}

// GetOrCreate returns the log of tp, creating it in the log dir that holds
// the fewest partitions. A new log is lazy (lazy.go): its files are made
// by its first append.
func (m *Manager) GetOrCreate(tp TopicPartition) (*Log, error) {
	for {
		m.mu.Lock()
		if m.mu.closed {
			m.mu.Unlock()
			return nil, ErrLogClosed
		}
		h, ok := m.mu.logs[tp]
		if ok && h.offline() {
			m.mu.Unlock()
			return nil, h.dir.offlineErr()
		}
		if h.l != nil {
			m.mu.Unlock()
			return h.l, nil
		}
		if wg := m.mu.creating[tp]; wg != nil {
			m.mu.Unlock()
			wg.Wait()
			continue
		}
		dir := ""
		if len(m.cfg.Dirs) == 1 {
			// No choice to make: counting every partition here made
			// creating N partitions cost O(N²).
			if d := m.cfg.Dirs[0]; !m.dirOffline(d) {
				dir = d
			}
		} else {
			counts := map[string]int{}
			for _, h := range m.mu.logs {
				counts[h.path()]++
			}
			for _, d := range m.mu.creatingIn {
				counts[d]++
			}
			for _, d := range m.cfg.Dirs {
				if !m.dirOffline(d) && (dir == "" || counts[d] < counts[dir]) {
					dir = d
				}
			}
		}
		if dir == "" {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: every log dir is offline", ErrStorage)
		}
		wg := &sync.WaitGroup{}
		wg.Add(1)
		m.mu.creating[tp] = wg
		m.mu.creatingIn[tp] = dir
		m.mu.Unlock()

		// Lazy: a new partition's files wait for its first append
		// (lazy.go); registering it costs one stat.
		l, err := open(m.envFor(dir), tp, m.configFor(tp.Topic), OpenOptions{CleanShutdown: true, Now: m.cfg.Now, Lazy: true})

		m.mu.Lock()
		delete(m.mu.creating, tp)
		delete(m.mu.creatingIn, tp)
		if err == nil {
			m.mu.logs[tp] = hostedLog{l: l, dir: m.dirFor(dir)}
		}
		m.mu.Unlock()
		if err == nil {
			m.noteLog(l)
		}
		wg.Done()
		return l, err
	}
}

// Delete closes the log of tp, removes its directory and rewrites the root
// checkpoints of its log dir without it (as Kafka's LogManager.asyncDelete
// does): a topic recreated under the same name must not inherit this log's
// log start, recovery point or HW after a crash.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	h := m.mu.logs[tp]
	l, dir := h.l, h.path()
	delete(m.mu.logs, tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	lazy, err := l.delete()
	if lazy {
		// Never on disk, nor in any checkpoint (writeCheckpoints
		// leaves lazy logs out).
		m.forgetCleaned(tp)
		return nil
	}
	if m.forgetCleaned(tp) {
		// A log recreated under this name must not inherit the
		// checkpoint after a crash.
		err = errors.Join(err, m.writeCleanerCheckpoint(dir))
	}
	return errors.Join(err, m.writeDirCheckpoints(dir))
}

// Partitions lists the partitions this broker holds, sorted.
func (m *Manager) Partitions() []TopicPartition {
	m.mu.Lock()
	out := make([]TopicPartition, 0, len(m.mu.logs))
	for tp, h := range m.mu.logs {
		if h.l != nil {
			out = append(out, tp)
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

type logInDir struct {
	tp  TopicPartition
	dir string
	l   *Log
}

func (m *Manager) snapshot() []logInDir {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]logInDir, 0, len(m.mu.logs))
	for tp, h := range m.mu.logs {
		if h.l == nil || h.offline() {
			continue // closed by dirFailed
		}
		out = append(out, logInDir{tp: tp, dir: h.path(), l: h.l})
	}
	return out
}

// logsSnapshot is the open logs of snapshot, alone.
func (m *Manager) logsSnapshot() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.mu.logs))
	for _, h := range m.mu.logs {
		if h.l == nil || h.offline() {
			continue // closed by dirFailed
		}
		out = append(out, h.l)
	}
	return out
}

// Start runs the background work until Close: retention every
// RetentionCheckInterval, flush.ms checks every FlushSchedulerInterval and
// root checkpoints every CheckpointInterval, all in one goroutine so that
// they never overlap.
func (m *Manager) Start() {
	m.mu.Lock()
	if m.started || m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.started = true
	m.mu.Unlock()
	m.startCleaner()
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		ret := time.NewTicker(m.cfg.RetentionCheckInterval)
		ck := time.NewTicker(m.cfg.CheckpointInterval)
		defer ret.Stop()
		defer ck.Stop()
		// The flush.ms check runs only while some log has a flush.ms
		// (none by default): its ticker starts on wakeFlush and stops
		// after a scan that found none.
		var fl *time.Ticker
		var flC <-chan time.Time
		defer func() {
			if fl != nil {
				fl.Stop()
			}
		}()
		for {
			select {
			case <-m.stop:
				return
			case <-ret.C:
				m.RunRetention()
			case <-m.flushWake:
				if fl == nil {
					fl = time.NewTicker(m.cfg.FlushSchedulerInterval)
					flC = fl.C
				}
			case <-flC:
				if m.FlushDue() == 0 {
					fl.Stop()
					fl, flC = nil, nil
				}
			case <-ck.C:
				if err := m.WriteCheckpoints(); err != nil {
					m.logger.Error().Err(err).Msg("writing checkpoints")
				}
			}
		}
	}()
}

// RunRetention applies retention to every log once.
func (m *Manager) RunRetention() {
	now := m.now()
	for _, e := range m.snapshot() {
		n, err := e.l.ApplyRetention(now)
		if err != nil && !errors.Is(err, ErrLogClosed) {
			m.logger.Error().Err(err).Str("topic", e.tp.Topic).Int32("partition", e.tp.Partition).Msg("retention")
		} else if n > 0 {
			m.logger.Info().Int("segments", n).Str("topic", e.tp.Topic).Int32("partition", e.tp.Partition).Msg("retention deleted segments")
		}
	}
}

// noteLog wakes the flush.ms scheduler for a log just registered, if it
// has a flush.ms. Registering first means the scheduler's next scan
// finds it.
func (m *Manager) noteLog(l *Log) {
	if l.timedFlush.Load() {
		m.wakeFlush()
	}
}

// wakeFlush starts the flush.ms scheduler's ticker if it is stopped.
func (m *Manager) wakeFlush() {
	select {
	case m.flushWake <- struct{}{}:
	default:
	}
}

// FlushDue flushes every log whose flush.ms has passed, and returns how
// many logs have a flush.ms. Logs without a flush.ms (the default) are
// skipped before taking any lock of theirs, so that the check costs next
// to nothing per idle partition.
func (m *Manager) FlushDue() int {
	m.flushScans.Add(1)
	now := m.now()
	m.mu.Lock()
	var timed []logInDir
	for tp, h := range m.mu.logs {
		if h.l != nil && h.l.timedFlush.Load() && !h.offline() {
			timed = append(timed, logInDir{tp: tp, dir: h.path(), l: h.l})
		}
	}
	m.mu.Unlock()
	for _, e := range timed {
		if err := e.l.FlushIfDue(now); err != nil && !errors.Is(err, ErrLogClosed) {
			m.logger.Error().Err(err).Str("topic", e.tp.Topic).Int32("partition", e.tp.Partition).Msg("flush")
		}
	}
	return len(timed)
}

// WriteCheckpoints writes the recovery-point, replication (HW) and log-start
// checkpoints of every log dir.
func (m *Manager) WriteCheckpoints() error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	return m.writeCheckpoints(m.snapshot())
}

// writeDirCheckpoints writes the root checkpoints of one log dir.
func (m *Manager) writeDirCheckpoints(dir string) error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	return m.writeDirCheckpointsLocked(dir)
}

func (m *Manager) writeDirCheckpointsLocked(dir string) error {
	var logs []logInDir
	for _, e := range m.snapshot() {
		if e.dir == dir {
			logs = append(logs, e)
		}
	}
	return m.writeCheckpoints(logs, dir)
}

// writeCheckpoints writes the root checkpoints of the given logs, in every
// log dir or only in those named. Needs ckMu.
func (m *Manager) writeCheckpoints(logs []logInDir, only ...string) error {
	type cps struct{ rp, hw, ls map[TopicPartition]int64 }
	byDir := map[string]*cps{}
	dirs := m.cfg.Dirs
	if len(only) > 0 {
		dirs = only
	}
	for _, d := range dirs {
		if m.dirOffline(d) {
			continue
		}
		byDir[d] = &cps{rp: map[TopicPartition]int64{}, hw: map[TopicPartition]int64{}, ls: map[TopicPartition]int64{}}
	}
	for _, e := range logs {
		c := byDir[e.dir]
		if c == nil || e.l.lazy.Load() {
			// A lazy log has no directory: a restart takes it up as
			// new, empty at 0, which is all an entry would say.
			continue
		}
		e.l.mu.Lock()
		c.rp[e.tp], c.hw[e.tp], c.ls[e.tp] = e.l.mu.recoveryPoint, e.l.mu.hw, e.l.mu.logStart
		e.l.mu.Unlock()
	}
	var errs []error
	for dir, c := range byDir {
		fs := m.fsFor(dir)
		rerr := WriteFileAtomic(fs, filepath.Join(dir, recoveryPointCheckpointFile), encodeOffsetCheckpoint(c.rp))
		if rerr == nil {
			m.rpOnDisk[dir] = newRPCheckpoint(c.rp)
		} else {
			delete(m.rpOnDisk, dir)
		}
		errs = append(errs, rerr,
			WriteFileAtomic(fs, filepath.Join(dir, replicationCheckpointFile), encodeOffsetCheckpoint(c.hw)),
			WriteFileAtomic(fs, filepath.Join(dir, logStartCheckpointFile), encodeOffsetCheckpoint(c.ls)))
	}
	return errors.Join(errs...)
}

// Close stops the background work, closes (flushing) every log, writes the
// checkpoints and, if all of that succeeded, the clean-shutdown marker of
// each log dir.
// closeParallelism is how many logs Close closes at once.
const closeParallelism = 64

func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	// A log being created now would be missed by the snapshot below and
	// left open after the clean-shutdown marker is written; no creation
	// starts once closed is set, so waiting for these is enough.
	var creating []*sync.WaitGroup
	for _, wg := range m.mu.creating {
		creating = append(creating, wg)
	}
	m.mu.Unlock()
	for _, wg := range creating {
		wg.Wait()
	}
	close(m.stop)
	m.done.Wait()

	logs := m.snapshot()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	// A bounded number of logs close at once: their fsyncs still share
	// the file system's journal commits, without thousands of goroutines
	// (one per log) contending for the CPU and the log dirs' syncers.
	sem := make(chan struct{}, closeParallelism)
	for _, e := range logs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := e.l.Close(); err != nil && !errors.Is(err, ErrStorage) {
				// (A storage error took its dir offline, which Close
				// skips; the other dirs still close cleanly.)
				emu.Lock()
				errs = append(errs, fmt.Errorf("close %s: %w", e.tp, err))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	m.ckMu.Lock()
	errs = append(errs, m.writeCheckpoints(logs))
	m.ckMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, dir := range m.cfg.Dirs {
		if m.dirOffline(dir) {
			// No marker: the next start recovers what it finds there.
			continue
		}
		fs := m.fsFor(dir)
		marker := filepath.Join(dir, cleanShutdownFile)
		f, err := fs.OpenFile(marker, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		errs = append(errs, f.Sync(), f.Close(), fs.SyncDir(dir))
	}
	return errors.Join(errs...)
}
