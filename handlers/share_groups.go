package handlers

// Share groups (KIP-932, Kafka 4.2 level): ShareGroupHeartbeat (76),
// ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79),
// DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
// DeleteShareGroupOffsets (92), plus the inter-broker
// WriteShareGroupState (85) and DeleteShareGroupState (86) that gokafka
// nodes use to forward share offset changes to the active controller.
// The coordinator and the partition side live in share/; each API has its
// own share_*.go file. This file holds the wiring, the error mapping and
// the hooks the group APIs (ListGroups, DeleteGroups) and the GROUP config
// resource call.

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/share"
)

func (h *Handlers) registerShare(reg *protocol.Registry) {
	for _, r := range []func(*protocol.Registry){
		h.registerShareGroupHeartbeat,
		h.registerShareGroupDescribe,
		h.registerShareFetch,
		h.registerShareAcknowledge,
		h.registerShareGroupOffsets,
		h.registerShareState,
	} {
		r(reg)
	}
}

// shareReady reports whether the share side is wired.
func (h *Handlers) shareReady() bool { return h.shareCoord != nil && h.shareMgr != nil }

// shareIDs returns a ShareFetch or ShareAcknowledge request's group and
// member ids, "" for a null one.
func shareIDs(groupID, memberID *string) (group, member string) {
	if groupID != nil {
		group = *groupID
	}
	if memberID != nil {
		member = *memberID
	}
	return group, member
}

// sharePartitionStatus is what ShareFetch and ShareAcknowledge both report
// of a partition: its error code and its current leader (-1, -1 unless the
// partition failed and its topic is known).
type sharePartitionStatus struct {
	ErrorCode             int16
	LeaderID, LeaderEpoch int32
}

// shareResponseTopics builds the topics of a ShareFetch or ShareAcknowledge
// response from results: one entry a topic (newTopic), in the order of
// their first partition, and one a partition (addPartition, given the
// partition's topic entry and status). errOf picks the error a partition's
// ErrorCode reports: the fetch error for ShareFetch, the acknowledgement
// error for ShareAcknowledge. A partition with that error or an
// acknowledgement error gets its current leader, or UNKNOWN_TOPIC_ID when
// its topic is gone and errOf's error is set. notLeader reports whether a
// partition is answered NOT_LEADER_OR_FOLLOWER: the response then carries
// the node endpoints (shareNodeEndpoints).
func shareResponseTopics[T any](
	im *cluster.Image,
	results []share.PartitionResult,
	errOf func(share.PartitionResult) error,
	newTopic func(id [16]byte) T,
	addPartition func(t *T, res share.PartitionResult, st sharePartitionStatus),
) (topics []T, notLeader bool) {
	idx := map[cluster.TopicID]int{}
	for _, res := range results {
		i, ok := idx[res.TP.ID]
		if !ok {
			i = len(topics)
			idx[res.TP.ID] = i
			topics = append(topics, newTopic(res.TP.ID))
		}
		err := errOf(res)
		st := sharePartitionStatus{ErrorCode: errorCode(err), LeaderID: -1, LeaderEpoch: -1}
		if err != nil || res.AckErr != nil {
			if name, ok := im.IDs[res.TP.ID]; ok {
				if pi := im.Partition(name, res.TP.Partition); pi != nil {
					st.LeaderID, st.LeaderEpoch = pi.Leader, pi.LeaderEpoch
				}
			} else if err != nil {
				st.ErrorCode = kerr.UnknownTopicID.Code
			}
			notLeader = notLeader || st.ErrorCode == kerr.NotLeaderForPartition.Code
		}
		addPartition(&topics[i], res, st)
	}
	return topics, notLeader
}

// shareNodeEndpoints lists every broker, by node id, as the NodeEndpoints
// of a ShareFetch or ShareAcknowledge response (newEndpoint makes one).
func shareNodeEndpoints[E any](im *cluster.Image, newEndpoint func(b cluster.BrokerInfo) E) []E {
	var out []E
	for _, id := range im.BrokerIDs() {
		out = append(out, newEndpoint(im.Brokers[id]))
	}
	return out
}

// shareListGroups is ListGroups' hook: the share groups this broker
// coordinates, filtered by state names (case-insensitive, empty: all).
func (h *Handlers) shareListGroups(states []string) []share.Listing {
	if !h.shareReady() {
		return nil
	}
	var out []share.Listing
	for _, l := range h.shareCoord.List() {
		if len(states) == 0 || slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, l.State) }) {
			out = append(out, l)
		}
	}
	return out
}

