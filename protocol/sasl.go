package protocol

// SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator runs it. The layer sits between the frames and
// the dispatch table and does not care what carries the bytes, so it
// works the same over a TLS connection.
//
// Before a connection has authenticated it may send only ApiVersions and
// SaslHandshake; anything else closes it (Kafka's IllegalSaslStateException).
// SaslHandshake v1 leads to SaslAuthenticate requests; v0 (kafka-python
// 2.0.2) to raw SASL tokens: size-prefixed frames without any Kafka
// header, answered the same way. The handshake response always lists the
// listener's mechanisms. An unknown mechanism is answered with
// UNSUPPORTED_SASL_MECHANISM and a failed exchange with
// SASL_AUTHENTICATION_FAILED and Kafka's message; either closes the
// connection once the answer is sent, with a log line naming the client.
// A raw-token failure just closes it, as Kafka does.
//
// Re-authentication (KIP-368): SaslAuthenticate v1+ tells the client its
// session lifetime, the least of connections.max.reauth.ms and the
// credential's own expiry. Within it the client may send SaslHandshake
// again and re-authenticate as the same principal with the same
// mechanism; a request arriving after it closes the connection. Without a
// lifetime, SaslHandshake and SaslAuthenticate on an authenticated
// connection reach the handlers, which answer ILLEGAL_SASL_STATE as
// Kafka's KafkaApis does.

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/sasl"
)

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// Close reasons of the SASL layer.
const (
	CloseIllegalSASLState     CloseReason = 100 + iota // a request other than the SASL exchange's before authentication
	CloseAuthenticationFailed                          // SASL authentication failed
	CloseSessionExpired                                // a request after the SASL session expired (KIP-368)
)

var saslCloseReasonNames = map[CloseReason]string{
	CloseIllegalSASLState: "illegal_sasl_state", CloseAuthenticationFailed: "authentication_failed", CloseSessionExpired: "session_expired",
}

type saslStage int

const (
	saslInitial      saslStage = iota // expecting ApiVersions or SaslHandshake
	saslAuthenticate                  // expecting SaslAuthenticate (or raw tokens)
	saslDone                          // authenticated
)

// saslConn is a connection's SASL state; only its reader touches it.
type saslConn struct {
	cfg   *sasl.ServerConfig
	stage saslStage
	// raw is set after a v0 handshake: the client sends raw tokens.
	raw  bool
	mech string
	sess sasl.Session
	// expiry ends the session (zero: never); reauth is set while a
	// re-authentication runs, principal and mechanism are those it must
	// keep.
	expiry    time.Time
	reauth    bool
	principal string
	prevMech  string
	// clientID is the handshake's, for the log of a raw-token exchange.
	clientID string
	// failed is set when an exchange failed; the connection then closes.
	failed bool
}

// saslAction says what the reader does after serveSASL.
type saslAction int

const (
	saslPass       saslAction = iota // not SASL's: dispatch the request as usual
	saslReply                        // send the response, keep going
	saslReplyClose                   // send the response, then close
	saslClose                        // close without a response
)

func (c *conn) now() time.Time {
	if c.sasl.cfg.Now != nil {
		return c.sasl.cfg.Now()
	}
	return time.Now()
}

// serveSASL handles a frame on a SASL listener if it belongs to the
// authentication exchange, or refuses it if it comes too early or too
// late.
func (c *conn) serveSASL(in []byte) (frame, saslAction) {
	s := c.sasl
	if s.stage == saslAuthenticate && s.raw {
		return c.saslToken(in, nil)
	}
	h, err := parseHeaderPrefix(in)
	if err != nil {
		return frame{}, saslPass // serve closes it
	}
	if s.stage == saslDone {
		switch {
		case h.key == saslHandshakeKey && !s.expiry.IsZero():
			s.reauth, s.principal, s.prevMech = true, c.info.Principal().Name, s.mech
			return c.saslHandshake(h, in)
		case !s.expiry.IsZero() && !c.now().Before(s.expiry):
			c.log().Info().Str("principal", c.info.Principal().String()).Str("api", kmsg.NameForKey(h.key)).
				Msg("closing the connection: its SASL session expired and the client did not re-authenticate")
			c.setReason(CloseSessionExpired, fmt.Errorf("session of %s expired at %s", c.info.Principal(), s.expiry.UTC().Format(time.RFC3339)))
			return frame{}, saslClose
		}
		return frame{}, saslPass
	}
	switch {
	case s.stage == saslInitial && h.key == apiVersionsKey:
		return frame{}, saslPass
	case s.stage == saslInitial && h.key == saslHandshakeKey:
		return c.saslHandshake(h, in)
	case s.stage == saslAuthenticate && h.key == saslAuthenticateKey:
		return c.saslAuthenticate(h, in)
	}
	what := "SASL handshake"
	if s.stage == saslAuthenticate {
		what = "SASL authentication"
	}
	c.log().Warn().Str("api", kmsg.NameForKey(h.key)).Int16("version", h.version).
		Msgf("unexpected Kafka request of type %s during %s; closing the connection", kmsg.NameForKey(h.key), what)
	c.setReason(CloseIllegalSASLState, fmt.Errorf("%s (%d) before authentication", kmsg.NameForKey(h.key), h.key))
	return frame{}, saslClose
}

