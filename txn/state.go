package txn

import (
	"fmt"
	"math"
	"sort"

	"github.com/gokafka/gokafka/partition"
)

// TopicPartition names a partition of a transaction.
type TopicPartition = partition.TopicPartition

// State is a transaction's state, with Kafka's numbering (it is stored in
// __transaction_state).
type State int8

const (
	StateEmpty State = iota
	StateOngoing
	StatePrepareCommit
	StatePrepareAbort
	StateCompleteCommit
	StateCompleteAbort
	StateDead
	StatePrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("Unknown(%d)", int8(s))
}

// ParseState returns the state named s, as ListTransactions filters name it.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// noEpoch is the epoch of a producer id that has not been handed out yet.
const noEpoch int16 = -1

// meta is the state of one transactional id. Values are copied: a
// transition computes the next meta, which replaces the current one only
// once its record is replicated.
type meta struct {
	id         string
	producerID int64
	// lastProducerID is the id before an exhausted epoch forced a new one
	// (KIP-360), -1 if none.
	lastProducerID int64
	epoch          int16
	// lastEpoch is the epoch before the last bump, -1 if none: a producer
	// retrying InitProducerId with it gets the current epoch back.
	lastEpoch  int16
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]bool
	startMs    int64
	updateMs   int64
}

func (m meta) clone() meta {
	c := m
	c.partitions = make(map[TopicPartition]bool, len(m.partitions))
	for tp := range m.partitions {
		c.partitions[tp] = true
	}
	return c
}

// sortedPartitions returns the partitions in topic, partition order.
func (m meta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// epochExhausted is Kafka's isProducerEpochExhausted: the last usable
// epoch is MaxInt16-1, so that a fencing bump always has room.
func (m meta) epochExhausted() bool { return m.epoch >= math.MaxInt16-1 }

// initOutcome is what InitProducerId does after its checks.
type initOutcome int

const (
	// initWrite: write next (Empty, new epoch) and answer its id and epoch.
	initWrite initOutcome = iota
	// initRetry: a retry of an InitProducerId already done; answer the
	// current id and epoch without writing.
	initRetry
	// initAbort: a transaction of the previous producer is open; write
	// next (PrepareAbort with a fenced epoch), finish the abort, and answer
	// CONCURRENT_TRANSACTIONS so that the producer retries.
	initAbort
)

// prepareInit is InitProducerId for a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId and
// prepareInitProducerIdTransit). expectedPID/expectedEpoch are -1, or the
// id and epoch the producer had (KIP-360, v3+). newPID hands out a fresh
// producer id when the epoch is exhausted.
func (m meta) prepareInit(nowMs int64, timeoutMs int32, expectedPID int64, expectedEpoch int16, newPID func() (int64, error)) (meta, initOutcome, error) {
	if expectedPID >= 0 {
		switch {
		case expectedPID == m.producerID && (expectedEpoch == m.epoch || expectedEpoch == m.lastEpoch && m.lastEpoch >= 0):
		case expectedPID == m.lastProducerID && m.lastProducerID >= 0:
		default:
			return m, 0, fmt.Errorf("%w: producer %d epoch %d is not the current producer %d epoch %d of %q", ErrProducerFenced, expectedPID, expectedEpoch, m.producerID, m.epoch, m.id)
		}
	}
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort, StatePrepareEpochFence, StateDead:
		return m, 0, ErrConcurrentTransactions
	case StateOngoing:
		next := m.clone()
		next.fenceEpoch()
		next.state = StatePrepareAbort
		next.updateMs = nowMs
		return next, initAbort, nil
	}
	// Empty, CompleteCommit, CompleteAbort.
	if expectedPID >= 0 && m.isRetry(expectedPID, expectedEpoch) {
		return m, initRetry, nil
	}
	next := m.clone()
	if m.epochExhausted() {
		pid, err := newPID()
		if err != nil {
			return m, 0, err
		}
		next.lastProducerID, next.producerID = m.producerID, pid
		next.epoch, next.lastEpoch = 0, noEpoch
	} else {
		next.lastEpoch = m.epoch
		next.epoch = m.epoch + 1
	}
	next.timeoutMs = timeoutMs
	next.state = StateEmpty
	next.partitions = map[TopicPartition]bool{}
	next.startMs, next.updateMs = -1, nowMs
	return next, initWrite, nil
}

// isRetry reports whether an InitProducerId naming expectedPID and
// expectedEpoch retries one this id already answered: the producer asks
// with what it had before, and the current epoch is the one that answer
// gave (the bump happened, the response was lost).
func (m meta) isRetry(expectedPID int64, expectedEpoch int16) bool {
	if expectedPID == m.producerID {
		return m.lastEpoch >= 0 && expectedEpoch == m.lastEpoch
	}
	return expectedPID == m.lastProducerID && m.lastProducerID >= 0 && m.epoch == 0
}

