package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// Follower side: Kafka's ReplicaFetcherManager and ReplicaFetcherThread
// with one fetcher per leader broker (num.replica.fetchers=1). A fetcher
// serves many partitions in one Fetch request. A partition it receives is
// first truncated by epoch (KIP-101/279): OffsetForLeaderEpoch v4 for the
// latest epoch in its log, truncate to where the leader's log stops
// agreeing, repeat while the leader answers with an epoch we do not hold.
// Then it fetches at its LEO with Fetch v15 and LastFetchedEpoch; a
// response carrying DivergingEpoch (KIP-320 style truncation on fetch)
// truncates again and fetching continues. Fetches go in a fetch session
// (KIP-227, followerSession): after the first, full, one a fetch names
// only the partitions whose position changed, so a follower with nothing
// new sends an empty request and gets an empty answer.

const (
	// Versions sent to other gokafka brokers. Fetch v15 (KIP-903) carries
	// our broker epoch in ReplicaState, which the leader names when it
	// adds us to the ISR; from v13 topics go by id.
	replicaFetchVersion     = 15
	offsetForEpochVersion   = 4
	replicaListOffsetsVersn = 4
)

type fetchKey struct {
	leader int32
	addr   string
}

// fetchers is the set of fetchers of a Manager. Lock order: mu, then a
// fetcher's mu.
type fetchers struct {
	m     *Manager
	mu    sync.Mutex
	byKey map[fetchKey]*fetcher
	// assigned is the fetcher of each partition followed; the leader
	// epoch it follows under is in that fetcher's state of it.
	assigned map[partition.TopicPartition]*fetcher
	stopped  bool
}

func (fs *fetchers) init(m *Manager) {
	fs.m = m
	fs.byKey = make(map[fetchKey]*fetcher)
	fs.assigned = make(map[partition.TopicPartition]*fetcher)
}

// assign makes p fetched from leader at addr under epoch. A partition
// already fetched under the same leader and epoch is left alone, so ISR-only
// metadata changes do not restart truncation.
func (fs *fetchers) assign(p *Partition, leader, epoch int32, addr string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.stopped {
		return
	}
	key := fetchKey{leader, addr}
	if cur := fs.assigned[p.TP]; cur != nil {
		if cur.key() == key && cur.epochOf(p.TP) == epoch {
			return
		}
		fs.removeLocked(p.TP)
	}
	f := fs.byKey[key]
	if f == nil {
		f = newFetcher(fs.m, leader, addr)
		fs.byKey[key] = f
		f.start()
	}
	f.add(p, epoch)
	fs.assigned[p.TP] = f
}

// remove stops fetching tp. It returns after any response being applied
// to tp's log is done.
// key is the fetcher's key in fetchers.byKey.
func (f *fetcher) key() fetchKey { return fetchKey{f.leader, f.addr} }

// epochOf is the leader epoch tp is fetched under here, -1 if it is not.
func (f *fetcher) epochOf(tp partition.TopicPartition) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.parts[tp]; s != nil {
		return s.epoch
	}
	return -1
}

func (fs *fetchers) remove(tp partition.TopicPartition) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.removeLocked(tp)
}

func (fs *fetchers) removeLocked(tp partition.TopicPartition) {
	f := fs.assigned[tp]
	if f == nil {
		return
	}
	delete(fs.assigned, tp)
	if fs.byKey[f.key()] != f {
		return
	}
	if f.removePartition(tp) == 0 {
		// Kafka shuts idle fetcher threads down too.
		delete(fs.byKey, f.key())
		f.stop()
	}
}

func (fs *fetchers) stopAll() {
	fs.mu.Lock()
	fs.stopped = true
	all := fs.byKey
	fs.byKey = map[fetchKey]*fetcher{}
	fs.assigned = map[partition.TopicPartition]*fetcher{}
	fs.mu.Unlock()
	for _, f := range all {
		f.stop()
	}
}

