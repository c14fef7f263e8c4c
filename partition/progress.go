package partition

import (
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// RecoveryProgress is how far OpenManager is in loading the logs at
// start-up, reported after each partition (ManagerConfig.Progress) and
// logged every recoveryLogInterval while loading lasts.
type RecoveryProgress struct {
	Partitions, PartitionsDone int
	// Segments is exact once every partition is done; before, it is
	// estimated from the partitions done (counting them up front meant
	// listing every partition directory before opening any).
	Segments, SegmentsDone int
	// BytesDone is the size of the logs loaded so far.
	BytesDone int64
	Elapsed   time.Duration
}

// MBPerSecond is the loading rate so far.
func (p RecoveryProgress) MBPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.BytesDone) / (1 << 20) / p.Elapsed.Seconds()
}

// ETA estimates the time left from the partition rate so far; 0 when
// nothing is done yet or everything is.
func (p RecoveryProgress) ETA() time.Duration {
	if p.PartitionsDone == 0 || p.PartitionsDone >= p.Partitions {
		return 0
	}
	perPart := p.Elapsed / time.Duration(p.PartitionsDone)
	return perPart * time.Duration(p.Partitions-p.PartitionsDone)
}

func (p RecoveryProgress) String() string {
	return fmt.Sprintf("loading logs: %d/%d segments, %d/%d partitions, %.1f MB/s, ETA %s",
		p.SegmentsDone, p.Segments, p.PartitionsDone, p.Partitions, p.MBPerSecond(), p.ETA().Round(time.Second))
}

// recoveryLogInterval is how often start-up logs its progress.
const recoveryLogInterval = 5 * time.Second

// recoveryTracker counts the logs OpenManager has loaded.
type recoveryTracker struct {
	mu      sync.Mutex // a leaf
	p       RecoveryProgress
	start   time.Time
	lastLog time.Time
	now     func() time.Time
	report  func(RecoveryProgress)
	logger  zerolog.Logger
}

// newRecoveryTracker tracks the opening of jobs.
func (m *Manager) newRecoveryTracker(jobs []openJob) *recoveryTracker {
	t := &recoveryTracker{now: m.now, report: m.cfg.Progress, logger: m.logger}
	t.start = t.now()
	t.lastLog = t.start
	t.p.Partitions = len(jobs)
	return t
}

// opened counts one loaded log of segs segments and size bytes.
func (t *recoveryTracker) opened(segs int, size int64) {
	t.mu.Lock()
	now := t.now()
	t.p.PartitionsDone++
	t.p.SegmentsDone += segs
	// The partitions left are taken to have as many segments as those
	// done, on average.
	t.p.Segments = t.p.SegmentsDone + (t.p.Partitions-t.p.PartitionsDone)*t.p.SegmentsDone/t.p.PartitionsDone
	t.p.BytesDone += size
	t.p.Elapsed = now.Sub(t.start)
	p := t.p
	logNow := now.Sub(t.lastLog) >= recoveryLogInterval && p.PartitionsDone < p.Partitions
	if logNow {
		t.lastLog = now
	}
	report := t.report
	t.mu.Unlock()
	if logNow {
		t.logger.Info().Int("segments_done", p.SegmentsDone).Int("segments", p.Segments).
			Int("partitions_done", p.PartitionsDone).Int("partitions", p.Partitions).
			Float64("mb_per_s", p.MBPerSecond()).Dur("eta", p.ETA()).Msg("loading logs")
	}
	if report != nil {
		report(p)
	}
}
