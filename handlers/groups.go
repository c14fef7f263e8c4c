package handlers

// The consumer-group APIs (FindCoordinator, JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
// DescribeGroups, DeleteGroups, OffsetDelete, and KIP-848's
// ConsumerGroupHeartbeat and ConsumerGroupDescribe) are served by the group
// coordinator; each has its own file. Until the broker sets the
// coordinator they answer COORDINATOR_NOT_AVAILABLE.

import (
	"net"

	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerGroups(reg *protocol.Registry) {
	for _, r := range []func(*protocol.Registry){
		h.registerFindCoordinator,
		h.registerJoinGroup,
		h.registerSyncGroup,
		h.registerHeartbeat,
		h.registerLeaveGroup,
		h.registerOffsetCommit,
		h.registerOffsetFetch,
		h.registerListGroups,
		h.registerDescribeGroups,
		h.registerDeleteGroups,
		h.registerOffsetDelete,
		h.registerConsumerGroupHeartbeat,
		h.registerConsumerGroupDescribe,
	} {
		r(reg)
	}
}

// coordinator returns the group coordinator, nil before it is set.
func (h *Handlers) coordinator() *group.Coordinator { return h.groups }

// clientHost is how Kafka reports a member's host: "/" and its address.
func clientHost(req *protocol.Request) string {
	if req.Conn == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(req.Conn.RemoteAddr)
	if err != nil {
		host = req.Conn.RemoteAddr
	}
	return "/" + host
}

func strPtr(s string) *string { return &s }
