package handlers

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// sessionFetch sends a Fetch of the given session id and epoch, naming
// parts and forgetting forget (partitions of "t"), and returns the
// response.
func sessionFetch(t *testing.T, h *Handlers, version int16, id, epoch int32, parts []kmsg.FetchRequestTopicPartition, forget ...int32) *kmsg.FetchResponse {
	t.Helper()
	req := fetchReq(version, 1<<20, parts...)
	r := req.Body.(*kmsg.FetchRequest)
	r.SessionID, r.SessionEpoch = id, epoch
	if len(parts) == 0 {
		r.Topics = nil
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = "t", [16]byte{7}, forget
		r.ForgottenTopics = append(r.ForgottenTopics, ft)
	}
	out, err := h.fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*kmsg.FetchResponse)
}

// answered lists the partitions a response carries, with "+" for those
// carrying records.
func answered(resp *kmsg.FetchResponse) string {
	var got []string
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			s := fmt.Sprint(p.Partition)
			if len(p.RecordBatches) > 0 {
				s += "+"
			}
			got = append(got, s)
		}
	}
	slices.Sort(got)
	return fmt.Sprint(got)
}

// A full fetch (epoch 0) opens a session; an incremental fetch reads all
// of the session's partitions and answers only those with news; a
// partition added by an incremental fetch is answered once; a forgotten
// one is no longer read.
func TestFetchSessionIncrementalAnswersOnlyChangedPartitions(t *testing.T) {
	for _, v := range []int16{12, 13} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			h := limitsStack(t, Config{NodeID: 1}, 4, 1)
			fill(t, h, 0, 1, 10)
			full := sessionFetch(t, h, v, 0, 0, []kmsg.FetchRequestTopicPartition{
				fetchPartition(0, 0, 1<<20), fetchPartition(1, 0, 1<<20), fetchPartition(2, 0, 1<<20),
			})
			if full.ErrorCode != 0 || full.SessionID == 0 {
				t.Fatalf("full fetch: error %d session %d, want a new session", full.ErrorCode, full.SessionID)
			}
			if got := answered(full); got != "[0+ 1 2]" {
				t.Fatalf("full fetch answered %s", got)
			}
			id := full.SessionID

			// Partition 0 moves on past its record: nothing is new.
			inc := sessionFetch(t, h, v, id, 1, []kmsg.FetchRequestTopicPartition{fetchPartition(0, 1, 1<<20)})
			if inc.ErrorCode != 0 || inc.SessionID != id || answered(inc) != "[]" {
				t.Fatalf("idle incremental: error %d session %d answered %s, want nothing in session %d", inc.ErrorCode, inc.SessionID, answered(inc), id)
			}
			// Records on partition 1, which the request does not name.
			fill(t, h, 1, 1, 10)
			inc = sessionFetch(t, h, v, id, 2, nil)
			if got := answered(inc); got != "[1+]" {
				t.Fatalf("after a produce to 1: answered %s, want [1+]", got)
			}
			// Partition 3 joins, partition 1 is forgotten; new records on
			// 1 are no longer read.
			fill(t, h, 1, 1, 10)
			inc = sessionFetch(t, h, v, id, 3, []kmsg.FetchRequestTopicPartition{fetchPartition(3, 0, 1<<20)}, 1)
			if got := answered(inc); got != "[3]" {
				t.Fatalf("adding 3, forgetting 1: answered %s, want [3]", got)
			}
			inc = sessionFetch(t, h, v, id, 4, nil)
			if got := answered(inc); got != "[]" {
				t.Fatalf("after forgetting 1: answered %s, want []", got)
			}
			if st := h.FetchSessions().Stats(); st.Sessions != 1 || st.Partitions != 3 || st.Incremental != 4 {
				t.Fatalf("stats %+v, want 1 session of 3 partitions after 4 incremental fetches", st)
			}
			// Forgetting every partition closes the session.
			inc = sessionFetch(t, h, v, id, 5, nil, 0, 2, 3)
			if inc.ErrorCode != 0 || inc.SessionID != 0 {
				t.Fatalf("emptied session: error %d session %d, want a sessionless answer", inc.ErrorCode, inc.SessionID)
			}
			if st := h.FetchSessions().Stats(); st.Sessions != 0 {
				t.Fatalf("emptied session still cached: %+v", st)
			}
		})
	}
}

