package metrics

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gokafka/gokafka/cluster"
)

// Readiness is the body of /readyz.
type Readiness struct {
	Ready  bool  `json:"ready"`
	NodeID int32 `json:"node_id"`
	// Reasons says why the broker is not ready; empty when it is.
	Reasons []string `json:"reasons"`
	// Starting describes start-up while the logs and the metadata load.
	Starting string `json:"starting,omitempty"`
	// Metadata is this node's position in the metadata quorum.
	Metadata *cluster.QuorumPosition `json:"metadata,omitempty"`
	// UnderReplicated lists the partitions this broker leads without a
	// full ISR, each with why (they do not make the broker unready: the
	// broker serves them; their followers are the ones missing).
	UnderReplicated []PartitionReason `json:"under_replicated"`
	// OfflineLogDirs are log dirs of this broker that failed.
	OfflineLogDirs []string `json:"offline_log_dirs"`
}

// PartitionReason is a partition without a full ISR and why.
type PartitionReason struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	ISR       []int32  `json:"isr"`
	Reasons   []string `json:"reasons"`
}

// Readiness reports whether the broker is ready: started (logs loaded),
// registered and unfenced (unless it is a controller-only node), and
// caught up with the metadata quorum, with
// its under-replicated partitions and offline log dirs listed.
func (m *Metrics) Readiness() Readiness {
	r := Readiness{Reasons: []string{}, UnderReplicated: []PartitionReason{}, OfflineLogDirs: []string{}}
	src := m.sources()
	if src == nil || src.Meta == nil {
		r.Starting = m.startingStatus()
		r.Reasons = append(r.Reasons, "starting: "+r.Starting)
		return r
	}
	meta := src.Meta
	self := meta.NodeID()
	r.NodeID = self
	im := meta.Image()
	b, ok := im.Brokers[self]
	switch {
	case src.ControllerOnly:
	case !ok:
		r.Reasons = append(r.Reasons, "not registered with the controller")
	case b.Fenced:
		r.Reasons = append(r.Reasons, "fenced by the controller (no heartbeat accepted yet, controlled shutdown, or session expired)")
	}
	q := meta.QuorumPosition()
	r.Metadata = &q
	if q.Leader < 0 {
		r.Reasons = append(r.Reasons, "no metadata quorum leader known")
	}
	if q.AppliedIndex < q.CommitIndex {
		r.Reasons = append(r.Reasons, fmt.Sprintf("metadata not caught up: applied %d of %d committed", q.AppliedIndex, q.CommitIndex))
	}
	if src.Logs != nil {
		for _, d := range src.Logs.LogDirs() {
			if d.Offline {
				r.OfflineLogDirs = append(r.OfflineLogDirs, d.Path)
			}
		}
	}
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if p.Leader != self || len(p.ISR) >= len(p.Replicas) {
				continue
			}
			pr := PartitionReason{Topic: name, Partition: p.Partition, Replicas: p.Replicas, ISR: p.ISR}
			for _, id := range p.Replicas {
				if slices.Contains(p.ISR, id) {
					continue
				}
				rb, ok := im.Brokers[id]
				switch {
				case !ok:
					pr.Reasons = append(pr.Reasons, "replica "+strconv.Itoa(int(id))+": broker not registered")
				case rb.Fenced:
					pr.Reasons = append(pr.Reasons, "replica "+strconv.Itoa(int(id))+": broker fenced")
				default:
					pr.Reasons = append(pr.Reasons, "replica "+strconv.Itoa(int(id))+": not caught up to the leader within replica.lag.time.max.ms")
				}
			}
			r.UnderReplicated = append(r.UnderReplicated, pr)
		}
	}
	r.Ready = len(r.Reasons) == 0
	return r
}

// SetStarting records what start-up is doing, shown by /readyz until the
// broker's sources are attached.
func (m *Metrics) SetStarting(s string) { m.starting.Store(&s) }

func (m *Metrics) startingStatus() string {
	if s := m.starting.Load(); s != nil {
		return *s
	}
	return "loading the metadata and the logs"
}
