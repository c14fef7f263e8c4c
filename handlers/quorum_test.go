package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
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

func describeQuorumReq(topic string, p int32) *kmsg.DescribeQuorumRequest {
	r := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = p
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func TestDescribeQuorumNeedsClusterDescribeAndAnswersTheMetadataPartition(t *testing.T) {
	h, c := controllerStack(t,
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:bob", acl.OpDescribe))
	if code := as(t, h, "User:carol", 2, describeQuorumReq("__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse).ErrorCode; code != clusterAuthz {
		t.Fatalf("carol described the quorum: code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	resp := as(t, h, "User:bob", 2, describeQuorumReq("__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("bob's DescribeQuorum: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != 1 || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 {
		t.Fatalf("quorum partition %+v", p)
	}
	if p.HighWatermark <= 0 || p.CurrentVoters[0].LogEndOffset < p.HighWatermark || p.HighWatermark != c.Image().Offset {
		t.Fatalf("high watermark %d, leader's log end %d, applied offset %d", p.HighWatermark, p.CurrentVoters[0].LogEndOffset, c.Image().Offset)
	}
	other := as(t, h, "User:bob", 2, describeQuorumReq("t", 0)).(*kmsg.DescribeQuorumResponse)
	if code := other.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeQuorum of t[0]: code %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
}

func TestRaftVoterChangesNeedClusterAlterAndAQuorumWithANetwork(t *testing.T) {
	h, _ := controllerStack(t,
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:alice", acl.OpAlter))
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = 5
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9999}}
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = 1
	if code := as(t, h, "User:carol", 0, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != clusterAuthz {
		t.Fatalf("carol added a voter: code %d", code)
	}
	if code := as(t, h, "User:carol", 0, rm).(*kmsg.RemoveRaftVoterResponse).ErrorCode; code != clusterAuthz {
		t.Fatalf("carol removed a voter: code %d", code)
	}
	other := "another-cluster"
	add.ClusterID = &other
	if code := as(t, h, "User:alice", 0, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.InconsistentClusterID.Code {
		t.Fatalf("a voter for another cluster: code %d, want INCONSISTENT_CLUSTER_ID", code)
	}
	add.ClusterID = nil
	noListener := *add
	noListener.Listeners = nil
	if code := as(t, h, "User:alice", 0, &noListener).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("a voter without a listener: code %d, want INVALID_REQUEST", code)
	}
	negative := *add
	negative.VoterID = -1
	if code := as(t, h, "User:alice", 0, &negative).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("voter id -1: code %d, want INVALID_REQUEST", code)
	}
	// The in-memory quorum of one has no network membership to change.
	if code := as(t, h, "User:alice", 0, add).(*kmsg.AddRaftVoterResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("adding a voter to an in-memory quorum: code %d, want UNSUPPORTED_VERSION", code)
	}
}

func TestAnObserverMayAskToJoinWhetherOrNotItKnowsTheCluster(t *testing.T) {
	h, c := controllerStack(t)
	join := func(clusterID string) error {
		r := kmsg.NewPtrBrokerRegistrationRequest()
		r.BrokerID = 7
		r.IncarnationID = [16]byte{7}
		r.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: cluster.ObserverListenerName, Host: "127.0.0.1", Port: 9999}}
		req := &protocol.Request{Key: r.Key(), Body: r, Conn: &protocol.ConnInfo{RemoteAddr: "10.0.0.1:40000"},
			ClientID: cluster.PeerClientID(cluster.PeerRoleController, clusterID, 7, cluster.IncarnationString(r.IncarnationID))}
		return h.checkPeer(req, -1)
	}
	// A first start knows no cluster; a restart has its metadata back.
	for _, id := range []string{"", c.Image().ClusterID} {
		if err := join(id); err != nil {
			t.Errorf("join naming cluster %q refused: %v", id, err)
		}
	}
	if err := join("another-cluster"); err == nil {
		t.Error("a join from another cluster accepted")
	}
}
