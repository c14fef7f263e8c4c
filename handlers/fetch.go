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
// Fetch sessions (KIP-227, fetch_session.go): a full fetch may open one,
// an incremental fetch reads every partition of its session (a
// follower's: only those that changed since its previous fetch, see
// replication/session.go) and is answered with only those that have
// something new. Topics are named by
// id from v13.
// read_committed reads up to the last stable offset (the first offset of
// the earliest transaction not yet decided, else the high watermark) and
// lists the aborted transactions overlapping the records returned, whose
// records the consumer drops (KIP-98).
//
// From v11 a consumer's fetch names its rack (client.rack): a follower
// serves it up to its own high watermark, and a leader with
// replica.selector.class may answer PreferredReadReplica instead of
// records (KIP-392; replication/preferred.go).
//
// A replica id >= 0 (ReplicaID up to v14, ReplicaState.ID from v15, KIP-903)
// marks a follower: it reads up to the leader's log end rather than the
// high watermark, its fetch offset moves the ISR and the high watermark,
// and a broker outside the replica set is refused as Kafka does
// (UNKNOWN_LEADER_EPOCH with a current leader epoch, NOT_LEADER_OR_FOLLOWER
// without). From v12 a LastFetchedEpoch the leader's log does not agree
// with is answered with DivergingEpoch instead of records (KIP-320 style
// truncation on fetch; consumers get the same check).
//
// Limits (KafkaApis.handleFetchRequest): the response is bounded by the
// broker's fetch.max.bytes whatever MaxBytes the request asks (v0-v2 carry
// none), and MinBytes by that bound; each partition's PartitionMaxBytes
// is honoured within it. A MaxBytes of zero or less still returns the
// first batch, as Kafka's minOneMessage does, and nothing more. A
// partition named more than once is read and answered once, where it was
// first named, with the parameters it was last named with: Kafka's
// FetchRequest collects partitions in a LinkedHashMap, which answers a
// sessionless fetch the same way. So a request pins at most one file per
// distinct partition it names, however long it is.
//
// Authorization (authz.go), as Kafka's: a consumer needs READ on each
// topic (TOPIC_AUTHORIZATION_FAILED); a follower's fetch needs
// CLUSTER_ACTION on the cluster, or every partition answers
// TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

func (h *Handlers) registerFetch(reg *protocol.Registry) {
	reg.Register(1, 2, 16, h.fetch)
}

