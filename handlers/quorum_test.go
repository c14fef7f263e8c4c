package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
)

func TestUnregisterBrokerNeedsClusterAlterAndNamesUnknownBrokers(t *testing.T) {
	h, c := controllerStack(t,
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:alice", acl.OpAlter),
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:bob", acl.OpDescribe))
	unregister := func(id int32) *kmsg.UnregisterBrokerRequest {
		r := kmsg.NewPtrUnregisterBrokerRequest()
		r.BrokerID = id
		return r
	}
	for _, p := range []string{"User:bob", "User:carol"} {
		if code := as(t, h, p, 0, unregister(4)).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != clusterAuthz {
			t.Fatalf("%s unregistered broker 4: code %d, want CLUSTER_AUTHORIZATION_FAILED", p, code)
		}
	}
	if _, ok := c.Image().Brokers[4]; !ok {
		t.Fatal("a refused UnregisterBroker removed broker 4")
	}
	if code := as(t, h, "User:alice", 0, unregister(4)).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != 0 {
		t.Fatalf("alice unregistering broker 4: code %d", code)
	}
	if _, ok := c.Image().Brokers[4]; ok {
		t.Fatal("broker 4 still registered")
	}
	if code := as(t, h, "User:alice", 0, unregister(4)).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering broker 4 again: code %d, want BROKER_ID_NOT_REGISTERED", code)
	}
}

func TestUnregisterBrokerIsServedOnTheControllerListener(t *testing.T) {
	if !ControllerAPI(int16(kmsg.UnregisterBroker)) || InterBrokerAPI(int16(kmsg.UnregisterBroker)) {
		t.Fatal("UnregisterBroker must be a client API that the CONTROLLER listener also serves")
	}
}
