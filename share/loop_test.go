package share

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/internal/testkit/fake"
)

// A tick pending when the loop is stopped is not run: select picks among
// ready cases at random, so without the check half of these runs would
// call fn after Close.
func TestLoopStoppedWithATickPendingDoesNotRunIt(t *testing.T) {
	for i := 0; i < 100; i++ {
		tick := make(chan time.Time, 1)
		tick <- time.Time{}
		l := newLoop()
		close(l.stop)
		called := false
		l.run(tick, func() { called = true })
		if called {
			t.Fatalf("run %d: fn called after the loop was stopped", i)
		}
	}
}

// blockedWriter is a controller that does not answer: UpdateShareState
// returns only when its context ends, and reports how it ended.
type blockedWriter struct {
	entered chan struct{}
	ended   chan error
}

func (w *blockedWriter) UpdateShareState(ctx context.Context, _ cluster.ShareChange) error {
	close(w.entered)
	<-ctx.Done()
	w.ended <- ctx.Err()
	return ctx.Err()
}

// Close cancels a checkpoint waiting on the controller rather than
// leaving it to its timeout, so a broker shutting down does not wait for it.
func TestManagerCloseCancelsACheckpointUnderWay(t *testing.T) {
	meta := newFakeMeta(map[string]string{"share.auto.offset.reset": "earliest"})
	log := fake.NewLog()
	appendRecords(log, 4, false)
	cfg := DefaultConfig()
	cfg.CheckpointInterval = time.Hour // the test calls checkpoint itself
	clk := &clock{}
	clk.ms.Store(1_000_000)
	m := NewManager(cfg, meta, log, zerolog.Nop(), WithClock(clk.now))
	if _, err := fetch(t, m, "a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(t, m, "a", 1, PartitionAcks{TP: tp0, Batches: accept(0, 2)}); err != nil {
		t.Fatal(err)
	}
	w := &blockedWriter{entered: make(chan struct{}), ended: make(chan error, 1)}
	m.writer = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.checkpoint()
	}()
	<-w.entered
	m.Close()
	if err := <-w.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("checkpoint's context ended with %v, want it cancelled by Close", err)
	}
	<-done
}

// A loop whose next call would have nothing to do stops ticking after the
// call, and ticks again once woken; a wake while it ticks changes nothing.
func TestLoopIdleSleepsUntilWoken(t *testing.T) {
	tick := make(chan time.Time)
	l := newLoop()
	var idle atomic.Bool
	idle.Store(true)
	var pauses, resumes atomic.Int32
	l.idle = idle.Load
	l.pause = func() { pauses.Add(1) }
	l.resume = func() { resumes.Add(1) }
	calls := make(chan struct{}, 10)
	go l.run(tick, func() { calls <- struct{}{} })
	defer l.Close()
	tick <- time.Time{}
	<-calls
	testkit.Eventually(t, 10*time.Second, func() error {
		if !l.sleeping.Load() || pauses.Load() != 1 {
			return fmt.Errorf("idle loop not sleeping: %d pauses", pauses.Load())
		}
		return nil
	})
	idle.Store(false)
	l.Wake()
	testkit.Eventually(t, 10*time.Second, func() error {
		if l.sleeping.Load() || resumes.Load() != 1 {
			return fmt.Errorf("woken loop not ticking: %d resumes", resumes.Load())
		}
		return nil
	})
	tick <- time.Time{}
	<-calls
	l.Wake() // while ticking: nothing to resume
	tick <- time.Time{}
	<-calls
	if pauses.Load() != 1 || resumes.Load() != 1 {
		t.Fatalf("%d pauses, %d resumes; want 1 and 1", pauses.Load(), resumes.Load())
	}
}

// The manager's sweep sleeps while no share partition is held, and the
// first one shared wakes it: a record lock still expires when due, by the
// manager's clock, and a parked fetch of another member gets the record.
func TestManagerExpiresLocksAfterSweepSleptWhileIdle(t *testing.T) {
	m, log, _, clk := newTestManager(t, map[string]string{"share.auto.offset.reset": "earliest"})
	appendRecords(log, 3, false)
	testkit.Eventually(t, 10*time.Second, func() error {
		if !m.sweeper.sleeping.Load() {
			return errors.New("the sweep of a manager holding no share partition still ticks")
		}
		return nil
	})
	if got, err := fetch(t, m, "a", 0); err != nil || len(got) != 1 {
		t.Fatalf("member a's fetch: %+v %v", got, err)
	}
	clk.ms.Add(DefaultConfig().RecordLockDuration.Milliseconds() + 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := m.Fetch(ctx, FetchRequest{Group: "g", Member: "b", Partitions: []TP{tp0}, MaxRecords: 10, MaxWait: time.Minute})
	if err != nil || len(res) != 1 || len(res[0].Acquired) != 1 || res[0].Acquired[0].First != 0 {
		t.Fatalf("member b's fetch after a's locks expired: %+v %v", res, err)
	}
}
