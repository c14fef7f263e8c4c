package handlers

// DeleteGroups (key 42), v0-v2.
//
// Deletes empty groups with their committed offsets (tombstones in
// __consumer_offsets); a group with members answers NON_EMPTY_GROUP, an
// unknown one GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerDeleteGroups(reg *protocol.Registry) {
	reg.Register(42, 0, 2, h.deleteGroups)
}

func (h *Handlers) deleteGroups(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	errs := make([]error, len(r.Groups))
	if c := h.coordinator(); c == nil {
		for i := range errs {
			errs[i] = group.ErrCoordinatorNotAvailable
		}
	} else {
		errs = c.DeleteGroups(ctx, r.Groups)
	}
	for i, id := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, errorCode(errs[i])
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
