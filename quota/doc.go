// Package quota enforces Kafka's client quotas (KIP-13, KIP-55, KIP-124):
// produce and fetch byte rates (producer_byte_rate, consumer_byte_rate)
// and the share of request-handling time (request_percentage), per user
// and client id, with <default> entities and Kafka's precedence between
// them.
//
// It owns the rate math only: windowed rates over quota.window.num
// samples of quota.window.size.seconds each (Kafka's Rate over a
// WindowedSum), the throttle time Kafka's ClientQuotaManager derives from
// a violation, and the choice of the quota entity a request is counted
// against. It does no I/O, starts no goroutines and never reads a clock:
// callers pass the time, so tests drive it with a fake one.
//
// The quota values themselves live in the metadata quorum (cluster); the
// broker hands every new set to Quotas.Update. Muting a throttled
// connection is protocol's job; setting throttle_time_ms is the
// handlers'.
package quota
