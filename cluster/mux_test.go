package cluster

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

func TestControllerListenerSplitsRaftFromKafkaProtocol(t *testing.T) {
	m, err := newControllerMux("127.0.0.1:0", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	addr := m.ln.Addr().String()
	rs := raftStream{m}

	// A Kafka client: its first bytes (a frame size) reach the Kafka side
	// unchanged.
	kc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	frame := []byte{0, 0, 0, 3, 'a', 'b', 'c'}
	if _, err := kc.Write(frame); err != nil {
		t.Fatal(err)
	}
	got := acceptWithin(t, m.kafka.Accept)
	buf := make([]byte, len(frame))
	got.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != string(frame) {
		t.Fatalf("kafka side read %q, %v; want %q", buf, err, frame)
	}
	got.Close()

	// A raft connection dialled by gokafka reaches raft, preamble removed.
	rc, err := rs.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Write([]byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	rgot := acceptWithin(t, rs.Accept)
	rbuf := make([]byte, 2)
	rgot.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(rgot, rbuf); err != nil || rbuf[0] != 1 || rbuf[1] != 2 {
		t.Fatalf("raft side read %v, %v; want [1 2]", rbuf, err)
	}
	rgot.Close()

	// Closing the Kafka side (protocol server shutdown) leaves raft up.
	m.kafka.Close()
	if _, err := m.kafka.Accept(); err == nil {
		t.Fatal("Accept after Close succeeded")
	}
	rc2, err := rs.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	acceptWithin(t, rs.Accept).Close()
}

func acceptWithin(t *testing.T, accept func() (net.Conn, error)) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("accept: %v", r.err)
		}
		return r.c
	case <-time.After(10 * time.Second):
		t.Fatal("nothing accepted within 10s")
		return nil
	}
}

func TestControllerListenerClosesConnectionsPastTheUnclassifiedLimit(t *testing.T) {
	old := maxUnclassified
	maxUnclassified = 1
	defer func() { maxUnclassified = old }()
	m, err := newControllerMux("127.0.0.1:0", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	addr := m.ln.Addr().String()

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The idle connection holds the only slot; the next one is closed
	// without being read. Poll until the first is counted.
	deadline := time.Now().Add(10 * time.Second)
	for len(m.pending) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection was never accepted")
		}
		time.Sleep(time.Millisecond)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("connection past the limit: n=%d err=%v, want closed", n, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
