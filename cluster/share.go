package cluster

// Group configs (resource type GROUP, KIP-848/KIP-932) and share groups'
// start-offset checkpoints live in the metadata so that every broker sees
// them: a share partition's leader reads its group's configs and, when it
// becomes leader, the start offset the previous leader checkpointed.
//
// Non-controllers forward changes to the active controller with Kafka
// messages: group configs as AlterConfigs on a GROUP resource, share
// offsets as WriteShareGroupState (StateEpoch carries the group's share
// epoch; LeaderEpoch ShareResetMarker marks an administrator's reset) and
// DeleteShareGroupState (no topics: the whole group).
//
// The metadata only stores these: which group configs exist and what they
// accept is group's (group/group_configs.go), how a checkpoint, a reset or
// a deletion changes a share group's offsets is share/checkpoint's, and
// decoding the forwarded requests is the handlers'.

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/share/checkpoint"
)

// ShareResetMarker is the LeaderEpoch of a forwarded WriteShareGroupState
// partition that resets (rather than checkpoints) its offset; the
// controller's handler decodes it back into ShareChange.Reset.
const ShareResetMarker = -2

// ShareGroupState is what the metadata keeps of one share group; the
// rules that change it are share/checkpoint's.
type ShareGroupState = checkpoint.GroupState

// ShareChange is one change of share offsets.
type ShareChange = checkpoint.Change

func (s *State) applyShare(ch *ShareChange) {
	if next, changed := checkpoint.Apply(s.shareGroups[ch.Group], ch); changed {
		s.shareGroups[ch.Group] = next
	}
}

// dropShareTopic forgets a deleted topic's share offsets.
func (s *State) dropShareTopic(topic string) {
	for g, sg := range s.shareGroups {
		if next, changed := checkpoint.DropTopic(sg, topic); changed {
			s.shareGroups[g] = next
		}
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

// SetGroupConfigs replaces a group's config overrides. The metadata
// stores them as given: the caller validates them (group.ValidateConfigs).
func (c *Controller) SetGroupConfigs(ctx context.Context, group string, configs map[string]string, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalidRequest)
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
					wp.LeaderEpoch = ShareResetMarker
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
