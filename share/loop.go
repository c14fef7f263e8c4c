package share

import "time"

// loop calls a function every interval on its own goroutine until Close:
// the coordinator's session expiry and the manager's sweep.
type loop struct {
	stop chan struct{}
	done chan struct{}
}

func newLoop() *loop {
	return &loop{stop: make(chan struct{}), done: make(chan struct{})}
}

func startLoop(interval time.Duration, fn func()) *loop {
	l := newLoop()
	t := time.NewTicker(interval)
	go func() {
		defer t.Stop()
		l.run(t.C, fn)
	}()
	return l
}

// run calls fn on every tick until stop is closed, then closes done.
func (l *loop) run(tick <-chan time.Time, fn func()) {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			return
		case <-tick:
			// A tick may be pending when Close is called, and select
			// picks among ready cases at random: Close wins, so that no
			// call starts after it.
			select {
			case <-l.stop:
				return
			default:
			}
			fn()
		}
	}
}

// Close stops the loop and waits for a call under way to return.
func (l *loop) Close() {
	close(l.stop)
	<-l.done
}
