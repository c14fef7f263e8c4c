package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// Errors the handlers answer with; each wraps the Kafka error of the same
// name.
var (
	// The ownership answers are coordinator's, shared with group.
	ErrCoordinatorNotAvailable  = coordinator.ErrCoordinatorNotAvailable
	ErrNotCoordinator           = coordinator.ErrNotCoordinator
	ErrCoordinatorLoading       = coordinator.ErrCoordinatorLoading
	ErrConcurrentTransactions   = kafkaerr.New(kerr.ConcurrentTransactions, "concurrent transactions")
	ErrInvalidProducerIDMapping = kafkaerr.New(kerr.InvalidProducerIDMapping, "invalid producer id mapping")
	ErrProducerFenced           = kafkaerr.New(kerr.ProducerFenced, "producer fenced")
	ErrInvalidTxnState          = kafkaerr.New(kerr.InvalidTxnState, "invalid transaction state")
	ErrInvalidTxnTimeout        = kafkaerr.New(kerr.InvalidTransactionTimeout, "invalid transaction timeout")
	ErrTransactionalIDNotFound  = kafkaerr.New(kerr.TransactionalIDNotFound, "transactional id not found")
	ErrInvalidRequest           = kafkaerr.New(kerr.InvalidRequest, "invalid request")
	ErrUnknownServer            = kafkaerr.New(kerr.UnknownServerError, "unknown server error")
)
