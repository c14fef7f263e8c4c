package handlers

// ListGroups (key 16), v0-v5.
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state name, case-insensitively (KIP-518); v5 by group type
// (KIP-848): "classic" or "consumer" (a consumer-protocol group, whose
// states are Empty, Assigning, Reconciling, Stable). While a partition is still loading the error is
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
	types := map[string]bool{}
	if req.Version >= 5 {
		for _, t := range r.TypesFilter {
			types[strings.ToLower(t)] = true
		}
	}
	var states []string
	if req.Version >= 4 {
		states = r.StatesFilter
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
