package handlers

// Listener roles and peer identity, as Kafka's listeners and CLUSTER_ACTION.
//
// Broker-to-broker and broker-to-controller APIs (InterBrokerAPI) are
// exposed only on the listeners meant for them: the controller's
// (ControllerOnlyAPI) on the CONTROLLER listener, which the broker serves
// with ControllerAPI, and the others on the inter-broker listener. The
// broker (broker/) gives every other listener an API set without them, so
// a request for one there closes the connection and ApiVersions does not
// list it. Where it is exposed, each such request must also name a node of this
// cluster in its current run (cluster.CheckPeer); one that does not is
// logged with the client's address and client id and its connection
// closed. The same holds for the replica forms of Fetch,
// OffsetForLeaderEpoch and ListOffsets (a replica id >= 0), which are
// client APIs otherwise: only the replica itself may fetch as a replica,
// since its fetch offsets move the high watermark.
//
// The check needs nodes that name themselves: it applies when the broker
// wires a Controller (cluster.Controller, whose nodes all send
// PeerClientID); handlers over metadata alone (Register) skip it.
//
// Not covered: AddPartitionsToTxn v4+ is broker-to-broker in Kafka
// (KIP-890) but shares its key with the client versions.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

// InterBrokerAPI reports whether key is an API only brokers and
// controllers send each other.
func InterBrokerAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown,
		kmsg.WriteTxnMarkers, kmsg.Vote, kmsg.BeginQuorumEpoch, kmsg.EndQuorumEpoch,
		kmsg.AlterPartition, kmsg.Envelope, kmsg.FetchSnapshot, kmsg.BrokerRegistration,
		kmsg.BrokerHeartbeat, kmsg.AllocateProducerIDs, kmsg.ControllerRegistration,
		kmsg.AssignReplicasToDirs, kmsg.InitializeShareGroupState, kmsg.ReadShareGroupState,
		kmsg.WriteShareGroupState, kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary,
		kmsg.UpdateRaftVoter:
		return true
	}
	return false
}

// ControllerOnlyAPI reports whether key is served by the active controller
// alone: on the CONTROLLER listener, not on broker listeners (Kafka
// KRaft's controller APIs). gokafka's share-state writes go to the
// controller too.
func ControllerOnlyAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.AlterPartition, kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AllocateProducerIDs,
		kmsg.AssignReplicasToDirs, kmsg.WriteShareGroupState, kmsg.DeleteShareGroupState:
		return true
	}
	return false
}

// ControllerAPI reports whether key is exposed on the CONTROLLER
// listener: the controller-only RPCs, the admin requests nodes forward to
// the controller, and what an admin client needs to talk to it
// (ApiVersions, DescribeCluster, DescribeConfigs), as Kafka's controller
// listener exposes them.
func ControllerAPI(key int16) bool {
	if ControllerOnlyAPI(key) {
		return true
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions,
		kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.DescribeConfigs, kmsg.DescribeCluster,
		kmsg.AlterClientQuotas, kmsg.DescribeClientQuotas, kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.DescribeACLs,
		kmsg.AlterUserSCRAMCredentials, kmsg.DescribeUserSCRAMCredentials,
		kmsg.AlterPartitionAssignments, kmsg.ListPartitionReassignments, kmsg.ElectLeaders,
		kmsg.UnregisterBroker, kmsg.DescribeQuorum, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter:
		return true
	}
	return false
}

// replicaID returns the replica id a request acts as, or -1 for a client.
func replicaID(req *protocol.Request) int32 {
	switch r := req.Body.(type) {
	case *kmsg.FetchRequest:
		if req.Version >= 15 {
			return r.ReplicaState.ID
		}
		return r.ReplicaID
	case *kmsg.OffsetForLeaderEpochRequest:
		if req.Version >= 3 {
			return r.ReplicaID
		}
	case *kmsg.ListOffsetsRequest:
		return r.ReplicaID
	}
	return -1
}

