package handlers

// Produce (key 0), v0-v11: magic v2 record batches only (v3 is the first
// version that carries them). v0-v2 are listed, as Kafka 3.9 lists them,
// because librdkafka decides from them whether the broker takes compressed
// batches at all (Produce v0 for gzip and snappy, Produce and Fetch v2 for
// its message-format feature); an old-format message set in a v0-v2
// request is refused as INVALID_RECORD, since gokafka does not convert
// formats.
//
// Batches are stored as sent: replication validates the frame, CRC-32C,
// record count and size, then the log rewrites only the base offset and the
// partition leader epoch (and, for LogAppendTime topics, the timestamp and
// CRC). acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS). With acks=0
// nothing is written back; if a partition failed the connection is closed
// instead, which is how Kafka lets such a producer notice. Produce never
// creates topics; clients learn of a topic through Metadata first.
//
// Transactional batches (KIP-98) need the request's transactional id. The
// first one of a producer's transaction on a partition is appended only
// if the transaction coordinator confirms that the partition is in the
// producer's ongoing transaction (KIP-890 part 1; INVALID_TXN_STATE if
// not, INVALID_PRODUCER_EPOCH for a fenced producer). When this broker is
// the coordinator the question is answered in memory under the
// partition's producer-state lock, so no marker can land between the
// answer and the append; otherwise it goes to the coordinator's broker
// (AddPartitionsToTxn v4, VerifyOnly) before the append. Control batches
// are refused: only the coordinator writes markers (WriteTxnMarkers).
//
// A request's partitions are appended by at most produceWorkers
// goroutines (a protocol.Group, so a panic in one is the handler's panic),
// never one goroutine per entry; acks=all then waits for all of them at
// once, under the request's one timeout, with the request parked
// (protocol.Request.Park) rather than holding a queued.max.requests slot.
//
// Authorization (authz.go), as Kafka's: a request carrying transactional
// batches needs WRITE on its transactional id, or every partition answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE
// (TOPIC_AUTHORIZATION_FAILED). Idempotence needs nothing more here: it
// was checked when the producer got its id (InitProducerId, KIP-679).
//
// Internal topics (__consumer_offsets, __transaction_state) are written
// only by their coordinators: a client's produce to one is refused with
// INVALID_TOPIC_EXCEPTION, as Kafka does.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// produceWorkers bounds the goroutines appending one request's partitions.
const produceWorkers = 8

func (h *Handlers) registerProduce(reg *protocol.Registry) {
	reg.Register(0, 0, 11, h.produce)
}