// fetchState is one partition in a fetcher. Guarded by the fetcher's mu.
// A 48-byte allocation: a follower of thousands of partitions keeps one
// for each.
type fetchState struct {
	p *Partition
	// delayUntil pauses the partition after an error
	// (replica.fetch.backoff.ms).
	delayUntil time.Time
	epoch      int32
	// behind counts the leader's answers in a row saying it does not
	// know yet what this replica was told (see behindBackoff).
	behind int32
	// truncating: the next step is OffsetForLeaderEpoch, not Fetch.
	truncating bool
	// removed is set (under the fetcher's mu) when the partition leaves
	// this fetcher or is re-added under another state; a write to its log
	// checks it under the partition's locks (see withPartition).
	removed atomic.Bool
}

type fetcher struct {
	m      *Manager
	leader int32
	addr   string
	client *protocol.Client
	logger zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	// sess is the fetch session with the leader (KIP-227); only the run
	// goroutine uses it.
	sess followerSession
	// Kept from one fetch to the next by the run goroutine, so that an
	// idle round over thousands of partitions allocates no new maps and
	// slices: a spare map for the next fetch's partitions (the session's
	// previous one), the partitions sent, and ready's lists.
	spare      map[partition.TopicPartition]sessionPart
	sent       map[partition.TopicPartition]sentPart
	readyTrunc []*fetchState
	readyFetch []*fetchState

	// changes counts what may change the partitions a fetch names or
	// their fetch positions: partitions added or removed, a response
	// that carried any partition (records, offsets, errors), a failed
	// fetch, a truncation, a backoff, ready finding a delay over. While
	// it stands still ready repeats its last lists and a fetch in an
	// established session names nothing without reading every
	// partition's log: an idle round costs the same for ten partitions
	// as for ten thousand. A log start moved by this broker's own
	// retention is not counted: the leader, which only records a
	// follower's log start, hears of it with the partition's next change.
	changes atomic.Uint64
	// readyGen and readyNextAt are changes and the earliest delay as of
	// ready's last pass over the partitions (readyGen 0: none yet).
	readyGen    uint64
	readyNextAt time.Time
	// builtGen, builtImage and builtQuiet describe the last request
	// built from every partition: changes before it was built, the
	// metadata image it named the topics from, and whether a later fetch
	// may repeat it (no partition under the follower throttle).
	builtGen   uint64
	builtImage *cluster.Image
	builtQuiet bool
	builtNames map[[16]byte]string
	// builds counts the requests built from every partition (for tests).
	builds atomic.Int64

	// mu guards parts and the fetchStates in it. It is held neither
	// across a network call nor while a log is written (appends,
	// truncation, and the fsyncs they may do): those run under the
	// partition's own locks (withPartition), so that a slow disk under one
	// partition never holds up the role change of another.
	mu    sync.Mutex
	parts map[partition.TopicPartition]*fetchState
}

func newFetcher(m *Manager, leader int32, addr string) *fetcher {
	// Leaders serve replica fetches only to a node of the cluster that
	// names itself (cluster.PeerClientID).
	clientID := m.meta.PeerClientID(cluster.PeerRoleFetcher)
	f := &fetcher{
		m: m, leader: leader, addr: addr,
		client: protocol.NewTLSClient(addr, clientID, m.cfg.ReplicaSocketTimeout+m.cfg.ReplicaFetchWaitMax, m.cfg.PeerTLS).Via(m.cfg.PeerRoutes),
		logger: m.logger.With().Int32("leader", leader).Str("leader_addr", addr).Logger(),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		parts:  make(map[partition.TopicPartition]*fetchState),
	}
	// Records are appended to the log before the next request, and
	// nothing of a response is kept: one buffer serves every response.
	f.client.ReuseResponseBuffer()
	if m.cfg.PeerSASL != nil {
		f.client.SetSASL(m.cfg.PeerSASL)
	}
	f.ctx, f.cancel = context.WithCancel(m.ctx)
	return f
}

func (f *fetcher) start() { go f.run() }

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
	f.client.Close()
}

func (f *fetcher) add(p *Partition, epoch int32) {
	f.mu.Lock()
	if old := f.parts[p.TP]; old != nil {
		old.removed.Store(true)
	}
	f.parts[p.TP] = &fetchState{p: p, epoch: epoch, truncating: true}
	f.changes.Add(1)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) removePartition(tp partition.TopicPartition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.parts[tp]; s != nil {
		s.removed.Store(true)
	}
	delete(f.parts, tp)
	f.changes.Add(1)
	return len(f.parts)
}

