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

func (h *Handlers) registerShareState(reg *protocol.Registry) {
	reg.Register(85, 0, 1, h.writeShareGroupState)
	reg.Register(86, 0, 0, h.deleteShareGroupState)
}

func (h *Handlers) applyShareChange(ctx context.Context, req *protocol.Request, ch cluster.ShareChange) error {
	w := h.ctrl
	if w == nil || !cluster.IsForwarded(req.ClientID) {
		return kerr.InvalidRequest
	}
	return w.UpdateShareState(ctx, ch)
}

func (h *Handlers) writeShareGroupState(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.WriteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	err := h.applyShareChange(ctx, req, shareChangeFromWrite(h.meta.Image(), r))
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
	err := h.applyShareChange(ctx, req, shareChangeFromDelete(h.meta.Image(), r))
	rt := kmsg.NewDeleteShareGroupStateResponseTopic()
	rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
	rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, nil
}

// shareChangeFromWrite decodes a forwarded WriteShareGroupState.
func shareChangeFromWrite(im *cluster.Image, r *kmsg.WriteShareGroupStateRequest) cluster.ShareChange {
	ch := cluster.ShareChange{Group: r.GroupID, Offsets: map[string]map[int32]int64{}}
	for _, t := range r.Topics {
		name, ok := im.IDs[cluster.TopicID(t.TopicID)]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if ch.Offsets[name] == nil {
				ch.Offsets[name] = map[int32]int64{}
			}
			ch.Offsets[name][p.Partition] = p.StartOffset
			ch.Epoch = p.StateEpoch
			ch.Reset = ch.Reset || p.LeaderEpoch == cluster.ShareResetMarker
		}
	}
	return ch
}

// shareChangeFromDelete decodes a forwarded DeleteShareGroupState.
func shareChangeFromDelete(im *cluster.Image, r *kmsg.DeleteShareGroupStateRequest) cluster.ShareChange {
	ch := cluster.ShareChange{Group: r.GroupID, DeleteGroup: len(r.Topics) == 0, Reset: true}
	for _, t := range r.Topics {
		if name, ok := im.IDs[cluster.TopicID(t.TopicID)]; ok {
			ch.DeleteTopics = append(ch.DeleteTopics, name)
		}
	}
	return ch
}
