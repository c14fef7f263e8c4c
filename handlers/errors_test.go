package handlers

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/partition"
)

func TestDiskErrorsAnswerKafkaStorageError(t *testing.T) {
	// What a log in a failed (or full) log dir returns from an append.
	err := fmt.Errorf("append to /d/t-0/00000000000000000000.log: %w", fmt.Errorf("%w: write: %w", partition.ErrStorage, syscall.ENOSPC))
	if got := errorCode(err); got != kerr.KafkaStorageError.Code {
		t.Fatalf("code %d, want KAFKA_STORAGE_ERROR (%d)", got, kerr.KafkaStorageError.Code)
	}
}
