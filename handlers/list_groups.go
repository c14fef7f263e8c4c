package handlers

// ListGroups (key 16), v0-v5.
//
// Lists the groups this broker coordinates (clients ask every broker).
// v4 filters by state name, case-insensitively (KIP-518); v5 by group type
// (KIP-848): every group here is "classic", so a filter without it lists
// nothing. While a partition is still loading the error is
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
	classic, shared := true, true
	if req.Version >= 5 && len(r.TypesFilter) > 0 {
		classic, shared = false, false
		for _, t := range r.TypesFilter {
			classic = classic || strings.EqualFold(t, "classic")
			shared = shared || strings.EqualFold(t, "share")
		}
	}
	if shared {
		for _, g := range h.shareListGroups(states) {
			rg := kmsg.NewListGroupsResponseGroup()
			rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, "share", g.State, "share"
			resp.Groups = append(resp.Groups, rg)
		}
	}
	if !classic {
		return resp, nil
	}
	groups, err := c.ListGroups(states)
	resp.ErrorCode = errorCode(err)
	for _, g := range groups {
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.GroupID, g.ProtocolType, g.State.String(), "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
