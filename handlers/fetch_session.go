package handlers

// Fetch sessions (KIP-227), as Kafka's FetchSession.scala keeps them.
//
// A Fetch with SessionEpoch 0 (INITIAL) is full: it names every partition,
// closes the session it names, if any, and may open a new one whose id the
// response carries (0 when the cache has no room for it, and then the
// client goes on with full fetches). SessionEpoch -1 (FINAL) is a full
// fetch that closes the session it names and opens none; before v7 every
// fetch is of that kind. A fetch with an epoch > 0 is incremental: it
// names only the partitions added to the session or whose fetch
// parameters changed, and ForgottenTopics those leaving it; the broker
// reads every partition of the session and answers only those with
// something new (records, a moved high watermark, last stable offset or
// log start offset, an error, a diverging epoch). A follower's session
// reads only the partitions that can have something new: those the
// request names, those changed since its previous fetch (its watch,
// replication/session.go) and those that fetch left unsettled. Each answered
// incremental fetch moves the session's epoch on by one; a fetch naming an
// unknown session gets FETCH_SESSION_ID_NOT_FOUND, the wrong epoch
// INVALID_FETCH_SESSION_EPOCH, and a request whose version disagrees with
// the session about topic ids (v13+) FETCH_SESSION_TOPIC_ID_ERROR.
// Sessions belong to no connection: a client may continue one on a new
// connection.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions (Kafka's default 1000). When it is full, a new session takes
// the slot of the least recently used one if that was unused for 120 s
// (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS); otherwise it may
// evict the least valuable evictable session, ordered by (follower,
// partition count, id), only if it is itself at least as valuable. A
// session becomes evictable by anyone once it is 120 s old, and by a
// follower's new session at once unless it is itself a follower's, so
// followers' sessions, the cheapest way to replicate, are preferred and a
// new client cannot push out an established larger one. Evictability and
// size are taken when a session is created or used, as Kafka does.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
)

