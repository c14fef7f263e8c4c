package protocol

import "sync/atomic"

// Principal is who a connection acts as, in Kafka's "Type:Name" form
// (User:alice). A connection that has not authenticated, or whose listener
// does not authenticate, is User:ANONYMOUS, as in Kafka.
type Principal struct {
	Type string
	Name string
}

// Anonymous is the principal of an unauthenticated connection.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// String is the principal as Kafka writes it in ACLs and logs.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// principalBox holds a connection's principal; it changes when the
// connection authenticates (and re-authenticates, KIP-368).
type principalBox struct{ p atomic.Pointer[Principal] }

// Principal is the connection's authenticated principal, Anonymous until
// it authenticates. A nil ConnInfo (a request made outside a connection)
// is Anonymous.
func (ci *ConnInfo) Principal() Principal {
	if ci == nil {
		return Anonymous
	}
	if p := ci.principal.p.Load(); p != nil {
		return *p
	}
	return Anonymous
}

// SetPrincipal records the principal the connection authenticated as.
func (ci *ConnInfo) SetPrincipal(p Principal) { ci.principal.p.Store(&p) }

// ClientHost is the connection's remote IP address without the port, what
// ACL host patterns match.
func (ci *ConnInfo) ClientHost() string {
	if ci == nil {
		return ""
	}
	return hostOf(ci.RemoteAddr)
}
