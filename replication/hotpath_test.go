package replication_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gokafka/gokafka/internal/testkit"
	"github.com/gokafka/gokafka/replication"
)

// acksAllRoundTripAllocs bounds the allocations of one acks=all produce
// at RF=3 in the in-process cluster: the leader's append and wait, and
// both followers' fetch round trips (request encoded, served by the
// leader's handlers and answered, response decoded and appended). It was
// 153 when every round trip made its own deadline context and timer, a
// parked fetch its waiter, channel and timer, every request budget a new
// channel and every HW move a new channel nobody waited on; 104 since.
const acksAllRoundTripAllocs = 115

// The replication round trip of a small acks=all produce allocates a
// bounded, small number of objects: at RF=3 with small batches the
// brokers' cost is per request, and garbage is part of it.
func TestCluster_AcksAllRoundTripAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	c.waitISR("t", 1, 2, 3)
	l := c.leader("t")
	for range 50 {
		l.mustProduce("t", "warm-up", -1)
	}
	batch := recordBatch(string(make([]byte, 200)))
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := l.rm.Produce(context.Background(), tp("t", 0), batch, -1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > acksAllRoundTripAllocs {
		t.Fatalf("an acks=all produce at RF=3 allocates %.0f objects across the brokers, want at most %d", allocs, acksAllRoundTripAllocs)
	}
	c.waitISR("t", 1, 2, 3)
}

// A fetch waiter is reused from one fetch to the next (with its channel
// and timer): a fetch after one that waited out its MaxWait waits its own
// MaxWait again, and is still woken early by an append.
func TestFetchWaitsAfterAnEarlierFetchTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rm := newFakeStack(t, imageWith(1, 0, 1))
		p := tp("t", 0)
		fetchAt := func(off int64, wait time.Duration) replication.FetchResult {
			return rm.Fetch(context.Background(), replication.FetchParams{
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: wait,
				Partitions: []replication.FetchPartition{{TP: p, Offset: off, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			})[0]
		}
		for round := range 3 {
			done := make(chan replication.FetchResult, 1)
			go func() { done <- fetchAt(0, time.Second) }()
			synctest.Wait()
			select {
			case r := <-done:
				t.Fatalf("round %d: fetch of an empty log returned before its MaxWait: %+v", round, r)
			default:
			}
			time.Sleep(time.Second) // the bubble's clock
			synctest.Wait()
			select {
			case r := <-done:
				if r.Err != nil || len(r.Records) != 0 {
					t.Fatalf("round %d: fetch of an empty log: %+v", round, r)
				}
			default:
				t.Fatalf("round %d: fetch still parked after its MaxWait", round)
			}
		}
		done := make(chan replication.FetchResult, 1)
		go func() { done <- fetchAt(0, time.Hour) }()
		synctest.Wait()
		select {
		case r := <-done:
			t.Fatalf("fetch returned before anything was appended: %+v", r)
		default:
		}
		mustProduce(t, rm, p, testkit.SimpleBatch(2, 1000, 5))
		synctest.Wait()
		select {
		case r := <-done:
			if hs := headers(t, r.Records); len(hs) != 1 || hs[0].NumRecords != 2 {
				t.Fatalf("woken fetch returned %+v", hs)
			}
		default:
			t.Fatal("an append did not wake the parked fetch")
		}
	})
}

// HWMoved hands out a channel that the next move of the high watermark
// closes, and a fresh one after that.
func TestHWMovedIsClosedByTheNextMove(t *testing.T) {
	_, rm := newFakeStack(t, imageWith(1, 0, 1))
	p := tp("t", 0)
	mustProduce(t, rm, p, testkit.SimpleBatch(1, 1000, 5)) // a move nobody waits for
	moved := rm.HWMoved(p)
	select {
	case <-moved:
		t.Fatal("HWMoved closed before the high watermark moved")
	default:
	}
	if again := rm.HWMoved(p); again != moved {
		t.Fatal("two asks before a move got different channels")
	}
	mustProduce(t, rm, p, testkit.SimpleBatch(1, 2000, 5))
	select {
	case <-moved:
	default:
		t.Fatal("a produce moved the high watermark but HWMoved stayed open")
	}
	next := rm.HWMoved(p)
	select {
	case <-next:
		t.Fatal("HWMoved after a move is already closed")
	default:
	}
}