const (
	// DefaultFetchSessionCacheSlots is Kafka's
	// max.incremental.fetch.session.cache.slots.
	DefaultFetchSessionCacheSlots = 1000
	// fetchSessionEvictAfter is Kafka's
	// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
	fetchSessionEvictAfter = 120 * time.Second

	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

// nextSessionEpoch is JFetchMetadata.nextEpoch.
func nextSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return sessionEpochFinal
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// fetchPartKey names a partition in a session: by topic id from v13, by
// name before.
type fetchPartKey struct {
	name string
	id   [16]byte
	part int32
}

// fetchEntry is one partition to read: its topic as the request named it
// and its last fetch parameters.
type fetchEntry struct {
	topic   string
	topicID [16]byte
	part    int32
	partFetch
}

// partFetch is what a request says of a partition that its read uses:
// the fields of kmsg.FetchRequestTopicPartition but its number, tags and
// directory id, in 32 bytes instead of 64.
type partFetch struct {
	fetchOffset, logStartOffset             int64
	leaderEpoch, lastFetchedEpoch, maxBytes int32
}

func partFetchOf(p *kmsg.FetchRequestTopicPartition) partFetch {
	return partFetch{
		fetchOffset: p.FetchOffset, logStartOffset: p.LogStartOffset,
		leaderEpoch: p.CurrentLeaderEpoch, lastFetchedEpoch: p.LastFetchedEpoch, maxBytes: p.PartitionMaxBytes,
	}
}

// entry is the partition's fetchEntry. A request names a topic by id from
// v13 and by name before, never both, so the key holds all the entry's
// topic.
func (k fetchPartKey) entry(f partFetch) fetchEntry {
	return fetchEntry{topic: k.name, topicID: k.id, part: k.part, partFetch: f}
}

// fetchAnswer is what a response said of a partition, which the session
// compares with what it said last.
type fetchAnswer struct {
	errCode               int16
	hw, lso, logStart     int64
	hasRecords, diverging bool
	// tp is the partition read, by name ("" when the topic id is
	// unknown); settled is replication.FetchResult.Settled.
	tp      partition.TopicPartition
	settled bool
}

// cachedPart is a session's partition: its fetch parameters and what the
// last response that carried it said. Sessions hold them by value in
// their map, 72 bytes each: a follower's session at 10,000 partitions
// holds thousands.
type cachedPart struct {
	partFetch
	hw, lso, logStart int64
	// topic is the name of the partition's topic as last read, in a
	// session with a watch ("" until read, or when the id was unknown).
	topic string
}

// tp is the partition k names, by its name as last read.
func (cp *cachedPart) tp(k fetchPartKey) partition.TopicPartition {
	return partition.TopicPartition{Topic: cp.topic, Partition: k.part}
}

// fetchSession is one cached session.
type fetchSession struct {
	id         int32
	privileged bool // a follower's
	usesIDs    bool
	created    time.Time

	// mu guards the fields below; taken after the cache's mu when both
	// are held.
	mu       sync.Mutex
	epoch    int32
	lastUsed time.Time
	parts    map[fetchPartKey]cachedPart
	// order is the order partitions are read and answered in; one that
	// is answered moves to the end, so that a response that fills up
	// does not always favour the same partitions. A session with a watch
	// keeps none: it reads only the few partitions that changed.
	order []fetchPartKey

	// Taken by touch (under the cache's mu): the size the cache counts
	// and whether the session may be evicted by followers' or anyone's
	// new sessions.
	cachedSize          int
	evictPriv, evictAll bool

	// A follower's session keeps a watch registered with its partitions
	// (replication/session.go), and a fetch reads only the partitions
	// that need it: those the request names, those the watch saw change,
	// and pending ones, which the previous fetch left unsettled (an
	// error, records not yet fetched, a follower outside the ISR). The
	// others have nothing new, so Kafka's incremental response would
	// leave them out anyway. byTP finds a changed partition's key by
	// name.
	watch   *replication.SessionWatch
	byTP    map[partition.TopicPartition][16]byte
	pending map[fetchPartKey]struct{}
}

// FetchSessionCache holds the broker's fetch sessions.
type FetchSessionCache struct {
	// watchFollowers is Config.FollowerSessionWatch.
	watchFollowers bool
	max            int
	evictAfter     time.Duration
	now            func() time.Time

	mu       sync.Mutex
	sessions map[int32]*fetchSession
	// numPartitions is the partitions of all sessions, as last counted.
	numPartitions int

	// Counters, for tests and metrics.
	created, evicted, incremental atomic.Int64
	named, answered, read         atomic.Int64
}

// NewFetchSessionCache returns a cache of at most slots sessions; now is
// its clock (nil: time.Now).
func NewFetchSessionCache(slots int, now func() time.Time) *FetchSessionCache {
	if now == nil {
		now = time.Now
	}
	return &FetchSessionCache{
		max: max(slots, 0), evictAfter: fetchSessionEvictAfter, now: now,
		sessions: make(map[int32]*fetchSession),
	}
}

// FetchSessionStats is a snapshot of the cache.
type FetchSessionStats struct {
	Sessions, Partitions int
	// Created, Evicted and Incremental count sessions created, sessions
	// evicted, and incremental fetches answered; Named and Answered the
	// partitions those fetches named (to add, change or forget) and
	// their responses carried; Read the partitions those fetches read
	// (a follower's session reads only those that changed).
	Created, Evicted, Incremental int64
	Named, Answered, Read         int64
}

// Stats returns the cache's counts.
func (c *FetchSessionCache) Stats() FetchSessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FetchSessionStats{
		Sessions: len(c.sessions), Partitions: c.numPartitions,
		Created: c.created.Load(), Evicted: c.evicted.Load(), Incremental: c.incremental.Load(),
		Named: c.named.Load(), Answered: c.answered.Load(), Read: c.read.Load(),
	}
}

type fetchContextKind int

const (
	fetchSessionless fetchContextKind = iota
	fetchFull
	fetchIncremental
)

// fetchContext is how one Fetch relates to the session cache.
type fetchContext struct {
	kind     fetchContextKind
	session  *fetchSession // incremental only
	reqEpoch int32
	// entries are the partitions to read, in response order.
	entries []fetchEntry
	// visiting, with a session's watch, are the keys of entries.
	visiting map[fetchPartKey]struct{}
}

