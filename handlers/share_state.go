package handlers

// WriteShareGroupState (key 85) v0-v1 and DeleteShareGroupState (86) v0,
// between gokafka nodes only: a node that is not the active controller
// forwards share offset changes (a leader's start-offset checkpoint, an
// administrator's reset or deletion) with them, and the controller applies
// them to the metadata. The encoding is gokafka's: StateEpoch carries the
// group's share epoch, LeaderEpoch -2 marks a reset, and a delete with no
// topics deletes the whole group. Requests from clients are refused with
// INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

type shareStateWriter interface {
	UpdateShareState(ctx context.Context, ch cluster.ShareChange) error
}

func (h *Handlers) registerShareState(reg *protocol.Registry) {
	reg.Register(85, 0, 1, h.writeShareGroupState)
	reg.Register(86, 0, 0, h.deleteShareGroupState)
}

func (h *Handlers) applyShareChange(ctx context.Context, req *protocol.Request, ch cluster.ShareChange) error {
	w, ok := h.meta.(shareStateWriter)
	if !ok || !cluster.IsForwarded(req.ClientID) {
		return kerr.InvalidRequest
	}
	return w.UpdateShareState(ctx, ch)
}

func (h *Handlers) writeShareGroupState(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	err := h.applyShareChange(ctx, req, cluster.ShareChangeFromWrite(h.meta.Image(), r))
	for _, t := range r.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, errorCode(err), errorMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (h *Handlers) deleteShareGroupState(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	err := h.applyShareChange(ctx, req, cluster.ShareChangeFromDelete(h.meta.Image(), r))
	rt := kmsg.NewDeleteShareGroupStateResponseTopic()
	rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
	rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, nil
}
