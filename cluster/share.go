package cluster

// Group configs (resource type GROUP, KIP-848/KIP-932) and share groups'
// start-offset checkpoints live in the metadata so that every broker sees
// them: a share partition's leader reads its group's configs and, when it
// becomes leader, the start offset the previous leader checkpointed.
//
// Non-controllers forward changes to the active controller with Kafka
// messages: group configs as AlterConfigs on a GROUP resource, share
// offsets as WriteShareGroupState (StateEpoch carries the group's share
// epoch; LeaderEpoch shareResetMarker marks an administrator's reset) and
// DeleteShareGroupState (no topics: the whole group).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareResetMarker is the LeaderEpoch of a forwarded WriteShareGroupState
// partition that resets (rather than checkpoints) its offset.
const shareResetMarker = -2

// ShareGroupState is what the metadata keeps of one share group.
type ShareGroupState struct {
	// Epoch moves on every administrator reset or deletion; a checkpoint
	// taken under an older epoch is dropped, and leaders rebuild share
	// partitions built under one.
	Epoch int32 `json:"epoch"`
	// Offsets are topic → partition → share-partition start offset.
	Offsets map[string]map[int32]int64 `json:"offsets,omitempty"`
}

// ShareChange is one change of share offsets.
type ShareChange struct {
	Group string `json:"group"`
	// Reset replaces the offsets of the topics in Offsets and removes
	// those in DeleteTopics, moving the epoch. Without it Offsets is a
	// leader's checkpoint, applied only if Epoch is still current.
	Reset        bool                       `json:"reset,omitempty"`
	Epoch        int32                      `json:"epoch"`
	Offsets      map[string]map[int32]int64 `json:"offsets,omitempty"`
	DeleteTopics []string                   `json:"delete_topics,omitempty"`
	// DeleteGroup removes everything of the group (its epoch keeps
	// moving, so that leaders drop their state).
	DeleteGroup bool `json:"delete_group,omitempty"`
}

func (s *State) applyShare(ch *ShareChange) {
	cur := s.shareGroups[ch.Group]
	next := &ShareGroupState{Offsets: map[string]map[int32]int64{}}
	if cur != nil {
		next.Epoch = cur.Epoch
		for t, ps := range cur.Offsets {
			next.Offsets[t] = maps.Clone(ps)
		}
	}
	switch {
	case ch.DeleteGroup:
		next.Epoch++
		next.Offsets = nil
	case ch.Reset:
		next.Epoch++
		for _, t := range ch.DeleteTopics {
			delete(next.Offsets, t)
		}
		for t, ps := range ch.Offsets {
			next.Offsets[t] = maps.Clone(ps)
		}
	default:
		if ch.Epoch != next.Epoch {
			return
		}
		for t, ps := range ch.Offsets {
			if next.Offsets[t] == nil {
				next.Offsets[t] = map[int32]int64{}
			}
			maps.Copy(next.Offsets[t], ps)
		}
	}
	s.shareGroups[ch.Group] = next
}

// dropShareTopic forgets a deleted topic's share offsets, so that a topic
// created again under the name starts by share.auto.offset.reset.
func (s *State) dropShareTopic(topic string) {
	for g, sg := range s.shareGroups {
		if _, ok := sg.Offsets[topic]; !ok {
			continue
		}
		next := &ShareGroupState{Epoch: sg.Epoch, Offsets: maps.Clone(sg.Offsets)}
		delete(next.Offsets, topic)
		s.shareGroups[g] = next
	}
}

// ShareOffset returns a share group's checkpointed start offset of a
// partition and the group's share epoch.
func (im *Image) ShareOffset(group, topic string, partition int32) (offset int64, epoch int32, ok bool) {
	sg := im.ShareGroups[group]
	if sg == nil {
		return 0, 0, false
	}
	off, ok := sg.Offsets[topic][partition]
	return off, sg.Epoch, ok
}

// ShareEpoch returns a share group's share epoch (0 if none).
func (im *Image) ShareEpoch(group string) int32 {
	if sg := im.ShareGroups[group]; sg != nil {
		return sg.Epoch
	}
	return 0
}

// GroupConfigDef is one group config with Kafka's default.
type GroupConfigDef struct {
	Name, Default string
	Type          ConfigType
	check         func(string) error
}

var groupConfigDefs = []GroupConfigDef{
	{"consumer.heartbeat.interval.ms", "5000", TypeInt, atLeast(1)},
	{"consumer.session.timeout.ms", "45000", TypeInt, atLeast(1)},
	{"share.auto.offset.reset", "latest", TypeString, checkShareReset},
	{"share.delivery.count.limit", "5", TypeInt, between(2, 10)},
	{"share.heartbeat.interval.ms", "5000", TypeInt, atLeast(1)},
	{"share.isolation.level", "read_uncommitted", TypeString, oneOf("read_committed", "read_uncommitted")},
	{"share.record.lock.duration.ms", "30000", TypeInt, between(1000, 3600000)},
	{"share.session.timeout.ms", "45000", TypeInt, atLeast(1)},
}

// GroupConfigDefs lists the group configs, sorted by name.
func GroupConfigDefs() []GroupConfigDef { return groupConfigDefs }