// newContext classifies a request (FetchManager.newContext) and returns
// the partitions to read, or the top-level error to answer with.
func (c *FetchSessionCache) newContext(version int16, r *kmsg.FetchRequest, follower bool) (*fetchContext, int16) {
	useIDs := version >= 13
	if version < 7 || r.SessionEpoch == sessionEpochInitial || r.SessionEpoch == sessionEpochFinal {
		if version >= 7 && r.SessionID != 0 {
			c.remove(r.SessionID)
		}
		fc := &fetchContext{kind: fetchFull, entries: requestEntries(r, useIDs)}
		if version < 7 || r.SessionEpoch == sessionEpochFinal {
			fc.kind = fetchSessionless
		}
		return fc, 0
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[r.SessionID]
	if s == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	switch {
	case s.epoch != r.SessionEpoch:
		s.mu.Unlock()
		return nil, kerr.InvalidFetchSessionEpoch.Code
	case s.usesIDs != useIDs:
		s.mu.Unlock()
		return nil, kerr.FetchSessionTopicIDError.Code
	}
	named, changed := s.update(r, useIDs)
	c.named.Add(int64(named))
	if len(s.parts) == 0 {
		s.mu.Unlock()
		c.removeLocked(s)
		return &fetchContext{kind: fetchSessionless, entries: requestEntries(r, useIDs)}, 0
	}
	c.touchLocked(s, now)
	s.epoch = nextSessionEpoch(r.SessionEpoch)
	fc := &fetchContext{kind: fetchIncremental, session: s, reqEpoch: r.SessionEpoch}
	if s.watch != nil {
		fc.visiting = make(map[fetchPartKey]struct{}, len(changed)+len(s.pending))
		for _, k := range changed {
			fc.visit(k)
		}
		for k := range s.pending {
			fc.visit(k)
		}
		if len(s.pending) > 64 {
			// A cleared map keeps the room of its largest size: a
			// session that once had thousands pending (its first
			// fetches) would keep it while idle.
			s.pending = make(map[fetchPartKey]struct{})
		} else {
			clear(s.pending)
		}
		s.watch.TakeDirty(func(tp partition.TopicPartition) {
			if k, ok := s.keyByTP(tp); ok {
				fc.visit(k)
			}
		})
		s.mu.Unlock()
		return fc, 0
	}
	fc.entries = make([]fetchEntry, 0, len(s.order))
	for _, k := range s.order {
		fc.entries = append(fc.entries, k.entry(s.parts[k].partFetch))
	}
	s.mu.Unlock()
	return fc, 0
}

// visit adds the session's partition k to the fetch's reads, once. Under
// the session's mu.
func (fc *fetchContext) visit(k fetchPartKey) {
	if _, dup := fc.visiting[k]; dup {
		return
	}
	cp, ok := fc.session.parts[k]
	if !ok {
		return
	}
	fc.visiting[k] = struct{}{}
	fc.entries = append(fc.entries, k.entry(cp.partFetch))
}

// more returns the session's partitions that changed since the fetch
// started and that it does not read yet, adding them to its entries, and
// whether any partition changed at all (replication.FetchParams.More).
func (fc *fetchContext) more() ([]fetchEntry, bool) {
	s := fc.session
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(fc.entries)
	changed := false
	s.watch.TakeDirty(func(tp partition.TopicPartition) {
		changed = true
		if k, ok := s.keyByTP(tp); ok {
			fc.visit(k)
		}
	})
	return fc.entries[n:], changed
}

// requestEntries lists the request's partitions once each, in the order
// they were first named, with the parameters they were last named with
// (see fetch.go).
func requestEntries(r *kmsg.FetchRequest, useIDs bool) []fetchEntry {
	parts := dedupFetchPartitions(r, useIDs)
	entries := make([]fetchEntry, 0, len(parts))
	for _, fp := range parts {
		t := &r.Topics[fp.topic]
		p := &t.Partitions[fp.part]
		entries = append(entries, fetchEntry{topic: t.Topic, topicID: t.TopicID, part: p.Partition, partFetch: partFetchOf(p)})
	}
	return entries
}

func partKey(e *fetchEntry, useIDs bool) fetchPartKey {
	if useIDs {
		return fetchPartKey{id: e.topicID, part: e.part}
	}
	return fetchPartKey{name: e.topic, part: e.part}
}

// update applies an incremental request to the session
// (FetchSession.update): named partitions are added or take their new
// parameters, then forgotten ones leave. It returns how many partitions
// the request named, and the keys of those added or changed. Under s.mu.
func (s *fetchSession) update(r *kmsg.FetchRequest, useIDs bool) (int, []fetchPartKey) {
	entries := requestEntries(r, useIDs)
	named := len(entries)
	changed := make([]fetchPartKey, 0, len(entries))
	for _, e := range entries {
		k := partKey(&e, useIDs)
		changed = append(changed, k)
		if cp, ok := s.parts[k]; ok {
			cp.partFetch = e.partFetch
			s.parts[k] = cp
			continue
		}
		// New to the session: nothing answered yet, so the next
		// response carries it.
		s.parts[k] = cachedPart{partFetch: e.partFetch, hw: -1, lso: -1, logStart: -1}
		if s.watch == nil {
			s.order = append(s.order, k)
		}
	}
	removed := false
	for _, ft := range r.ForgottenTopics {
		named += len(ft.Partitions)
		for _, p := range ft.Partitions {
			k := fetchPartKey{part: p}
			if useIDs {
				k.id = ft.TopicID
			} else {
				k.name = ft.Topic
			}
			if cp, ok := s.parts[k]; ok {
				delete(s.parts, k)
				removed = true
				s.forgetWatched(k, &cp)
			}
		}
	}
	if removed && s.watch == nil {
		kept := s.order[:0]
		for _, k := range s.order {
			if _, ok := s.parts[k]; ok {
				kept = append(kept, k)
			}
		}
		s.order = kept
	}
	return named, changed
}

// forgetWatched drops partition k, which left the session, from its
// watch. Under s.mu.
func (s *fetchSession) forgetWatched(k fetchPartKey, cp *cachedPart) {
	if s.watch == nil {
		return
	}
	delete(s.pending, k)
	if cp.topic == "" {
		return
	}
	if tp := cp.tp(k); s.mapsTP(tp, k) {
		delete(s.byTP, tp)
		s.watch.Forget(tp)
	}
}

// keyByTP returns the key of the session's partition last read as tp.
// byTP keeps only the topic id of each (a key by name is the name);
// a full key a partition cost 24 bytes more. Under s.mu.
func (s *fetchSession) keyByTP(tp partition.TopicPartition) (fetchPartKey, bool) {
	id, ok := s.byTP[tp]
	if !ok {
		return fetchPartKey{}, false
	}
	if s.usesIDs {
		return fetchPartKey{id: id, part: tp.Partition}, true
	}
	return fetchPartKey{name: tp.Topic, part: tp.Partition}, true
}

// mapsTP reports whether byTP maps tp to k. Under s.mu.
func (s *fetchSession) mapsTP(tp partition.TopicPartition, k fetchPartKey) bool {
	got, ok := s.keyByTP(tp)
	return ok && got == k
}

// noteRead records, in a session with a watch, where partition k was
// read and whether the next fetch must read it again; the caller stores
// cp back. Under s.mu.
func (s *fetchSession) noteRead(k fetchPartKey, cp *cachedPart, a *fetchAnswer) {
	if s.watch == nil {
		return
	}
	if a.tp.Topic != "" && cp.tp(k) != a.tp {
		if old := cp.tp(k); cp.topic != "" && s.mapsTP(old, k) {
			delete(s.byTP, old)
		}
		cp.topic = a.tp.Topic
	}
	if cp.topic != "" {
		s.byTP[cp.tp(k)] = k.id
	}
	if !a.settled || a.errCode != 0 {
		s.pending[k] = struct{}{}
	}
}

// respond decides which of an incremental fetch's partitions its response
// carries (IncrementalFetchContext.updateAndGenerateResponseData): those
// with something new since the session last answered them. answers are in
// the order of the context's entries. It records what is answered and
// moves those partitions to the end of the session's order. false, when
// another fetch of the session was answered meanwhile, means
// INVALID_FETCH_SESSION_EPOCH.
func (fc *fetchContext) respond(c *FetchSessionCache, answers []fetchAnswer) ([]bool, bool) {
	s := fc.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != nextSessionEpoch(fc.reqEpoch) {
		if s.watch != nil {
			// This fetch took the session's changes; the fetch that
			// is answered instead must read them.
			for k := range fc.visiting {
				if _, ok := s.parts[k]; ok {
					s.pending[k] = struct{}{}
				}
			}
		}
		return nil, false
	}
	c.incremental.Add(1)
	keep := make([]bool, len(fc.entries))
	var moved []fetchPartKey
	for i := range fc.entries {
		k := partKey(&fc.entries[i], s.usesIDs)
		cp, ok := s.parts[k]
		if !ok {
			continue // forgotten by a later request
		}
		a := &answers[i]
		s.noteRead(k, &cp, a)
		must := a.hasRecords || a.diverging
		if a.hw != cp.hw {
			must, cp.hw = true, a.hw
		}
		if a.logStart != cp.logStart {
			must, cp.logStart = true, a.logStart
		}
		if a.lso != cp.lso {
			must, cp.lso = true, a.lso
		}
		if a.errCode != 0 {
			// Always answered, and again next time until it clears.
			must, cp.hw = true, -1
		}
		s.parts[k] = cp
		if must {
			keep[i] = true
			moved = append(moved, k)
		}
	}
	c.answered.Add(int64(len(moved)))
	if len(moved) > 0 && s.watch == nil {
		movedSet := make(map[fetchPartKey]struct{}, len(moved))
		for _, k := range moved {
			movedSet[k] = struct{}{}
		}
		order := make([]fetchPartKey, 0, len(s.order))
		for _, k := range s.order {
			if _, ok := movedSet[k]; !ok {
				order = append(order, k)
			}
		}
		for _, k := range moved {
			if _, ok := s.parts[k]; ok {
				order = append(order, k)
			}
		}
		s.order = order
	}
	return keep, true
}

// createSession opens a session for a full fetch that was answered with
// answers (FullFetchContext.updateAndGenerateResponseData), returning its
// id, or 0 when the cache has no room for it.
//
// watch, if not nil, is the watch the full fetch read its partitions
// with, which a follower's session keeps; the caller closes it when no
// session is created.
func (c *FetchSessionCache) createSession(follower, useIDs bool, entries []fetchEntry, answers []fetchAnswer, watch *replication.SessionWatch) int32 {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.max && !c.tryEvictLocked(follower, len(entries), now) {
		return 0
	}
	id := c.newIDLocked()
	s := &fetchSession{
		id: id, privileged: follower, usesIDs: useIDs, created: now,
		epoch: nextSessionEpoch(sessionEpochInitial),
		parts: make(map[fetchPartKey]cachedPart, len(entries)),
	}
	if watch == nil {
		s.order = make([]fetchPartKey, 0, len(entries))
	} else {
		s.watch = watch
		s.byTP = make(map[partition.TopicPartition][16]byte, len(entries))
		s.pending = make(map[fetchPartKey]struct{})
	}
	for i := range entries {
		e := &entries[i]
		k := partKey(e, useIDs)
		if _, dup := s.parts[k]; dup {
			continue
		}
		a := &answers[i]
		cp := cachedPart{partFetch: e.partFetch, hw: a.hw, lso: a.lso, logStart: a.logStart}
		s.noteRead(k, &cp, a)
		s.parts[k] = cp
		if watch == nil {
			s.order = append(s.order, k)
		}
	}
	s.cachedSize = -1
	c.sessions[id] = s
	s.mu.Lock()
	c.touchLocked(s, now)
	s.mu.Unlock()
	c.created.Add(1)
	return id
}

func (c *FetchSessionCache) newIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32-1) + 1
		if _, used := c.sessions[id]; !used {
			return id
		}
	}
}

