package share

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
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
