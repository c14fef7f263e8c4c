package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gokafka/gokafka/cluster"
)

type fakeSource struct {
	mu    sync.Mutex
	st    State
	reads atomic.Int64
	watch func(prev, next *cluster.Image)
}

func (f *fakeSource) State() State {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeSource) WatchMetadata(fn func(prev, next *cluster.Image)) { f.watch = fn }

func (f *fakeSource) set(st State) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

// sse reads one page's event stream.
type sse struct {
	events chan [2]string
}

func openStream(t *testing.T, url string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	s := &sse{events: make(chan [2]string, 100)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				s.events <- [2]string{ev, strings.TrimPrefix(line, "data: ")}
			}
		}
	}()
	return s
}

// next returns the next event of kind, skipping others.
func (s *sse) next(t *testing.T, kind string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-s.events:
			if e[0] == kind {
				return e[1]
			}
		case <-deadline:
			t.Fatalf("no %q event", kind)
		}
	}
}

func TestEveryOpenPageGetsEachStateChangeAndTimelineEvent(t *testing.T) {
	src := &fakeSource{st: State{Node: 1, ClusterID: "c1"}}
	c := New(src, Options{Interval: time.Hour})
	srv := httptest.NewServer(c)
	defer srv.Close()
	defer c.Close() // first: ends the streams srv.Close waits for

	pages := []*sse{openStream(t, srv.URL), openStream(t, srv.URL), openStream(t, srv.URL)}
	for _, p := range pages {
		p.next(t, "timeline")
		if got := p.next(t, "state"); !strings.Contains(got, `"cluster_id":"c1"`) {
			t.Fatalf("first state %s", got)
		}
	}

	// A metadata change: the follower 3 leaves the ISR. Every page gets
	// the event and the new state, sampled once for all of them.
	src.set(State{Node: 1, ClusterID: "c2"})
	prev := image(map[int32]bool{}, part(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}))
	next := image(map[int32]bool{}, part(1, 1, []int32{1, 2, 3}, []int32{1, 2}))
	src.watch(prev, next)
	for _, p := range pages {
		if got := p.next(t, "events"); !strings.Contains(got, `"kind":"isr_shrink"`) || !strings.Contains(got, "replica.lag.time.max.ms") {
			t.Fatalf("events %s", got)
		}
		if got := p.next(t, "state"); !strings.Contains(got, `"cluster_id":"c2"`) {
			t.Fatalf("state after the change %s", got)
		}
	}

	// A page opened later gets the history first.
	late := openStream(t, srv.URL)
	if got := late.next(t, "timeline"); !strings.Contains(got, "isr_shrink") {
		t.Fatalf("history %s", got)
	}
}

func TestNoPageOpenNoRead(t *testing.T) {
	src := &fakeSource{}
	c := New(src, Options{Interval: time.Millisecond})
	src.watch(image(nil), image(nil)) // a kick with nobody listening
	c.Close()
	if n := src.reads.Load(); n != 0 {
		t.Fatalf("the source was read %d times with no page open", n)
	}
}

func TestPageAndAssetsAreServed(t *testing.T) {
	c := New(&fakeSource{}, Options{})
	defer c.Close()
	srv := httptest.NewServer(c)
	defer srv.Close()
	for path, want := range map[string]string{"/": "<title>gokafka console</title>", "/app.js": "EventSource", "/style.css": ".replica"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(b.String(), want) {
			t.Errorf("%s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}

func image(fenced map[int32]bool, parts ...cluster.PartitionInfo) *cluster.Image {
	im := &cluster.Image{ControllerID: 1, Brokers: map[int32]cluster.BrokerInfo{}, Topics: map[string]*cluster.TopicInfo{}}
	for id := int32(1); id <= 3; id++ {
		im.Brokers[id] = cluster.BrokerInfo{NodeID: id, Fenced: fenced[id], Incarnation: "x"}
	}
	if len(parts) > 0 {
		im.Topics["t"] = &cluster.TopicInfo{Name: "t", ID: cluster.TopicID{1}, Partitions: parts}
	}
	return im
}

func part(leader, epoch int32, replicas, isr []int32) cluster.PartitionInfo {
	return cluster.PartitionInfo{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: replicas, ISR: isr}
}

func TestDiffGivesEachChangeItsReason(t *testing.T) {
	all := []int32{1, 2, 3}
	for _, tc := range []struct {
		name       string
		prev, next *cluster.Image
		want       []string // kind: reason fragment
	}{
		{"follower fell behind", image(nil, part(1, 1, all, all)), image(nil, part(1, 1, all, []int32{1, 2})),
			[]string{"isr_shrink: 3 fell behind the leader"}},
		{"follower caught up", image(nil, part(1, 1, all, []int32{1, 2})), image(nil, part(1, 1, all, all)),
			[]string{"isr_expand: [3] caught up to the high watermark"}},
		{"leader fenced", image(nil, part(1, 1, all, all)), image(map[int32]bool{1: true}, part(2, 2, all, []int32{2, 3})),
			[]string{"broker_fenced: session expired", "leader_election: broker 1 fenced (session expired or controlled shutdown); 2 elected from the ISR",
				"isr_shrink: broker 1 fenced"}},
		{"offline partition back", image(map[int32]bool{1: true, 2: true, 3: true}, part(-1, 2, all, []int32{1})),
			image(map[int32]bool{2: true, 3: true}, part(1, 3, all, []int32{1})),
			[]string{"broker_unfenced: heartbeats again", "leader_election: partition was offline; 1 elected from the ISR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := Diff(tc.prev, tc.next)
			var got []string
			for _, e := range evs {
				got = append(got, e.Kind+": "+e.Reason)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("event %d: %q, want it to start with %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// However many clients ask /api/state, the source is read at most once per
// interval for them.
func TestStateRequestsShareOneReadPerInterval(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	src := &fakeSource{st: State{ClusterID: "c"}}
	c := New(src, Options{Interval: time.Second, Now: clock})
	srv := httptest.NewServer(c)
	defer srv.Close()
	defer c.Close()
	get := func() {
		resp, err := http.Get(srv.URL + "/api/state")
		if err != nil {
			t.Error(err)
			return
		}
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if !strings.Contains(b.String(), `"cluster_id":"c"`) {
			t.Errorf("state %q", b.String())
		}
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); get() }()
	}
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("10 requests within one interval read the source %d times, want 1", n)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	get()
	get()
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("after the interval: %d reads, want 2", n)
	}
}
