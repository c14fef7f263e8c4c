package replication

import (
	"context"
	"sync/atomic"
	"time"
)

// Parked time: a request that parks (a long-poll Fetch, an acks=all
// Produce) holds its connection's goroutine while doing nothing. The
// request-time quota counts handler time as Kafka counts request-thread
// time, which excludes the wait in purgatory; the handler learns how long
// its request was parked through this context value.

type parkedKey struct{}

// WithParkedTime returns a context under which Fetch and Produce add the
// nanoseconds they spend parked to total.
func WithParkedTime(ctx context.Context, total *atomic.Int64) context.Context {
	return context.WithValue(ctx, parkedKey{}, total)
}

// addParked adds d, a time spent parked, to the context's parked total.
func addParked(ctx context.Context, d time.Duration) {
	if total, ok := ctx.Value(parkedKey{}).(*atomic.Int64); ok {
		total.Add(int64(d))
	}
}
