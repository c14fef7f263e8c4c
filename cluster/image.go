package cluster

import (
	"slices"
	"sort"
	"weak"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/sasl"
)

// TopicID is a topic's 16-byte UUID.
type TopicID [16]byte

// BrokerInfo is a registered broker.
type BrokerInfo struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack,omitempty"`
	Fenced bool    `json:"fenced,omitempty"`
	// Incarnation identifies one run of the broker process; a new one
	// means the broker restarted and lost whatever it held in memory.
	Incarnation string `json:"incarnation,omitempty"`
	// LogDirs are the directory ids of the broker's log dirs (KIP-858).
	LogDirs []string `json:"log_dirs,omitempty"`
	// OfflineLogDirs are those of LogDirs the broker reports offline.
	OfflineLogDirs []string `json:"offline_log_dirs,omitempty"`
	// Epoch is the broker epoch (KIP-903): the offset of the metadata
	// entry that registered this incarnation, so it grows with every
	// restart. A leader names the epochs of the replicas it adds to an
	// ISR as it learnt them from their fetches; a replica that restarted
	// since (and may have lost what it had not flushed) no longer matches.
	Epoch int64 `json:"epoch,omitempty"`
	// PreviousEpoch, in a registration request only, is the epoch of the
	// broker's previous run if that run shut down cleanly (Kafka's
	// PreviousBrokerEpoch); 0 or -1 otherwise. Never stored.
	PreviousEpoch int64 `json:"-"`
	// Endpoints are the broker's listeners by name, for clients: a
	// client is given the endpoint of the listener it connected to.
	// Host and Port are the inter-broker listener's.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint is one listener of a broker.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Endpoint returns the broker's address on listener name; a broker that
// registered no endpoint by that name (one predating named endpoints, or a
// listener name it does not have) is reached at Host:Port.
func (b BrokerInfo) Endpoint(name string) (host string, port int32) {
	for _, e := range b.Endpoints {
		if e.Name == name {
			return e.Host, e.Port
		}
	}
	return b.Host, b.Port
}