func between(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

func checkShareReset(v string) error {
	switch {
	case v == "latest" || v == "earliest":
		return nil
	case strings.HasPrefix(v, "by_duration:"):
		if _, err := ParseISODuration(strings.TrimPrefix(v, "by_duration:")); err != nil {
			return err
		}
		return nil
	}
	return errors.New("must be latest, earliest or by_duration:<ISO-8601 duration>")
}

// ParseISODuration parses the ISO-8601 durations Kafka's by_duration
// takes: PnDTnHnMn.nS (each part optional, days at most).
func ParseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid ISO-8601 duration %q", s)
	if !strings.HasPrefix(s, "P") || len(s) < 3 {
		return 0, bad
	}
	s = s[1:]
	var d time.Duration
	inTime := false
	for s != "" {
		if s[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime = true
			s = s[1:]
			continue
		}
		i := strings.IndexAny(s, "DHMS")
		if i <= 0 {
			return 0, bad
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 {
			return 0, bad
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[s[i]]
		if (s[i] == 'D') == inTime {
			return 0, bad
		}
		d += time.Duration(n * float64(unit))
		s = s[i+1:]
	}
	return d, nil
}

// ValidateGroupConfigs checks group config overrides.
func ValidateGroupConfigs(configs map[string]string) error {
	var bad []string
	for k, v := range configs {
		var def *GroupConfigDef
		for i := range groupConfigDefs {
			if groupConfigDefs[i].Name == k {
				def = &groupConfigDefs[i]
			}
		}
		if def == nil {
			bad = append(bad, k)
			continue
		}
		if err := checkType(def.Type, v); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s", ErrInvalidConfig, v, k)
		}
		if err := def.check(strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s: %v", ErrInvalidConfig, v, k, err)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%w: unknown group configs: %s", ErrInvalidConfig, strings.Join(bad, ", "))
	}
	return nil
}

// SetGroupConfigs replaces a group's config overrides.
func (c *Controller) SetGroupConfigs(ctx context.Context, group string, configs map[string]string, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalidRequest)
	}
	if err := ValidateGroupConfigs(configs); err != nil {
		return err
	}
	if !c.IsLeader() {
		return c.forwardAlterConfigs(ctx, 32, group, configs, validateOnly)
	}
	if validateOnly {
		return nil
	}
	return c.log.Propose(ctx, &Command{Type: CmdSetGroupConfigs, Name: group, Configs: maps.Clone(configs)})
}

// UpdateShareState applies a share offsets change through the quorum and
// returns once this node's image has it.
func (c *Controller) UpdateShareState(ctx context.Context, ch ShareChange) error {
	if ch.Group == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalidRequest)
	}
	if c.IsLeader() {
		return c.log.Propose(ctx, &Command{Type: CmdShareState, Share: &ch})
	}
	im := c.Image()
	var req kmsg.Request
	if ch.DeleteGroup || len(ch.DeleteTopics) > 0 {
		d := kmsg.NewPtrDeleteShareGroupStateRequest()
		d.GroupID = ch.Group
		for _, t := range ch.DeleteTopics {
			if ti := im.Topics[t]; ti != nil {
				dt := kmsg.NewDeleteShareGroupStateRequestTopic()
				dt.TopicID = ti.ID
				d.Topics = append(d.Topics, dt)
			}
		}
		if !ch.DeleteGroup && len(d.Topics) == 0 {
			return nil
		}
		req = d
	} else {
		w := kmsg.NewPtrWriteShareGroupStateRequest()
		w.GroupID = ch.Group
		for t, ps := range ch.Offsets {
			ti := im.Topics[t]
			if ti == nil {
				continue
			}
			wt := kmsg.NewWriteShareGroupStateRequestTopic()
			wt.TopicID = ti.ID
			for p, off := range ps {
				wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
				wp.Partition, wp.StartOffset, wp.StateEpoch = p, off, ch.Epoch
				if ch.Reset {
					wp.LeaderEpoch = shareResetMarker
				}
				wt.Partitions = append(wt.Partitions, wp)
			}
			w.Topics = append(w.Topics, wt)
		}
		if len(w.Topics) == 0 {
			return nil
		}
		req = w
	}
	epochBefore := im.ShareEpoch(ch.Group)
	resp, err := c.forward(ctx, req, nil)
	if errors.Is(err, errLocalLeader) {
		return c.log.Propose(ctx, &Command{Type: CmdShareState, Share: &ch})
	}
	if err != nil {
		return err
	}
	switch r := resp.(type) {
	case *kmsg.WriteShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
					return err
				}
			}
		}
	case *kmsg.DeleteShareGroupStateResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
					return err
				}
			}
		}
	}
	if !ch.Reset && !ch.DeleteGroup {
		// A checkpoint: nothing here reads it back.
		return nil
	}
	// Wait for this change itself, not just any later entry: the caller
	// (an administrator's request) reads the result from this node next.
	return c.awaitLocal(ctx, func(im *Image) bool { return im.ShareEpoch(ch.Group) > epochBefore })
}

// ShareChangeFromWrite decodes a forwarded WriteShareGroupState.
func ShareChangeFromWrite(im *Image, r *kmsg.WriteShareGroupStateRequest) ShareChange {
	ch := ShareChange{Group: r.GroupID, Offsets: map[string]map[int32]int64{}}
	for _, t := range r.Topics {
		name, ok := im.IDs[TopicID(t.TopicID)]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if ch.Offsets[name] == nil {
				ch.Offsets[name] = map[int32]int64{}
			}
			ch.Offsets[name][p.Partition] = p.StartOffset
			ch.Epoch = p.StateEpoch
			ch.Reset = ch.Reset || p.LeaderEpoch == shareResetMarker
		}
	}
	return ch
}

// ShareChangeFromDelete decodes a forwarded DeleteShareGroupState.
func ShareChangeFromDelete(im *Image, r *kmsg.DeleteShareGroupStateRequest) ShareChange {
	ch := ShareChange{Group: r.GroupID, DeleteGroup: len(r.Topics) == 0, Reset: true}
	for _, t := range r.Topics {
		if name, ok := im.IDs[TopicID(t.TopicID)]; ok {
			ch.DeleteTopics = append(ch.DeleteTopics, name)
		}
	}
	return ch
}