// decodeSASL decodes a SaslHandshake or SaslAuthenticate request.
func (c *conn) decodeSASL(h *header, in []byte, req kmsg.Request) bool {
	if h.version < 0 || h.version > req.MaxVersion() {
		c.setReason(CloseUnsupportedVersion, fmt.Errorf("api %s (%d) version %d", kmsg.NameForKey(h.key), h.key, h.version))
		return false
	}
	req.SetVersion(h.version)
	body, err := parseHeaderRest(h, in, req.IsFlexible())
	if err != nil {
		c.setReason(CloseMalformedHeader, err)
		return false
	}
	if err := req.ReadFrom(body); err != nil {
		c.setReason(CloseMalformedRequest, fmt.Errorf("api %s v%d: %w", kmsg.NameForKey(h.key), h.version, err))
		return false
	}
	return true
}

func (c *conn) respond(h header, resp kmsg.Response) frame {
	resp.SetVersion(h.version)
	return frame{b: encodeResponse(h, resp)}
}

func (c *conn) saslHandshake(h header, in []byte) (frame, saslAction) {
	s := c.sasl
	req := kmsg.NewPtrSASLHandshakeRequest()
	if !c.decodeSASL(&h, in, req) {
		return frame{}, saslClose
	}
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), s.cfg.Mechanisms...)
	fail := func(msg string) (frame, saslAction) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.log().Warn().Str("client_id", h.clientID).Str("mechanism", req.Mechanism).Strs("enabled", s.cfg.Mechanisms).
			Msg("failed authentication: " + msg)
		c.setReason(CloseAuthenticationFailed, errors.New(msg))
		s.failed = true
		return c.respond(h, resp), saslReplyClose
	}
	if s.reauth && req.Mechanism != s.prevMech {
		return fail(fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", req.Mechanism, s.prevMech))
	}
	if !s.cfg.Enabled(req.Mechanism) {
		return fail(fmt.Sprintf("Unsupported SASL mechanism %s", req.Mechanism))
	}
	sess, err := s.cfg.Start(req.Mechanism)
	if err != nil {
		return fail(err.Error())
	}
	s.mech, s.sess, s.stage, s.raw, s.clientID = req.Mechanism, sess, saslAuthenticate, h.version == 0, h.clientID
	return c.respond(h, resp), saslReply
}

func (c *conn) saslAuthenticate(h header, in []byte) (frame, saslAction) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	if !c.decodeSASL(&h, in, req) {
		return frame{}, saslClose
	}
	return c.saslToken(req.SASLAuthBytes, &h)
}

// saslToken feeds one client token to the session. h is the
// SaslAuthenticate request's header, nil for a raw token.
func (c *conn) saslToken(token []byte, h *header) (frame, saslAction) {
	s := c.sasl
	reply, done, err := s.sess.Step(token)
	var resp *kmsg.SASLAuthenticateResponse
	clientID := s.clientID
	if h != nil {
		resp, clientID = kmsg.NewPtrSASLAuthenticateResponse(), h.clientID
	}
	if err == nil && done && s.reauth && s.sess.Principal() != s.principal {
		err = &sasl.Error{Msg: fmt.Sprintf("Cannot change principals during re-authentication from User:%s: User:%s", s.principal, s.sess.Principal())}
	}
	if err != nil {
		msg := err.Error()
		var se *sasl.Error
		if errors.As(err, &se) {
			msg = se.Msg
		}
		ev := c.log().Warn().Str("client_id", clientID).Str("mechanism", s.mech).Err(err)
		if p := s.sess.Principal(); p != "" {
			ev = ev.Str("user", p)
		}
		ev.Msgf("failed authentication with %s (%s)", hostOf(c.info.RemoteAddr), msg)
		c.setReason(CloseAuthenticationFailed, err)
		s.stage, s.failed = saslInitial, true
		if h == nil {
			return frame{}, saslClose
		}
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return c.respond(*h, resp), saslReplyClose
	}
	if done {
		now := c.now()
		lifetime := s.cfg.ReauthLimit(s.mech)
		if exp := s.sess.Expiry(); !exp.IsZero() && (lifetime <= 0 || exp.Sub(now) < lifetime) {
			lifetime = max(exp.Sub(now), 0)
		}
		s.expiry = time.Time{}
		if lifetime > 0 {
			s.expiry = now.Add(lifetime)
		}
		p := Principal{Type: "User", Name: s.sess.Principal()}
		c.info.SetPrincipal(p)
		c.log().Debug().Str("client_id", clientID).Str("mechanism", s.mech).Str("principal", p.String()).
			Bool("reauthentication", s.reauth).Dur("session_lifetime", lifetime).Msg("authenticated")
		s.stage, s.raw, s.reauth, s.sess = saslDone, false, false, nil
		if resp != nil {
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
		}
	}
	if h == nil {
		b := make([]byte, 4, 4+len(reply))
		b[0], b[1], b[2], b[3] = byte(len(reply)>>24), byte(len(reply)>>16), byte(len(reply)>>8), byte(len(reply))
		return frame{b: append(b, reply...)}, saslReply
	}
	resp.SASLAuthBytes = reply
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	return c.respond(*h, resp), saslReply
}