// PartitionInfo is the replicated state of one partition.
type PartitionInfo struct {
	Partition int32 `json:"partition"`
	Leader    int32 `json:"leader"`
	// LeaderEpoch increases with every leader change.
	LeaderEpoch int32 `json:"leader_epoch"`
	// PartitionEpoch increases with every change of this record, leader or
	// ISR; AlterPartition compares it to refuse stale proposals.
	PartitionEpoch int32   `json:"partition_epoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	// Directories holds, by broker, the log dir id its replica is known
	// to live in (see logdirs.go); replaced, never modified in place.
	Directories map[int32]string `json:"directories,omitempty"`
	// ELR are the eligible leader replicas (KIP-966): while the ISR is
	// below min.insync.replicas, the replicas that left it, each holding
	// every committed record. With an empty ISR the leader comes from
	// here. Never holds a broker that restarted since.
	ELR []int32 `json:"elr,omitempty"`
	// LastKnownELR holds the last leader while the ISR is empty (Kafka's
	// last-known-leader use of the field); it may lead again when ISR
	// and ELR are both empty.
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455, Kafka's PartitionRecord fields of the same
	// names): Replicas is then the target followed by the replicas
	// being removed; the ones being added fetch and catch up, and once
	// every target replica is in the ISR the controller completes the
	// reassignment (reassign.go). Both are empty otherwise.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p PartitionInfo) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas the partition will have once its
// reassignment completes: Replicas without RemovingReplicas.
func (p PartitionInfo) TargetReplicas() []int32 {
	out := make([]int32, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		if !contains32(p.RemovingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// TopicInfo is one topic.
type TopicInfo struct {
	Name       string            `json:"name"`
	ID         TopicID           `json:"id"`
	Partitions []PartitionInfo   `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`

	// changedFrom and changed say how a partition change made this record
	// (CmdChangePartitions): the record it replaced, held weakly so that
	// no chain of old records stays in memory, and the partitions whose
	// records it replaced. Zero for a record made any other way.
	changedFrom weak.Pointer[TopicInfo]
	changed     []int32
}

// maxChangeChain bounds how many partition changes ChangedSince follows
// back.
const maxChangeChain = 64

// ChangedSince returns the partitions whose records differ between was,
// an earlier record of this topic, and t, when t came from was through
// partition changes alone (ISR, leader, replica changes: the topic's id,
// configs and partition count are the same) and the records in between
// are still in memory; ok is false otherwise, and the caller compares
// every partition. It lets a broker apply an ISR change of one
// partition of a topic with 10,000 at the cost of that one. The list is
// sorted, without duplicates.
func (t *TopicInfo) ChangedSince(was *TopicInfo) (parts []int32, ok bool) {
	if t == was {
		return nil, true
	}
	cur := t
	for range maxChangeChain {
		if cur.changed == nil {
			return nil, false
		}
		parts = append(parts, cur.changed...)
		from := cur.changedFrom.Value()
		if from == nil {
			return nil, false
		}
		if from == was {
			slices.Sort(parts)
			return slices.Compact(parts), true
		}
		cur = from
	}
	return nil, false
}

// Internal reports whether the topic is one of Kafka's internal topics.
func (t *TopicInfo) Internal() bool {
	return IsInternalTopic(t.Name)
}

// Image is an immutable view of the metadata at one point of the log.
// Nothing may modify an Image or what it points to once published.
type Image struct {
	ClusterID    string
	ControllerID int32
	// Offset is the index of the last command applied.
	Offset  int64
	Brokers map[int32]BrokerInfo
	Topics  map[string]*TopicInfo
	IDs     map[TopicID]string
	// BrokerConfigs holds dynamic broker config overrides by resource name:
	// "" for the cluster-wide default, the node id as a string otherwise.
	BrokerConfigs map[string]map[string]string
	// GroupConfigs holds group config overrides (resource type GROUP) by
	// group id.
	GroupConfigs map[string]map[string]string
	// ShareGroups holds share groups' checkpointed start offsets by group.
	ShareGroups map[string]*ShareGroupState
	// ClientQuotas holds client quota values by QuotaEntity.Key.
	ClientQuotas map[string]*ClientQuota
	// ACLs are the ACL bindings, sorted (acl.Binding.Less); replaced,
	// never changed in place, on every ACL change.
	ACLs []acl.Binding
	// NextProducerID is the first producer id no broker has been given.
	NextProducerID int64
	// ScramCredentials holds SCRAM credentials by user, then mechanism.
	ScramCredentials map[string]map[string]sasl.ScramCredential
}

// Topic returns the named topic or nil.
func (im *Image) Topic(name string) *TopicInfo { return im.Topics[name] }

// TopicByID returns the topic with id or nil.
func (im *Image) TopicByID(id TopicID) *TopicInfo {
	if name, ok := im.IDs[id]; ok {
		return im.Topics[name]
	}
	return nil
}

// Partition returns the partition or nil.
func (im *Image) Partition(topic string, p int32) *PartitionInfo {
	t := im.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return nil
	}
	return &t.Partitions[p]
}

// TopicNames returns the topic names, sorted.
func (im *Image) TopicNames() []string {
	names := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BrokerIDs returns the registered broker ids, sorted.
func (im *Image) BrokerIDs() []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Led returns the partitions of topic that node leads, with their leader
// epochs, and the topic's partition count and id (zero when it does not
// exist). Coordinators use it to follow the leadership of their internal
// topic's partitions.
func (im *Image) Led(topic string, node int32) (led map[int32]int32, partitions int32, id TopicID) {
	led = map[int32]int32{}
	t := im.Topics[topic]
	if t == nil {
		return led, 0, TopicID{}
	}
	for _, p := range t.Partitions {
		if p.Leader == node {
			led[p.Partition] = p.LeaderEpoch
		}
	}
	return led, int32(len(t.Partitions)), t.ID
}
