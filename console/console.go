package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
)

//go:embed static
var static embed.FS

// Options configures a Console.
type Options struct {
	// Interval is how often the state is sampled while a page is open
	// (default 500ms).
	Interval time.Duration
	// History is how many timeline events are kept for pages that open
	// later (default 500).
	History int
	// MaxClients bounds the open pages (default 64); more get 503.
	MaxClients int
	// Now is the clock of the timeline (default time.Now).
	Now    func() time.Time
	Logger zerolog.Logger
}

// Console is the console's http.Handler.
type Console struct {
	src  Source
	opts Options
	mux  *http.ServeMux

	// kick wakes the sampler (a page opened, the metadata changed).
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
	// sampleMu serialises reads of the source (the sampler's and
	// /api/state's), so that requests share one read per interval.
	sampleMu sync.Mutex

	mu struct {
		sync.Mutex
		subs  map[*subscriber]struct{}
		state []byte // the last sample, JSON
		// sampledAt is when state was read.
		sampledAt time.Time
		timeline  []Event
		seq       int64
	}
}

// subscriber is one open page's event stream. Its queue is bounded; a
// page that cannot keep up is disconnected (it reconnects and starts
// from a fresh state).
type subscriber struct {
	ch      chan message
	dropped chan struct{}
}

type message struct {
	event string
	data  []byte
}

// New returns a console reading src and starts its sampler. Close stops
// it.
func New(src Source, opts Options) *Console {
	if opts.Interval <= 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.History <= 0 {
		opts.History = 500
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = 64
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Console{src: src, opts: opts, mux: http.NewServeMux(), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.subs = map[*subscriber]struct{}{}
	files, _ := fs.Sub(static, "static")
	c.mux.Handle("GET /", http.FileServerFS(files))
	c.mux.HandleFunc("GET /api/state", c.serveState)
	c.mux.HandleFunc("GET /api/events", c.serveEvents)
	src.WatchMetadata(c.onMetadata)
	go c.sampler()
	return c
}

// ServeHTTP serves the page, its assets, /api/state (the last sample)
// and /api/events (the server-sent event stream).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// Close stops the sampler and ends every event stream.
func (c *Console) Close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.mu.Lock()
		for s := range c.mu.subs {
			delete(c.mu.subs, s)
			close(s.dropped)
		}
		c.mu.Unlock()
	})
}

// onMetadata runs in the metadata watch: diff, record, queue.
func (c *Console) onMetadata(prev, next *cluster.Image) {
	evs := Diff(prev, next)
	if len(evs) > 0 {
		now := c.opts.Now().UnixMilli()
		c.mu.Lock()
		for i := range evs {
			c.mu.seq++
			evs[i].Seq, evs[i].Time = c.mu.seq, now
		}
		c.mu.timeline = append(c.mu.timeline, evs...)
		if over := len(c.mu.timeline) - c.opts.History; over > 0 {
			c.mu.timeline = append([]Event(nil), c.mu.timeline[over:]...)
		}
		data, err := json.Marshal(evs)
		if err == nil {
			c.broadcastLocked(message{"events", data})
		}
		c.mu.Unlock()
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Console) broadcastLocked(m message) {
	for s := range c.mu.subs {
		select {
		case s.ch <- m:
		default:
			delete(c.mu.subs, s)
			close(s.dropped)
		}
	}
}

// sampler reads the source while at least one page is open: every
// interval, and at once when kicked.
func (c *Console) sampler() {
	defer close(c.done)
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		c.mu.Lock()
		open := len(c.mu.subs) > 0
		c.mu.Unlock()
		if open {
			c.sample(0)
		}
		select {
		case <-c.stop:
			return
		case <-c.kick:
		case <-t.C:
		}
	}
}

// sample reads the source once, unless the last read is younger than
// maxAge, and pushes the state if it changed. A panic in the source is
// logged, not fatal.
func (c *Console) sample(maxAge time.Duration) {
	defer func() {
		if p := recover(); p != nil {
			c.opts.Logger.Error().Str("panic", fmt.Sprint(p)).Str("stack", string(debug.Stack())).Msg("console state sample panicked")
		}
	}()
	c.sampleMu.Lock()
	defer c.sampleMu.Unlock()
	if maxAge > 0 {
		c.mu.Lock()
		fresh := c.opts.Now().Sub(c.mu.sampledAt) < maxAge
		c.mu.Unlock()
		if fresh {
			return
		}
	}
	st := c.src.State()
	data, err := json.Marshal(st)
	if err != nil {
		c.opts.Logger.Warn().Err(err).Msg("console state not encodable")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.sampledAt = c.opts.Now()
	if bytes.Equal(data, c.mu.state) {
		return
	}
	c.mu.state = data
	c.broadcastLocked(message{"state", data})
}

// serveState answers the last sample, read again first if it is older
// than the interval (no page open keeps it fresh): however many clients
// ask, the source is read at most once per interval for them.
func (c *Console) serveState(w http.ResponseWriter, _ *http.Request) {
	c.sample(c.opts.Interval)
	c.mu.Lock()
	data := c.mu.state
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}

// serveEvents streams server-sent events: "state" (the whole state, when
// it changed), "timeline" (the history, once on connect) and "events"
// (new timeline entries).
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	s := &subscriber{ch: make(chan message, 256), dropped: make(chan struct{})}
	c.mu.Lock()
	if len(c.mu.subs) >= c.opts.MaxClients {
		c.mu.Unlock()
		http.Error(w, "too many console clients", http.StatusServiceUnavailable)
		return
	}
	history, _ := json.Marshal(c.mu.timeline)
	state := c.mu.state
	c.mu.subs[s] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if _, ok := c.mu.subs[s]; ok {
			delete(c.mu.subs, s)
			close(s.dropped)
		}
		c.mu.Unlock()
	}()
	select {
	case c.kick <- struct{}{}:
	default:
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	write := func(m message) bool {
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.event, m.data); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !write(message{"timeline", history}) {
		return
	}
	if state != nil && !write(message{"state", state}) {
		return
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case m := <-s.ch:
			if !write(m) {
				return
			}
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-s.dropped:
			return
		case <-r.Context().Done():
			return
		case <-c.stop:
			return
		}
	}
}
