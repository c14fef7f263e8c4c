package handlers

// Fetch (key 1), v4-v16, consumer fetches.
//
// MinBytes/MaxWaitMs long-poll: replication parks the request until a high
// watermark among its partitions moves or the wait ends, never polling.
// MaxBytes bounds the whole response and PartitionMaxBytes each partition,
// but the first partition with data always returns at least one whole batch
// even if it is larger, or a big record would stall its consumer. A batch
// is returned whole even when the fetch offset points into it; clients skip
// the records below their offset.
//
// Fetch sessions (KIP-227) are not kept: a request with session id 0 is a
// full fetch and is answered with session id 0, which tells the client to
// keep sending full fetches; a non-zero session id gets
// FETCH_SESSION_ID_NOT_FOUND. Topics are named by id from v13. Replica
// fetches (replica id >= 0) belong to replication and are refused until
// then. read_committed reads up to the last stable offset.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

func (h *Handlers) registerFetch(reg *protocol.Registry) {
	reg.Register(1, 4, 16, h.fetch)
}

func (h *Handlers) fetch(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)

	if r.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	im := h.meta.Image()
	useIDs := req.Version >= 13

	// Resolve names (or ids) first; unknown ones are answered without
	// reading.
	type slot struct {
		topic, part int
		idx         int // index into params.Partitions, -1 if errored
	}
	params := replication.FetchParams{
		MinBytes:      r.MinBytes,
		MaxBytes:      r.MaxBytes,
		MaxWait:       time.Duration(r.MaxWaitMillis) * time.Millisecond,
		ReadCommitted: r.IsolationLevel == 1,
	}
	var slots []slot
	for ti, t := range r.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, topicErr := t.Topic, int16(0)
		if useIDs {
			if ti := im.TopicByID(cluster.TopicID(t.TopicID)); ti != nil {
				name = ti.Name
			} else {
				topicErr = kerr.UnknownTopicID.Code
			}
		}
		for pi, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			switch {
			case topicErr != 0:
				rp.ErrorCode = topicErr
				slots = append(slots, slot{ti, pi, -1})
			case r.ReplicaID >= 0:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				slots = append(slots, slot{ti, pi, -1})
			default:
				slots = append(slots, slot{ti, pi, len(params.Partitions)})
				params.Partitions = append(params.Partitions, replication.FetchPartition{
					TP:                 partition.TopicPartition{Topic: name, Partition: p.Partition},
					Offset:             p.FetchOffset,
					MaxBytes:           p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch,
				})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	results := h.replicas.Fetch(ctx, params)
	for _, s := range slots {
		if s.idx < 0 {
			continue
		}
		res := results[s.idx]
		rp := &resp.Topics[s.topic].Partitions[s.part]
		rp.ErrorCode = errorCode(res.Err)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		rp.RecordBatches = res.Records
	}
	return resp, nil
}
