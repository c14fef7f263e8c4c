package handlers

// The counts the broker's metrics (metrics/) take from the request path:
// every request with its API, version, time and error codes, and the
// bytes and records produced and fetched per topic. Everything else the
// metrics show is read from the broker's state when they are scraped.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

// Observer receives what the handlers count. Its methods run on request
// goroutines and must not block.
type Observer interface {
	// Request is called once a request is answered: resp is nil for an
	// acks=0 produce, and err is set when the connection is closed
	// instead of answering.
	Request(key, version int16, took time.Duration, resp kmsg.Response, err error)
	// BytesIn counts a batch appended to topic as its leader.
	BytesIn(topic string, bytes, records int64)
	// BytesOut counts record bytes a fetch returns from topic.
	BytesOut(topic string, bytes int64)
	// Parked counts requests parking (delta 1) and done waiting (-1):
	// op is "Produce" (acks=all) or "Fetch" (long poll).
	Parked(op string, delta int)
}

type nopObserver struct{}

func (nopObserver) Request(int16, int16, time.Duration, kmsg.Response, error) {}
func (nopObserver) BytesIn(string, int64, int64)                              {}
func (nopObserver) BytesOut(string, int64)                                    {}
func (nopObserver) Parked(string, int)                                        {}

// observe times fn and reports the request to the observer.
func (h *Handlers) observe(fn protocol.HandlerFunc) protocol.HandlerFunc {
	return func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
		start := time.Now()
		resp, err := fn(ctx, req)
		h.obs.Request(req.Key, req.Version, time.Since(start), resp, err)
		return resp, err
	}
}
