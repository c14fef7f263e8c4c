package group

// Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447).
//
// A transactional producer commits its consumer's offsets inside its
// transaction: the records go to the group's __consumer_offsets partition
// as a transactional batch carrying the producer's id and epoch, and are
// held aside per producer id until the transaction coordinator writes the
// transaction's marker to that partition. A commit marker makes them the
// group's committed offsets, an abort marker drops them. Until then
// OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them,
// so that a consumer taking over the partitions does not start from an
// offset that is about to move.

import (
	"context"

	"github.com/gokafka/gokafka/partition"
)

// TxnCommitParams is a TxnOffsetCommit request.
type TxnCommitParams struct {
	ProducerID    int64
	ProducerEpoch int16
	CommitParams
}

// TxnCommitOffsets stores offsets pending the producer's transaction; it
// returns one error per offset, once the write is replicated.
func (c *Coordinator) TxnCommitOffsets(ctx context.Context, groupID string, p TxnCommitParams) []error {
	errs := make([]error, len(p.Offsets))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if _, err := c.validateGroup(groupID, false); err != nil {
		return fail(err)
	}
	// Kafka creates the group if it does not exist: a transactional
	// producer may commit for a group that never had members.
	e, err := c.entry(groupID, true)
	if err != nil {
		return fail(err)
	}
	e.mu.Lock()
	g := e.g
	if g.state == StateDead {
		e.mu.Unlock()
		return fail(ErrCoordinatorNotAvailable)
	}
	if err := e.validateCommitLocked(p.CommitParams, true); err != nil {
		e.mu.Unlock()
		return fail(err)
	}
	var recs []record
	var written []CommitOffset
	for i, o := range p.Offsets {
		if len(o.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			errs[i] = ErrOffsetMetadataTooLarge
			continue
		}
		recs = append(recs, record{key: offsetKey(groupID, o.TP), value: encodeOffsetValue(o.OffsetAndMetadata)})
		written = append(written, o)
	}
	if len(recs) == 0 {
		e.mu.Unlock()
		return errs
	}
	ch := make(chan error, 1)
	e.part.app.enqueueTxn(recs, p.ProducerID, p.ProducerEpoch, func(err error) {
		err = convertAppendError(err, true)
		e.mu.Lock()
		if err == nil && g.state != StateDead {
			m := g.txnOffsets[p.ProducerID]
			if m == nil {
				m = map[TopicPartition]OffsetAndMetadata{}
				g.txnOffsets[p.ProducerID] = m
			}
			for _, o := range written {
				m[o.TP] = o.OffsetAndMetadata
			}
		}
		e.mu.Unlock()
		ch <- err
	})
	e.mu.Unlock()
	return awaitWrite(ctx, ch, errs)
}

// CompleteTxn applies a transaction marker written to a __consumer_offsets
// partition this broker leads: the producer's pending offsets in the
// groups of that partition become committed (commit) or are dropped.
func (c *Coordinator) CompleteTxn(tp partition.TopicPartition, pid int64, commit bool) {
	if tp.Topic != OffsetsTopic {
		return
	}
	c.mu.Lock()
	var entries []*groupEntry
	for _, e := range c.mu.groups {
		if e.part.ID == tp.Partition {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		if m, ok := e.g.txnOffsets[pid]; ok {
			delete(e.g.txnOffsets, pid)
			if commit && e.g.state != StateDead {
				for tp, o := range m {
					e.g.offsets[tp] = o
				}
			}
		}
		e.mu.Unlock()
	}
}
