package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
