package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPeerClientIDRoundTrips(t *testing.T) {
	id := PeerClientID(PeerRoleMarkers, "abc", 3, "00ff")
	p, ok := ParsePeerClientID(id)
	if !ok || p != (Peer{Role: PeerRoleMarkers, ClusterID: "abc", NodeID: 3, Incarnation: "00ff"}) {
		t.Fatalf("%q parsed as %+v %v", id, p, ok)
	}
	for _, bad := range []string{"", "mallory", "gokafka-x", "gokafka-x;cluster=a;broker=1", "gokafka-x;cluster=a;broker=z;incarnation=1",
		"gokafka-x;cluster=a;broker=1;incarnation=1;more=2", "gokafka-x;cluster=a;broker=1;nope=1"} {
		if p, ok := ParsePeerClientID(bad); ok {
			t.Errorf("%q parsed as %+v", bad, p)
		}
	}
}

func TestCheckPeerRefusesForeignUnknownAndStaleNodes(t *testing.T) {
	c := newController(t)
	im := c.Image()
	self := c.PeerClientID(PeerRoleController)
	if p, err := CheckPeer(im, self); err != nil || p.NodeID != 1 {
		t.Fatalf("this node's own id %q: %+v %v", self, p, err)
	}
	for _, tc := range []struct {
		name, id string
		want     error
	}{
		{"not a node", "mallory", ErrNotPeer},
		{"another cluster", PeerClientID(PeerRoleController, "other", 1, c.Incarnation()), kerr.InconsistentClusterID},
		{"unknown broker", PeerClientID(PeerRoleController, im.ClusterID, 9, c.Incarnation()), kerr.BrokerIDNotRegistered},
		{"stale run", PeerClientID(PeerRoleController, im.ClusterID, 1, newIncarnation()), kerr.StaleBrokerEpoch},
	} {
		if _, err := CheckPeer(im, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestNewRunOfALiveBrokerIsDuplicateRegistration(t *testing.T) {
	dir := t.TempDir()
	qc := QuorumConfig{Dir: dir, SessionTimeout: time.Hour}
	c, err := Open(context.Background(), testConfig(), qc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "127.0.0.1", Port: 9002, Incarnation: newIncarnation()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	// Broker 2 is alive: another run of it (or a forged registration) may
	// not take over its id and address.
	err = c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "evil.example", Port: 6666, Incarnation: newIncarnation()})
	if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("registration of a new run of a live broker: %v, want DUPLICATE_BROKER_REGISTRATION", err)
	}
	if b := c.Image().Brokers[2]; b.Host != "127.0.0.1" || b.Fenced {
		t.Fatalf("broker 2 after the refused registration: %+v", b)
	}
	// A run that proves the previous one exited cleanly (the broker epoch
	// it wrote at exit) registers at once, fenced or not: the previous
	// run's controlled shutdown may have timed out.
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "127.0.0.1", Port: 9002, Incarnation: newIncarnation(),
		PreviousEpoch: c.Image().Brokers[2].Epoch}); err != nil {
		t.Fatalf("registration after a clean exit without controlled shutdown: %v", err)
	}
	if _, _, err := c.BrokerHeartbeat(ctx, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	// A wrong previous epoch proves nothing.
	err = c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "127.0.0.1", Port: 9002, Incarnation: newIncarnation(),
		PreviousEpoch: c.Image().Brokers[2].Epoch + 100})
	if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("registration with a wrong previous epoch: %v, want DUPLICATE_BROKER_REGISTRATION", err)
	}
	// Once it asked to be fenced (a controlled shutdown), its next run
	// registers at once.
	if _, _, err := c.BrokerHeartbeat(ctx, 2, true, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterBroker(ctx, BrokerInfo{NodeID: 2, Host: "127.0.0.1", Port: 9003, Incarnation: newIncarnation()}); err != nil {
		t.Fatalf("registration after a controlled shutdown: %v", err)
	}
}
