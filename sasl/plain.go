package sasl

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"time"
)

// plainSession is SASL/PLAIN (RFC 4616): one message,
// authzid NUL authcid NUL password, checked as Kafka's PlainSaslServer
// checks it.
type plainSession struct {
	users map[string]string
	user  string
}

func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, invalidCredentials(Plain, fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts)))
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, &Error{Msg: "Authentication failed: username not specified"}
	}
	if len(pass) == 0 {
		return nil, false, &Error{Msg: "Authentication failed: password not specified", Reason: "user " + user}
	}
	want, ok := s.users[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), pass) != 1 {
		reason := "wrong password for user " + user
		if !ok {
			reason = "unknown user " + user
		}
		return nil, false, &Error{Msg: "Authentication failed: Invalid username or password", Reason: reason}
	}
	if authzid != "" && authzid != user {
		return nil, false, &Error{Msg: "Authentication failed: Client requested an authorization id that is different from username", Reason: "user " + user}
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainSession) Principal() string { return s.user }
func (s *plainSession) Expiry() time.Time { return time.Time{} }
