package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// ErrCoordinatorNotAvailable is what CoordinatorFor's errors wrap: the
// internal topic or its leader is not there yet, which clients retry.
var ErrCoordinatorNotAvailable = kafkaerr.New(kerr.CoordinatorNotAvailable, "coordinator not available")
