package txn

// The partition side of KIP-890 part 1: before a leader appends the first
// transactional batch of a producer's transaction to a partition, it asks
// the coordinator whether that partition is in the transaction (Kafka 3.6+
// sends AddPartitionsToTxn v4 with VerifyOnly). A batch from a producer
// that never added the partition, or from one whose transaction has ended
// (a late retry, a zombie), is refused instead of opening a transaction no
// coordinator knows about, which would hold the last stable offset back
// forever.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/replication"
)

// Coordinates reports whether this broker coordinates id now, so that a
// produce can ask it in memory, under the partition's producer-state lock.
func (c *Coordinator) Coordinates(id string) bool {
	_, _, err := c.lookup(id)
	return err == nil
}

// VerifyLocal answers the KIP-890 question for a produce from this
// broker's coordinator, in memory. The error is what the produce answers:
// INVALID_TXN_STATE when the partition is not in the transaction,
// INVALID_PRODUCER_EPOCH for a fenced producer, and the retriable
// NOT_ENOUGH_REPLICAS when the coordinator cannot answer now (as Kafka
// does).
func (c *Coordinator) VerifyLocal(id string, pid int64, epoch int16, tp TopicPartition) error {
	return produceError(c.VerifyPartition(id, pid, epoch, tp))
}

// VerifyRemote asks the coordinator's broker (AddPartitionsToTxn v4 with
// VerifyOnly), with VerifyLocal's answers. It does network I/O, so the
// produce path calls it before taking any partition lock.
func (c *Coordinator) VerifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp TopicPartition) error {
	err := c.VerifyPartition(id, pid, epoch, tp)
	if errors.Is(err, ErrNotCoordinator) {
		err = c.verifyRemote(ctx, id, pid, epoch, tp)
	}
	return produceError(err)
}

func produceError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalidTxnState), errors.Is(err, ErrInvalidProducerIDMapping):
		return fmt.Errorf("%w: %v", idempotent.ErrInvalidTxnState, err)
	case errors.Is(err, ErrProducerFenced):
		return fmt.Errorf("%w: %v", idempotent.ErrInvalidProducerEpoch, err)
	}
	return fmt.Errorf("%w: transaction verification: %v", replication.ErrNotEnoughReplicas, err)
}

func (c *Coordinator) verifyRemote(ctx context.Context, id string, pid int64, epoch int16, tp TopicPartition) error {
	im := c.meta.Image()
	leader, ok := coordinator.LeaderFor(im, StateTopic, id)
	if !ok {
		return ErrCoordinatorNotAvailable
	}
	b, ok := im.Brokers[leader]
	if leader < 0 || !ok || leader == c.meta.NodeID() {
		return ErrCoordinatorNotAvailable
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = id, pid, epoch, true
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	tr.Topics = append(tr.Topics, rt)
	req.Transactions = append(req.Transactions, tr)
	resp, err := c.client(net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		return codeError(r.ErrorCode)
	}
	for _, tx := range r.Transactions {
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				if p.Partition == tp.Partition && t.Topic == tp.Topic {
					return codeError(p.ErrorCode)
				}
			}
		}
	}
	return fmt.Errorf("%w: no answer for %s", ErrCoordinatorNotAvailable, tp)
}

func codeError(code int16) error {
	switch code {
	case 0:
		return nil
	case kerr.InvalidTxnState.Code:
		return ErrInvalidTxnState
	case kerr.InvalidProducerIDMapping.Code:
		return ErrInvalidProducerIDMapping
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return ErrProducerFenced
	}
	return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, kerr.ErrorForCode(code))
}
