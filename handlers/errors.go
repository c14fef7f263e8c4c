package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/kafkaerr"
	"github.com/gokafka/gokafka/partition"
)

// errorCode maps an error to its Kafka code; it and the functions below are
// the only place an error becomes a code. Every sentinel wraps the Kafka
// error it answers as (internal/kafkaerr): the first sentinel an error
// wraps answers, then a context's end answers REQUEST_TIMED_OUT, then a
// Kafka error returned as such (a forwarded answer, a handler's own check)
// answers as itself; anything else is UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var s *kafkaerr.Error
	if errors.As(err, &s) {
		switch {
		case isAlterPartitionOutcome(s):
			// Outside AlterPartition (a stale change to replica dirs, a
			// producer id block computed from a stale image) these are
			// the controller's internal conflicts.
			return kerr.UnknownServerError.Code
		case error(s) == partition.ErrUnsupportedMagic:
			// Magic 0 and 1 also wrap ErrInvalidRecord, any other magic
			// ErrCorruptMessage: that is the answer (see
			// partition.ErrUnsupportedMagic).
			for _, rec := range []error{partition.ErrCorruptMessage, partition.ErrInvalidRecord} {
				if errors.Is(err, rec) {
					return kafkaCode(rec)
				}
			}
		}
		return s.Kafka().Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// kafkaCode is a sentinel's code.
func kafkaCode(sentinel error) int16 {
	var s *kafkaerr.Error
	errors.As(sentinel, &s)
	return s.Kafka().Code
}

// alterPartitionOutcomes are the errors AlterPartition answers with their
// own code; anything else it answers UNKNOWN_SERVER_ERROR.
var alterPartitionOutcomes = []error{
	cluster.ErrInvalidUpdateVersion,
	cluster.ErrFencedLeaderEpoch,
	cluster.ErrIneligibleReplica,
	cluster.ErrNotLeader,
	cluster.ErrUnknownTopic,
	cluster.ErrNotController,
	cluster.ErrNewLeaderElected,
}

// isAlterPartitionOutcome reports whether s is one of the outcomes only
// AlterPartition answers with their own code.
func isAlterPartitionOutcome(s *kafkaerr.Error) bool {
	switch error(s) {
	case cluster.ErrInvalidUpdateVersion, cluster.ErrFencedLeaderEpoch, cluster.ErrIneligibleReplica, cluster.ErrNotLeader:
		return true
	}
	return false
}

// alterPartitionErrorCode maps an AlterPartition outcome to its code.
func alterPartitionErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, o := range alterPartitionOutcomes {
		if errors.Is(err, o) {
			return kafkaCode(o)
		}
	}
	return kerr.UnknownServerError.Code
}

// txnErrorCode maps a transaction coordinator error to its code; older
// request versions (before KIP-588's PRODUCER_FENCED) get
// INVALID_PRODUCER_EPOCH, as Kafka answers them.
func txnErrorCode(err error, fencedAsEpoch bool) int16 {
	code := errorCode(err)
	if fencedAsEpoch && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// kafkaMessage is the message FindCoordinator answers: Kafka's own for a
// Kafka error returned as such, the error's text for anything else.
func kafkaMessage(err error) *string {
	var ke *kerr.Error
	var s *kafkaerr.Error
	if errors.As(err, &ke) && !errors.As(err, &s) {
		return strPtr(ke.Message)
	}
	return errorMessage(err)
}

// errorMessage returns the message for responses that carry one, nil
// without an error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