// shareDeleteGroup is DeleteGroups' hook. handled is false for ids that
// are not share groups, which the classic coordinator then answers.
func (h *Handlers) shareDeleteGroup(ctx context.Context, id string) (handled bool, err error) {
	if !h.shareReady() {
		return false, nil
	}
	known, _ := h.shareCoord.Known(id)
	if !known && !h.shareMgr.HasState(id) {
		return false, nil
	}
	if err := h.shareCoord.Delete(id); err != nil {
		return true, err
	}
	return true, h.shareMgr.DeleteGroup(ctx, id)
}

// groupConfigValues lists a GROUP resource's configs for DescribeConfigs:
// every group config with the group's override or the broker's value.
func (h *Handlers) groupConfigValues(im *cluster.Image, groupID string) []cluster.ConfigValue {
	brokerValue := map[string]string{
		"share.record.lock.duration.ms": strconv.FormatInt(h.shareCfg.RecordLockDuration.Milliseconds(), 10),
		"share.delivery.count.limit":    strconv.Itoa(h.shareCfg.DeliveryCountLimit),
		"share.session.timeout.ms":      strconv.FormatInt(h.shareCfg.SessionTimeout.Milliseconds(), 10),
		"share.heartbeat.interval.ms":   strconv.FormatInt(h.shareCfg.HeartbeatInterval.Milliseconds(), 10),
	}
	var out []cluster.ConfigValue
	for _, d := range group.ConfigDefs() {
		cv := cluster.ConfigValue{Name: d.Name, Value: d.Default, Source: cluster.SourceDefault, Type: d.Type}
		if v, ok := brokerValue[d.Name]; ok && h.shareReady() {
			cv.Value = v
		}
		if v, ok := im.GroupConfigs[groupID][d.Name]; ok {
			cv.Value, cv.Source = v, cluster.ConfigSource(8) // GROUP_CONFIG
		}
		out = append(out, cv)
	}
	return out
}

// setGroupConfigs is the GROUP resource's AlterConfigs and
// IncrementalAlterConfigs hook.
func (h *Handlers) setGroupConfigs(ctx context.Context, groupID string, configs map[string]string, validateOnly bool) error {
	if h.ctrl == nil {
		return kerr.InvalidRequest
	}
	// The controller refuses an empty group id before it looks at configs.
	if groupID != "" {
		if err := group.ValidateConfigs(configs); err != nil {
			return err
		}
	}
	return h.ctrl.SetGroupConfigs(ctx, groupID, configs, validateOnly)
}

// deleteShareGroups is DeleteGroups' hook: it answers the share groups
// among ids into errs and returns the others, with their indexes, for the
// classic coordinator.
func (h *Handlers) deleteShareGroups(ctx context.Context, ids []string, errs []error) (classic []string, idx []int) {
	for i, id := range ids {
		if handled, err := h.shareDeleteGroup(ctx, id); handled {
			errs[i] = err
			continue
		}
		classic = append(classic, id)
		idx = append(idx, i)
	}
	return classic, idx
}

// refuseShareGroupJoin is JoinGroup's hook: a share group's id cannot be
// joined as a classic group (GROUP_ID_NOT_FOUND, as Kafka answers).
func (h *Handlers) refuseShareGroupJoin(id string, resp *kmsg.JoinGroupResponse) bool {
	if !h.shareReady() {
		return false
	}
	if known, _ := h.shareCoord.Known(id); !known {
		return false
	}
	resp.ErrorCode, resp.Generation = kerr.GroupIDNotFound.Code, -1
	return true
}

// isClassicGroup reports whether the classic coordinator has a group of
// that id (with members or committed offsets).
func (h *Handlers) isClassicGroup(id string) bool {
	c := h.coordinator()
	if c == nil {
		return false
	}
	if s, err := c.DescribeGroup(id); err == nil && s.State != group.StateDead {
		return true
	}
	// A consumer-protocol group (KIP-848) answers DescribeGroup as Dead.
	_, _, err := c.DescribeConsumerGroup(id)
	return err == nil
}

// refuseShareGroupConsumer answers a ConsumerGroupHeartbeat for a share
// group's id with GROUP_ID_NOT_FOUND, as Kafka does for a group id of
// another type.
func (h *Handlers) refuseShareGroupConsumer(id string, resp *kmsg.ConsumerGroupHeartbeatResponse) bool {
	if !h.shareReady() {
		return false
	}
	if known, _ := h.shareCoord.Known(id); !known {
		return false
	}
	resp.ErrorCode = kerr.GroupIDNotFound.Code
	return true
}
