// Package handlers turns Kafka requests into calls on gokafka's core and
// the answers back into Kafka responses: one file per API, each opening with
// its behaviour and version notes, each registering its own version range so
// that ApiVersions is derived from the registrations.
//
// Handlers must not touch partition files or locks; they go through
// replication (data), cluster (metadata) and, later, the coordinators.
// Errors are sentinels inside, each wrapping the Kafka error it answers as
// (internal/kafkaerr); errors.go is the one place that turns an error into a
// Kafka code, with UNKNOWN_SERVER_ERROR as the fallback. A handler logs
// through req.Logger(), which carries the connection's conn, remote and
// client_id fields; log keys are snake_case (internal/logkeys checks).
//
// roles.go says which APIs only nodes send each other (InterBrokerAPI,
// exposed on the inter-broker listener only) and checks that such a
// request, or a replica fetch, comes from a node of this cluster in its
// current run. authz.go is the one place the handlers ask the authorizer
// (package acl) whether a request's principal may do what it asks, and
// log the answer; each handler's file says which operations it checks.
// config_floors.go holds the floors on segment settings a
// client may set.
//
// propagate.go makes the metadata-changing APIs answer only once every
// live broker has applied the change (read your own admin writes,
// everywhere); observe.go is the hook the broker's metrics count
// requests, traffic and parked requests through.
package handlers
