// Package metrics is gokafka's outside view on one HTTP listener
// (http.listener): Prometheus metrics at /metrics, liveness at /livez and
// readiness at /readyz.
//
// Metric names are those the Prometheus JMX exporter's standard Kafka
// rules give Kafka's MBeans (kafka_server_replicamanager_*,
// kafka_controller_kafkacontroller_*, kafka_network_requestmetrics_*,
// ...), so that Kafka dashboards and alerts work unchanged.
//
// What the broker's state already says is read when /metrics is scraped
// (state.go: the metadata image, the local logs, the quorum position,
// connections, followers' lag, consumer groups' offsets), never counted
// beside it. Counters are fed from two places only: the request path,
// through handlers.Observer (requests, errors, latency, throttle time,
// bytes and records per topic, parked requests), and a metadata watcher
// (ISR shrinks and expansions of the partitions led here, elections on
// the active controller). Per-partition series stop past
// metrics.partition.series.max hosted partitions.
//
// The listener starts before the broker (cmd/gokafka), so that /readyz
// says "starting" with the log-loading progress while the logs recover;
// the broker attaches its components (Attach) once it serves.
package metrics