// withPartition runs fn, which writes s's log, under the partition's role
// lock (shared) and follow lock, unless s was removed meanwhile; false if
// it did not run. A role change that removed s takes the role lock
// exclusively and so waits for fn to end (Kafka's follower append under
// leaderIsrUpdateLock); the fetcher of the partition's next leader takes
// the follow lock and so never writes the log at the same time.
func (f *fetcher) withPartition(s *fetchState, fn func()) bool {
	p := s.p
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.followMu.Lock()
	defer p.followMu.Unlock()
	if s.removed.Load() {
		return false
	}
	fn()
	return true
}

// settle applies, under mu, what writing s's log decided: backoff pauses
// it, truncating sets its next step. Nothing if s is no longer current.
func (f *fetcher) settle(s *fetchState, backoff bool, truncating *bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.currentLocked(s) {
		return
	}
	f.changes.Add(1)
	if truncating != nil {
		s.truncating = *truncating
	}
	if backoff {
		f.backoffLocked(s)
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	for f.ctx.Err() == nil {
		trunc, fetch, nextAt := f.ready(f.m.now())
		switch {
		case len(trunc) > 0:
			f.truncate(trunc)
		case len(fetch) > 0:
			f.fetch(fetch)
		default:
			f.idle(nextAt)
		}
	}
}

// ready splits the partitions not backing off into those to truncate and
// those to fetch; nextAt is when the earliest delayed one is due. With
// nothing changed since its last pass and no delay over, the lists are
// the last pass's.
func (f *fetcher) ready(now time.Time) (trunc, fetch []*fetchState, nextAt time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readyGen != 0 && f.readyGen == f.changes.Load() && (f.readyNextAt.IsZero() || now.Before(f.readyNextAt)) {
		return f.readyTrunc, f.readyFetch, f.readyNextAt
	}
	clear(f.readyTrunc)
	clear(f.readyFetch)
	trunc, fetch = f.readyTrunc[:0], f.readyFetch[:0]
	defer func() {
		f.readyTrunc, f.readyFetch, f.readyNextAt = trunc, fetch, nextAt
		// The lists may differ from the last pass's: the next fetch
		// builds its request afresh.
		f.readyGen = f.changes.Add(1)
	}()
	for _, s := range f.parts {
		if now.Before(s.delayUntil) {
			if nextAt.IsZero() || s.delayUntil.Before(nextAt) {
				nextAt = s.delayUntil
			}
			continue
		}
		if s.truncating {
			trunc = append(trunc, s)
		} else {
			fetch = append(fetch, s)
		}
	}
	return trunc, fetch, nextAt
}

func (f *fetcher) idle(until time.Time) {
	var timer <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(until.Sub(f.m.now()))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.wake:
	case <-timer:
	case <-f.ctx.Done():
	}
}

// backoff pauses states (still current in this fetcher) after an error.
func (f *fetcher) backoffLocked(states ...*fetchState) {
	f.changes.Add(1)
	until := f.m.now().Add(f.m.cfg.ReplicaFetchBackoff)
	for _, s := range states {
		s.delayUntil = until
	}
}

// leaderBehind reports whether a partition error from the leader says it
// has not yet applied the metadata that made this broker its follower: a
// topic it does not know, a leadership or leader epoch it has not taken
// up. Every broker applies the same metadata log, each at its own pace,
// so a follower's first fetch of a new partition often gets one of these.
func leaderBehind(code int16) bool {
	switch code {
	case kerr.UnknownTopicID.Code, kerr.UnknownTopicOrPartition.Code,
		kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code:
		return true
	}
	return false
}

// behindRetry is the first pause after a leaderBehind error.
const behindRetry = 5 * time.Millisecond

// behindBackoff is the pause after the n+1st leaderBehind answer in a
// row: it doubles from behindRetry up to replica.fetch.backoff.ms. The
// leader usually catches up within milliseconds, and a full
// replica.fetch.backoff.ms there would hold every acks=all produce to a
// new partition (it waits for the whole ISR) for as long; a leader that
// stays behind is asked no more often than after other errors.
func (f *fetcher) behindBackoff(n int32) time.Duration {
	d := f.m.cfg.ReplicaFetchBackoff
	if n < 20 {
		d = min(d, behindRetry<<n)
	}
	return d
}