// fetch answers a Fetch in steps: the read parameters, the response
// laid out with one read per distinct partition, the reads (which may
// park), their results copied in, then the consumer quota's throttle.
func (h *Handlers) fetch(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)

	im := h.meta.Image()
	useIDs := req.Version >= 13

	if isMetadataPositionFetch(req, r) {
		return h.metadataPosition(ctx, r), nil
	}
	params := h.fetchParams(ctx, req, r)
	fc, errCode := h.sessions.newContext(req.Version, r, params.FromFollower)
	if errCode != 0 {
		resp.ErrorCode = errCode
		return resp, nil
	}
	allowed := h.topicAuthorizer(req, acl.OpRead)
	if params.FromFollower {
		follower := h.authorizeCluster(req, acl.OpClusterAction)
		allowed = func(string) bool { return follower }
	}
	parked := false
	params.OnPark = func() {
		req.Park()
		if !parked {
			parked = true
			h.obs.Parked("Fetch", 1)
		}
	}
	defer func() {
		if parked {
			h.obs.Parked("Fetch", -1)
		}
	}()
	slots := planFetch(req, fc.entries, resp, im, useIDs, &params, allowed)
	if answerNow(slots, &params) {
		params.MaxWait = 0
	}
	// With Config.FollowerSessionWatch, a follower's session keeps a
	// watch on its partitions from the full fetch that opens it on, and
	// each of its fetches reads only those that need it
	// (fetch_session.go).
	var watch *replication.SessionWatch
	switch {
	case h.sessions.watchFollowers && fc.kind == fetchFull && params.FromFollower && r.SessionEpoch == sessionEpochInitial && h.sessions.max > 0:
		watch = h.replicas.NewSessionWatch(params.ReplicaID)
		params.Session = watch
	case fc.kind == fetchIncremental && fc.session.watch != nil:
		params.Session = fc.session.watch
		params.More = func() ([]replication.FetchPartition, bool) {
			extra, changed := fc.more()
			n := len(params.Partitions)
			slots = append(slots, planFetch(req, extra, resp, im, useIDs, &params, allowed)...)
			return params.Partitions[n:], changed
		}
	}
	results := h.replicas.Fetch(ctx, params)
	for i, res := range results {
		n := int64(len(res.Records))
		if res.Region != nil {
			n = res.Region.Len
		}
		if n > 0 {
			h.obs.BytesOut(params.Partitions[i].TP.Topic, n)
		}
	}
	if !params.FromFollower {
		if throttled := h.throttleFetch(ctx, req, results); throttled != nil {
			replication.CloseRegions(results)
			if watch != nil {
				watch.Close()
			}
			if fc.kind == fetchIncremental {
				throttled.SessionID = fc.session.id
			}
			return throttled, nil
		}
	}
	switch fc.kind {
	case fetchFull:
		resp.SessionID = h.sessions.createSession(params.FromFollower, useIDs, fc.entries, fetchAnswers(resp, slots, results, params.Partitions), watch)
		if resp.SessionID == 0 && watch != nil {
			watch.Close()
		}
		if resp.SessionID != 0 {
			req.Logger().Debug().Int32("session_id", resp.SessionID).Bool("follower", params.FromFollower).
				Int("partitions", len(fc.entries)).Msg("fetch session created")
		}
	case fetchIncremental:
		h.sessions.read.Add(int64(len(params.Partitions)))
		keep, ok := fc.respond(h.sessions, fetchAnswers(resp, slots, results, params.Partitions))
		if !ok {
			// Another fetch of the session was answered meanwhile.
			replication.CloseRegions(results)
			resp.Topics = nil
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return resp, nil
		}
		slots = keepFetchSlots(resp, slots, keep, results)
		resp.SessionID = fc.session.id
		if fc.reqEpoch == 1 {
			req.Logger().Debug().Int32("session_id", resp.SessionID).Bool("follower", params.FromFollower).
				Int("partitions", len(fc.entries)).Int("answered", len(slots)).Msg("fetch session answered its first incremental fetch")
		}
	}
	spliced := fillFetchResponse(req, resp, slots, results)
	emptyNullRecordSets(resp)
	if spliced != nil {
		return spliced, nil
	}
	return resp, nil
}

// fetchParams turns the request's top-level fields into replication's
// parameters, without partitions: MaxBytes bounded by fetch.max.bytes and
// MinBytes by that, and the replica id (ReplicaState from v15) telling a
// follower, which reads uncommitted up to the log end and is not bound by
// the consumer fetch quota, from a consumer, which is.
func (h *Handlers) fetchParams(ctx context.Context, req *protocol.Request, r *kmsg.FetchRequest) replication.FetchParams {
	params := replication.FetchParams{
		MinBytes:      r.MinBytes,
		MaxBytes:      fetchMaxBytes(r.MaxBytes, h.cfg.FetchMaxBytes),
		MaxWait:       time.Duration(r.MaxWaitMillis) * time.Millisecond,
		ReadCommitted: r.IsolationLevel == 1,
		ZeroCopy:      req.Conn != nil && req.Conn.ZeroCopy,
		OnPark:        req.Park,
	}
	params.MinBytes = min(params.MinBytes, params.MaxBytes)
	replicaID, replicaEpoch := r.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = r.ReplicaState.ID, r.ReplicaState.Epoch
	}
	if replicaID >= 0 {
		params.FromFollower, params.ReplicaID, params.ReplicaEpoch = true, replicaID, replicaEpoch
		params.ReadCommitted = false
	} else {
		params.MaxBytes = h.quotaFetchMaxBytes(ctx, req, params.MaxBytes)
		// From v11 a consumer's fetch carries its rack (KIP-392): a
		// follower may serve it and a leader may name a closer replica.
		params.ClientMetadata, params.ClientRack = req.Version >= 11, r.Rack
	}
	return params
}

