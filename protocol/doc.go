// Package protocol owns the Kafka wire edge of gokafka: size-prefixed frames,
// the request header, version checks against the registered handlers, the
// dispatch table, and the per-connection read and write loops with their
// limits (socket.request.max.bytes, connections.max.idle.ms, a bounded
// outbound queue).
//
// It must not know what a topic is. Handlers are registered with their
// version range; ApiVersions is derived from that table, never kept by hand.
//
// Per connection there is one reader goroutine and one writer goroutine.
// The reader decodes a request, runs its handler to completion, and queues
// the encoded response; it reads the next request only after that, so a
// connection is served one request at a time and responses leave in request
// order (Kafka mutes a channel the same way). A panic in a handler closes
// that connection only, with the stack logged; so does a panic in a
// goroutine the handler started through a Group. Every closed connection
// logs a typed CloseReason.
//
// The limits of limits.go bound what clients can make the server hold:
// connections (max.connections, per listener, per address), requests and
// request bytes across connections (queued.max.requests,
// queued.max.request.bytes), and a response that cannot be written
// (connections.max.idle.ms is also the write deadline).
//
// A listener may expose only some APIs (ServeListener, ListenerConfig), as
// Kafka's listeners do: a request for another API closes the connection
// with a log line naming the client, and ApiVersions on that listener does
// not list it.
//
// On a SASL listener (ListenerConfig.SASL) a layer in front of the
// dispatch table authenticates each connection before anything else is
// served, and closes a connection whose session expired (sasl.go); the
// mechanisms themselves are package sasl's. Client authenticates the
// connections it opens to a peer when given a mechanism (SetSASL).
// A listener may be TLS (ListenerConfig.TLS, SSL and SASL_SSL): each
// connection's reader runs the handshake before its first request, a
// failed handshake closes the connection with a log line naming the
// client, and on SSL the client certificate gives the principal. Fetch
// file regions cannot go by sendfile through TLS; the writer reads them
// into large chunks with the bytes around them (splice.go). Client and
// DialPeer open broker-to-broker connections, over TLS when given a
// PeerTLS.
package protocol