// current reports whether s is still tp's state here (not removed or
// re-added under another epoch while a request was out).
func (f *fetcher) currentLocked(s *fetchState) bool {
	return f.parts[s.p.TP] == s
}

// truncate runs one round of epoch-based truncation (Kafka's
// AbstractFetcherThread.maybeTruncate).
func (f *fetcher) truncate(states []*fetchState) {
	f.changes.Add(1)
	defer f.changes.Add(1)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = offsetForEpochVersion
	req.ReplicaID = f.m.nodeID
	sent := map[partition.TopicPartition]*fetchState{}
	topics := map[string]int{}
	var toHW []*fetchState
	f.mu.Lock()
	for _, s := range states {
		if !f.currentLocked(s) {
			continue
		}
		latest := s.p.log.LatestEpoch()
		if latest < 0 {
			toHW = append(toHW, s)
			continue
		}
		ti, ok := topics[s.p.TP.Topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = s.p.TP.Topic
			req.Topics = append(req.Topics, t)
			ti = len(req.Topics) - 1
			topics[s.p.TP.Topic] = ti
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = s.p.TP.Partition
		rp.CurrentLeaderEpoch = s.epoch
		rp.LeaderEpoch = latest
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
		sent[s.p.TP] = s
	}
	f.mu.Unlock()
	for _, s := range toHW {
		// No epochs to compare (an empty log, or one written before
		// epochs): fall back to the high watermark, the pre-KIP-101 rule,
		// which is safe for a log with nothing of its own.
		var err error
		if !f.withPartition(s, func() { err = f.truncateTo(s, s.p.log.HighWatermark()) }) {
			continue
		}
		if err != nil {
			f.settle(s, true, nil)
			continue
		}
		done := false
		f.settle(s, false, &done)
	}
	if len(sent) == 0 {
		return
	}

	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.ReplicaSocketTimeout)
	kresp, err := f.client.Request(ctx, req)
	cancel()
	if err != nil {
		if f.ctx.Err() == nil {
			f.logger.Warn().Err(err).Msg("OffsetForLeaderEpoch to the leader failed")
		}
		f.mu.Lock()
		for _, s := range sent {
			if f.currentLocked(s) {
				f.backoffLocked(s)
			}
		}
		f.mu.Unlock()
		return
	}
	type answer struct {
		s         *fetchState
		epoch     int32
		endOffset int64
	}
	var answers []answer
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	f.mu.Lock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := partition.TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			s := sent[tp]
			if s == nil || !f.currentLocked(s) {
				continue
			}
			delete(sent, tp)
			if rp.ErrorCode != 0 {
				// Our metadata or the leader's is behind; wait for it.
				f.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("error", errName(rp.ErrorCode)).Msg("leader refused OffsetForLeaderEpoch")
				f.backoffLocked(s)
				continue
			}
			answers = append(answers, answer{s, rp.LeaderEpoch, rp.EndOffset})
		}
	}
	for _, s := range sent {
		// Not in the response: try again later.
		if f.currentLocked(s) {
			f.backoffLocked(s)
		}
	}
	f.mu.Unlock()
	for _, a := range answers {
		var err error
		var done bool
		if !f.withPartition(a.s, func() {
			var off int64
			off, done = truncationOffset(a.s.p.log, a.epoch, a.endOffset)
			err = f.truncateTo(a.s, off)
		}) {
			continue
		}
		if err != nil {
			f.settle(a.s, true, nil)
			continue
		}
		truncating := !done
		f.settle(a.s, false, &truncating)
	}
}

// truncateTo truncates s's log to off, if it ends past it, and drops the
// producer state made from what goes. Run under withPartition.
func (f *fetcher) truncateTo(s *fetchState, off int64) error {
	lg := s.p.log
	if leo := lg.LogEndOffset(); off < leo {
		s.p.logger().Info().Int32("leader", f.leader).
			Int64("offset", off).Int64("log_end_offset", leo).Msg("truncating follower log by leader epoch")
		s.p.producersTruncated()
		err := lg.TruncateTo(off)
		s.p.producersTruncated()
		if err != nil {
			s.p.logger().Warn().Err(err).Int32("leader", f.leader).Msg("truncation failed")
			return err
		}
		// Rebuild what the truncation dropped, in the background.
		s.p.startProducerLoad()
	}
	return nil
}