// The errors Kafka answers a session fetch with: an unknown session id, an
// epoch other than the session's, a version that disagrees with the
// session on topic ids; and a fetch with epoch -1 closes its session.
func TestFetchSessionErrors(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1}, 2, 1)
	parts := []kmsg.FetchRequestTopicPartition{fetchPartition(0, 0, 1<<20)}
	id := sessionFetch(t, h, 12, 0, 0, parts).SessionID
	if id == 0 {
		t.Fatal("no session opened")
	}
	check := func(what string, resp *kmsg.FetchResponse, want *kerr.Error) {
		t.Helper()
		if resp.ErrorCode != want.Code || len(resp.Topics) != 0 || resp.SessionID != 0 {
			t.Fatalf("%s: error %v, %d topics, session %d; want %v alone", what, kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics), resp.SessionID, want)
		}
	}
	check("unknown session", sessionFetch(t, h, 12, id+1, 1, nil), kerr.FetchSessionIDNotFound)
	check("epoch ahead", sessionFetch(t, h, 12, id, 2, nil), kerr.InvalidFetchSessionEpoch)
	check("v13 fetch in a v12 session", sessionFetch(t, h, 13, id, 1, nil), kerr.FetchSessionTopicIDError)
	if resp := sessionFetch(t, h, 12, id, 1, nil); resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("epoch 1: error %d session %d", resp.ErrorCode, resp.SessionID)
	}
	check("epoch replayed", sessionFetch(t, h, 12, id, 1, nil), kerr.InvalidFetchSessionEpoch)
	// FINAL closes the session and answers as a full sessionless fetch.
	if resp := sessionFetch(t, h, 12, id, -1, parts); resp.ErrorCode != 0 || resp.SessionID != 0 || answered(resp) != "[0]" {
		t.Fatalf("final fetch: error %d session %d answered %s", resp.ErrorCode, resp.SessionID, answered(resp))
	}
	check("closed session", sessionFetch(t, h, 12, id, 2, nil), kerr.FetchSessionIDNotFound)
	// A full fetch naming a session closes it and opens another.
	id2 := sessionFetch(t, h, 12, 0, 0, parts).SessionID
	id3 := sessionFetch(t, h, 12, id2, 0, parts).SessionID
	if id3 == 0 || id3 == id2 {
		t.Fatalf("full fetch in session %d answered session %d, want a new one", id2, id3)
	}
	check("replaced session", sessionFetch(t, h, 12, id2, 1, nil), kerr.FetchSessionIDNotFound)
	if st := h.FetchSessions().Stats(); st.Sessions != 1 {
		t.Fatalf("%d sessions cached, want 1", st.Sessions)
	}
}

// A session continues on any connection: sessions are the broker's, not a
// connection's.
func TestFetchSessionIsNotBoundToAConnection(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1}, 1, 1)
	req := fetchReq(12, 1<<20, fetchPartition(0, 0, 1<<20))
	r := req.Body.(*kmsg.FetchRequest)
	r.SessionEpoch = 0
	req.Conn = &protocol.ConnInfo{}
	out, _ := h.fetch(context.Background(), req)
	id := out.(*kmsg.FetchResponse).SessionID
	req2 := fetchReq(12, 1<<20)
	r2 := req2.Body.(*kmsg.FetchRequest)
	r2.Topics, r2.SessionID, r2.SessionEpoch = nil, id, 1
	req2.Conn = &protocol.ConnInfo{}
	out, _ = h.fetch(context.Background(), req2)
	if resp := out.(*kmsg.FetchResponse); resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("session %d on another connection: error %d session %d", id, resp.ErrorCode, resp.SessionID)
	}
}

