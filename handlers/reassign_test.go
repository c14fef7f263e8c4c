package handlers

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

// controllerStack is handlers over the real controller (in-memory log)
// with brokers 1-4 live, topic "t" on 1, 2, 3, and an authorizer holding
// bindings.
func controllerStack(t *testing.T, bindings ...acl.Binding) (*Handlers, *cluster.Controller) {
	t.Helper()
	ctx := context.Background()
	c, _, err := cluster.OpenInMemory(ctx, cluster.Config{NodeID: 1, NumPartitions: 1, DefaultReplicationFactor: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for id := int32(1); id <= 4; id++ {
		if err := c.RegisterBroker(ctx, cluster.BrokerInfo{NodeID: id, Host: "h", Port: 9000 + id, Incarnation: fmt.Sprintf("%032x", id)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.BrokerHeartbeat(ctx, id, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if errs := c.CreateTopics(ctx, []cluster.TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{1, 2, 3}}}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	a := acl.New(acl.Config{})
	a.Update(bindings)
	return New(protocol.NewRegistry(), Config{NodeID: 1}, Deps{Meta: c, Controller: c, Authorizer: a}), c
}

func TestReassignmentAndElectionAPIsCheckClusterOperations(t *testing.T) {
	h, c := controllerStack(t,
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:alice", acl.OpAlter),
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:bob", acl.OpDescribe))

	alter := func(replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = replicas
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
	for _, p := range []string{"User:bob", "User:carol"} {
		if resp := as(t, h, p, 0, alter([]int32{2, 3, 4})).(*kmsg.AlterPartitionAssignmentsResponse); resp.ErrorCode != clusterAuthz {
			t.Fatalf("%s reassigned: code %d, want CLUSTER_AUTHORIZATION_FAILED", p, resp.ErrorCode)
		}
	}
	resp := as(t, h, "User:alice", 0, alter([]int32{2, 3, 4})).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alice's reassignment: %+v", resp)
	}
	// v1 refuses a replication factor change when asked to.
	rf := alter([]int32{2, 3})
	rf.AllowReplicationFactorChange = false
	if code := as(t, h, "User:alice", 1, rf).(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF change with AllowReplicationFactorChange false: code %d", code)
	}

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	if code := as(t, h, "User:carol", 0, list).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode; code != clusterAuthz {
		t.Fatalf("carol listed: code %d", code)
	}
	lr := as(t, h, "User:bob", 0, list).(*kmsg.ListPartitionReassignmentsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		t.Fatalf("listed %+v", lr)
	}
	lp := lr.Topics[0].Partitions[0]
	if !slices.Equal(lp.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(lp.AddingReplicas, []int32{4}) || !slices.Equal(lp.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed partition %+v", lp)
	}
	if !c.Image().Partition("t", 0).Reassigning() {
		t.Fatal("no reassignment in the metadata")
	}

	elect := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{0}
	elect.Topics = append(elect.Topics, et)
	er := as(t, h, "User:bob", 2, elect).(*kmsg.ElectLeadersResponse)
	if er.ErrorCode != clusterAuthz || er.Topics[0].Partitions[0].ErrorCode != clusterAuthz {
		t.Fatalf("bob elected: %+v", er)
	}
	// Replicas now begin with 2, which is in the ISR: a preferred
	// election moves the leadership there.
	er = as(t, h, "User:alice", 2, elect).(*kmsg.ElectLeadersResponse)
	if er.ErrorCode != 0 || er.Topics[0].Partitions[0].ErrorCode != 0 || c.Image().Partition("t", 0).Leader != 2 {
		t.Fatalf("alice's preferred election: %+v, leader %d", er, c.Image().Partition("t", 0).Leader)
	}
	er = as(t, h, "User:alice", 2, elect).(*kmsg.ElectLeadersResponse)
	if code := er.Topics[0].Partitions[0].ErrorCode; code != kerr.ElectionNotNeeded.Code {
		t.Fatalf("second election: code %d, want ELECTION_NOT_NEEDED", code)
	}
}
