package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// Errors the handlers map to Kafka codes.
var (
	ErrUnknownTopicOrPartition      = errors.New("unknown topic or partition")
	ErrNotLeaderOrFollower          = errors.New("not leader or follower")
	ErrFencedLeaderEpoch            = errors.New("fenced leader epoch")
	ErrUnknownLeaderEpoch           = errors.New("unknown leader epoch")
	ErrNotEnoughReplicas            = errors.New("not enough replicas")
	ErrNotEnoughReplicasAfterAppend = errors.New("not enough replicas after append")
	ErrRequestTimedOut              = errors.New("request timed out")
	ErrStorage                      = errors.New("kafka storage error")
)

// Partition is one hosted partition.
type Partition struct {
	TP  partition.TopicPartition
	log *partition.Log

	mu struct {
		sync.Mutex
		leaderEpoch int32
		isLeader    bool
		isr         []int32
		minISR      int
		// hwMoved is closed (and replaced) whenever the high watermark
		// or the log start offset moves, waking parked fetches.
		hwMoved chan struct{}
	}
}

// Log returns the partition's log.
func (p *Partition) Log() *partition.Log { return p.log }

// LeaderEpoch returns the current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.leaderEpoch
}

func (p *Partition) waitChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.hwMoved
}

func (p *Partition) notifyLocked() {
	close(p.mu.hwMoved)
	p.mu.hwMoved = make(chan struct{})
}

// checkEpoch applies KIP-320: a request's current leader epoch older than
// ours is fenced; a newer one means our metadata is behind. -1 skips it.
func (p *Partition) checkEpochLocked(current int32) error {
	switch {
	case current < 0:
		return nil
	case current < p.mu.leaderEpoch:
		return ErrFencedLeaderEpoch
	case current > p.mu.leaderEpoch:
		return ErrUnknownLeaderEpoch
	}
	return nil
}

// Manager hosts this broker's partitions.
type Manager struct {
	nodeID int32
	logs   *partition.Manager
	meta   cluster.Metadata
	logger zerolog.Logger

	mu    sync.RWMutex
	parts map[partition.TopicPartition]*Partition
}

// NewManager returns a manager over logs, following meta. It reconciles
// with the current image at once and with every later one.
func NewManager(logs *partition.Manager, meta cluster.Metadata, logger zerolog.Logger) (*Manager, error) {
	m := &Manager{nodeID: meta.NodeID(), logs: logs, meta: meta, logger: logger, parts: make(map[partition.TopicPartition]*Partition)}
	if err := m.reconcile(nil, meta.Image()); err != nil {
		return nil, err
	}
	meta.Watch(func(prev, next *cluster.Image) {
		if err := m.reconcile(prev, next); err != nil {
			m.logger.Error().Err(err).Msg("applying metadata to replicas failed")
		}
	})
	return m, nil
}

