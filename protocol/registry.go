package protocol

import (
	"context"
	"sort"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request as handlers see it.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
	// Body is the decoded request, its version already set.
	Body kmsg.Request
	// Conn describes the connection the request arrived on.
	Conn *ConnInfo
	// Size is the request's size in bytes (header and body), what Kafka's
	// produce quota counts.
	Size int
	// Throttle, set by a handler, mutes the connection for that long: no
	// further request is read from it until the time has passed. Whether
	// the response goes out first (KIP-219) or after the time follows the
	// response's version (kmsg.ThrottleResponse).
	Throttle time.Duration

	// park gives back the request's queued.max.requests slot (Park).
	park func()
	// conn builds the connection's logger with the request's client id
	// when the handler first logs; nil outside a connection.
	conn *conn
}

var nopLogger = zerolog.Nop()

// Logger is the logger handlers log through: the connection's, with its
// conn, remote and client_id fields (and principal once connections
// authenticate). A Request made outside a connection logs nowhere.
func (r *Request) Logger() *zerolog.Logger {
	if r.conn == nil {
		return &nopLogger
	}
	return r.conn.requestLogger(r.ClientID)
}

// ConnInfo identifies a client connection.
type ConnInfo struct {
	ID         uint64
	RemoteAddr string
	LocalAddr  string
	// ZeroCopy is set for a connection that responses may send file
	// regions on (SplicedResponse): a plain TCP connection, which gets
	// them by sendfile, and a TLS one, which gets them read and written
	// in large chunks, never copied into the encoded response.
	ZeroCopy bool
	// TLS is set for a connection that carries TLS.
	TLS bool
	// Listener is the name of the listener the connection arrived on
	// (empty for a server started with Serve).
	Listener string
	exposes  func(key int16) bool
	// principal is who the connection authenticated as (Principal).
	principal principalBox
}

// Exposes reports whether the connection's listener serves key.
func (ci *ConnInfo) Exposes(key int16) bool {
	return ci == nil || ci.exposes == nil || ci.exposes(key)
}

// HandlerFunc serves one request. A nil response with a nil error means no
// response is sent (acks=0 produce). A non-nil error closes the connection,
// which is what Kafka does for requests it cannot make sense of.
type HandlerFunc func(ctx context.Context, req *Request) (kmsg.Response, error)

type handlerEntry struct {
	min, max int16
	fn       HandlerFunc
}

// Registry is the dispatch table: API key → version range and handler.
// It is filled once at start-up and read-only afterwards.
type Registry struct {
	handlers map[int16]handlerEntry
	wrap     func(HandlerFunc) HandlerFunc
}

// Wrap makes every handler registered afterwards go through wrap.
func (r *Registry) Wrap(wrap func(HandlerFunc) HandlerFunc) { r.wrap = wrap }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: make(map[int16]handlerEntry)}
}

// Register adds a handler for key serving versions min..max. The range is
// clamped to what kmsg can encode so that ApiVersions never advertises a
// version whose response gokafka could not write.
func (r *Registry) Register(key, min, max int16, fn HandlerFunc) {
	if r.wrap != nil && fn != nil {
		fn = r.wrap(fn)
	}
	if req := kmsg.RequestForKey(key); req != nil && max > req.MaxVersion() {
		max = req.MaxVersion()
	}
	if _, dup := r.handlers[key]; dup {
		panic("protocol: handler registered twice for key " + kmsg.NameForKey(key))
	}
	r.handlers[key] = handlerEntry{min: min, max: max, fn: fn}
}

func (r *Registry) lookup(key int16) (handlerEntry, bool) {
	h, ok := r.handlers[key]
	return h, ok
}

// Handler returns the handler serving key at version, as dispatch would
// call it (wrapped, without the connection's panic recovery).
func (r *Registry) Handler(key, version int16) (HandlerFunc, bool) {
	h, ok := r.handlers[key]
	if !ok || version < h.min || version > h.max || h.fn == nil {
		return nil, false
	}
	return h.fn, true
}

// Supports reports whether key at version is served.
func (r *Registry) Supports(key, version int16) bool {
	h, ok := r.handlers[key]
	return ok && version >= h.min && version <= h.max
}

// Versions lists the served API keys and version ranges, sorted by key.
func (r *Registry) Versions() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(r.handlers))
	for k, h := range r.handlers {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: h.min, MaxVersion: h.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

// ApiVersionsResponse builds the ApiVersions answer at version from the
// registered handlers. With errCode UNSUPPORTED_VERSION the caller sends it
// as a v0 body (KIP-511).
func (r *Registry) ApiVersionsResponse(version int16, errCode int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	resp.ErrorCode = errCode
	resp.ApiKeys = r.Versions()
	return resp
}

// ApiVersionsResponseOn is ApiVersionsResponse for a connection: it lists
// only the APIs the connection's listener exposes.
func (r *Registry) ApiVersionsResponseOn(ci *ConnInfo, version int16, errCode int16) *kmsg.ApiVersionsResponse {
	resp := r.ApiVersionsResponse(version, errCode)
	keys := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		if ci.Exposes(k.ApiKey) {
			keys = append(keys, k)
		}
	}
	resp.ApiKeys = keys
	return resp
}