// guard wraps every handler: it checks the sender of broker-to-broker
// requests and marks requests forwarded by another node so that they are
// answered here, never forwarded again.
func (h *Handlers) guard(fn protocol.HandlerFunc) protocol.HandlerFunc {
	return func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
		replica := replicaID(req)
		if h.ctrl != nil && (InterBrokerAPI(req.Key) || replica >= 0) {
			if err := h.checkPeer(req, replica); err != nil {
				req.Logger().Warn().Str("api", kmsg.NameForKey(req.Key)).Err(err).
					Msg("broker-to-broker request from a client that is not a node of this cluster; closing the connection")
				return nil, fmt.Errorf("refused %s: %w", kmsg.NameForKey(req.Key), err)
			}
		}
		if InterBrokerAPI(req.Key) {
			if resp, refused := h.refuseClusterAction(req); refused {
				if resp == nil {
					return nil, fmt.Errorf("refused %s: %w", kmsg.NameForKey(req.Key), errClusterAuthorization)
				}
				return resp, nil
			}
		}
		if cluster.IsForwarded(req.ClientID) {
			ctx = cluster.WithNoForward(ctx)
		}
		return fn(ctx, req)
	}
}

// checkPeer checks a broker-to-broker request's sender (see the file
// comment); replica is the replica id a fetch acts as, or -1.
func (h *Handlers) checkPeer(req *protocol.Request, replica int32) error {
	if replica >= 0 && !req.Conn.Exposes(int16(kmsg.WriteTxnMarkers)) {
		return fmt.Errorf("replica requests are served on the inter-broker listener only, not on %q", req.Conn.Listener)
	}
	im := h.meta.Image()
	if r, ok := req.Body.(*kmsg.BrokerRegistrationRequest); ok {
		// The registering run is not in the metadata yet: it must name
		// itself consistently, in this cluster; the controller refuses a
		// new run of a live broker (DUPLICATE_BROKER_REGISTRATION).
		// An observer asking to join the quorum (cluster.JoinObserver)
		// names no cluster in its request and, unless it kept the
		// metadata from an earlier run, none in its client id either.
		p, ok := cluster.ParsePeerClientID(req.ClientID)
		join := isObserverJoin(r) && (p.ClusterID == "" || p.ClusterID == im.ClusterID)
		switch {
		case !ok:
			return cluster.ErrNotPeer
		case !join && (p.ClusterID != im.ClusterID || r.ClusterID != im.ClusterID):
			return fmt.Errorf("%w: registration for cluster %q, this cluster is %q", cluster.ErrNotPeer, r.ClusterID, im.ClusterID)
		case p.NodeID != r.BrokerID || p.Incarnation != cluster.IncarnationString(r.IncarnationID):
			return fmt.Errorf("%w: registration of broker %d sent as broker %d", cluster.ErrNotPeer, r.BrokerID, p.NodeID)
		}
		return nil
	}
	p, err := cluster.CheckPeer(im, req.ClientID)
	if err != nil {
		return err
	}
	claimed := replica
	switch r := req.Body.(type) {
	case *kmsg.BrokerHeartbeatRequest:
		claimed = r.BrokerID
	case *kmsg.AlterPartitionRequest:
		claimed = r.BrokerID
	case *kmsg.AllocateProducerIDsRequest:
		claimed = r.BrokerID
	case *kmsg.AssignReplicasToDirsRequest:
		claimed = r.BrokerID
	}
	if claimed >= 0 && claimed != p.NodeID {
		return fmt.Errorf("%w: broker %d acts for broker %d", cluster.ErrNotPeer, p.NodeID, claimed)
	}
	return nil
}

// endpoint returns where a client on conn reaches broker b: its endpoint
// on the listener conn arrived on.
func endpoint(b cluster.BrokerInfo, conn *protocol.ConnInfo) (string, int32) {
	if conn == nil {
		return b.Host, b.Port
	}
	return b.Endpoint(conn.Listener)
}
