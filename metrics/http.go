package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// HTTP is the broker's one HTTP listener (http.listener): /metrics,
// /livez and /readyz, and whatever else registers on it (Handle).
type HTTP struct {
	mux    *http.ServeMux
	srv    *http.Server
	ln     net.Listener
	logger zerolog.Logger
	done   chan struct{}
}

// Listen binds addr and serves m's endpoints on it in the background.
// It is meant to start before the broker, so that /livez and /readyz
// answer while the logs recover.
func Listen(addr string, m *Metrics, logger zerolog.Logger) (*HTTP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &HTTP{mux: http.NewServeMux(), ln: ln, logger: logger, done: make(chan struct{})}
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{
		ErrorLog:            promLogger{logger},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	h.mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	h.mux.Handle("GET /readyz", readyHandler(m))
	h.srv = &http.Server{
		Handler:           h.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error().Err(err).Str("addr", ln.Addr().String()).Msg("http listener failed")
		}
	}()
	return h, nil
}

// readyHandler answers m's readiness as JSON: 200 when ready, 503 with
// the reasons otherwise.
func readyHandler(m *Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r := m.Readiness()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	})
}

// Addr is the bound address.
func (h *HTTP) Addr() string { return h.ln.Addr().String() }

// Handle serves pattern (http.ServeMux syntax) on the listener.
func (h *HTTP) Handle(pattern string, handler http.Handler) { h.mux.Handle(pattern, handler) }

// Shutdown stops the listener, letting in-flight requests finish until
// ctx ends.
func (h *HTTP) Shutdown(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	<-h.done
	return err
}

type promLogger struct{ l zerolog.Logger }

func (p promLogger) Println(v ...any) { p.l.Warn().Msg(fmt.Sprint(v...)) }
