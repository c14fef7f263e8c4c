// Package acl is gokafka's authorizer: ACL bindings and their filters, and
// the decision whether a principal connecting from a host may perform an
// operation on a resource, with the semantics of Kafka's
// StandardAuthorizer (org.apache.kafka.metadata.authorizer).
//
// # Semantics
//
//   - A binding names a resource pattern (type, name, LITERAL or PREFIXED),
//     a principal ("User:alice", or "User:*" for every principal), a host
//     (an exact IP address or "*"), an operation and ALLOW or DENY. A
//     LITERAL pattern named "*" matches every resource of its type.
//   - Super users (super.users) are allowed everything, whatever the ACLs.
//   - A matching DENY wins over any ALLOW. A DENY matches its own
//     operation or ALL; an ALLOW also implies operations: DESCRIBE is
//     allowed by READ, WRITE, DELETE or ALTER, DESCRIBE_CONFIGS by
//     ALTER_CONFIGS, and ALL allows everything.
//   - A resource no binding matches at all (for any principal) is allowed
//     only if allow.everyone.if.no.acl.found is set; a resource some
//     binding matches is denied unless an ALLOW matches.
//
// # Speed
//
// Bindings are indexed by resource type, then by literal name in a map
// and by prefix in a map probed once per distinct prefix length. The
// index is an immutable snapshot swapped in with an atomic pointer when
// the ACLs change, so a decision takes no lock.
//
// # What it must not touch
//
// It knows nothing of the wire (kmsg), of connections or of the metadata
// quorum: the broker feeds it the bindings the metadata holds (Update)
// and the handlers ask it (handlers/authz.go), logging each decision.
package acl