// truncationOffset is Kafka's AbstractFetcherThread.getOffsetTruncationState:
// given the leader's (epoch, end offset) for the epoch we asked about, the
// offset to truncate to and whether truncation is complete. When the
// leader answers with an epoch we do not hold, we truncate to the end of
// our largest epoch below it and ask again.
func truncationOffset(lg *partition.Log, leaderEpoch int32, leaderEnd int64) (int64, bool) {
	leo := lg.LogEndOffset()
	switch {
	case leaderEnd < 0:
		// The leader knows no epoch at or below ours: keep only what is
		// committed.
		return min(lg.HighWatermark(), leo), true
	case leaderEpoch < 0:
		return min(leaderEnd, leo), true
	}
	fe, fend := lg.EndOffsetForEpoch(leaderEpoch)
	switch {
	case fe < 0 && fend < 0:
		return min(leaderEnd, leo), true
	case fe != leaderEpoch:
		return min(fend, leo), false
	}
	return min(fend, leaderEnd, leo), true
}

// fetch sends one Fetch for states and applies the response.
func (f *fetcher) fetch(states []*fetchState) {
	cfg := f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.Version = replicaFetchVersion
	req.ReplicaID = f.m.nodeID
	im := f.m.meta.Image()
	req.ReplicaState.ID = f.m.nodeID
	req.ReplicaState.Epoch = -1
	if b, ok := im.Brokers[f.m.nodeID]; ok && b.Epoch > 0 {
		req.ReplicaState.Epoch = b.Epoch
	}
	req.MaxWaitMillis = int32(cfg.ReplicaFetchWaitMax.Milliseconds())
	req.MinBytes = cfg.ReplicaFetchMinBytes
	req.MaxBytes = cfg.ReplicaFetchResponseMaxBytes
	var next map[partition.TopicPartition]sessionPart
	var sent map[partition.TopicPartition]sentPart
	var names map[[16]byte]string
	var throttled map[partition.TopicPartition]bool
	if gen := f.changes.Load(); f.sess.epoch != 0 && f.builtQuiet && f.builtGen == gen && f.builtImage == im && len(f.sent) > 0 {
		// Nothing changed since the last request was built and answered
		// with no partition: the session's partitions and positions are
		// those the leader holds, and this request names none.
		next, sent, names = f.sess.parts, f.sent, f.builtNames
		req.SessionID, req.SessionEpoch = f.sess.id, f.sess.epoch
		// Idle: the spare map, which only a busy fetcher reuses, is
		// not worth keeping.
		f.spare = nil
	} else {
		next, sent, names, throttled = f.buildFetch(req, states, im)
		if len(sent) == 0 {
			f.spare = next
			return
		}
		f.builtGen, f.builtImage, f.builtNames, f.builtQuiet = gen, im, names, len(throttled) == 0
		prevParts := f.sess.parts
		defer func() {
			// The session holds next now, or nothing (refused, failed):
			// whichever map it no longer holds serves the next fetch.
			if f.sess.parts != nil {
				f.spare = prevParts
			} else {
				f.spare = next
			}
		}()
	}

	// The client bounds each round trip by replica.socket.timeout.ms
	// plus replica.fetch.wait.max.ms itself (newFetcher); a context of
	// that deadline per fetch would only add a timer per round trip.
	kresp, err := f.client.Request(f.ctx, req)
	if err != nil {
		f.sess.failed()
		if f.ctx.Err() == nil {
			f.logger.Warn().Err(err).Msg("fetch from leader failed")
		}
		f.mu.Lock()
		for _, sp := range sent {
			if f.currentLocked(sp.s) {
				f.backoffLocked(sp.s)
			}
		}
		f.mu.Unlock()
		return
	}
	resp := kresp.(*kmsg.FetchResponse)
	if len(resp.Topics) > 0 || resp.ErrorCode != 0 {
		f.changes.Add(1)
	}
	if !f.sess.answered(resp, next) {
		// The leader lost or replaced the session (a restart, an
		// eviction): the next fetch is full and opens another.
		f.logger.Info().Int32("session_id", req.SessionID).Str("error", errName(resp.ErrorCode)).Msg("fetch session refused; fetching in full")
		return
	}
	if resp.ErrorCode != 0 {
		f.logger.Warn().Str("error", errName(resp.ErrorCode)).Msg("leader refused fetch")
		f.mu.Lock()
		for _, sp := range sent {
			if f.currentLocked(sp.s) {
				f.backoffLocked(sp.s)
			}
		}
		f.mu.Unlock()
		return
	}
	type data struct {
		sentPart
		rp *kmsg.FetchResponseTopicPartition
	}
	var outOfRange []*fetchState
	var apply []data
	f.mu.Lock()
	for _, t := range resp.Topics {
		name, ok := names[t.TopicID]
		if !ok {
			continue
		}
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			tp := partition.TopicPartition{Topic: name, Partition: rp.Partition}
			sp, ok := sent[tp]
			if !ok || !f.currentLocked(sp.s) || sp.s.truncating {
				continue
			}
			if rp.ErrorCode != 0 && leaderBehind(rp.ErrorCode) {
				f.logger.Debug().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("error", errName(rp.ErrorCode)).Msg("leader has not applied the partition's metadata yet")
				sp.s.delayUntil = f.m.now().Add(f.behindBackoff(sp.s.behind))
				sp.s.behind++
				continue
			}
			sp.s.behind = 0
			switch rp.ErrorCode {
			case 0:
				apply = append(apply, data{sp, rp})
			case kerr.OffsetOutOfRange.Code:
				outOfRange = append(outOfRange, sp.s)
			default:
				f.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("error", errName(rp.ErrorCode)).Msg("leader refused partition fetch")
				f.backoffLocked(sp.s)
			}
		}
	}
	f.mu.Unlock()
	// The response buffer is reused by the next request: everything is
	// appended before that.
	for _, d := range apply {
		if throttled[d.s.p.TP] {
			f.m.followerThrottle.record(f.m.now(), len(d.rp.RecordBatches))
		}
		var out applyOutcome
		if !f.withPartition(d.s, func() { out = f.applyPartition(d.s, d.offset, d.rp) }) {
			continue
		}
		switch out {
		case applyBackoff:
			f.settle(d.s, true, nil)
		case applyRetruncate:
			truncating := true
			f.settle(d.s, true, &truncating)
		}
	}
	for _, s := range outOfRange {
		f.handleOutOfRange(s)
	}
}