// fetchSlot locates one answered partition in the response, and the read
// that answers it.
type fetchSlot struct {
	topic, part int
	idx         int // index into params.Partitions, -1 if errored
}

// answerNow reports whether a fetch must be answered without parking
// because planFetch answered some of its partitions with an error (a
// topic id unknown here, a topic not authorized). Kafka answers at once
// when no partition is left to read, and so does gokafka. A follower's
// fetch is answered at once when any partition failed: its UNKNOWN_TOPIC_ID
// says this leader has not applied the metadata that made it a replica
// yet, the follower retries that partition within milliseconds, and a
// fetch parked for replica.fetch.wait.max.ms would hold the partition's
// first acks=all produce (it waits for the whole ISR) for as long.
func answerNow(slots []fetchSlot, params *replication.FetchParams) bool {
	if len(slots) == len(params.Partitions) {
		return false // nothing failed
	}
	return len(params.Partitions) == 0 || params.FromFollower
}

// planFetch lays out the response and the reads of entries, the
// partitions of a full fetch (each distinct partition once, in the order
// first named, with the last parameters given for it; see the top of this
// file) or of an incremental fetch's session. Every partition gets a
// response entry with -1 offsets; one whose topic id is unknown is
// answered UNKNOWN_TOPIC_ID there and read from nowhere, the others are
// appended to params.Partitions. The slots returned are in response order, one per
// response partition.
func planFetch(req *protocol.Request, entries []fetchEntry, resp *kmsg.FetchResponse, im *cluster.Image, useIDs bool, params *replication.FetchParams, allowed func(topic string) bool) []fetchSlot {
	slots := make([]fetchSlot, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != e.topic || resp.Topics[n-1].TopicID != e.topicID {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = e.topic, e.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = e.part
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		rp.PreferredReadReplica = -1
		rt.Partitions = append(rt.Partitions, rp)
		at := fetchSlot{len(resp.Topics) - 1, len(rt.Partitions) - 1, -1}

		name := e.topic
		if useIDs {
			ti := im.TopicByID(cluster.TopicID(e.topicID))
			if ti == nil {
				rt.Partitions[at.part].ErrorCode = kerr.UnknownTopicID.Code
				slots = append(slots, at)
				continue
			}
			name = ti.Name
		}
		if !allowed(name) {
			rt.Partitions[at.part].ErrorCode = errorCode(errTopicAuthorization)
			slots = append(slots, at)
			continue
		}
		at.idx = len(params.Partitions)
		slots = append(slots, at)
		params.Partitions = append(params.Partitions, partitionRead(req.Version, name, e.part, &e.partFetch))
	}
	return slots
}

// partitionRead is one partition's read, its fields taken as far as the
// request's version carries them (CurrentLeaderEpoch from v9,
// LogStartOffset from v5, LastFetchedEpoch from v12).
func partitionRead(version int16, name string, num int32, p *partFetch) replication.FetchPartition {
	part := replication.FetchPartition{
		TP:                 partition.TopicPartition{Topic: name, Partition: num},
		Offset:             p.fetchOffset,
		MaxBytes:           p.maxBytes,
		CurrentLeaderEpoch: p.leaderEpoch,
		LogStartOffset:     -1,
	}
	if version < 9 {
		part.CurrentLeaderEpoch = -1
	}
	if version >= 12 && p.lastFetchedEpoch >= 0 {
		part.LastFetchedEpoch, part.HasLastFetchedEpoch = p.lastFetchedEpoch, true
	}
	if version >= 5 {
		part.LogStartOffset = p.logStartOffset
	}
	return part
}

// fillFetchResponse copies each read's result into its response entry:
// error, offsets, records, aborted transactions and (from v12) the
// diverging epoch. Records served from a segment file become placeholders
// of a spliced response, which it returns (nil when every record set is
// in memory); the caller must send or Close it.
func fillFetchResponse(req *protocol.Request, resp *kmsg.FetchResponse, slots []fetchSlot, results []replication.FetchResult) *protocol.SplicedResponse {
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
		if res.HasPreferredReadReplica && req.Version >= 11 {
			rp.PreferredReadReplica = res.PreferredReadReplica
		}
		if res.HasDivergingEpoch && req.Version >= 12 {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
		}
	}
	return spliced
}

