package handlers

// Cluster membership APIs (cluster/membership.go).
//
// UnregisterBroker (key 64, v0) removes a decommissioned broker's
// registration: BROKER_ID_NOT_REGISTERED for an id that is not
// registered; otherwise its replicas leave every ISR and ELR and its
// leaderships move, as Kafka's controller does. Its replicas stay in the
// partition assignments (Kafka does not refuse a broker still hosting
// them): move them away first. Served on client listeners (forwarded to
// the active controller) and on the CONTROLLER listener.
//
// DescribeQuorum (key 55, v0-v2) describes the metadata quorum
// (__cluster_metadata-0) from the active controller: leader, epoch (the
// raft term), high watermark (the raft commit index), voters and
// observers with the metadata offset each last reported (see
// cluster.QuorumReplica), and from v2 the voters' quorum addresses.
// Another partition answers UNKNOWN_TOPIC_OR_PARTITION.
//
// AddRaftVoter (key 80, v0-v1) and RemoveRaftVoter (key 81, v0), KIP-853,
// change the voters through hashicorp/raft's AddVoter and
// DemoteVoter/RemoveServer: DUPLICATE_VOTER, VOTER_NOT_FOUND,
// REQUEST_TIMED_OUT for a new voter that is not an observer of the quorum,
// INCONSISTENT_CLUSTER_ID for another cluster's id, INVALID_REQUEST for a
// voter without a listener. The new voter's address is its listener named
// as this node's controller listener, else its first. gokafka keeps no
// metadata directory ids: the ones sent are not checked and none are
// reported.
//
// Each is served on client listeners, forwarded to the active controller,
// and on the CONTROLLER listener.
//
// Authorization (authz.go): ALTER on the cluster (DESCRIBE for
// DescribeQuorum), as in Kafka; refused, CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerQuorum(reg *protocol.Registry) {
	if h.ctrl == nil {
		return
	}
	reg.Register(64, 0, 0, h.unregisterBroker)
	reg.Register(55, 0, 2, h.describeQuorum)
	reg.Register(80, 0, 1, h.addRaftVoter)
	reg.Register(81, 0, 0, h.removeRaftVoter)
}

// forwardable reports whether a request this node cannot answer (it is not
// the active controller) should be forwarded: one that was not forwarded
// to it already.
func forwardable(err error, req *protocol.Request) bool {
	return errorCode(err) == kerr.NotController.Code && !cluster.IsForwarded(req.ClientID)
}

// forwardOnNotController sends r to the active controller when err says
// this node is not it (forwardable). It returns the controller's answer,
// or nil and the error to answer with: err itself, or why forwarding
// failed. notController tells an answer of a node that is not the
// controller either, to be retried elsewhere.
func (h *Handlers) forwardOnNotController(ctx context.Context, req *protocol.Request, r kmsg.Request, err error, notController func(kmsg.Response) bool) (kmsg.Response, error) {
	if !forwardable(err, req) {
		return nil, err
	}
	fwd, ferr := h.ctrl.Forward(ctx, r, notController)
	if ferr != nil {
		return nil, ferr
	}
	return fwd, nil
}

func (h *Handlers) describeQuorum(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeQuorumRequest)
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !h.authorizeCluster(req, acl.OpDescribe) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		if req.Version >= 2 {
			resp.ErrorMessage = errorMessage(errClusterAuthorization)
		}
		return resp, nil
	}
	d, err := h.ctrl.DescribeQuorum()
	fwd, err := h.forwardOnNotController(ctx, req, r, err, func(resp kmsg.Response) bool {
		for _, t := range resp.(*kmsg.DescribeQuorumResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
		return false
	})
	if fwd != nil {
		return fwd, nil
	}
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case t.Topic != partition.MetadataTopic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				if errorCode(err) == kerr.NotController.Code {
					err = kerr.NotLeaderForPartition
				}
				rp.ErrorCode = errorCode(err)
				if req.Version >= 2 {
					rp.ErrorMessage = errorMessage(err)
				}
			default:
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = d.LeaderID, d.LeaderEpoch, d.HighWatermark
				rp.CurrentVoters = replicaStates(d.Voters)
				rp.Observers = replicaStates(d.Observers)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err == nil && req.Version >= 2 {
		for _, v := range d.Voters {
			host, port, perr := net.SplitHostPort(v.Addr)
			n, _ := strconv.ParseUint(port, 10, 16)
			if perr != nil {
				continue
			}
			rn := kmsg.NewDescribeQuorumResponseNode()
			rn.NodeID = v.ID
			rn.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: h.controllerListenerName(), Host: host, Port: uint16(n)}}
			resp.Nodes = append(resp.Nodes, rn)
		}
	}
	return resp, nil
}

func replicaStates(rs []cluster.QuorumReplica) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, q := range rs {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID, s.LogEndOffset, s.LastFetchTimestamp, s.LastCaughtUpTimestamp = q.ID, q.LogEndOffset, q.LastFetch, -1
		out = append(out, s)
	}
	return out
}

// controllerListenerName names the controller listener in answers that
// list quorum addresses.
func (h *Handlers) controllerListenerName() string {
	if h.cfg.ControllerListenerName != "" {
		return h.cfg.ControllerListenerName
	}
	return "CONTROLLER"
}

func (h *Handlers) addRaftVoter(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddRaftVoterRequest)
	resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
	answer := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if !h.authorizeCluster(req, acl.OpAlter) {
		return answer(errClusterAuthorization)
	}
	if r.ClusterID != nil && *r.ClusterID != h.meta.Image().ClusterID {
		return answer(kerr.InconsistentClusterID)
	}
	if len(r.Listeners) == 0 || r.VoterID < 0 {
		return answer(kerr.InvalidRequest)
	}
	l := r.Listeners[0]
	for _, cand := range r.Listeners {
		if cand.Name == h.controllerListenerName() {
			l = cand
			break
		}
	}
	if r.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	err := h.ctrl.AddRaftVoter(ctx, r.VoterID, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
	fwd, err := h.forwardOnNotController(ctx, req, r, err, func(resp kmsg.Response) bool {
		return resp.(*kmsg.AddRaftVoterResponse).ErrorCode == kerr.NotController.Code
	})
	if fwd != nil {
		return fwd, nil
	}
	return answer(err)
}

func (h *Handlers) removeRaftVoter(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	answer := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if !h.authorizeCluster(req, acl.OpAlter) {
		return answer(errClusterAuthorization)
	}
	if r.ClusterID != nil && *r.ClusterID != h.meta.Image().ClusterID {
		return answer(kerr.InconsistentClusterID)
	}
	err := h.ctrl.RemoveRaftVoter(ctx, r.VoterID)
	fwd, err := h.forwardOnNotController(ctx, req, r, err, func(resp kmsg.Response) bool {
		return resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode == kerr.NotController.Code
	})
	if fwd != nil {
		return fwd, nil
	}
	return answer(err)
}

func (h *Handlers) unregisterBroker(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.UnregisterBrokerRequest)
	resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !h.authorizeCluster(req, acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuthorization), errorMessage(errClusterAuthorization)
		return resp, nil
	}
	err := h.ctrl.UnregisterBroker(ctx, r.BrokerID)
	if forwardable(err, req) {
		err = kerr.RequestTimedOut
	}
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	return resp, nil
}
