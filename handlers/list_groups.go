package handlers

// ListGroups (key 16), v0-v5.
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state name, case-insensitively (KIP-518); v5 by group type
// (KIP-848): "classic", "consumer" (a consumer-protocol group, whose
// states are Empty, Assigning, Reconciling, Stable) or "share" (KIP-932).
// While a partition is still loading the error is
// COORDINATOR_LOAD_IN_PROGRESS and the groups already loaded are listed.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

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
		if len(types) > 0 && !types[g.Type] {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, g.ProtocolType, g.StateName, g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