// fetchAnswers lists, per slot, what the response says of its partition,
// for the fetch session to compare with what it said last.
func fetchAnswers(resp *kmsg.FetchResponse, slots []fetchSlot, results []replication.FetchResult, reads []replication.FetchPartition) []fetchAnswer {
	answers := make([]fetchAnswer, len(slots))
	for i, s := range slots {
		a := &answers[i]
		if s.idx < 0 {
			rp := &resp.Topics[s.topic].Partitions[s.part]
			a.errCode, a.hw, a.lso, a.logStart = rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset
			continue
		}
		res := &results[s.idx]
		a.errCode = errorCode(res.Err)
		a.hw, a.lso, a.logStart = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		a.hasRecords = len(res.Records) > 0 || (res.Region != nil && res.Region.Len > 0)
		a.diverging = res.HasDivergingEpoch
		a.tp, a.settled = reads[s.idx].TP, res.Settled
	}
	return answers
}

// keepFetchSlots drops from resp the partitions an incremental response
// leaves out (keep[i] false for slot i), closing their file regions, and
// returns the slots of those left.
func keepFetchSlots(resp *kmsg.FetchResponse, slots []fetchSlot, keep []bool, results []replication.FetchResult) []fetchSlot {
	old := resp.Topics
	resp.Topics = nil
	kept := make([]fetchSlot, 0, len(slots))
	lastTopic := -1
	for i, s := range slots {
		if !keep[i] {
			if s.idx >= 0 {
				replication.CloseRegions(results[s.idx : s.idx+1])
			}
			continue
		}
		if s.topic != lastTopic {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = old[s.topic].Topic, old[s.topic].TopicID
			resp.Topics = append(resp.Topics, rt)
			lastTopic = s.topic
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, old[s.topic].Partitions[s.part])
		kept = append(kept, fetchSlot{len(resp.Topics) - 1, len(rt.Partitions) - 1, s.idx})
	}
	return kept
}

// emptyNullRecordSets gives a partition with nothing to return an empty
// record set, not a null one: librdkafka and kafka-python fail to parse a
// null set.
func emptyNullRecordSets(resp *kmsg.FetchResponse) {
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if resp.Topics[ti].Partitions[pi].RecordBatches == nil {
				resp.Topics[ti].Partitions[pi].RecordBatches = []byte{}
			}
		}
	}
}

// defaultFetchMaxBytes is Kafka's fetch.max.bytes.
const defaultFetchMaxBytes = 57671680

// fetchMaxBytes bounds a request's MaxBytes by the broker's fetch.max.bytes
// (0: Kafka's default). A non-positive MaxBytes becomes 1: the first
// batch, and nothing after it.
func fetchMaxBytes(asked, broker int32) int32 {
	if broker <= 0 {
		broker = defaultFetchMaxBytes
	}
	return max(min(asked, broker), 1)
}

// fetchPart locates one partition entry of a FetchRequest.
type fetchPart struct{ topic, part int }

// dedupFetchPartitions lists the request's partitions once each, in the
// order they were first named, each pointing at the entry that named it
// last (Kafka's LinkedHashMap.put keeps the first position and the last
// value). Topics are told apart by name, or by id from v13.
func dedupFetchPartitions(r *kmsg.FetchRequest, useIDs bool) []fetchPart {
	type key struct {
		name string
		id   [16]byte
		part int32
	}
	var order []fetchPart
	seen := make(map[key]int)
	for ti := range r.Topics {
		t := &r.Topics[ti]
		for pi := range t.Partitions {
			k := key{part: t.Partitions[pi].Partition}
			if useIDs {
				k.id = t.TopicID
			} else {
				k.name = t.Topic
			}
			if i, dup := seen[k]; dup {
				order[i] = fetchPart{ti, pi}
				continue
			}
			seen[k] = len(order)
			order = append(order, fetchPart{ti, pi})
		}
	}
	return order
}
