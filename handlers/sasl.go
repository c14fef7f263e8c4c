package handlers

// SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2).
//
// On SASL listeners the connection's SASL layer (protocol/sasl.go) serves
// both while the client authenticates and re-authenticates; these
// handlers see only what reaches the dispatch table otherwise: the
// requests on a listener without SASL, or on a connection that has
// authenticated with no session lifetime to re-authenticate within.
// Kafka's KafkaApis answers those with ILLEGAL_SASL_STATE, and so does
// gokafka. They are registered so that ApiVersions lists them: librdkafka
// 2.0.2 uses SASL only if SaslHandshake v0 is listed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerSASL(reg *protocol.Registry) {
	reg.Register(17, 0, 1, h.saslHandshake)
	reg.Register(36, 0, 2, h.saslAuthenticate)
}

func (h *Handlers) saslHandshake(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	resp := req.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

func (h *Handlers) saslAuthenticate(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	resp := req.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	resp.SASLAuthBytes = []byte{}
	return resp, nil
}