// touchLocked records a use of s at now (FetchSessionCache.touch): its
// last use, its size as the cache counts it, and whether it may be
// evicted. Under c.mu and s.mu.
func (c *FetchSessionCache) touchLocked(s *fetchSession, now time.Time) {
	s.lastUsed = now
	if s.cachedSize > 0 {
		c.numPartitions -= s.cachedSize
	}
	s.cachedSize = len(s.parts)
	c.numPartitions += s.cachedSize
	old := now.Sub(s.created) > c.evictAfter
	s.evictPriv = !s.privileged || old
	s.evictAll = old
}

// evictKeyLess orders sessions by value (EvictableKey): a follower's above
// a consumer's, then more partitions above fewer, then by id.
func evictKeyLess(privA bool, sizeA int, idA int32, privB bool, sizeB int, idB int32) bool {
	if privA != privB {
		return !privA
	}
	if sizeA != sizeB {
		return sizeA < sizeB
	}
	return idA < idB
}

// tryEvictLocked makes room for a new session of size partitions
// (FetchSessionCache.tryEvict): the least recently used session goes if it
// has been unused for evictAfter; otherwise the least valuable session
// the newcomer may evict goes if it is worth no more than the newcomer.
func (c *FetchSessionCache) tryEvictLocked(follower bool, size int, now time.Time) bool {
	var lru, cheapest *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if (follower && s.evictPriv) || (!follower && s.evictAll) {
			if cheapest == nil || evictKeyLess(s.privileged, s.cachedSize, s.id, cheapest.privileged, cheapest.cachedSize, cheapest.id) {
				cheapest = s
			}
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.evictAfter:
		c.removeLocked(lru)
	case cheapest == nil:
		return false
	case evictKeyLess(follower, size, 0, cheapest.privileged, cheapest.cachedSize, cheapest.id):
		return false
	default:
		c.removeLocked(cheapest)
	}
	c.evicted.Add(1)
	return true
}

func (c *FetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

func (c *FetchSessionCache) removeLocked(s *fetchSession) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	if s.cachedSize > 0 {
		c.numPartitions -= s.cachedSize
	}
	if s.watch != nil {
		s.watch.Close()
	}
}
