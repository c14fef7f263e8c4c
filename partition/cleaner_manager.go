package partition

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// CleanerConfig configures the log cleaner; names follow Kafka's broker
// properties. The zero value is Kafka's defaults with the cleaner on.
type CleanerConfig struct {
	// Disable turns the cleaner off (log.cleaner.enable=false).
	Disable bool
	// Threads is log.cleaner.threads (default 1).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size (default 128 MiB),
	// shared by the threads: each key map gets its share, and no more
	// than its log's dirty section could fill.
	DedupeBufferSize int64
	// LoadFactor is log.cleaner.io.buffer.load.factor (default 0.9).
	LoadFactor float64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second (default
	// unlimited), for all threads together.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms (default 15 s): how long a thread
	// sleeps when no log needs cleaning.
	Backoff time.Duration
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.LoadFactor <= 0 || c.LoadFactor > 1 {
		c.LoadFactor = 0.9
	}
	if c.Backoff <= 0 {
		c.Backoff = 15 * time.Second
	}
	return c
}

const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// cleanerState is the Manager's part of the cleaner: the checkpoints and
// which logs are being cleaned. mu is a leaf, never held during I/O;
// ckMu serialises the checkpoint writes.
type cleanerState struct {
	cfg      CleanerConfig
	throttle *throttler
	ckMu     sync.Mutex
	mu       sync.Mutex
	points   map[TopicPartition]int64 // cleaner checkpoint per log
	busy     map[TopicPartition]bool
	// uncleanable holds logs whose cleaning failed (a corrupt batch, a
	// batch too big for the key map): skipped until the broker restarts
	// or the log is deleted, as Kafka marks them uncleanable.
	uncleanable map[TopicPartition]bool
	last        map[TopicPartition]CleanStats
	// threads counts the cleaner threads started (set once, by Start).
	threads int
}

func (m *Manager) initCleaner() {
	cfg := m.cfg.Cleaner.withDefaults()
	m.cleaner = &cleanerState{cfg: cfg, throttle: newThrottler(cfg.IOMaxBytesPerSecond),
		points: map[TopicPartition]int64{}, busy: map[TopicPartition]bool{}, last: map[TopicPartition]CleanStats{},
		uncleanable: map[TopicPartition]bool{}}
	for _, dir := range m.cfg.Dirs {
		if m.dirOffline(dir) {
			continue
		}
		cp, _ := m.readCheckpoint(dir, cleanerCheckpointFile)
		for tp, o := range cp {
			m.cleaner.points[tp] = o
		}
	}
}

// CleanerCheckpoint returns the offset up to which tp's log was last
// cleaned (its first dirty offset), -1 if it never was.
func (m *Manager) CleanerCheckpoint(tp TopicPartition) int64 {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	if o, ok := m.cleaner.points[tp]; ok {
		return o
	}
	return -1
}

// Uncleanable lists the logs whose cleaning failed and that the cleaner
// skips until the broker restarts (Kafka's uncleanable partitions).
func (m *Manager) Uncleanable() []TopicPartition {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	var out []TopicPartition
	for tp := range m.cleaner.uncleanable {
		out = append(out, tp)
	}
	return out
}

// LastCleaning returns the statistics of tp's last cleaning.
func (m *Manager) LastCleaning(tp TopicPartition) (CleanStats, bool) {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	st, ok := m.cleaner.last[tp]
	return st, ok
}

// grabFilthiest picks the compacted log with the largest dirty ratio
// among those that need cleaning and no thread is cleaning, and marks it
// busy (Kafka's LogCleanerManager.grabFilthiestCompactedLog).
func (m *Manager) grabFilthiest(now time.Time) (logInDir, cleanable, bool) {
	nowMs := now.UnixMilli()
	var (
		best      *Log
		bestC     cleanable
		bestRatio = -1.0
	)
	// Every log is looked at, every log.cleaner.backoff.ms while idle:
	// the list holds the logs alone (8 bytes a log, not a logInDir's 48).
	for _, l := range m.logsSnapshot() {
		tp := l.tp
		m.cleaner.mu.Lock()
		busy := m.cleaner.busy[tp] || m.cleaner.uncleanable[tp]
		point, ok := m.cleaner.points[tp]
		m.cleaner.mu.Unlock()
		if busy {
			continue
		}
		if !ok {
			point = -1
		}
		if np := l.cleanerPoint(point); np != point {
			point = np
			m.cleaner.mu.Lock()
			m.cleaner.points[tp] = np
			m.cleaner.mu.Unlock()
		}
		l.mu.Lock()
		if l.mu.closed || !l.mu.cfg.Value().Compact {
			l.mu.Unlock()
			continue
		}
		c := l.cleanableLocked(point, nowMs)
		need := c.needsCleaning(l.mu.cfg.Value())
		l.mu.Unlock()
		r := c.ratio()
		if c.forced {
			r += 1 // overdue logs first
		}
		if need && r > bestRatio {
			best, bestC, bestRatio = l, c, r
		}
	}
	if bestRatio < 0 {
		return logInDir{}, cleanable{}, false
	}
	m.mu.Lock()
	h := m.mu.logs[best.tp]
	m.mu.Unlock()
	if h.l != best || h.offline() {
		return logInDir{}, cleanable{}, false // deleted or moved meanwhile
	}
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	if m.cleaner.busy[best.tp] {
		return logInDir{}, cleanable{}, false
	}
	m.cleaner.busy[best.tp] = true
	return logInDir{tp: best.tp, dir: h.path(), l: best}, bestC, true
}

// cleanOnce cleans the filthiest log that needs it, if any, with the
// thread's cleaning state (its key map grown as needed); it reports
// whether there was one.
func (m *Manager) cleanOnce(run *cleanRun) bool {
	e, c, ok := m.grabFilthiest(m.now())
	if !ok {
		return false
	}
	firstDirty := c.firstDirty
	m.sizeKeyMap(run, c.dirtyBytes)
	defer func() {
		m.cleaner.mu.Lock()
		delete(m.cleaner.busy, e.tp)
		m.cleaner.mu.Unlock()
	}()
	st, err := e.l.clean(run, firstDirty, false)
	log := m.logger.With().Str("topic", e.tp.Topic).Int32("partition", e.tp.Partition).Logger()
	if err != nil {
		if !errors.Is(err, ErrLogClosed) && !errors.Is(err, ErrStorage) && !errors.Is(err, errCleanStopped) {
			log.Error().Err(err).Msg("log cleaning failed; the log is left uncleaned until the broker restarts")
			m.cleaner.mu.Lock()
			m.cleaner.uncleanable[e.tp] = true
			m.cleaner.mu.Unlock()
		}
		return true
	}
	if st.Aborted {
		log.Info().Msg("log cleaning abandoned: the log was truncated or had segments deleted meanwhile")
		return true
	}
	m.cleaner.mu.Lock()
	m.cleaner.points[e.tp] = st.End
	m.cleaner.last[e.tp] = st
	m.cleaner.mu.Unlock()
	if err := m.writeCleanerCheckpoint(e.dir); err != nil {
		log.Error().Err(err).Msg("writing cleaner-offset-checkpoint")
	}
	mbps := 0.0
	if st.Duration > 0 {
		mbps = float64(st.BytesRead) / st.Duration.Seconds() / (1 << 20)
	}
	log.Info().Int64("first_dirty_offset", st.FirstDirty).Int64("cleaned_to", st.End).Int("passes", st.Passes).
		Int64("bytes_before", st.SizeBefore).Int64("bytes_after", st.SizeAfter).
		Int64("records_read", st.RecordsRead).Int64("records_retained", st.RecordsRetained).
		Dur("took", st.Duration).Str("read_mb_per_s", fmt.Sprintf("%.1f", mbps)).Msg("cleaned log")
	return true
}

// newCleanRun is a thread's cleaning state; its key map is allocated by
// sizeKeyMap when a log needs it.
func (m *Manager) newCleanRun() *cleanRun {
	return &cleanRun{throttle: m.cleaner.throttle, now: m.now, stop: m.stop}
}

// sizeKeyMap makes the thread's key map big enough for a dirty section of
// dirtyBytes (a record takes at least 16 bytes in a batch), within the
// thread's share of log.cleaner.dedupe.buffer.size; it is kept for the
// next cleaning.
func (m *Manager) sizeKeyMap(run *cleanRun, dirtyBytes int64) {
	c := m.cleaner.cfg
	share := c.DedupeBufferSize / int64(c.Threads)
	want := min(share, int64(float64(max(dirtyBytes/16, 1024)*offsetMapSlot)/c.LoadFactor)+offsetMapSlot)
	if run.m == nil || int64(len(run.m.slots)) < want {
		run.m = newOffsetMap(want, c.LoadFactor)
	}
}

// writeCleanerCheckpoint writes dir's cleaner-offset-checkpoint (Kafka's
// text format) with the checkpoint of every log it holds.
func (m *Manager) writeCleanerCheckpoint(dir string) error {
	m.cleaner.ckMu.Lock()
	defer m.cleaner.ckMu.Unlock()
	if m.dirOffline(dir) {
		return nil
	}
	cp := map[TopicPartition]int64{}
	logs := m.snapshot()
	m.cleaner.mu.Lock()
	for _, e := range logs {
		if o, ok := m.cleaner.points[e.tp]; ok && e.dir == dir {
			cp[e.tp] = o
		}
	}
	m.cleaner.mu.Unlock()
	return WriteFileAtomic(m.fsFor(dir), filepath.Join(dir, cleanerCheckpointFile), encodeOffsetCheckpoint(cp))
}

// forgetCleaned drops the cleaner checkpoint of a deleted log, reporting
// whether it had one.
func (m *Manager) forgetCleaned(tp TopicPartition) bool {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	_, had := m.cleaner.points[tp]
	delete(m.cleaner.points, tp)
	delete(m.cleaner.last, tp)
	delete(m.cleaner.uncleanable, tp)
	return had
}

// startCleaner runs log.cleaner.threads goroutines until Close. Each
// cleans the filthiest log, or sleeps log.cleaner.backoff.ms when none
// needs cleaning; a panic in one is logged and the thread goes on after
// the backoff.
func (m *Manager) startCleaner() {
	if m.cleaner.cfg.Disable {
		return
	}
	for i := 0; i < m.cleaner.cfg.Threads; i++ {
		m.cleaner.threads++
		m.done.Add(1)
		go func() {
			defer m.done.Done()
			var run *cleanRun
			for {
				cleaned := false
				func() {
					defer func() {
						if r := recover(); r != nil {
							m.logger.Error().Interface("panic", r).Int("thread", i).Msg("log cleaner thread panicked")
						}
					}()
					if run == nil {
						run = m.newCleanRun()
					}
					cleaned = m.cleanOnce(run)
				}()
				if cleaned {
					select {
					case <-m.stop:
						return
					default:
						continue
					}
				}
				select {
				case <-m.stop:
					return
				case <-time.After(m.cleaner.cfg.Backoff):
				}
			}
		}()
	}
}
