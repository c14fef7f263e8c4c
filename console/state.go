package console

import "github.com/gokafka/gokafka/cluster"

// Source is what the console reads: the broker (broker.Server.ConsoleSource).
type Source interface {
	// State returns the cluster as this broker knows it now. The
	// console calls it from one goroutine, at most every
	// Options.Interval while a page is open.
	State() State
	// WatchMetadata calls fn with every metadata image change, in
	// order, from the goroutine that applies it: fn must be quick.
	WatchMetadata(fn func(prev, next *cluster.Image))
}

// State is one sample of the cluster as a broker knows it.
type State struct {
	// Node is the broker serving the console.
	Node       int32  `json:"node"`
	ClusterID  string `json:"cluster_id"`
	Controller int32  `json:"controller"`
	// MetadataOffset is the last metadata entry the broker applied.
	MetadataOffset int64         `json:"metadata_offset"`
	Brokers        []Broker      `json:"brokers"`
	Topics         []Topic       `json:"topics"`
	Groups         []Group       `json:"groups"`
	Transactions   []Transaction `json:"transactions"`
}

// Broker is one registered broker.
type Broker struct {
	ID         int32  `json:"id"`
	Host       string `json:"host"`
	Port       int32  `json:"port"`
	Rack       string `json:"rack,omitempty"`
	Fenced     bool   `json:"fenced"`
	Controller bool   `json:"controller"`
	// LogDirs and OfflineLogDirs count the broker's log dirs.
	LogDirs        int `json:"log_dirs"`
	OfflineLogDirs int `json:"offline_log_dirs"`
}

// Topic is one topic and its partitions.
type Topic struct {
	Name       string      `json:"name"`
	Internal   bool        `json:"internal"`
	Partitions []Partition `json:"partitions"`
}

// Partition is one partition: the metadata's leader and ISR, and the
// offsets this broker knows.
type Partition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	ELR         []int32 `json:"elr,omitempty"`
	// View says where the offsets come from: "leader" when this broker
	// leads the partition (every replica's LEO is known from the
	// followers' fetches), "follower" when it hosts a follower (its own
	// LEO only, and the HW as the leader last told it), "metadata" when
	// it hosts no replica (no offsets).
	View     string    `json:"view"`
	HW       *int64    `json:"hw,omitempty"`
	LSO      *int64    `json:"lso,omitempty"`
	LogStart *int64    `json:"log_start,omitempty"`
	Replicas []Replica `json:"replicas"`
}

// Replica is one replica of a partition.
type Replica struct {
	ID     int32 `json:"id"`
	InISR  bool  `json:"in_isr"`
	Leader bool  `json:"leader"`
	// LEO is nil where this broker does not know it.
	LEO *int64 `json:"leo,omitempty"`
	// LagOffsets and LagMs are a follower's lag behind the leader's LEO,
	// known on the leader only.
	LagOffsets *int64 `json:"lag_offsets,omitempty"`
	LagMs      int64  `json:"lag_ms,omitempty"`
}

// Group is a consumer group this broker coordinates.
type Group struct {
	ID         string           `json:"id"`
	State      string           `json:"state"`
	Type       string           `json:"type"`
	Partitions []GroupPartition `json:"partitions"`
	// Lag is the sum of the known partition lags.
	Lag int64 `json:"lag"`
}

// GroupPartition is a group's committed offset on one partition and its
// lag behind the partition's HW (when this broker knows the HW).
type GroupPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	HW        *int64 `json:"hw,omitempty"`
	Lag       *int64 `json:"lag,omitempty"`
}

// Transaction is an open transaction on a partition this broker leads.
type Transaction struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int16  `json:"epoch"`
	// FirstOffset is where the transaction's first record on this
	// partition sits; the LSO cannot pass it until the transaction ends.
	FirstOffset int64 `json:"first_offset"`
	HW          int64 `json:"hw"`
	LSO         int64 `json:"lso"`
	// Held is HW - LSO: records read_committed consumers cannot read yet.
	Held int64 `json:"held"`
}
