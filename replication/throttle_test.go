package replication

import (
	"testing"
	"time"
)

// The follower throttle's budget, by a clock the test sets.
func TestFollowerThrottleBudgetIsBytesPerSecondPaidBackByWaiting(t *testing.T) {
	var q replicaThrottle
	q.setRate(1000)
	t0 := time.Unix(100, 0)
	if w := q.wait(t0); w != 0 {
		t.Fatalf("a fresh budget waits %v", w)
	}
	// One fetch may overdraw: 3000 bytes against 1000 leaves 2000 to pay
	// back, two seconds at 1000 bytes per second.
	q.record(t0, 3000)
	if w := q.wait(t0); w != 2*time.Second {
		t.Fatalf("wait %v after overdrawing by 2000 bytes at 1000/s, want 2s", w)
	}
	if w := q.wait(t0.Add(1500 * time.Millisecond)); w != 500*time.Millisecond {
		t.Fatalf("wait %v 1.5 s later, want 0.5s", w)
	}
	if w := q.wait(t0.Add(2 * time.Second)); w != 0 {
		t.Fatalf("wait %v once paid back", w)
	}
	// Idle time earns at most one second's bytes.
	if w := q.wait(t0.Add(time.Hour)); w != 0 {
		t.Fatal("idle budget")
	}
	q.record(t0.Add(time.Hour), 2000)
	if w := q.wait(t0.Add(time.Hour)); w != time.Second {
		t.Fatalf("wait %v after an idle hour and 2000 bytes, want 1s (the budget holds one second)", w)
	}
}

func TestFollowerThrottleUnlimitedAndZeroRates(t *testing.T) {
	var q replicaThrottle
	q.setRate(-1)
	q.record(time.Unix(1, 0), 1<<30)
	if w := q.wait(time.Unix(1, 0)); w != 0 {
		t.Fatalf("unlimited waits %v", w)
	}
	q.setRate(0)
	if w := q.wait(time.Unix(1, 0)); w <= 0 {
		t.Fatal("rate 0 lets a throttled fetch through")
	}
}

func TestThrottledReplicasNamePartitionAndBroker(t *testing.T) {
	for _, tc := range []struct {
		value  string
		p, b   int32
		expect bool
	}{
		{"*", 4, 9, true},
		{"", 0, 1, false},
		{"0:1,1:2", 1, 2, true},
		{"0:1, 1:2", 0, 1, true},
		{"0:1,1:2", 0, 2, false},
		{"garbage", 0, 1, false},
	} {
		if got := throttledReplica(tc.value, tc.p, tc.b); got != tc.expect {
			t.Errorf("throttledReplica(%q, %d, %d) = %v, want %v", tc.value, tc.p, tc.b, got, tc.expect)
		}
	}
}