// max.incremental.fetch.session.cache.slots bounds the sessions; with no
// slots no session is opened and clients fetch in full.
func TestFetchSessionCacheSlotsBoundSessions(t *testing.T) {
	h := limitsStack(t, Config{NodeID: 1, FetchSessionCacheSlots: 2}, 1, 1)
	parts := []kmsg.FetchRequestTopicPartition{fetchPartition(0, 0, 1<<20)}
	for range 5 {
		sessionFetch(t, h, 12, 0, 0, parts)
	}
	if st := h.FetchSessions().Stats(); st.Sessions != 2 || st.Created != 2 {
		t.Fatalf("stats %+v, want 2 sessions created", st)
	}
	h = limitsStack(t, Config{NodeID: 1, FetchSessionCacheSlots: -1}, 1, 1)
	if resp := sessionFetch(t, h, 12, 0, 0, parts); resp.SessionID != 0 || answered(resp) != "[0]" {
		t.Fatalf("no slots: session %d answered %s, want a sessionless full answer", resp.SessionID, answered(resp))
	}
}

// fakeClock is a settable clock for the session cache.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = time.Unix(1e9, 0).Add(d)
}

// openTestSession opens a session of n partitions of "t" by v12 names.
func openTestSession(c *FetchSessionCache, follower bool, n int) int32 {
	entries := make([]fetchEntry, n)
	for i := range entries {
		fp := fetchPartition(int32(i), 0, 1)
		entries[i] = fetchEntry{topic: "t", part: fp.Partition, partFetch: partFetchOf(&fp)}
	}
	return c.createSession(follower, false, entries, make([]fetchAnswer, n), nil)
}

// touchTestSession sends an incremental fetch naming nothing in session id.
func touchTestSession(t *testing.T, c *FetchSessionCache, id int32) {
	t.Helper()
	c.mu.Lock()
	epoch := c.sessions[id].epoch
	c.mu.Unlock()
	r := kmsg.NewPtrFetchRequest()
	r.SessionID, r.SessionEpoch = id, epoch
	fc, code := c.newContext(12, r, false)
	if code != 0 {
		t.Fatalf("touching session %d: %v", id, kerr.ErrorForCode(code))
	}
	if _, ok := fc.respond(c, make([]fetchAnswer, len(fc.entries))); !ok {
		t.Fatalf("touching session %d: epoch moved", id)
	}
}

func cached(c *FetchSessionCache, ids ...int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var have []string
	for _, id := range ids {
		_, ok := c.sessions[id]
		have = append(have, fmt.Sprint(ok))
	}
	return fmt.Sprint(have)
}

// Eviction as Kafka's FetchSessionCache does it: a full cache takes a new
// session only by evicting a stale one (unused for 120 s) or a less
// valuable evictable one, where followers' sessions are worth more than
// consumers' and larger more than smaller, and a session is evictable by
// a follower's new session unless it is a follower's, by anyone's once it
// is 120 s old.
func TestFetchSessionCacheEviction(t *testing.T) {
	clk := &fakeClock{}
	clk.set(0)
	c := NewFetchSessionCache(2, clk.now)
	a := openTestSession(c, false, 5)
	b := openTestSession(c, false, 10)
	clk.set(10 * time.Second)
	if id := openTestSession(c, false, 20); id != 0 {
		t.Fatal("a consumer's session evicted a young consumer session")
	}
	f := openTestSession(c, true, 1)
	if f == 0 || cached(c, a, b, f) != "[false true true]" {
		t.Fatalf("follower's session %d: cached a, b, f = %s, want the smaller consumer session a evicted", f, cached(c, a, b, f))
	}
	clk.set(20 * time.Second)
	if id := openTestSession(c, false, 100); id != 0 {
		t.Fatal("a consumer's session evicted sessions younger than 120 s")
	}
	// Used at 130 s, both are now old enough for anyone to evict, and
	// recently used.
	clk.set(130 * time.Second)
	touchTestSession(t, c, b)
	touchTestSession(t, c, f)
	clk.set(131 * time.Second)
	if id := openTestSession(c, false, 5); id != 0 {
		t.Fatal("a consumer session of 5 evicted one of 10")
	}
	i := openTestSession(c, false, 50)
	if i == 0 || cached(c, b, f, i) != "[false true true]" {
		t.Fatalf("consumer session of 50: cached b, f, i = %s, want the consumer session b (cheaper than the follower's) evicted", cached(c, b, f, i))
	}
	// Unused for more than 120 s, the least recently used goes first,
	// whatever its value.
	clk.set(300 * time.Second)
	touchTestSession(t, c, i)
	j := openTestSession(c, false, 1)
	if j == 0 || cached(c, f, i, j) != "[false true true]" {
		t.Fatalf("after 170 s unused: cached f, i, j = %s, want the stale follower session f evicted", cached(c, f, i, j))
	}
	if st := c.Stats(); st.Evicted != 3 || st.Sessions != 2 || st.Partitions != 51 {
		t.Fatalf("stats %+v, want 3 evicted, 2 sessions of 51 partitions", st)
	}
}

