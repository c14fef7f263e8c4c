package testkit

import (
	"testing"
	"time"
)

// Eventually calls fn until it returns nil, failing the test with fn's last
// error once timeout has passed. It is for conditions the code under test
// offers no signal for (another process's state, a metadata image that
// converges); where the code closes a channel, wait on that instead.
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
	deadline := time.Now().Add(timeout)
	wait := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}
