package handlers

// ListGroups (key 16), v0-v5.
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state name, case-insensitively (KIP-518); v5 by group type
// (KIP-848): "classic", "consumer" (a consumer-protocol group, whose
// states are Empty, Assigning, Reconciling, Stable) or "share" (KIP-932).
// While a partition is still loading the error is
// COORDINATOR_LOAD_IN_PROGRESS and the groups already loaded are listed.
//
// Authorization (authz.go), as Kafka's: DESCRIBE on the cluster lists
// every group; without it, only the groups the client may DESCRIBE are
// listed.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerListGroups(reg *protocol.Registry) {
	reg.Register(16, 0, 5, h.listGroups)
}

func (h *Handlers) listGroups(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	c := h.coordinator()
	if c == nil {
		resp.ErrorCode = errorCode(group.ErrCoordinatorNotAvailable)
		return resp, nil
	}
	// DESCRIBE on the cluster lists every group; without it, only the
	// groups the client may describe, as Kafka lists them.
	visible := func(string) bool { return true }
	if h.authz != nil && !h.authorizeCluster(req, acl.OpDescribe) {
		visible = func(id string) bool { return h.authorize(req, acl.OpDescribe, acl.ResourceGroup, id) }
	}
	var states []string
	if req.Version >= 4 {
		states = r.StatesFilter
	}
	// The type filter (v5): "classic" and "consumer" groups come from the
	// group coordinator, "share" groups from the share coordinator.
	types := map[string]bool{}
	if req.Version >= 5 {
		for _, t := range r.TypesFilter {
			types[strings.ToLower(t)] = true
		}
	}
	if len(types) == 0 || types["share"] {
		for _, g := range h.shareListGroups(states) {
			if !visible(g.GroupID) {
				continue
			}
			rg := kmsg.NewListGroupsResponseGroup()
			rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, "share", g.State, "share"
			resp.Groups = append(resp.Groups, rg)
		}
	}
	if len(types) > 0 && !types["classic"] && !types["consumer"] {
		return resp, nil
	}
	groups, err := c.ListGroups(states)
	resp.ErrorCode = errorCode(err)
	for _, g := range groups {
		if len(types) > 0 && !types[g.Type] || !visible(g.GroupID) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, g.ProtocolType, g.StateName, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
