package sasl

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	GSSAPI      = "GSSAPI"
)

// Supported lists the mechanisms gokafka can offer.
var Supported = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// Session is the server side of one authentication exchange.
type Session interface {
	// Step takes the client's next message and returns the reply to
	// send. done is set with the last reply of a successful exchange. An
	// error ends the exchange as failed; it is an *Error.
	Step(msg []byte) (reply []byte, done bool, err error)
	// Principal is the authenticated user's name, once done.
	Principal() string
	// Expiry is when the credential the client authenticated with
	// expires (an OAuth token's exp), zero if it does not.
	Expiry() time.Time
}

// Error is a failed authentication. Msg is what the client is told, in
// Kafka's words; Reason is the detail for the broker's log.
type Error struct {
	Msg    string
	Reason string
}

func (e *Error) Error() string {
	if e.Reason != "" && e.Reason != e.Msg {
		return e.Msg + " (" + e.Reason + ")"
	}
	return e.Msg
}

// invalidCredentials is Kafka's message for a mechanism failure it does
// not describe further to an unauthenticated client.
func invalidCredentials(mech, reason string) *Error {
	return &Error{Msg: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech, Reason: reason}
}

// ServerConfig is what one listener's SASL sessions authenticate against.
type ServerConfig struct {
	// Mechanisms are the listener's sasl.enabled.mechanisms, in order.
	Mechanisms []string
	// PlainUsers are the PLAIN users and passwords (user_<name> options
	// of the listener's PLAIN JAAS config).
	PlainUsers map[string]string
	// Scram looks SCRAM credentials up (the metadata quorum's).
	Scram CredentialStore
	// OAuth configures the OAUTHBEARER validator.
	OAuth *OAuthConfig
	// MaxReauth is connections.max.reauth.ms by mechanism ("" is the
	// listener's default): the longest session before the client must
	// re-authenticate (KIP-368); zero means no limit.
	MaxReauth map[string]time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms:
	// how long the answer to a failed authentication, and the close after
	// it, are held back, to slow down password guessing.
	FailedAuthenticationDelay time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size: the largest frame
	// a connection may send before it has authenticated; zero is Kafka's
	// default, 524288.
	MaxReceiveSize int32
}

// DefaultMaxReceiveSize is Kafka's sasl.server.max.receive.size.
const DefaultMaxReceiveSize = 524288

// ReceiveLimit is the largest frame accepted before authentication.
func (c *ServerConfig) ReceiveLimit() int32 {
	if c.MaxReceiveSize > 0 {
		return c.MaxReceiveSize
	}
	return DefaultMaxReceiveSize
}

// Enabled reports whether mech is one of the listener's mechanisms.
func (c *ServerConfig) Enabled(mech string) bool { return slices.Contains(c.Mechanisms, mech) }

// ReauthLimit is connections.max.reauth.ms for mech.
func (c *ServerConfig) ReauthLimit(mech string) time.Duration {
	if d, ok := c.MaxReauth[mech]; ok {
		return d
	}
	return c.MaxReauth[""]
}

func (c *ServerConfig) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Start begins an exchange with mech, which must be enabled.
func (c *ServerConfig) Start(mech string) (Session, error) {
	if !c.Enabled(mech) {
		return nil, fmt.Errorf("SASL mechanism %s is not enabled", mech)
	}
	switch mech {
	case Plain:
		return &plainSession{users: c.PlainUsers}, nil
	case ScramSHA256, ScramSHA512:
		if c.Scram == nil {
			return nil, fmt.Errorf("no SCRAM credentials for %s", mech)
		}
		return newScramServer(mech, c.Scram), nil
	case OAuthBearer:
		oc := c.OAuth
		if oc == nil {
			oc = &OAuthConfig{}
		}
		return &oauthSession{cfg: oc, now: c.now}, nil
	}
	return nil, fmt.Errorf("SASL mechanism %s is not supported", mech)
}

// Validate checks a listener's enabled mechanisms: each must be one
// gokafka supports.
func Validate(mechs []string) error {
	if len(mechs) == 0 {
		return fmt.Errorf("sasl.enabled.mechanisms is empty")
	}
	for _, m := range mechs {
		if m == GSSAPI {
			return fmt.Errorf("SASL mechanism GSSAPI (Kerberos) is not supported; enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
		}
		if !slices.Contains(Supported, m) {
			return fmt.Errorf("unknown SASL mechanism %q (supported: %s)", m, strings.Join(Supported, ", "))
		}
	}
	return nil
}
