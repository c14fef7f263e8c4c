package handlers

// AddPartitionsToTxn (key 24), v0-v4.
//
// v0-v3 (clients) add partitions to one producer's transaction. A
// partition of a topic that does not exist answers
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, with
// nothing added; otherwise every partition gets the coordinator's answer,
// given once the change is replicated. v4+ (KIP-890, between brokers)
// batches transactions, and a transaction with VerifyOnly only checks that
// its partitions are in the ongoing transaction (INVALID_TXN_STATE if
// not): the partition leader's question before the first transactional
// batch. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// Authorization (authz.go), as Kafka's: v4+ (broker to broker) needs
// CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED); each
// transaction needs WRITE on its transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition) and WRITE on
// each topic: a refused topic answers TOPIC_AUTHORIZATION_FAILED and the
// others OPERATION_NOT_ATTEMPTED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/txn"
)

func (h *Handlers) registerAddPartitionsToTxn(reg *protocol.Registry) {
	reg.Register(24, 0, 4, h.addPartitionsToTxn)
}

func (h *Handlers) addPartitionsToTxn(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	fenced := req.Version < 2
	im := h.meta.Image()
	if req.Version >= 4 && !h.authorizeCluster(req, acl.OpClusterAction) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return resp, nil
	}
	write := h.topicAuthorizer(req, acl.OpWrite)

	// one adds (or verifies) the partitions of one transaction and returns
	// an error code per topic and partition.
	one := func(id string, pid int64, epoch int16, verify bool, topics map[string][]int32, order []string) map[string][]int16 {
		out := map[string][]int16{}
		var tps []txn.TopicPartition
		unknown, refused := false, false
		for _, t := range order {
			refused = refused || !write(t)
			for _, p := range topics[t] {
				if im.Partition(t, p) == nil {
					unknown = true
				}
				tps = append(tps, txn.TopicPartition{Topic: t, Partition: p})
			}
		}
		setAll := func(code func(t string, p int32) int16) {
			for _, t := range order {
				codes := make([]int16, len(topics[t]))
				for i, p := range topics[t] {
					codes[i] = code(t, p)
				}
				out[t] = codes
			}
		}
		switch {
		case !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, id):
			setAll(func(string, int32) int16 { return errorCode(errTxnIDAuthorization) })
		case refused:
			setAll(func(t string, p int32) int16 {
				switch {
				case !write(t):
					return errorCode(errTopicAuthorization)
				case im.Partition(t, p) == nil:
					return kerr.UnknownTopicOrPartition.Code
				}
				return kerr.OperationNotAttempted.Code
			})
		case h.txn == nil:
			setAll(func(string, int32) int16 { return kerr.CoordinatorNotAvailable.Code })
		case verify:
			setAll(func(t string, p int32) int16 {
				return txnErrorCode(h.txn.VerifyPartition(id, pid, epoch, txn.TopicPartition{Topic: t, Partition: p}), false)
			})
		case unknown:
			setAll(func(t string, p int32) int16 {
				if im.Partition(t, p) == nil {
					return kerr.UnknownTopicOrPartition.Code
				}
				return kerr.OperationNotAttempted.Code
			})
		default:
			code := txnErrorCode(h.txn.AddPartitions(ctx, id, pid, epoch, tps), fenced)
			setAll(func(string, int32) int16 { return code })
		}
		return out
	}

	if req.Version < 4 {
		topics, order := map[string][]int32{}, []string{}
		for _, t := range r.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		codes := one(r.TransactionalID, r.ProducerID, r.ProducerEpoch, false, topics, order)
		for _, t := range order {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t
			for i, p := range topics[t] {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[t][i]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, tr := range r.Transactions {
		topics, order := map[string][]int32{}, []string{}
		for _, t := range tr.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		codes := one(tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, topics, order)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tr.TransactionalID
		for _, t := range order {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t
			for i, p := range topics[t] {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[t][i]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}
