package group

// The coordinator's side of the consumer protocol (KIP-848): a group id
// names either a classic group or a consumer group. A consumer group's
// entry keeps its classicGroup, Empty and without protocol, as the holder
// of its committed offsets; entry.cg holds the membership.
//
// Conversions, as Kafka does them without online migration: a
// ConsumerGroupHeartbeat joining a classic group without members turns
// it into a consumer group (its offsets stay); a JoinGroup to a consumer
// group without members turns it back. Otherwise the other protocol's
// requests fail: ConsumerGroupHeartbeat with GROUP_ID_NOT_FOUND, JoinGroup
// with INCONSISTENT_GROUP_PROTOCOL; SyncGroup, Heartbeat and LeaveGroup
// find no such member (UNKNOWN_MEMBER_ID); DescribeGroups (v0-v5) reports
// a consumer group Dead, as Kafka 4 does below v6.
//
// Failover: membership and epochs are kept in memory only (committed
// offsets are in __consumer_offsets as always). A new coordinator knows the
// group only by its offsets; members' heartbeats get UNKNOWN_MEMBER_ID and
// they rejoin with epoch 0, and their commits meanwhile fail with
// UNKNOWN_MEMBER_ID (ILLEGAL_GENERATION if the group had no offsets), so
// nothing is committed by a member that does not hold the partition.

import "errors"

// topicsView returns the view of the current metadata image, rebuilt only
// when the image changed.
func (c *Coordinator) topicsView() *TopicsView {
	im := c.meta.Image()
	c.viewMu.Lock()
	defer c.viewMu.Unlock()
	if c.viewImage != im || c.view == nil {
		next := topicsViewOf(im)
		if c.view == nil || !c.view.equal(next) {
			// Keep the old view when the topics did not change (most
			// images differ only in leaders or ISRs): groups then skip
			// recomputing their subscribed topics' metadata.
			c.view = next
		}
		c.viewImage = im
	}
	return c.view
}

// isClassicInUse reports whether a classic group has members or members
// joining, so that it cannot become a consumer group.
func (g *classicGroup) isClassicInUse() bool {
	return len(g.members) > 0 || len(g.pending) > 0 || g.state != StateEmpty
}

// ConsumerGroupHeartbeat serves a ConsumerGroupHeartbeat.
func (c *Coordinator) ConsumerGroupHeartbeat(groupID string, p ConsumerHeartbeat) ConsumerHeartbeatResult {
	if groupID == "" {
		return hbError(ErrInvalidRequest, "GroupId can't be empty.")
	}
	if err, msg := validateConsumerHeartbeat(&p); err != nil {
		return hbError(err, msg)
	}
	if _, err := c.validateGroup(groupID, false); err != nil {
		return hbError(err, "")
	}
	view := c.topicsView()
	e, err := c.entry(groupID, p.MemberEpoch == joinEpoch)
	if err != nil {
		return hbError(err, "")
	}
	if e == nil {
		if p.MemberEpoch < 0 {
			return hbError(ErrGroupIDNotFound, "Group "+groupID+" not found.")
		}
		return hbError(ErrUnknownMemberID, "Group "+groupID+" not found.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.g.state == StateDead {
		// Deleted or unloaded under us; the client looks again.
		return hbError(ErrNotCoordinator, "")
	}
	if e.cg == nil {
		if e.g.isClassicInUse() {
			return hbError(ErrGroupIDNotFound, "Group "+groupID+" is not a consumer group.")
		}
		if p.MemberEpoch != joinEpoch {
			return hbError(ErrUnknownMemberID, "Member "+p.MemberID+" is not a member of group "+groupID+".")
		}
		e.toConsumer(c.cdeps)
	}
	r := e.cg.heartbeat(c.nowMs(), view, &p)
	c.rescheduleLocked(e)
	return r
}

// toConsumer makes an empty classic group a consumer group.
func (e *groupEntry) toConsumer(deps *consumerDeps) {
	e.cg = newConsumerGroup(e.g.id, deps)
	e.g.protocolType, e.g.protocolName = nil, nil
	e.g.generation, e.g.leader = 0, ""
}

// toClassicLocked is the reverse conversion for a JoinGroup; it reports
// whether the group may be joined by the classic protocol.
func (e *groupEntry) toClassicLocked() bool {
	if e.cg == nil {
		return true
	}
	if !e.cg.isEmpty() {
		return false
	}
	e.cg = nil
	return true
}

// DescribeConsumerGroup describes a consumer group for ConsumerGroupDescribe;
// a group that does not exist or is classic is GROUP_ID_NOT_FOUND.
func (c *Coordinator) DescribeConsumerGroup(groupID string) (ConsumerGroupDescription, *TopicsView, error) {
	if _, err := c.validateGroup(groupID, false); err != nil {
		return ConsumerGroupDescription{}, nil, err
	}
	view := c.topicsView()
	e, err := c.entry(groupID, false)
	if err != nil {
		return ConsumerGroupDescription{}, nil, err
	}
	if e == nil {
		return ConsumerGroupDescription{}, nil, ErrGroupIDNotFound
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cg == nil || e.g.state == StateDead {
		return ConsumerGroupDescription{}, nil, ErrGroupIDNotFound
	}
	return e.cg.describe(), view, nil
}

// validateCommitLocked checks who may commit to the entry's group, by the
// protocol the group uses.
func (e *groupEntry) validateCommitLocked(p CommitParams, txn bool) error {
	if e.cg != nil {
		if e.g.state == StateDead {
			return ErrCoordinatorNotAvailable
		}
		err := e.cg.validateOffsetCommit(p.MemberID, p.InstanceID, p.Generation, txn, p.APIVersion)
		if txn && errors.Is(err, ErrStaleMemberEpoch) {
			// TxnOffsetCommit has no STALE_MEMBER_EPOCH; Kafka answers
			// ILLEGAL_GENERATION, on which producers abort the
			// transaction.
			err = ErrIllegalGeneration
		}
		return err
	}
	if txn && p.Generation < 0 && p.MemberID == "" && p.InstanceID == nil {
		return nil
	}
	return e.g.validateOffsetCommit(p.MemberID, p.InstanceID, p.Generation)
}

// consumerSubscribedLocked returns the topics a consumer group with members
// subscribes to, regexes resolved against view; ok is false for groups
// that are not such a group.
func (e *groupEntry) consumerSubscribedLocked(view *TopicsView) (map[string]bool, bool) {
	if e.cg == nil || e.cg.isEmpty() {
		return nil, false
	}
	return e.cg.subscribedTopicNames(view), true
}

// unload drops the membership; the group is gone from this coordinator.
func (g *consumerGroup) unload() {
	g.state = ConsumerDead
	clear(g.members)
	clear(g.static)
	clear(g.owners)
	clear(g.target)
}
