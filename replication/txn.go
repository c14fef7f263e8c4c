package replication

// Transactions on the partition side (KIP-98): control batches written by
// the transaction coordinator, the last stable offset, the aborted
// transactions a read_committed fetch returns, and the KIP-890 check that
// a transactional batch belongs to a transaction its coordinator knows.

import (
	"context"
	"time"

	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
)

// AppendOptions are the extra rules of an append.
type AppendOptions struct {
	// FromCoordinator marks a write of a coordinator (Kafka's
	// AppendOrigin.COORDINATOR): control batches (transaction markers) and
	// batches with a producer id but no sequence (TxnOffsetCommit) are
	// admitted, which a client's produce never is.
	FromCoordinator bool
	// VerifyTxn, when set, is asked about a transactional batch whose
	// producer has no transaction open on this partition yet (KIP-890):
	// the batch is appended only if it returns nil. It runs under the
	// partition's producer-state lock, so a marker cannot slip in between
	// the answer and the append; it must not block on this partition.
	VerifyTxn func() error
}

// AppendControl writes a transaction marker to tp as its leader and waits
// for the ISR (acks=all).
func (m *Manager) AppendControl(ctx context.Context, tp partition.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool, timeout time.Duration) error {
	batch := partition.ControlBatch(pid, epoch, coordinatorEpoch, commit, m.now().UnixMilli())
	_, err := m.ProduceWithOptions(ctx, tp, batch, -1, timeout, AppendOptions{FromCoordinator: true})
	return err
}

// lastStable returns the last stable offset of a partition: the first
// offset of its earliest unfinished transaction, or the high watermark.
// While the producer state loads it waits at most wait (with no lock
// held), then answers ErrProducerStateLoading.
func (p *Partition) lastStable(ctx context.Context, wait time.Duration) (int64, error) {
	st, err := p.lockProducers(ctx, wait)
	if err != nil {
		return -1, err
	}
	defer p.prod.mu.Unlock()
	return lastStableOf(st, p.log.HighWatermark()), nil
}

// lastStableIfLoaded is the last stable offset when the producer state is
// loaded, else the high watermark. read_uncommitted fetches report the LSO
// as Kafka does, but must not make a partition without producers read its
// whole log to learn it has no transactions.
func (p *Partition) lastStableIfLoaded() int64 {
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	if p.prod.st == nil {
		return p.log.HighWatermark()
	}
	return lastStableOf(p.prod.st, p.log.HighWatermark())
}

func lastStableOf(st *idempotent.State, hw int64) int64 {
	if f := st.FirstUnstableOffset(hw); f >= 0 && f < hw {
		return f
	}
	return hw
}

// abortedIn returns the aborted transactions overlapping [from, to).
func (p *Partition) abortedIn(ctx context.Context, wait time.Duration, from, to int64) ([]idempotent.TxnRange, error) {
	st, err := p.lockProducers(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer p.prod.mu.Unlock()
	st.DropAbortedBefore(p.log.LogStartOffset())
	return st.AbortedIn(from, to), nil
}

// InTxn reports whether producer pid has a transaction open at epoch on a
// partition this broker hosts. False while its producer state loads (the
// caller then verifies the transaction with its coordinator).
func (m *Manager) InTxn(tp partition.TopicPartition, pid int64, epoch int16) bool {
	p := m.Get(tp)
	if p == nil {
		return false
	}
	p.prod.mu.Lock()
	defer p.prod.mu.Unlock()
	st, _, err := p.producerStateLocked()
	return err == nil && st.InTxn(pid, epoch)
}

// ProducerEntry is one producer as DescribeProducers reports it.
type ProducerEntry struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64
}

// Producers lists the producers of a partition this broker leads.
func (m *Manager) Producers(tp partition.TopicPartition) ([]ProducerEntry, error) {
	p, err := m.leader(tp, -1)
	if err != nil {
		return nil, err
	}
	st, err := p.lockProducers(context.Background(), 0)
	if err != nil {
		return nil, err
	}
	defer p.prod.mu.Unlock()
	var out []ProducerEntry
	for _, e := range st.Entries() {
		pe := ProducerEntry{ProducerID: e.ProducerID, Epoch: e.Epoch, LastSequence: -1, LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.CurrentTxnFirstOffset}
		if n := len(e.Batches); n > 0 {
			pe.LastSequence = e.Batches[n-1].LastSeq
			pe.LastTimestamp = e.Batches[n-1].Timestamp
		}
		out = append(out, pe)
	}
	return out, nil
}
