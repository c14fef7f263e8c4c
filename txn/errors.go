package txn

import (
	"errors"

	"github.com/gokafka/gokafka/group"
)

// Errors the handlers map to Kafka codes; each is the Kafka error of the
// same name.
var (
	// ErrCoordinatorNotAvailable is group's: both coordinators find their
	// broker with group.CoordinatorFor.
	ErrCoordinatorNotAvailable  = group.ErrCoordinatorNotAvailable
	ErrNotCoordinator           = errors.New("not coordinator")
	ErrCoordinatorLoading       = errors.New("coordinator load in progress")
	ErrConcurrentTransactions   = errors.New("concurrent transactions")
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")
	ErrProducerFenced           = errors.New("producer fenced")
	ErrInvalidTxnState          = errors.New("invalid transaction state")
	ErrInvalidTxnTimeout        = errors.New("invalid transaction timeout")
	ErrTransactionalIDNotFound  = errors.New("transactional id not found")
	ErrInvalidRequest           = errors.New("invalid request")
	ErrUnknownServer            = errors.New("unknown server error")
)
