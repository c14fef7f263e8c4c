package handlers

// DeleteGroups (key 42), v0-v2.
//
// Deletes empty groups with their committed offsets (tombstones in
// __consumer_offsets); a group with members answers NON_EMPTY_GROUP, an
// unknown one GROUP_ID_NOT_FOUND.
//
// Authorization (authz.go): DELETE on each group, else
// GROUP_AUTHORIZATION_FAILED for it, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
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
	var allowed []string
	var allowedIdx []int
	for i, id := range r.Groups {
		if h.authorize(req, acl.OpDelete, acl.ResourceGroup, id) {
			allowed = append(allowed, id)
			allowedIdx = append(allowedIdx, i)
		} else {
			errs[i] = errGroupAuthorization
		}
	}
	allowedErrs := make([]error, len(allowed))
	classic, idx := h.deleteShareGroups(ctx, allowed, allowedErrs)
	if c := h.coordinator(); c == nil {
		for _, i := range idx {
			allowedErrs[i] = group.ErrCoordinatorNotAvailable
		}
	} else if len(classic) > 0 {
		for k, err := range c.DeleteGroups(ctx, classic) {
			allowedErrs[idx[k]] = err
		}
	}
	for k, i := range allowedIdx {
		errs[i] = allowedErrs[k]
	}
	for i, id := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, errorCode(errs[i])
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
