package share

import (
	"sync/atomic"
	"time"
)

// loop calls a function every interval on its own goroutine until Close:
// the coordinator's session expiry and the manager's sweep. While there is
// nothing for the next call to do (idle), the loop stops its ticker and
// sleeps until Wake, so that a broker nobody uses share groups on does
// not wake several times a second for them.
type loop struct {
	stop chan struct{}
	done chan struct{}
	wake chan struct{}
	// idle, when set, reports after a call whether the next one would
	// find nothing to do; pause and resume stop and restart the ticker.
	idle          func() bool
	pause, resume func()
	// sleeping is set while the ticker is stopped (tests).
	sleeping atomic.Bool
}

func newLoop() *loop {
	return &loop{stop: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// startLoop calls fn every interval; after a call for which idle (if not
// nil) reports true, not until Wake.
func startLoop(interval time.Duration, fn func(), idle func() bool) *loop {
	l := newLoop()
	t := time.NewTicker(interval)
	l.idle = idle
	l.pause, l.resume = t.Stop, func() { t.Reset(interval) }
	go func() {
		defer t.Stop()
		l.run(t.C, fn)
	}()
	return l
}

// Wake restarts an idle loop's ticker: call it once the next call has
// something to do (after the change, so that idle sees it).
func (l *loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run calls fn on every tick until stop is closed, then closes done.
func (l *loop) run(tick <-chan time.Time, fn func()) {
	defer close(l.done)
	paused := false
	for {
		select {
		case <-l.stop:
			return
		case <-l.wake:
			if paused {
				paused = false
				l.sleeping.Store(false)
				l.resume()
			}
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
			// A Wake during fn is still pending: the loop resumes at
			// once if idle saw nothing to do yet.
			if l.idle != nil && l.idle() {
				paused = true
				l.pause()
				l.sleeping.Store(true)
			}
		}
	}
}

// Close stops the loop and waits for a call under way to return.
func (l *loop) Close() {
	close(l.stop)
	<-l.done
}