// fenceEpoch bumps the epoch so that the current producer's writes are
// refused from now on (Kafka's prepareFenceProducerEpoch); an exhausted
// epoch stays, as it can go no higher.
func (m *meta) fenceEpoch() {
	if m.epoch < math.MaxInt16 {
		m.lastEpoch = m.epoch
		m.epoch++
	}
}

// checkProducer is the identity check of the producer-driven requests.
func (m meta) checkProducer(pid int64, epoch int16) error {
	switch {
	case pid != m.producerID:
		return fmt.Errorf("%w: producer %d is not the producer %d of %q", ErrInvalidProducerIDMapping, pid, m.producerID, m.id)
	case epoch != m.epoch:
		return fmt.Errorf("%w: epoch %d of producer %d is not the current %d", ErrProducerFenced, epoch, pid, m.epoch)
	}
	return nil
}

// prepareAddPartitions is AddPartitionsToTxn (and AddOffsetsToTxn, which
// adds the group's __consumer_offsets partition). changed is false when
// every partition is already in the ongoing transaction: nothing to write.
func (m meta) prepareAddPartitions(nowMs int64, pid int64, epoch int16, tps []TopicPartition) (next meta, changed bool, err error) {
	if err := m.checkProducer(pid, epoch); err != nil {
		return m, false, err
	}
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort, StatePrepareEpochFence, StateDead:
		return m, false, ErrConcurrentTransactions
	case StateOngoing:
		missing := false
		for _, tp := range tps {
			if !m.partitions[tp] {
				missing = true
			}
		}
		if !missing {
			return m, false, nil
		}
	}
	next = m.clone()
	if m.state != StateOngoing {
		next.partitions = map[TopicPartition]bool{}
		next.startMs = nowMs
	}
	for _, tp := range tps {
		next.partitions[tp] = true
	}
	next.state = StateOngoing
	next.updateMs = nowMs
	return next, true, nil
}

// verifyPartition is the KIP-890 check a partition leader makes before the
// first transactional batch of a producer: the producer is current and the
// partition is in its ongoing transaction.
func (m meta) verifyPartition(pid int64, epoch int16, tp TopicPartition) error {
	if err := m.checkProducer(pid, epoch); err != nil {
		return err
	}
	if m.state != StateOngoing || !m.partitions[tp] {
		return fmt.Errorf("%w: %s is not in the ongoing transaction of %q (state %s)", ErrInvalidTxnState, tp, m.id, m.state)
	}
	return nil
}

// endOutcome is what EndTxn does after its checks.
type endOutcome int

const (
	// endWrite: write next (PrepareCommit or PrepareAbort), answer, then
	// write the markers and complete.
	endWrite endOutcome = iota
	// endDone: a retry of an EndTxn already completed; answer success.
	endDone
)

// prepareEnd is EndTxn (Kafka's TransactionCoordinator.endTransaction for
// requests from a client).
func (m meta) prepareEnd(nowMs int64, pid int64, epoch int16, commit bool) (meta, endOutcome, error) {
	if err := m.checkProducer(pid, epoch); err != nil {
		return m, 0, err
	}
	wrong := fmt.Errorf("%w: cannot %s a transaction of %q in state %s", ErrInvalidTxnState, map[bool]string{true: "commit", false: "abort"}[commit], m.id, m.state)
	switch m.state {
	case StateOngoing:
		next := m.clone()
		next.state = StatePrepareAbort
		if commit {
			next.state = StatePrepareCommit
		}
		next.updateMs = nowMs
		return next, endWrite, nil
	case StateCompleteCommit:
		if commit {
			return m, endDone, nil
		}
	case StateCompleteAbort:
		if !commit {
			return m, endDone, nil
		}
	case StatePrepareCommit:
		if commit {
			return m, 0, ErrConcurrentTransactions
		}
	case StatePrepareAbort:
		if !commit {
			return m, 0, ErrConcurrentTransactions
		}
	case StatePrepareEpochFence, StateDead:
		return m, 0, ErrConcurrentTransactions
	}
	return m, 0, wrong
}

// prepareTimeoutAbort aborts an ongoing transaction past its timeout,
// fencing the producer's epoch so that its late writes and its EndTxn are
// refused (Kafka's abortTimedOutTransactions). ok is false when the
// transaction is not ongoing or not yet expired.
func (m meta) prepareTimeoutAbort(nowMs int64) (meta, bool) {
	if m.state != StateOngoing || nowMs < m.startMs+int64(m.timeoutMs) {
		return m, false
	}
	next := m.clone()
	next.fenceEpoch()
	next.state = StatePrepareAbort
	next.updateMs = nowMs
	return next, true
}

// prepareComplete is the last step of a transaction once its markers are
// written: CompleteCommit or CompleteAbort, with no partitions.
func (m meta) prepareComplete(nowMs int64) meta {
	next := m.clone()
	if m.state == StatePrepareCommit {
		next.state = StateCompleteCommit
	} else {
		next.state = StateCompleteAbort
	}
	next.partitions = map[TopicPartition]bool{}
	next.updateMs = nowMs
	return next
}
