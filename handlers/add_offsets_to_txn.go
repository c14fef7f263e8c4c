package handlers

// AddOffsetsToTxn (key 25), v0-v3.
//
// Adds the group's __consumer_offsets partition to the producer's
// transaction, so that the transaction's markers reach the offsets the
// producer then commits with TxnOffsetCommit. The offsets topic is created
// here if it does not exist yet (its partition count decides the
// partition). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// Authorization (authz.go), as Kafka's: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/txn"
)

func (h *Handlers) registerAddOffsetsToTxn(reg *protocol.Registry) {
	reg.Register(25, 0, 3, h.addOffsetsToTxn)
}

func (h *Handlers) addOffsetsToTxn(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if !h.authorize(req, acl.OpWrite, acl.ResourceTransactionalID, r.TransactionalID) {
		resp.ErrorCode = errorCode(errTxnIDAuthorization)
		return resp, nil
	}
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, r.Group) {
		resp.ErrorCode = errorCode(errGroupAuthorization)
		return resp, nil
	}
	if h.txn == nil || h.groups == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	if _, err := h.groups.Coordinator(ctx, r.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	t := h.meta.Image().Topic(group.OffsetsTopic)
	if t == nil || len(t.Partitions) == 0 {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(r.Group, int32(len(t.Partitions)))}
	err := h.txn.AddPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp})
	resp.ErrorCode = txnErrorCode(err, req.Version < 2)
	return resp, nil
}