// sentPart is a partition a fetch sent, and the offset it asked for.
type sentPart struct {
	s      *fetchState
	offset int64
}

// buildFetch fills req with the partitions of states as the session
// should hold them (all of them in a full fetch, the changes in an
// incremental one), reading each one's log, and returns them (next, which
// the session takes on once answered), those sent with their offsets, the
// topics' names by id, and the partitions under the follower throttle.
func (f *fetcher) buildFetch(req *kmsg.FetchRequest, states []*fetchState, im *cluster.Image) (next map[partition.TopicPartition]sessionPart, sent map[partition.TopicPartition]sentPart, names map[[16]byte]string, throttled map[partition.TopicPartition]bool) {
	f.builds.Add(1)
	names = map[[16]byte]string{}
	// next is every partition this fetch reads, which becomes the
	// session's; an incremental request names only those whose
	// parameters changed since the session last had them.
	next = f.spare
	f.spare = nil
	if next == nil {
		next = make(map[partition.TopicPartition]sessionPart, len(states))
	}
	clear(next)
	if f.sent == nil {
		f.sent = make(map[partition.TopicPartition]sentPart, len(states))
	}
	sent = f.sent
	clear(sent)
	// Which partitions the follower throttle applies to is read before
	// the fetcher's lock is taken, so that lock never waits for a
	// partition's (throttle.go).
	now := f.m.now()
	throttleWait := f.m.followerThrottle.wait(now)
	throttled = map[partition.TopicPartition]bool{}
	for _, s := range states {
		if s.p.followerThrottledNow(f.m.nodeID) {
			throttled[s.p.TP] = true
		}
	}
	f.mu.Lock()
	for _, s := range states {
		if !f.currentLocked(s) || s.truncating {
			continue
		}
		if throttled[s.p.TP] && throttleWait > 0 {
			// Over follower.replication.throttled.rate: this partition
			// sits out until the budget is back.
			s.delayUntil = now.Add(throttleWait)
			continue
		}
		lg := s.p.log
		top := im.Topics[s.p.TP.Topic]
		if top == nil {
			// Deleted; the reconcile of that change removes it
			// here. Until then it waits like a refused fetch.
			f.backoffLocked(s)
			continue
		}
		sp := sessionPart{
			topicID:     top.ID,
			leaderEpoch: s.epoch,
			offset:      lg.LogEndOffset(),
			lastEpoch:   lg.LatestEpoch(),
			logStart:    lg.LogStartOffset(),
		}
		names[top.ID] = top.Name
		next[s.p.TP] = sp
		sent[s.p.TP] = sentPart{s, sp.offset}
	}
	f.mu.Unlock()
	if len(sent) > 0 {
		f.sess.build(req, next, f.m.cfg.ReplicaFetchMaxBytes)
	}
	return next, sent, names, throttled
}

