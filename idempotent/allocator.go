package idempotent

import (
	"context"
	"sync"
)

// BlockSource allocates a block of producer ids through the metadata
// quorum: [start, start+n).
type BlockSource func(ctx context.Context) (start int64, n int32, err error)

// Allocator hands out producer ids from blocks, fetching the next block
// when the current one runs out. Ids never repeat: a block is owned by
// this broker once the quorum committed it, and unused ids of a block are
// simply skipped after a restart.
type Allocator struct {
	src BlockSource

	mu        sync.Mutex
	next, end int64
}

// NewAllocator returns an allocator drawing blocks from src.
func NewAllocator(src BlockSource) *Allocator { return &Allocator{src: src} }

// Next returns a producer id never handed out before.
func (a *Allocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		start, n, err := a.src(ctx)
		if err != nil {
			return -1, err
		}
		a.next, a.end = start, start+int64(n)
	}
	id := a.next
	a.next++
	return id, nil
}
