package cluster

import (
	"context"
	"sync"
	"testing"
	"time"
)

// returns runs fn and fails the test if it has not returned after a
// minute: it detects a call blocked for good, it measures nothing.
func returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s is blocked", what)
	}
}

// blockingWatcher blocks on the first image holding topic until released,
// and records every call.
type blockingWatcher struct {
	topic   string
	entered chan struct{}
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	calls [][2]*Image
	moved chan struct{}
}

func newBlockingWatcher(topic string) *blockingWatcher {
	return &blockingWatcher{topic: topic, entered: make(chan struct{}), release: make(chan struct{}), moved: make(chan struct{}, 100)}
}

func (w *blockingWatcher) fn(prev, next *Image) {
	if next.Topic(w.topic) != nil {
		w.once.Do(func() {
			close(w.entered)
			<-w.release
		})
	}
	w.mu.Lock()
	w.calls = append(w.calls, [2]*Image{prev, next})
	w.mu.Unlock()
	w.moved <- struct{}{}
}

// waitFor waits for a call whose next image satisfies ok and returns it.
func (w *blockingWatcher) waitFor(t *testing.T, ok func(prev, next *Image) bool) [2]*Image {
	t.Helper()
	for {
		w.mu.Lock()
		for _, c := range w.calls {
			if ok(c[0], c[1]) {
				w.mu.Unlock()
				return c
			}
		}
		w.mu.Unlock()
		select {
		case <-w.moved:
		case <-time.After(time.Minute):
			t.Fatal("no image delivered to the watcher")
		}
	}
}

func TestCreateTopicsAnswersWhileAWatcherStillAppliesTheImage(t *testing.T) {
	c := newController(t)
	w := newBlockingWatcher("slow")
	c.Watch(w.fn)
	t.Cleanup(func() { close(w.release) })
	// The watcher stands for a broker creating the logs of a big topic:
	// it has not finished with the image, yet the quorum goes on.
	returns(t, "CreateTopics with a busy watcher", func() { mustCreate(t, c, TopicSpec{Name: "slow", NumPartitions: 1, ReplicationFactor: 1}) })
	<-w.entered
	returns(t, "a later metadata change", func() { mustCreate(t, c, TopicSpec{Name: "later", NumPartitions: 1, ReplicationFactor: 1}) })
	if c.Image().Topic("later") == nil {
		t.Fatal("the later change is not in the image")
	}
}

func TestWatcherBusyWithAnImageIsGivenTheLatestOneNext(t *testing.T) {
	c := newController(t)
	w := newBlockingWatcher("slow")
	c.Watch(w.fn)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(w.release) }) }
	t.Cleanup(release)
	returns(t, "CreateTopics with a busy watcher", func() { mustCreate(t, c, TopicSpec{Name: "slow", NumPartitions: 1, ReplicationFactor: 1}) })
	<-w.entered
	for _, name := range []string{"a", "b", "c"} {
		returns(t, "creating "+name, func() { mustCreate(t, c, TopicSpec{Name: name, NumPartitions: 1, ReplicationFactor: 1}) })
	}
	latest := c.Image()
	release()
	w.waitFor(t, func(_, next *Image) bool { return next.Offset >= latest.Offset })
	w.mu.Lock()
	defer w.mu.Unlock()
	var after [][2]*Image
	for i, call := range w.calls {
		if call[1].Topic("slow") != nil {
			after = w.calls[i:]
			break
		}
	}
	// The image with "slow", then one with all three: the images
	// published in between were skipped.
	if len(after) != 2 {
		t.Fatalf("%d images delivered from the busy one on, want 2 (coalesced)", len(after))
	}
	prev, next := after[1][0], after[1][1]
	if prev != after[0][1] {
		t.Fatal("prev is not the image the watcher was given last")
	}
	for _, name := range []string{"a", "b", "c"} {
		if prev.Topic(name) != nil || next.Topic(name) == nil {
			t.Fatalf("topic %s: in prev %v, in next %v", name, prev.Topic(name) != nil, next.Topic(name) != nil)
		}
	}
}

func TestWatcherPanicDoesNotStopLaterImages(t *testing.T) {
	c := newController(t)
	c.Watch(func(_, next *Image) {
		if next.Topic("boom") != nil && next.Topic("after") == nil {
			panic("watcher failure")
		}
	})
	w := newBlockingWatcher("never")
	c.Watch(w.fn)
	mustCreate(t, c, TopicSpec{Name: "boom", NumPartitions: 1, ReplicationFactor: 1})
	mustCreate(t, c, TopicSpec{Name: "after", NumPartitions: 1, ReplicationFactor: 1})
	w.waitFor(t, func(_, next *Image) bool { return next.Topic("after") != nil })
}

func TestWatcherRegisteredLateStartsFromTheCurrentImage(t *testing.T) {
	c := newController(t)
	mustCreate(t, c, TopicSpec{Name: "before", NumPartitions: 1, ReplicationFactor: 1})
	w := newBlockingWatcher("never")
	c.Watch(w.fn)
	seen := c.Image()
	mustCreate(t, c, TopicSpec{Name: "after", NumPartitions: 1, ReplicationFactor: 1})
	call := w.waitFor(t, func(_, next *Image) bool { return next.Topic("after") != nil })
	if call[0] == nil || call[0].Offset < seen.Offset {
		t.Fatalf("prev %v is older than the image current at registration (offset %d)", call[0], seen.Offset)
	}
}

func TestAwaitWatchersReturnsOnceEveryWatcherHasTheImage(t *testing.T) {
	c := newController(t)
	w := newBlockingWatcher("slow")
	c.Watch(w.fn)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(w.release) }) }
	t.Cleanup(release)
	mustCreate(t, c, TopicSpec{Name: "slow", NumPartitions: 1, ReplicationFactor: 1})
	target := c.Image().Offset
	<-w.entered
	seen := make(chan bool, 1)
	go func() {
		err := c.AwaitWatchers(context.Background())
		w.mu.Lock()
		defer w.mu.Unlock()
		ok := err == nil
		if ok {
			ok = false
			for _, call := range w.calls {
				ok = ok || call[1].Offset >= target
			}
		}
		seen <- ok
	}()
	release()
	select {
	case ok := <-seen:
		if !ok {
			t.Fatal("AwaitWatchers returned before the watcher had the image")
		}
	case <-time.After(time.Minute):
		t.Fatal("AwaitWatchers is blocked")
	}
}
