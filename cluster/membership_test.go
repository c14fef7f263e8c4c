package cluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

func TestUnregisterBrokerRemovesItsRegistrationAndTakesItOutOfEveryISR(t *testing.T) {
	c := memCluster(t, testConfig(), 3)
	mustCreate(t, c, TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{3, 1, 2}}})

	if err := c.UnregisterBroker(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if _, ok := im.Brokers[3]; ok {
		t.Fatalf("broker 3 still registered: %+v", im.Brokers[3])
	}
	p := im.Partition("t", 0)
	if slices.Contains(p.ISR, 3) || p.Leader == 3 || p.Leader < 0 {
		t.Fatalf("after unregistering 3: leader %d ISR %v", p.Leader, p.ISR)
	}
	// Kafka keeps the assignment: the operator moves the replica away.
	if !slices.Equal(p.Replicas, []int32{3, 1, 2}) {
		t.Fatalf("replicas %v, want the assignment unchanged", p.Replicas)
	}
}

func TestUnregisterBrokerOfAnUnknownIDIsBrokerIDNotRegistered(t *testing.T) {
	c := memCluster(t, testConfig(), 1)
	if err := c.UnregisterBroker(context.Background(), 7); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering an unknown broker: %v, want BROKER_ID_NOT_REGISTERED", err)
	}
	if err := c.UnregisterBroker(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.UnregisterBroker(context.Background(), 1); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregistering twice: %v, want BROKER_ID_NOT_REGISTERED", err)
	}
}

func TestAnUnregisteredBrokerCanRegisterAgain(t *testing.T) {
	c := memCluster(t, testConfig(), 2)
	if err := c.UnregisterBroker(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	registerLive(t, c, 2)
	if b, ok := c.Image().Brokers[2]; !ok || b.Fenced {
		t.Fatalf("broker 2 after registering again: %+v (registered %v)", b, ok)
	}
}

// TestAnObserverAsksToJoinAtItsAdvertisedQuorumAddress checks the join
// request a node outside the voters sends: its id and run, no cluster, and
// the controller listener's advertised address (its bind address says
// nothing to another host).
func TestAnObserverAsksToJoinAtItsAdvertisedQuorumAddress(t *testing.T) {
	got := make(chan *kmsg.BrokerRegistrationRequest, 1)
	reg := protocol.NewRegistry()
	reg.Register(62, 0, 4, func(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
		r := req.Body.(*kmsg.BrokerRegistrationRequest)
		select {
		case got <- r:
		default:
		}
		return r.ResponseKind(), nil
	})
	srv := protocol.NewServer(protocol.DefaultConfig(), reg, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	c := &Controller{cfg: Config{NodeID: 4}, logger: zerolog.Nop(), stop: make(chan struct{}), img: NewState().Image(-1),
		qc: QuorumConfig{Voters: []Voter{{ID: -1, Addr: ln.Addr().String()}}, BindAddr: "0.0.0.0:9093", AdvertisedAddr: "ctrl-4.example:19093"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.joinAsObserver(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.BrokerID != 4 || r.ClusterID != "" || len(r.Listeners) != 1 || IncarnationString(r.IncarnationID) != c.Incarnation() {
		t.Fatalf("join request %+v", r)
	}
	if l := r.Listeners[0]; l.Name != ObserverListenerName || l.Host != "ctrl-4.example" || l.Port != 19093 {
		t.Fatalf("join names quorum address %+v, want ctrl-4.example:19093", l)
	}
}
