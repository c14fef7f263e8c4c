// Package checkpoint holds the rules of share groups' start-offset
// checkpoints (KIP-932): what the cluster metadata keeps of a share group
// and how a leader's checkpoint, an administrator's reset or a deletion
// changes it. The metadata state machine (cluster) applies them to its
// copy; it imports nothing but the standard library, so cluster and share
// can both use it.
package checkpoint

import "maps"

// GroupState is what the metadata keeps of one share group.
type GroupState struct {
	// Epoch moves on every administrator reset or deletion; a checkpoint
	// taken under an older epoch is dropped, and leaders rebuild share
	// partitions built under one.
	Epoch int32 `json:"epoch"`
	// Offsets are topic → partition → share-partition start offset.
	Offsets map[string]map[int32]int64 `json:"offsets,omitempty"`
}

// Change is one change of share offsets.
type Change struct {
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

// Apply returns the group's state after ch, given its state cur (nil if
// none), and whether ch changed it: a checkpoint under a stale epoch does
// not. cur is not modified.
func Apply(cur *GroupState, ch *Change) (next *GroupState, changed bool) {
	next = &GroupState{Offsets: map[string]map[int32]int64{}}
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
			return cur, false
		}
		for t, ps := range ch.Offsets {
			if next.Offsets[t] == nil {
				next.Offsets[t] = map[int32]int64{}
			}
			maps.Copy(next.Offsets[t], ps)
		}
	}
	return next, true
}

// DropTopic returns sg without a deleted topic's offsets, so that a topic
// created again under the name starts by share.auto.offset.reset, and
// whether sg had any. sg is not modified.
func DropTopic(sg *GroupState, topic string) (*GroupState, bool) {
	if _, ok := sg.Offsets[topic]; !ok {
		return sg, false
	}
	next := &GroupState{Epoch: sg.Epoch, Offsets: maps.Clone(sg.Offsets)}
	delete(next.Offsets, topic)
	return next, true
}
