package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request takes from and gives back the queued.max.requests and
// queued.max.request.bytes budgets; with nobody waiting for room that
// allocates nothing.
func TestBudgetTakeAndGiveAllocateNothingWhileUnderTheLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	b := newBudget(10)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if !b.take(ctx, 3) {
			t.Fatal("take under the limit failed")
		}
		b.give(3)
	})
	if allocs != 0 {
		t.Fatalf("take and give allocate %.0f objects, want 0", allocs)
	}
}

// A take over the limit waits until something is given back, however
// many gives came before it, or until its context ends.
func TestBudgetTakeOverTheLimitWaitsForAGive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(2)
		ctx := context.Background()
		b.take(ctx, 1)
		b.give(1) // nobody waiting
		b.take(ctx, 2)
		took := make(chan bool, 1)
		go func() { took <- b.take(ctx, 1) }()
		synctest.Wait()
		select {
		case <-took:
			t.Fatal("take over the limit did not wait")
		default:
		}
		b.give(2)
		synctest.Wait()
		select {
		case ok := <-took:
			if !ok {
				t.Fatal("take failed after a give")
			}
		default:
			t.Fatal("a give did not wake the waiting take")
		}
		b.take(ctx, 5)
		cctx, cancel := context.WithCancel(ctx)
		go func() { took <- b.take(cctx, 1) }()
		synctest.Wait()
		cancel()
		if <-took {
			t.Fatal("take over the limit succeeded after its context ended")
		}
	})
}

// echoAPIVersions serves, on each connection, an ApiVersions v0 response
// (no versions) to every request, reusing its buffers.
func echoAPIVersions(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var size [4]byte
				buf := make([]byte, 0, 4096)
				// size, correlation id, error code, empty versions array.
				out := []byte{0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
				for {
					if _, err := io.ReadFull(c, size[:]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(size[:]))
					if n > cap(buf) {
						return
					}
					buf = buf[:n]
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					copy(out[4:8], buf[4:8]) // the correlation id
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A peer client sends its requests from one encoding buffer kept across
// requests, with a formatter made once: a follower sends one for every
// batch it replicates.
func TestClientRequestsReuseTheEncodingBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	cl := NewClient(echoAPIVersions(t), "broker-1", time.Minute)
	defer cl.Close()
	cl.ReuseResponseBuffer()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	ctx := context.Background()
	if _, err := cl.Request(ctx, req); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := cl.Request(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	// The response value and the context's cancellation hook remain; a
	// formatter, an encoding buffer and a length prefix per request made
	// it 11.
	if allocs > 4 {
		t.Fatalf("a request allocates %.0f objects, want at most 4", allocs)
	}
}

// The kept encoding buffer does not keep a SASL password after the
// request that carried it.
func TestClientForgetsSASLCredentialsAfterSending(t *testing.T) {
	cl := NewClient(echoAPIVersions(t), "broker-1", time.Minute)
	defer cl.Close()
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 0
	auth.SASLAuthBytes = []byte("\x00user\x00secret-password")
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, err := cl.roundTrip(context.Background(), auth); err != nil {
		// The echo server answers in the ApiVersions layout; only what
		// was sent matters here.
		t.Logf("decode of the echoed response: %v", err)
	}
	if bytes.Contains(cl.out[:cap(cl.out)], []byte("secret-password")) {
		t.Fatal("the client kept the SASL password in its request buffer")
	}
}

// Produce frames reuse pooled buffers whatever their size from 1 KiB up: a
// producer sending a record at a time sends thousands of small frames a
// second, and allocating each was most of what such a load made a broker
// collect. Other frames are not kept: a handler may hold on to them.
func TestProduceFramesOfEverySizeReusePooledBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	for _, size := range []int32{1024, 1200, 5000, 40 << 10, 64 << 10, 300 << 10} {
		body := make([]byte, size)
		var r bytes.Reader
		frame := func() {
			r.Reset(body)
			b, err := readRequest(&r, size)
			if err != nil {
				t.Fatal(err)
			}
			putRequestBuf(b)
		}
		perFrame := func(key uint16) uint64 {
			binary.BigEndian.PutUint16(body, key)
			frame()
			const n = 1000
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range n {
				frame()
			}
			runtime.ReadMemStats(&after)
			return (after.TotalAlloc - before.TotalAlloc) / n
		}
		if got := perFrame(0); got > uint64(size)/10 {
			t.Errorf("a %d-byte Produce frame allocates %d bytes, want its buffer reused", size, got)
		}
		if got := perFrame(1); size < 64<<10 && got < uint64(size) {
			t.Errorf("a %d-byte Fetch frame allocates %d bytes: a pooled buffer went to a frame that may be kept", size, got)
		}
	}
}
