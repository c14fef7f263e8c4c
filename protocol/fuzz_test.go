package protocol

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/sasl"
)

// FuzzServeFrame feeds arbitrary frames through header parsing, version
// checks and body decoding for every API gokafka might register. Nothing
// may panic: a bad frame must end in a close reason or a response.
func FuzzServeFrame(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest()} {
		req.SetVersion(req.MaxVersion())
		f.Add(formatter.AppendRequest(nil, req, 1)[4:])
	}
	reg := NewRegistry()
	for key := int16(0); key < 100; key++ {
		if req := kmsg.RequestForKey(key); req != nil {
			reg.Register(key, 0, req.MaxVersion(), nil)
		}
	}
	srv := NewServer(DefaultConfig(), reg, zerolog.Nop())
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := &conn{srv: srv, info: &ConnInfo{}}
		// A nil handler panics; serve recovers it as a handler panic, so
		// reaching it is fine: decoding already succeeded.
		c.serve(frame)
	})
}

// FuzzServeSASLFrames feeds a SASL listener's connection two arbitrary
// frames: the SASL layer answers, closes or passes each on, never panics.
func FuzzServeSASLFrames(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	for _, v := range []int16{0, 1} {
		hs.SetVersion(v)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
		f.Add(formatter.AppendRequest(nil, hs, 1)[4:], formatter.AppendRequest(nil, auth, 2)[4:])
		f.Add(formatter.AppendRequest(nil, hs, 1)[4:], []byte("\x00alice\x00alice-secret"))
	}
	hs.Mechanism = "OAUTHBEARER"
	f.Add(formatter.AppendRequest(nil, hs, 1)[4:], []byte("n,,\x01auth=Bearer x\x01\x01"))
	reg := NewRegistry()
	srv := NewServer(DefaultConfig(), reg, zerolog.Nop())
	cfg := &sasl.ServerConfig{Mechanisms: sasl.Supported, PlainUsers: map[string]string{"alice": "alice-secret"}, OAuth: &sasl.OAuthConfig{}}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		c := &conn{srv: srv, info: &ConnInfo{}, sasl: &saslConn{cfg: cfg}}
		if _, ok, closeAfter := c.serveFrame(first); !ok || closeAfter {
			return
		}
		c.serveFrame(second)
	})
}
