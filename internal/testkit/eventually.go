package testkit

import (
	"testing"
	"time"
)

// Eventually calls fn until it returns nil, failing the test with fn's last
// error once timeout has passed. It is for conditions the code under test
// offers no signal for (another process's state, a metadata image that
// converges); where the code closes a channel, wait on that instead. Only
// call it from the test's own goroutine.
func Eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	if err := Poll(timeout, fn); err != nil {
		t.Fatalf("condition not met within %v: %v", timeout, err)
	}
}

// Poll is Eventually without the test, for goroutines other than the
// test's own: it returns fn's last error if timeout passed first. It
// checks after 5 ms, then backs off to every 50 ms.
func Poll(timeout time.Duration, fn func() error) error {
	return poll(timeout, 5*time.Millisecond, 50*time.Millisecond, fn)
}

// PollEvery is Poll checking every interval, for a condition that holds
// only for a short while.
func PollEvery(interval, timeout time.Duration, fn func() error) error {
	return poll(timeout, interval, interval, fn)
}

func poll(timeout, first, most time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	wait := first
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, most)
	}
}