func (h *Handlers) produce(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond

	// Partitions are appended first, then (for acks=all) waited on
	// together, so a request spanning many partitions takes one timeout,
	// not one each.
	type entry struct {
		topic   string
		records []byte
		rp      *kmsg.ProduceResponseTopicPartition
		wait    replication.ProduceWait
	}
	var entries []entry
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	var txnRefused bool
	if h.authz != nil && hasTransactionalBatch(r) {
		txnRefused = r.TransactionID == nil || !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, *r.TransactionID)
	}
	writeAllowed := h.topicAuthorizer(req, acl.OpWrite)
	for ti, t := range r.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			switch {
			case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case txnRefused:
				rp.ErrorCode = errorCode(errTxnIDAuthorization)
			case !writeAllowed(t.Topic):
				rp.ErrorCode = errorCode(errTopicAuthorization)
			case cluster.IsInternalTopic(t.Topic):
				// Kafka's ReplicaManager: only the broker appends to an
				// internal topic ("Cannot append to internal topic").
				rp.ErrorCode = kerr.InvalidTopicException.Code
				if req.Version >= 8 {
					msg := "Cannot append to internal topic " + t.Topic
					rp.ErrorMessage = &msg
				}
				req.Logger().Warn().Str("topic", t.Topic).Int32("partition", p.Partition).Msg("produce to an internal topic refused")
			default:
				entries = append(entries, entry{topic: t.Topic, records: p.Records, rp: rp})
			}
		}
	}
	fail := func(e *entry, err error) {
		e.rp.BaseOffset, e.rp.LogAppendTime, e.rp.LogStartOffset = -1, -1, -1
		e.rp.ErrorCode = errorCode(err)
		if req.Version >= 8 {
			e.rp.ErrorMessage = errorMessage(err)
		}
		req.Logger().Debug().Str("topic", e.topic).Int32("partition", e.rp.Partition).Int16("code", e.rp.ErrorCode).Err(err).Msg("produce failed")
	}
	appendOne := func(e *entry) {
		tp := partition.TopicPartition{Topic: e.topic, Partition: e.rp.Partition}
		opts, err := h.txnProduceOptions(ctx, r.TransactionID, tp, e.records)
		var info partition.AppendInfo
		if err == nil {
			info, e.wait, err = h.replicas.AppendWithOptions(ctx, tp, e.records, r.Acks, timeout, opts)
		}
		if err != nil {
			fail(e, err)
			return
		}
		e.rp.BaseOffset, e.rp.LogAppendTime, e.rp.LogStartOffset = info.FirstOffset, info.LogAppendTime, info.LogStartOffset
		h.obs.BytesIn(e.topic, int64(len(e.records)), info.NumRecords)
	}
	if len(entries) == 1 {
		appendOne(&entries[0])
	} else {
		g := protocol.NewGroup(produceWorkers)
		for i := range entries {
			g.Go(func() { appendOne(&entries[i]) })
		}
		g.Wait()
	}
	var deadline chan time.Time
	for i := range entries {
		e := &entries[i]
		if e.wait == nil {
			continue
		}
		if deadline == nil {
			req.Park()
			h.obs.Parked("Produce", 1)
			defer h.obs.Parked("Produce", -1)
			deadline = make(chan time.Time)
			t := time.AfterFunc(timeout, func() { close(deadline) })
			defer t.Stop()
		}
		if err := e.wait(ctx, deadline); err != nil {
			fail(e, err)
		}
	}
	failed := false
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			failed = failed || rp.ErrorCode != 0
		}
	}
	h.throttleProduce(ctx, req, resp, r.Acks)
	if r.Acks == 0 {
		if failed {
			return nil, fmt.Errorf("acks=0 produce failed for a partition")
		}
		return nil, nil
	}
	return resp, nil
}

// hasTransactionalBatch reports whether any partition of r carries a
// transactional batch.
func hasTransactionalBatch(r *kmsg.ProduceRequest) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if hdr, err := partition.ParseBatchHeader(p.Records); err == nil && hdr.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// txnProduceOptions sets up the KIP-890 check for a transactional batch.
func (h *Handlers) txnProduceOptions(ctx context.Context, txnID *string, tp partition.TopicPartition, records []byte) (replication.AppendOptions, error) {
	var opts replication.AppendOptions
	hdr, err := partition.ParseBatchHeader(records)
	if err != nil || !hdr.IsTransactional() || hdr.IsControl() {
		// Replication validates the batch and refuses control batches.
		return opts, nil
	}
	if txnID == nil || *txnID == "" {
		return opts, fmt.Errorf("%w: transactional batch without a transactional id", idempotent.ErrInvalidTxnState)
	}
	if h.txn == nil {
		return opts, nil
	}
	id, pid, epoch := *txnID, hdr.ProducerID, hdr.ProducerEpoch
	if h.txn.Coordinates(id) {
		// Asked in memory under the producer-state lock: no marker can
		// land between the answer and the append.
		opts.VerifyTxn = func() error { return h.txn.VerifyLocal(id, pid, epoch, tp) }
		return opts, nil
	}
	// The coordinator is elsewhere: ask it over the network before taking
	// any lock, and only for a producer's first batch on the partition.
	// A marker for this transaction can then still race with the append,
	// which the producer's epoch (bumped by every abort the coordinator
	// starts) mostly closes.
	if !h.replicas.InTxn(tp, pid, epoch) {
		if err := h.txn.VerifyRemote(ctx, id, pid, epoch, tp); err != nil {
			return opts, err
		}
	}
	return opts, nil
}
