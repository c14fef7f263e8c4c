package replication_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gokafka/gokafka/replication"
)

func TestWaitAny(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		for n := 1; n <= 3; n++ {
			for closed := range n {
				waits := make([]<-chan struct{}, n)
				chans := make([]chan struct{}, n)
				for i := range chans {
					chans[i] = make(chan struct{})
					waits[i] = chans[i]
				}
				go func() {
					time.Sleep(time.Millisecond)
					close(chans[closed])
				}()
				if !replication.WaitAny(ctx, time.After(time.Second), waits) {
					t.Fatalf("%d channels, #%d closed: want true", n, closed)
				}
			}
			waits := make([]<-chan struct{}, n)
			for i := range waits {
				waits[i] = make(chan struct{})
			}
			if replication.WaitAny(ctx, time.After(time.Second), waits) {
				t.Fatalf("%d channels, none closed: want false at the deadline", n)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if replication.WaitAny(cctx, nil, waits) {
				t.Fatalf("%d channels, ctx done: want false", n)
			}
		}
		if replication.WaitAny(ctx, time.After(time.Second), nil) {
			t.Fatal("no channels: want false at the deadline")
		}
		// synctest.Test fails if a goroutine started by WaitAny outlives it.
	})
}

// WaitAny over many channels starts no goroutine per channel.
func TestWaitAnyStartsNoGoroutinePerChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chans := make([]chan struct{}, 50)
		waits := make([]<-chan struct{}, len(chans))
		for i := range chans {
			chans[i] = make(chan struct{})
			waits[i] = chans[i]
		}
		idle := runtime.NumGoroutine()
		woke := make(chan bool, 1)
		go func() { woke <- replication.WaitAny(context.Background(), nil, waits) }()
		synctest.Wait()
		if n := runtime.NumGoroutine() - idle; n > 1 {
			t.Fatalf("waiting on %d channels runs %d goroutines, want 1", len(waits), n)
		}
		close(chans[31])
		if !<-woke {
			t.Fatal("closing one channel did not end the wait")
		}
	})
}