// followerFetch is sessionFetch from follower 2 (v12: Fetch's ReplicaID).
func followerFetch(t *testing.T, h *Handlers, id, epoch int32, parts ...kmsg.FetchRequestTopicPartition) *kmsg.FetchResponse {
	t.Helper()
	req := fetchReq(12, 1<<20, parts...)
	r := req.Body.(*kmsg.FetchRequest)
	r.ReplicaID, r.SessionID, r.SessionEpoch = 2, id, epoch
	if len(parts) == 0 {
		r.Topics = nil
	}
	out, err := h.fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("follower fetch: error %d", resp.ErrorCode)
	}
	return resp
}

// A follower's session fetch reads only the partitions that changed since
// its previous fetch, or that it names: an idle round over many
// partitions reads none of them (so records no position with the ISR
// state machine and registers no waiter per partition), and a record
// produced to one partition among them is still answered by the next
// fetch, as is the high watermark the follower's fetch of it moves.
func TestFollowerSessionReadsOnlyChangedPartitions(t *testing.T) {
	const n = 50
	h := limitsStack(t, Config{NodeID: 1, FollowerSessionWatch: true}, n, 1, 2)
	var all []kmsg.FetchRequestTopicPartition
	for p := range int32(n) {
		all = append(all, fetchPartition(p, 0, 1<<20))
	}
	full := followerFetch(t, h, 0, 0, all...)
	if full.SessionID == 0 {
		t.Fatal("no session opened")
	}
	id := full.SessionID
	read := func() int64 { return h.sessions.Stats().Read }
	round := func(epoch int32, want string, wantRead int64, parts ...kmsg.FetchRequestTopicPartition) *kmsg.FetchResponse {
		t.Helper()
		before := read()
		resp := followerFetch(t, h, id, epoch, parts...)
		if got := answered(resp); got != want {
			t.Fatalf("epoch %d answered %s, want %s", epoch, got, want)
		}
		if got := read() - before; got != wantRead {
			t.Fatalf("epoch %d read %d partitions, want %d", epoch, got, wantRead)
		}
		return resp
	}
	round(1, "[]", 0)
	round(2, "[]", 0)
	if _, err := h.replicas.Produce(context.Background(), partition.TopicPartition{Topic: "t", Partition: 17}, testBatch(1, 10), 1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	round(3, "[17+]", 1)
	resp := round(4, "[17]", 1, fetchPartition(17, 1, 1<<20))
	if hw := resp.Topics[0].Partitions[0].HighWatermark; hw != 1 {
		t.Fatalf("high watermark %d after the follower fetched the record, want 1", hw)
	}
	// The high watermark that fetch moved marks the partition changed
	// once more; then it is left alone.
	round(5, "[]", 1)
	round(6, "[]", 0)
}

// A session keeps, of each partition, the fetch parameters it reads with
// and the offsets it compares, by value in its map: a broker leading
// thousands of partitions holds two followers' sessions over all of them.
// Each partition used to keep a copy of the whole request partition and
// its topic (a 144-byte allocation) behind a pointer.
func TestFetchSessionPartitionHeap(t *testing.T) {
	const n = 5000
	c := NewFetchSessionCache(10, nil)
	entries := make([]fetchEntry, n)
	for i := range entries {
		fp := fetchPartition(int32(i), 100, 1<<20)
		entries[i] = fetchEntry{topicID: [16]byte{1}, part: fp.Partition, partFetch: partFetchOf(&fp)}
	}
	answers := make([]fetchAnswer, n)
	var id int32
	grown := testkit.HeapGrowth(func() {
		id = c.createSession(true, true, entries, answers, nil)
	})
	per := grown / n
	t.Logf("heap per session partition: %d bytes", per)
	// 285 bytes before, 229 since (the map's slots are 112 bytes, and a
	// map of n entries has room for up to twice as many).
	if per > 250 {
		t.Fatalf("a session keeps %d bytes a partition, want at most 250", per)
	}
	c.mu.Lock()
	s := c.sessions[id]
	c.mu.Unlock()
	if cp, ok := s.parts[fetchPartKey{id: [16]byte{1}, part: 7}]; !ok || cp.fetchOffset != 100 || cp.maxBytes != 1<<20 || cp.leaderEpoch != -1 {
		t.Fatalf("partition 7 of the session: %+v, %v", cp, ok)
	}
	runtime.KeepAlive(entries)
	runtime.KeepAlive(answers)
}

// A follower's session (one with a watch) also finds a changed partition's
// key by its name: it keeps only the topic id for that, the rest of the
// key being the partition's name and number.
func TestFollowerFetchSessionPartitionHeap(t *testing.T) {
	const n = 5000
	c := NewFetchSessionCache(10, nil)
	entries, answers := sessionOfPartitions(n, true)
	watch := (*replication.Manager)(nil).NewSessionWatch(2)
	var id int32
	grown := testkit.HeapGrowth(func() {
		id = c.createSession(true, true, entries, answers, watch)
	})
	per := grown / n
	t.Logf("heap per follower session partition: %d bytes", per)
	// 362 bytes with a pointer to a copy of the request partition and
	// full keys by name, 267 since.
	if per > 300 {
		t.Fatalf("a follower's session keeps %d bytes a partition, want at most 300", per)
	}
	c.mu.Lock()
	s := c.sessions[id]
	c.mu.Unlock()
	if k, ok := s.keyByTP(partition.TopicPartition{Topic: "t", Partition: 9}); !ok || k != (fetchPartKey{id: [16]byte{1}, part: 9}) {
		t.Fatalf("partition t-9 of the session: %+v, %v", k, ok)
	}
	runtime.KeepAlive(entries)
	runtime.KeepAlive(answers)
}

// A follower's session whose first fetches left thousands of partitions
// pending (not caught up yet) keeps none of that room once they settle.
func TestFollowerFetchSessionKeepsNoRoomAfterABurst(t *testing.T) {
	const n = 5000
	c := NewFetchSessionCache(10, nil)
	entries, answers := sessionOfPartitions(n, false)
	id := c.createSession(true, true, entries, answers, (*replication.Manager)(nil).NewSessionWatch(2))
	c.mu.Lock()
	s := c.sessions[id]
	c.mu.Unlock()
	if len(s.pending) != n {
		t.Fatalf("%d partitions pending, want %d", len(s.pending), n)
	}
	grown := testkit.HeapGrowth(func() {
		r := kmsg.NewPtrFetchRequest()
		r.SessionID, r.SessionEpoch = id, 1
		fc, code := c.newContext(13, r, true)
		if code != 0 || len(fc.entries) != n {
			t.Fatalf("incremental fetch: code %d, %d partitions to read, want all %d pending", code, len(fc.entries), n)
		}
		fc = nil
	})
	freed := -grown
	t.Logf("heap freed once the pending partitions were taken: %d bytes", freed)
	if freed < 100<<10 {
		t.Fatalf("the session still keeps the room of %d pending partitions (%d bytes freed)", n, freed)
	}
	if len(s.pending) != 0 {
		t.Fatalf("%d partitions still pending", len(s.pending))
	}
	runtime.KeepAlive(c)
	runtime.KeepAlive(entries)
	runtime.KeepAlive(answers)
}

// sessionOfPartitions is what a fetch session of n partitions of topic t
// (id 1), each read from offset 100, is created from; settled says whether
// each partition's answer found it caught up.
func sessionOfPartitions(n int, settled bool) ([]fetchEntry, []fetchAnswer) {
	entries := make([]fetchEntry, n)
	answers := make([]fetchAnswer, n)
	for i := range entries {
		fp := fetchPartition(int32(i), 100, 1<<20)
		entries[i] = fetchEntry{topicID: [16]byte{1}, part: fp.Partition, partFetch: partFetchOf(&fp)}
		answers[i] = fetchAnswer{tp: partition.TopicPartition{Topic: "t", Partition: int32(i)}, settled: settled}
	}
	return entries, answers
}