// followerSession is the follower's side of a fetch session (Kafka's
// FetchSessionHandler): the session id and the epoch of the next fetch
// (0: a full one), and the partitions as the leader's session holds them.
type followerSession struct {
	id    int32
	epoch int32
	parts map[partition.TopicPartition]sessionPart
}

// sessionPart is what a session holds of a partition: its fetch
// parameters (40 bytes, in a map of thousands).
type sessionPart struct {
	topicID     [16]byte
	offset      int64
	logStart    int64
	leaderEpoch int32
	lastEpoch   int32
}

// build fills req's session fields and partitions for a fetch of next: all
// of them in a full fetch; in an incremental one those new to the session
// or changed, and the session's others as forgotten.
func (fs *followerSession) build(req *kmsg.FetchRequest, next map[partition.TopicPartition]sessionPart, maxBytes int32) {
	req.SessionID, req.SessionEpoch = fs.id, fs.epoch
	full := fs.epoch == 0
	topics := map[[16]byte]int{}
	add := func(tp partition.TopicPartition, sp sessionPart) {
		ti, ok := topics[sp.topicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = tp.Topic, sp.topicID
			req.Topics = append(req.Topics, t)
			ti = len(req.Topics) - 1
			topics[sp.topicID] = ti
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = sp.leaderEpoch
		rp.FetchOffset = sp.offset
		rp.LastFetchedEpoch = sp.lastEpoch
		rp.LogStartOffset = sp.logStart
		rp.PartitionMaxBytes = maxBytes
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	forgotten := map[[16]byte]int{}
	forget := func(tp partition.TopicPartition, sp sessionPart) {
		fi, ok := forgotten[sp.topicID]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = tp.Topic, sp.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			fi = len(req.ForgottenTopics) - 1
			forgotten[sp.topicID] = fi
		}
		req.ForgottenTopics[fi].Partitions = append(req.ForgottenTopics[fi].Partitions, tp.Partition)
	}
	for tp, sp := range next {
		old, had := fs.parts[tp]
		if !full && had && old.topicID != sp.topicID {
			forget(tp, old) // the topic was recreated under a new id
		}
		if full || !had || old != sp {
			add(tp, sp)
		}
	}
	if !full {
		for tp, old := range fs.parts {
			if _, ok := next[tp]; !ok {
				forget(tp, old)
			}
		}
	}
}

// answered moves the session on after a response to a fetch of next;
// false when the leader refused the session, and the next fetch is full.
func (fs *followerSession) answered(resp *kmsg.FetchResponse, next map[partition.TopicPartition]sessionPart) bool {
	switch resp.ErrorCode {
	case kerr.FetchSessionIDNotFound.Code:
		fs.id, fs.epoch, fs.parts = 0, 0, nil
		return false
	case kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
		fs.failed()
		return false
	case 0:
	default:
		fs.failed()
		return true
	}
	switch {
	case fs.epoch != 0:
		fs.epoch = nextEpoch(fs.epoch)
	case resp.SessionID != 0:
		fs.id, fs.epoch = resp.SessionID, 1
	default:
		// No session (the leader's cache is full): full fetches.
		fs.id, fs.epoch = 0, 0
	}
	fs.parts = next
	return true
}

// failed makes the next fetch a full one, closing the session (a failed
// request leaves the session's state at the leader unknown).
func (fs *followerSession) failed() {
	fs.epoch, fs.parts = 0, nil
}

// nextEpoch is the session epoch after e (it wraps to 1).
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// applyOutcome is what applying a partition's fetch data asks of its
// fetch state.
type applyOutcome int

const (
	applyDone       applyOutcome = iota
	applyBackoff                 // pause it (replica.fetch.backoff.ms)
	applyRetruncate              // pause it, then truncate by epoch again
)

// applyPartition applies one partition's fetch response
// (ReplicaFetcherThread.processPartitionData). Run under withPartition.
func (f *fetcher) applyPartition(s *fetchState, offset int64, rp *kmsg.FetchResponseTopicPartition) applyOutcome {
	lg := s.p.log
	if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
		off, _ := truncationOffset(lg, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		// Even when incomplete, fetching continues: the next fetch carries
		// our new last epoch and the leader answers again if needed.
		if f.truncateTo(s, off) != nil {
			return applyBackoff
		}
		return applyDone
	}
	if lg.LogEndOffset() != offset {
		// Only this fetcher writes the log while it follows; a mismatch
		// means the partition was reset meanwhile. Fetch again.
		return applyDone
	}
	if len(rp.RecordBatches) > 0 {
		appendBatches := lg.AppendAsFollower
		if f.m.cfg.FollowerWritesUncached && f.m.cfg.ReplicaSelectorClass == "" {
			// Nothing reads a follower's data here (see
			// partition.Log.AppendAsFollowerUncached).
			appendBatches = lg.AppendAsFollowerUncached
		}
		if _, err := appendBatches(rp.RecordBatches); err != nil {
			// The batches do not continue our log: it diverged in a way the
			// epochs did not reveal yet. Truncate again by epoch.
			s.p.logger().Warn().Err(err).Int32("leader", f.leader).Msg("appending replicated batches failed")
			return applyRetruncate
		}
		s.p.producersAppended(rp.RecordBatches)
	}
	if rp.HighWatermark >= 0 {
		lg.SetHighWatermark(min(rp.HighWatermark, lg.LogEndOffset()))
	}
	if rp.LogStartOffset > lg.LogStartOffset() {
		if _, err := lg.DeleteRecordsBefore(min(rp.LogStartOffset, lg.HighWatermark())); err != nil && !errors.Is(err, partition.ErrOffsetOutOfRange) {
			s.p.logger().Warn().Err(err).Int32("leader", f.leader).Msg("following the leader's log start offset")
		}
	}
	s.p.mu.Lock()
	s.p.notifyLocked(true, true)
	s.p.mu.Unlock()
	return applyDone
}

// handleOutOfRange is AbstractFetcherThread.handleOutOfRangeError: our LEO
// is below the leader's log start (we were down while it deleted
// segments), so our log restarts empty at its log start; otherwise the
// epochs decide again.
func (f *fetcher) handleOutOfRange(s *fetchState) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = replicaListOffsetsVersn
	req.ReplicaID = f.m.nodeID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = s.p.TP.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = s.p.TP.Partition
	rp.CurrentLeaderEpoch = s.epoch
	rp.Timestamp = -2
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.ReplicaSocketTimeout)
	kresp, err := f.client.Request(ctx, req)
	cancel()
	if err != nil {
		f.settle(s, true, nil)
		return
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		f.settle(s, true, nil)
		return
	}
	leaderStart := resp.Topics[0].Partitions[0].Offset
	restarted := false
	if !f.withPartition(s, func() {
		lg := s.p.log
		if leaderStart <= lg.LogEndOffset() {
			return
		}
		s.p.logger().Info().Int32("leader", f.leader).Int64("leader_log_start", leaderStart).
			Int64("log_end_offset", lg.LogEndOffset()).Msg("follower log is behind the leader's log start; restarting it there")
		s.p.producersTruncated()
		err = lg.TruncateFullyAndStartAt(leaderStart)
		s.p.producersTruncated()
		s.p.startProducerLoad()
		restarted = true
	}) {
		return
	}
	if restarted {
		if err != nil {
			f.settle(s, true, nil)
		}
		return
	}
	truncating := true
	f.settle(s, true, &truncating)
}

func errName(code int16) string {
	if e := kerr.ErrorForCode(code); e != nil {
		return e.Error()
	}
	return fmt.Sprintf("error code %d", code)
}
