package handlers

// ApiVersions (key 18), v0-v4.
//
// The answer is derived from the registry: every handler registers its own
// range, so nothing here can drift from what is served. A listener lists
// only the APIs it exposes (see protocol.ListenerConfig). A request at an
// unknown version never reaches this handler: protocol answers it with
// UNSUPPORTED_VERSION in a v0 body (KIP-511). v3+ requests carry the client
// software name and version, which are only logged at debug level.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerApiVersions(reg *protocol.Registry) {
	reg.Register(18, 0, 4, h.apiVersions)
}

func (h *Handlers) apiVersions(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	if req.Version >= 3 {
		req.Logger().Debug().Str("client_software", r.ClientSoftwareName).
			Str("client_version", r.ClientSoftwareVersion).Msg("client software")
	}
	return h.reg.ApiVersionsResponseOn(req.Conn, req.Version, 0), nil
}
