package share

import "time"

// loop calls a function every interval on its own goroutine until Close:
// the coordinator's session expiry and the manager's sweep.
type loop struct {
	stop chan struct{}
	done chan struct{}
}

func startLoop(interval time.Duration, fn func()) *loop {
	l := &loop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return l
}

// Close stops the loop and waits for a call under way to return.
func (l *loop) Close() {
	close(l.stop)
	<-l.done
}