// reconcile makes the hosted partitions match next: logs for partitions
// assigned here, none for deleted topics, configs and epochs current.
func (m *Manager) reconcile(prev, next *cluster.Image) error {
	bd := m.meta.BrokerDefaults()
	var firstErr error
	want := make(map[partition.TopicPartition]bool)
	for _, t := range next.Topics {
		if prev != nil && prev.Topics[t.Name] == t && sameBrokerConfigs(prev, next) {
			for i := range t.Partitions {
				want[partition.TopicPartition{Topic: t.Name, Partition: int32(i)}] = true
			}
			continue
		}
		cfg := LogConfig(next, t, m.nodeID, bd)
		minISR := minInsyncReplicas(next, t, m.nodeID, bd)
		for i := range t.Partitions {
			pi := &t.Partitions[i]
			if !contains(pi.Replicas, m.nodeID) {
				continue
			}
			tp := partition.TopicPartition{Topic: t.Name, Partition: pi.Partition}
			want[tp] = true
			if err := m.ensure(tp, pi, cfg, minISR); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	m.mu.Lock()
	var gone []*Partition
	for tp, p := range m.parts {
		if !want[tp] {
			gone = append(gone, p)
			delete(m.parts, tp)
		}
	}
	m.mu.Unlock()
	if prev == nil {
		// At start-up, logs on disk whose topic is gone (deleted while
		// this broker was down, or just before a crash) are removed.
		for _, tp := range m.logs.Partitions() {
			if !want[tp] {
				m.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("removing log of a partition not assigned here")
				if err := m.logs.Delete(tp); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	for _, p := range gone {
		p.mu.Lock()
		p.mu.isLeader = false
		p.notifyLocked()
		p.mu.Unlock()
		if err := m.logs.Delete(p.TP); err != nil && firstErr == nil {
			firstErr = err
		}
		m.logger.Info().Str("topic", p.TP.Topic).Int32("partition", p.TP.Partition).Msg("partition removed")
	}
	return firstErr
}

func sameBrokerConfigs(a, b *cluster.Image) bool {
	if len(a.BrokerConfigs) != len(b.BrokerConfigs) {
		return false
	}
	for k, v := range a.BrokerConfigs {
		w, ok := b.BrokerConfigs[k]
		if !ok || len(v) != len(w) {
			return false
		}
		for kk, vv := range v {
			if w[kk] != vv {
				return false
			}
		}
	}
	return true
}

func (m *Manager) ensure(tp partition.TopicPartition, pi *cluster.PartitionInfo, cfg partition.Config, minISR int) error {
	m.mu.Lock()
	p := m.parts[tp]
	m.mu.Unlock()
	if p == nil {
		lg, err := m.logs.GetOrCreate(tp)
		if err != nil {
			return fmt.Errorf("open log %s: %w", tp, err)
		}
		p = &Partition{TP: tp, log: lg}
		p.mu.hwMoved = make(chan struct{})
		p.mu.leaderEpoch = -1
		m.mu.Lock()
		m.parts[tp] = p
		m.mu.Unlock()
	}
	p.log.UpdateConfig(cfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.leaderEpoch = pi.LeaderEpoch
	p.mu.isLeader = pi.Leader == m.nodeID
	p.mu.isr = append([]int32(nil), pi.ISR...)
	p.mu.minISR = minISR
	if p.mu.isLeader && len(p.mu.isr) == 1 && p.mu.isr[0] == m.nodeID {
		// A sole replica's log end is its high watermark.
		p.log.SetHighWatermark(p.log.LogEndOffset())
	}
	p.notifyLocked()
	return nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Get returns a hosted partition or nil.
func (m *Manager) Get(tp partition.TopicPartition) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[tp]
}

// leader returns the partition if this broker leads it.
func (m *Manager) leader(tp partition.TopicPartition, currentEpoch int32) (*Partition, error) {
	p := m.Get(tp)
	if p == nil {
		if m.meta.Image().Partition(tp.Topic, tp.Partition) == nil {
			return nil, ErrUnknownTopicOrPartition
		}
		return nil, ErrNotLeaderOrFollower
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(currentEpoch); err != nil {
		return nil, err
	}
	if !p.mu.isLeader {
		return nil, ErrNotLeaderOrFollower
	}
	return p, nil
}

// Produce appends a validated-by-caller produce payload to tp as leader.
// acks is 0, 1 or -1.
func (m *Manager) Produce(ctx context.Context, tp partition.TopicPartition, records []byte, acks int16, timeout time.Duration) (partition.AppendInfo, error) {
	p, err := m.leader(tp, -1)
	if err != nil {
		return partition.AppendInfo{}, err
	}
	hdrs, err := partition.ValidateBatches(records, p.log.Config().MaxMessageBytes)
	if err != nil {
		return partition.AppendInfo{}, err
	}
	// Kafka's rules for produce v3+: one batch per partition, and control
	// batches only from the transaction coordinator, never from clients.
	if len(hdrs) != 1 {
		return partition.AppendInfo{}, fmt.Errorf("%w: produce requests must contain exactly one record batch, got %d", partition.ErrInvalidRecord, len(hdrs))
	}
	if hdrs[0].IsControl() {
		return partition.AppendInfo{}, fmt.Errorf("%w: clients may not write control batches", partition.ErrInvalidRecord)
	}
	p.mu.Lock()
	epoch, isr, minISR := p.mu.leaderEpoch, len(p.mu.isr), p.mu.minISR
	p.mu.Unlock()
	if acks == -1 && isr < minISR {
		return partition.AppendInfo{}, ErrNotEnoughReplicas
	}
	info, err := p.log.Append(records, epoch)
	if err != nil {
		return info, err
	}
	m.advanceHighWatermark(p)
	return info, nil
}

// advanceHighWatermark moves the HW of a partition whose ISR is only this
// broker to its log end and wakes waiters.
func (m *Manager) advanceHighWatermark(p *Partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.isr) == 1 && p.mu.isr[0] == m.nodeID {
		p.log.SetHighWatermark(p.log.LogEndOffset())
	}
	p.notifyLocked()
}

// FetchPartition is one partition of a fetch.
type FetchPartition struct {
	TP                 partition.TopicPartition
	Offset             int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
}

// FetchParams is a whole fetch.
type FetchParams struct {
	MinBytes      int32
	MaxBytes      int32
	MaxWait       time.Duration
	ReadCommitted bool
	Partitions    []FetchPartition
}

// FetchResult is one partition's answer.
type FetchResult struct {
	Err              error
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          []byte
}

// Fetch reads the partitions as a consumer. When fewer than MinBytes are
// available it parks until a high watermark among them moves, MaxWait
// passes or ctx ends, then reads again.
func (m *Manager) Fetch(ctx context.Context, fp FetchParams) []FetchResult {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// Take the wake-up channels before reading so that a change
		// between the read and the wait is not missed.
		waits := make([]<-chan struct{}, 0, len(fp.Partitions))
		for _, part := range fp.Partitions {
			if p := m.Get(part.TP); p != nil {
				waits = append(waits, p.waitChan())
			}
		}
		res, total, hasErr := m.readAll(fp)
		if total >= int64(fp.MinBytes) || hasErr || fp.MaxWait <= 0 || len(waits) == 0 {
			return res
		}
		if timer == nil {
			timer = time.NewTimer(fp.MaxWait)
		}
		if !waitAny(ctx, timer.C, waits) {
			res, _, _ = m.readAll(fp)
			return res
		}
	}
}

// waitAny waits for one of waits to close (true) or the timer or ctx (false).
func waitAny(ctx context.Context, timer <-chan time.Time, waits []<-chan struct{}) bool {
	if len(waits) == 1 {
		select {
		case <-waits[0]:
			return true
		case <-timer:
		case <-ctx.Done():
		}
		return false
	}
	woken := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, w := range waits {
		go func(w <-chan struct{}) {
			select {
			case <-w:
				select {
				case woken <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}(w)
	}
	select {
	case <-woken:
		return true
	case <-timer:
	case <-ctx.Done():
	}
	return false
}

func (m *Manager) readAll(fp FetchParams) ([]FetchResult, int64, bool) {
	res := make([]FetchResult, len(fp.Partitions))
	var total int64
	hasErr := false
	budget := int64(fp.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	minOne := true
	for i, part := range fp.Partitions {
		r := &res[i]
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
		p, err := m.leader(part.TP, part.CurrentLeaderEpoch)
		if err != nil {
			r.Err = err
			hasErr = true
			continue
		}
		hw := p.log.HighWatermark()
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, hw, p.log.LogStartOffset()
		limit := int64(part.MaxBytes)
		if limit > budget {
			limit = budget
		}
		if limit <= 0 && !minOne {
			continue
		}
		ri, err := p.log.Read(part.Offset, int32(max(limit, 0)), hw, minOne)
		if err != nil {
			r.Err = err
			hasErr = true
			continue
		}
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = ri.HighWatermark, ri.HighWatermark, ri.LogStartOffset
		r.Records = ri.Records
		if n := int64(len(ri.Records)); n > 0 {
			total += n
			budget -= n
			minOne = false
		}
	}
	return res, total, hasErr
}

// ListOffset answers ListOffsets for one partition: ts -1 latest, -2
// earliest, -3 max timestamp, otherwise the first offset with a timestamp
// at or after ts. Latest is the high watermark (or the last stable offset
// for read_committed), as consumers cannot read past it.
func (m *Manager) ListOffset(tp partition.TopicPartition, ts int64, currentEpoch int32, readCommitted bool) (offset, timestamp int64, leaderEpoch int32, err error) {
	p, err := m.leader(tp, currentEpoch)
	if err != nil {
		return -1, -1, -1, err
	}
	lg := p.log
	epoch := p.LeaderEpoch()
	switch ts {
	case -1:
		return lg.HighWatermark(), -1, epoch, nil
	case -2:
		return lg.LogStartOffset(), -1, lg.EpochForOffset(lg.LogStartOffset()), nil
	}
	off, t, e, ok, err := lg.OffsetForTimestamp(ts)
	if err != nil {
		return -1, -1, -1, err
	}
	if !ok || off >= lg.HighWatermark() {
		return -1, -1, -1, nil
	}
	return off, t, e, nil
}

// DeleteRecords advances the log start offset of tp to offset (-1: the
// high watermark) and returns the new low watermark.
func (m *Manager) DeleteRecords(tp partition.TopicPartition, offset int64) (int64, error) {
	p, err := m.leader(tp, -1)
	if err != nil {
		return -1, err
	}
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, partition.ErrOffsetOutOfRange
	}
	low, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	p.mu.Lock()
	p.notifyLocked()
	p.mu.Unlock()
	return low, nil
}

// OffsetForLeaderEpoch answers with the end offset of leaderEpoch on this
// leader (KIP-101, KIP-320 for consumers).
func (m *Manager) OffsetForLeaderEpoch(tp partition.TopicPartition, currentEpoch, leaderEpoch int32) (int32, int64, error) {
	p, err := m.leader(tp, currentEpoch)
	if err != nil {
		return -1, -1, err
	}
	e, off := p.log.EndOffsetForEpoch(leaderEpoch)
	return e, off, nil
}
