// Package kafkaerr builds gokafka's sentinel errors. A sentinel keeps its
// own message and identity (errors.Is tells the group coordinator's
// NOT_COORDINATOR from the transaction coordinator's) and wraps the Kafka
// error it answers as, so the code travels with the error instead of in a
// table beside it. handlers/errors.go is the one place that turns an error
// into a Kafka code.
package kafkaerr

import "github.com/twmb/franz-go/pkg/kerr"

// Error is a sentinel: its message, and the Kafka error it answers as.
type Error struct {
	msg   string
	kafka *kerr.Error
}

// New returns a sentinel with message msg that answers as kafka.
func New(kafka *kerr.Error, msg string) error {
	return &Error{msg: msg, kafka: kafka}
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the Kafka error, so errors.Is(err, kerr.X) holds for a
// sentinel that answers as X.
func (e *Error) Unwrap() error { return e.kafka }

// Kafka returns the Kafka error the sentinel answers as.
func (e *Error) Kafka() *kerr.Error { return e.kafka }
