package handlers

// Fetch (key 1), v2-v16, from consumers and from followers. v2-v3 are
// listed as Kafka 3.9 lists them (librdkafka's feature detection needs
// them); the record batches go out as stored, in the v2 format, with no
// down-conversion for clients that predate it.
//
// MinBytes/MaxWaitMs long-poll: replication parks the request until a high
// watermark among its partitions moves (for a follower: its log end) or
// the wait ends, never polling. MaxBytes bounds the whole response and
// PartitionMaxBytes each partition, but the first partition with data
// always returns at least one whole batch even if it is larger, or a big
// record would stall its consumer. A batch is returned whole even when the
// fetch offset points into it; clients skip the records below their offset.
//
// Fetch sessions (KIP-227) are not kept: a request with session id 0 is a
// full fetch and is answered with session id 0, which tells the client to
// keep sending full fetches; a non-zero session id gets
// FETCH_SESSION_ID_NOT_FOUND. Topics are named by id from v13.
// read_committed reads up to the last stable offset (the first offset of
// the earliest transaction not yet decided, else the high watermark) and
// lists the aborted transactions overlapping the records returned, whose
// records the consumer drops (KIP-98).
//
// A replica id >= 0 (ReplicaID up to v14, ReplicaState.ID from v15, KIP-903)
// marks a follower: it reads up to the leader's log end rather than the
// high watermark, its fetch offset moves the ISR and the high watermark,
// and a broker outside the replica set is refused as Kafka does
// (UNKNOWN_LEADER_EPOCH with a current leader epoch, NOT_LEADER_OR_FOLLOWER
// without). From v12 a LastFetchedEpoch the leader's log does not agree
// with is answered with DivergingEpoch instead of records (KIP-320 style
// truncation on fetch; consumers get the same check).

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
	reg.Register(1, 2, 16, h.fetch)
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
		ZeroCopy:      req.Conn != nil && req.Conn.ZeroCopy,
	}
	replicaID, replicaEpoch := r.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = r.ReplicaState.ID, r.ReplicaState.Epoch
	}
	if replicaID >= 0 {
		params.FromFollower, params.ReplicaID, params.ReplicaEpoch = true, replicaID, replicaEpoch
		params.ReadCommitted = false
	} else {
		params.MaxBytes = h.fetchMaxBytes(req, params.MaxBytes)
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
			default:
				slots = append(slots, slot{ti, pi, len(params.Partitions)})
				fp := replication.FetchPartition{
					TP:                 partition.TopicPartition{Topic: name, Partition: p.Partition},
					Offset:             p.FetchOffset,
					MaxBytes:           p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch,
					LogStartOffset:     -1,
				}
				if req.Version < 9 {
					fp.CurrentLeaderEpoch = -1
				}
				if req.Version >= 12 && p.LastFetchedEpoch >= 0 {
					fp.LastFetchedEpoch, fp.HasLastFetchedEpoch = p.LastFetchedEpoch, true
				}
				if req.Version >= 5 {
					fp.LogStartOffset = p.LogStartOffset
				}
				params.Partitions = append(params.Partitions, fp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	results := h.replicas.Fetch(ctx, params)
	var spliced *protocol.SplicedResponse
	for _, s := range slots {
		if s.idx < 0 {
			continue
		}
		res := results[s.idx]
		rp := &resp.Topics[s.topic].Partitions[s.part]
		rp.ErrorCode = errorCode(res.Err)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		rp.RecordBatches = res.Records
		if res.Region != nil {
			// Sent straight from the segment file (see protocol/splice.go).
			if spliced == nil {
				spliced = &protocol.SplicedResponse{Response: resp}
			}
			rp.RecordBatches = spliced.Placeholder(protocol.FileRegion{File: res.Region.File, Off: res.Region.Pos, Len: res.Region.Len})
		}
		for _, a := range res.AbortedTransactions {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			rp.AbortedTransactions = append(rp.AbortedTransactions, at)
		}
		if res.HasDivergingEpoch && req.Version >= 12 {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
		}
	}
	// A partition with nothing to return carries an empty record set, not
	// a null one: librdkafka and kafka-python fail to parse a null set.
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if resp.Topics[ti].Partitions[pi].RecordBatches == nil {
				resp.Topics[ti].Partitions[pi].RecordBatches = []byte{}
			}
		}
	}
	if !params.FromFollower {
		if throttled := h.throttleFetch(ctx, req, results); throttled != nil {
			if spliced != nil {
				spliced.Close()
			}
			return throttled, nil
		}
	}
	if spliced != nil {
		return spliced, nil
	}
	return resp, nil
}
