package protocol

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A context cancelled while a round trip fails must not touch the
// connection the client has already dropped: the cancellation callback can
// run after Request returned.
func TestClientCancelRacingAFailedRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // every request fails at once
		}
	}()
	cl := NewClient(ln.Addr().String(), "test", time.Second)
	defer cl.Close()
	for range 3000 {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		if _, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err == nil {
			t.Fatal("request to a server that closes every connection succeeded")
		}
	}
}
