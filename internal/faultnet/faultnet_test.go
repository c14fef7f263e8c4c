package faultnet

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echo serves a TCP echo and counts the bytes it received.
func echo(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					got.Add(int64(n))
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &got
}

func TestFrozenNodeGetsItsBytesAfterTheThawInOrder(t *testing.T) {
	target, got := echo(t)
	nf := New(2, t.Logf)
	defer nf.Close()
	p, err := nf.Proxy(1, 2, Broker, target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil || one[0] != 'a' {
		t.Fatalf("before the freeze: %q %v", one, err)
	}

	nf.Freeze(2)
	if _, err := c.Write([]byte("bcd")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // room for a leak to show
	if n := got.Load(); n != 1 {
		t.Fatalf("the frozen node received %d bytes, want only the 1 sent before the freeze", n)
	}
	nf.Thaw(2)
	three := make([]byte, 3)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, three); err != nil || string(three) != "bcd" {
		t.Fatalf("after the thaw: %q %v", three, err)
	}
}

// A client connecting to a node that is down is reset, as a refused
// connection would be, not closed in order (which franz-go takes for a
// broker that wants TLS, and does not retry).
func TestProxyOfADownNodeResetsTheConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	nf := New(1, t.Logf)
	defer nf.Close()
	p, err := nf.Proxy(0, 1, Client, down)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		// The reset may come before or after connect returns.
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read from a proxy of a down node: %v, want a connection reset", err)
	}
}

func TestMutedNodeSendsNothingAndUnmuteLetsNewConnectionsThrough(t *testing.T) {
	target, got := echo(t)
	nf := New(2, t.Logf)
	defer nf.Close()
	p, err := nf.Proxy(1, 2, Broker, target)
	if err != nil {
		t.Fatal(err)
	}
	nf.Mute(1)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("lost"))
	time.Sleep(100 * time.Millisecond) // room for a leak to show
	if n := got.Load(); n != 0 {
		t.Fatalf("a muted node's bytes arrived (%d)", n)
	}
	c.Close()
	nf.Unmute(1)
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("x"))
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c2, make([]byte, 1)); err != nil {
		t.Fatalf("after unmute: %v", err)
	}
}
