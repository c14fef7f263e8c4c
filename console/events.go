package console

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gokafka/gokafka/cluster"
)

// Event kinds of the timeline.
const (
	KindISRShrink      = "isr_shrink"
	KindISRExpand      = "isr_expand"
	KindLeaderElection = "leader_election"
	KindBrokerFenced   = "broker_fenced"
	KindBrokerUnfenced = "broker_unfenced"
	KindBrokerJoined   = "broker_registered"
	KindLogDirOffline  = "log_dir_offline"
	KindTopicCreated   = "topic_created"
	KindTopicDeleted   = "topic_deleted"
	KindController     = "controller_changed"
)

// Event is one entry of the timeline.
type Event struct {
	Seq int64 `json:"seq"`
	// Time is when the broker applied the change (Unix milliseconds).
	Time      int64   `json:"time"`
	Kind      string  `json:"kind"`
	Topic     string  `json:"topic,omitempty"`
	Partition int32   `json:"partition"`
	Broker    int32   `json:"broker"`
	OldLeader int32   `json:"old_leader"`
	NewLeader int32   `json:"new_leader"`
	Epoch     int32   `json:"epoch"`
	OldISR    []int32 `json:"old_isr,omitempty"`
	NewISR    []int32 `json:"new_isr,omitempty"`
	Reason    string  `json:"reason"`
}

// Diff returns the timeline events between two consecutive metadata
// images, in a stable order. The image does not say why a change was
// made; the reason is what the change itself shows: a replica or leader
// whose broker was fenced in the same step left because of the fencing
// (a missed session or a controlled shutdown), one whose log dir went
// offline because of that, and otherwise an ISR change is the leader's
// (AlterPartition): a follower that fell behind for
// replica.lag.time.max.ms, or one that caught up.
func Diff(prev, next *cluster.Image) []Event {
	if prev == nil || next == nil {
		return nil
	}
	var out []Event
	fencedNow := func(id int32) bool {
		b, ok := next.Brokers[id]
		return !ok || b.Fenced
	}
	fencedNew := func(id int32) bool {
		a, ok := prev.Brokers[id]
		return fencedNow(id) && (!ok || !a.Fenced)
	}
	dirsLost := func(id int32) bool {
		return len(next.Brokers[id].OfflineLogDirs) > len(prev.Brokers[id].OfflineLogDirs)
	}
	why := func(id int32) string {
		switch {
		case fencedNew(id):
			return fmt.Sprintf("broker %d fenced (session expired or controlled shutdown)", id)
		case fencedNow(id):
			return fmt.Sprintf("broker %d is fenced", id)
		case dirsLost(id):
			return fmt.Sprintf("a log dir of broker %d went offline", id)
		}
		return ""
	}

	for _, id := range next.BrokerIDs() {
		b := next.Brokers[id]
		a, had := prev.Brokers[id]
		switch {
		case !had || a.Incarnation != b.Incarnation:
			out = append(out, Event{Kind: KindBrokerJoined, Broker: id, Reason: "broker started and registered"})
		case !a.Fenced && b.Fenced:
			out = append(out, Event{Kind: KindBrokerFenced, Broker: id, Reason: "session expired or controlled shutdown"})
		case a.Fenced && !b.Fenced:
			out = append(out, Event{Kind: KindBrokerUnfenced, Broker: id, Reason: "heartbeats again"})
		}
		if len(b.OfflineLogDirs) > len(a.OfflineLogDirs) {
			out = append(out, Event{Kind: KindLogDirOffline, Broker: id, Reason: "log dir failed (I/O error)"})
		}
	}
	if prev.ControllerID != next.ControllerID && next.ControllerID >= 0 {
		out = append(out, Event{Kind: KindController, Broker: next.ControllerID, OldLeader: prev.ControllerID, NewLeader: next.ControllerID,
			Reason: "metadata quorum elected a new leader"})
	}

	for _, name := range next.TopicNames() {
		nt := next.Topics[name]
		pt := prev.Topics[name]
		if pt == nil || pt.ID != nt.ID {
			out = append(out, Event{Kind: KindTopicCreated, Topic: name, Reason: fmt.Sprintf("%d partitions", len(nt.Partitions))})
			continue
		}
		if pt == nt {
			// Unchanged: a change replaces the topic in the image
			// (cluster.State.clone), so this runs per changed topic,
			// not per partition of the cluster.
			continue
		}
		for i := range nt.Partitions {
			np := &nt.Partitions[i]
			if i >= len(pt.Partitions) {
				continue
			}
			op := &pt.Partitions[i]
			if np.Leader != op.Leader || np.LeaderEpoch != op.LeaderEpoch {
				e := Event{Kind: KindLeaderElection, Topic: name, Partition: np.Partition, OldLeader: op.Leader, NewLeader: np.Leader,
					Epoch: np.LeaderEpoch, OldISR: op.ISR, NewISR: np.ISR}
				switch r := why(op.Leader); {
				case op.Leader < 0:
					e.Reason = fmt.Sprintf("partition was offline; %d elected from %s", np.Leader, electedFrom(np, op))
				case np.Leader < 0:
					e.Reason = "no eligible replica left: partition offline"
					if r != "" {
						e.Reason = r + "; " + e.Reason
					}
				case r != "":
					e.Reason = r + fmt.Sprintf("; %d elected from %s", np.Leader, electedFrom(np, op))
				case np.Leader == op.Leader:
					e.Reason = "new leader epoch"
				default:
					e.Reason = fmt.Sprintf("leadership moved to %d", np.Leader)
				}
				out = append(out, e)
			}
			removed, added := setDiff(op.ISR, np.ISR), setDiff(np.ISR, op.ISR)
			if len(removed) > 0 {
				e := Event{Kind: KindISRShrink, Topic: name, Partition: np.Partition, NewLeader: np.Leader, Epoch: np.LeaderEpoch,
					OldISR: op.ISR, NewISR: np.ISR, Broker: removed[0]}
				var reasons []string
				for _, id := range removed {
					if r := why(id); r != "" {
						reasons = append(reasons, r)
					} else {
						reasons = append(reasons, fmt.Sprintf("%d fell behind the leader for longer than replica.lag.time.max.ms", id))
					}
				}
				e.Reason = strings.Join(reasons, "; ")
				out = append(out, e)
			}
			if len(added) > 0 {
				out = append(out, Event{Kind: KindISRExpand, Topic: name, Partition: np.Partition, NewLeader: np.Leader, Epoch: np.LeaderEpoch,
					OldISR: op.ISR, NewISR: np.ISR, Broker: added[0],
					Reason: fmt.Sprintf("%v caught up to the high watermark", added)})
			}
		}
	}
	var gone []string
	for name, pt := range prev.Topics {
		if nt := next.Topics[name]; nt == nil || nt.ID != pt.ID {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		out = append(out, Event{Kind: KindTopicDeleted, Topic: name, Reason: "DeleteTopics"})
	}
	return out
}

func electedFrom(np, op *cluster.PartitionInfo) string {
	switch {
	case slices.Contains(op.ISR, np.Leader):
		return "the ISR"
	case slices.Contains(op.ELR, np.Leader):
		return "the eligible leader replicas (ELR)"
	}
	return "outside the ISR (unclean election)"
}

func setDiff(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
