package handlers

// ListOffsets (key 2), v0-v8.
//
// Timestamp -1 is the latest offset (the high watermark, or the last stable
// offset for read_committed from v2), -2 the earliest (the log start
// offset), -3 the offset of the record with the largest timestamp (v7+,
// KIP-734), -4 the earliest local offset (v8+, KIP-405; the same as -2
// here), anything else the first offset whose timestamp is at or after
// it, or -1 when there is none. The current leader epoch (v4+) is checked
// as in KIP-320. A leader whose high watermark has not yet reached the
// start of its leader epoch answers "latest", and a timestamp lookup that
// finds nothing below the high watermark, with OFFSET_NOT_AVAILABLE
// (retriable, KIP-207), so that the offset never moves backwards across a
// failover. v1+ answers a single offset; v0 answers a list of at most
// MaxNumOffsets offsets, which gokafka fills with the one offset found (the
// list form dates from when offsets were looked up per segment).
//
// Authorization (authz.go): each topic needs DESCRIBE
// (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerListOffsets(reg *protocol.Registry) {
	reg.Register(2, 0, 8, h.listOffsets)
}

func (h *Handlers) listOffsets(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			ts := p.Timestamp
			if ts == -4 && req.Version >= 8 {
				// Earliest local offset (KIP-405): all of the log is local.
				ts = -2
			}
			if !describe(t.Topic) {
				rp.ErrorCode = errorCode(errTopicAuthorization)
			} else if ts == -3 && req.Version < 7 || ts < -3 {
				rp.ErrorCode = kerr.UnsupportedVersion.Code
			} else {
				tp := partition.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				off, ts, epoch, err := h.replicas.ListOffset(tp, ts, p.CurrentLeaderEpoch, r.IsolationLevel == 1)
				rp.ErrorCode = errorCode(err)
				if err == nil {
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = off, ts, epoch
					if req.Version == 0 && p.MaxNumOffsets > 0 && off >= 0 {
						rp.OldStyleOffsets = []int64{off}
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
