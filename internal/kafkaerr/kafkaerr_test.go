package kafkaerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSentinelKeepsItsMessageAndIdentityAndWrapsItsKafkaError(t *testing.T) {
	a := New(kerr.NotCoordinator, "not coordinator")
	b := New(kerr.NotCoordinator, "not coordinator")
	err := fmt.Errorf("%w: group g", a)
	if err.Error() != "not coordinator: group g" {
		t.Fatalf("message %q", err.Error())
	}
	if !errors.Is(err, a) || errors.Is(err, b) {
		t.Fatal("a sentinel must be told apart from another with the same code")
	}
	if !errors.Is(err, kerr.NotCoordinator) {
		t.Fatal("a sentinel must wrap its Kafka error")
	}
	var s *Error
	if !errors.As(err, &s) || s.Kafka() != kerr.NotCoordinator {
		t.Fatalf("errors.As: %v", s)
	}
}
