package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// The answers of a coordinator that does not serve a key, shared by the
// group and transaction coordinators (which export them under their own
// names); each wraps the Kafka error of the same name.
var (
	// ErrCoordinatorNotAvailable: the internal topic or its leader is not
	// there yet (CoordinatorFor), or the coordinator has stopped.
	ErrCoordinatorNotAvailable = kafkaerr.New(kerr.CoordinatorNotAvailable, "coordinator not available")
	// ErrNotCoordinator: another broker leads the key's partition.
	ErrNotCoordinator = kafkaerr.New(kerr.NotCoordinator, "not coordinator")
	// ErrCoordinatorLoading: the key's partition is still being loaded.
	ErrCoordinatorLoading = kafkaerr.New(kerr.CoordinatorLoadInProgress, "coordinator load in progress")
)
