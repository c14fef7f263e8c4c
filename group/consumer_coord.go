package group

// The coordinator's side of the consumer protocol (KIP-848): a group id
// names either a classic group or a consumer group. A consumer group's
// entry keeps its classicGroup, Empty and without protocol, as the holder
// of its committed offsets; entry.cg holds the membership.
//
// Conversions: a ConsumerGroupHeartbeat joining a classic group without
// members turns it into a consumer group (its offsets stay); a JoinGroup
// to a consumer group without members turns it back. With members, the
// online migration of migrate.go applies: a classic group whose members
// use the consumer embedded protocol is upgraded when
// group.consumer.migration.policy allows (GROUP_ID_NOT_FOUND otherwise),
// classic members join a consumer group as classic members (a JoinGroup
// whose metadata is no consumer subscription gets
// INCONSISTENT_GROUP_PROTOCOL), and the group goes back to classic when
// its last consumer-protocol member leaves. DescribeGroups (v0-v5)
// reports a consumer group Dead, as Kafka 4 does below v6.
//
// Failover: membership is persisted as Kafka's ConsumerGroup* records
// (records_consumer.go). After each change consumerDiffLocked writes the
// records whose value changed since last written and tombstones for those
// gone; a heartbeat is answered once its write is acknowledged. A new
// coordinator loads the group with its members, epochs and assignments,
// restarting their sessions, and members keep heartbeating with their
// epochs.

import (
	"bytes"
	"errors"
	"sort"
)

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
	if e.g.state == StateDead {
		e.mu.Unlock()
		// Deleted or unloaded under us; the client looks again.
		return hbError(ErrNotCoordinator, "")
	}
	var recs []record
	if e.cg == nil {
		switch {
		case e.g.isClassicInUse() && p.MemberEpoch == joinEpoch && c.canUpgradeLocked(e):
			// Online upgrade: the classic members carry on inside
			// the consumer group. The classic group's tombstone and
			// the consumer group's records go out as one batch.
			recs = append(recs, c.upgradeLocked(e, view)...)
		case e.g.isClassicInUse():
			e.mu.Unlock()
			return hbError(ErrGroupIDNotFound, "Group "+groupID+" is not a consumer group.")
		case p.MemberEpoch != joinEpoch:
			e.mu.Unlock()
			return hbError(ErrUnknownMemberID, "Member "+p.MemberID+" is not a member of group "+groupID+".")
		default:
			e.toConsumer(c.cdeps)
			// The classic group's record goes: the log holds one kind
			// of group under this id, as Kafka's does after a
			// conversion.
			recs = append(recs, record{key: groupKey(groupID)})
		}
	}
	pre, fast := e.cg.shape(), len(recs) == 0 && len(e.cgUnsure) == 0 && e.cgWritten != nil
	epoch := e.cg.groupEpoch
	r := e.cg.heartbeat(c.nowMs(), view, &p)
	c.rescheduleLocked(e)
	if p.MemberEpoch == leaveEpoch && r.Err == nil {
		// The last consumer-protocol member leaving a group of classic
		// members turns it back into a classic group.
		if down := c.maybeDowngradeLocked(e, epoch); down != nil {
			c.rescheduleLocked(e)
			if err := c.writeConsumerUnlock(e, append(recs, down...)); err != nil {
				return hbError(err, "")
			}
			return r
		}
	}
	if fast && e.cg.shape() == pre {
		// Only this member's records can have changed: the others'
		// are not encoded again on every heartbeat.
		recs = c.memberDiffLocked(e, p.MemberID)
	} else {
		recs = append(recs, c.consumerDiffLocked(e)...)
	}
	// Kafka answers once the group's new state is written, so a member
	// never holds an epoch or partitions a new coordinator would not know.
	if err := c.writeConsumerUnlock(e, recs); err != nil {
		return hbError(err, "")
	}
	return r
}

// writeConsumerUnlock queues recs of the entry's consumer group, releases
// e's lock and waits for the write, returning its error as the group's
// requests answer it (convertConsumerWriteError). With no records it only
// releases the lock.
func (c *Coordinator) writeConsumerUnlock(e *groupEntry, recs []record) error {
	if len(recs) == 0 {
		e.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	c.enqueueConsumerLocked(e, recs, func(err error) { ch <- err })
	e.mu.Unlock()
	if err := <-ch; err != nil {
		return convertConsumerWriteError(err)
	}
	return nil
}

// convertConsumerWriteError maps a failed write of a consumer group's
// records to what Kafka's ConsumerGroupHeartbeat answers for it.
func convertConsumerWriteError(err error) error {
	err = convertAppendError(err, true)
	if errors.Is(err, ErrInvalidCommitOffsetSize) {
		return ErrUnknownServer
	}
	return err
}

// consumerDiffLocked returns the records of the entry's consumer group
// that changed since they were last queued, tombstones for those gone
// (every one once the group is unloaded, deleted or converted back to a
// classic group), and again those whose write failed. It records them as
// queued.
func (c *Coordinator) consumerDiffLocked(e *groupEntry) []record {
	cur := map[string][]byte{}
	if e.cg != nil {
		cur = e.cg.consumerRecords()
	}
	recs := diffRecords(e.cgWritten, cur, e.cgUnsure)
	if len(recs) == 0 {
		return nil
	}
	e.cgWritten, e.cgUnsure = cur, nil
	return recs
}

// memberDiffLocked is consumerDiffLocked for the records of member id
// alone, when nothing else in the group changed.
func (c *Coordinator) memberDiffLocked(e *groupEntry, id string) []record {
	cur := e.cg.memberRecords(id)
	var recs []record
	for _, typ := range []int16{recConsumerGroupMemberMetadata, recConsumerGroupTargetMember, recConsumerGroupCurrentAssignment} {
		k := string(consumerMemberKey(typ, e.g.id, id))
		v, now := cur[k]
		old, was := e.cgWritten[k]
		switch {
		case now && (!was || !bytes.Equal(old, v)):
			recs = append(recs, record{key: []byte(k), value: v})
			e.cgWritten[k] = v
		case !now && was:
			recs = append(recs, record{key: []byte(k)})
			delete(e.cgWritten, k)
		}
	}
	return recs
}

// diffRecords returns the records of cur whose value differs from
// written's, tombstones for the keys of written that cur lacks, and the
// current value (or a tombstone) of every key in unsure; ordered as
// Kafka writes a group's records.
func diffRecords(written, cur map[string][]byte, unsure map[string]bool) []record {
	changed := map[string]bool{}
	for k, v := range cur {
		if old, ok := written[k]; !ok || !bytes.Equal(old, v) {
			changed[k] = true
		}
	}
	for k := range written {
		if _, ok := cur[k]; !ok {
			changed[k] = true
		}
	}
	for k := range unsure {
		changed[k] = true
	}
	if len(changed) == 0 {
		return nil
	}
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		oi, oj := consumerKeyOrder(keys[i]), consumerKeyOrder(keys[j])
		if oi != oj {
			return oi < oj
		}
		return keys[i] < keys[j]
	})
	recs := make([]record, 0, len(keys))
	for _, k := range keys {
		recs = append(recs, record{key: []byte(k), value: cur[k]})
	}
	return recs
}

// enqueueConsumerLocked queues a consumer group's records; a failed write
// leaves their keys to be written again with the group's next change.
// done, if set, gets the raw outcome.
func (c *Coordinator) enqueueConsumerLocked(e *groupEntry, recs []record, done func(error)) {
	e.part.app.enqueue(recs, func(err error) {
		if err != nil {
			e.mu.Lock()
			if e.cgUnsure == nil {
				e.cgUnsure = map[string]bool{}
			}
			for _, r := range recs {
				// A conversion's classic group record is not the
				// consumer group's to rewrite.
				if isConsumerRecordType(recordType(r.key)) {
					e.cgUnsure[string(r.key)] = true
				}
			}
			e.mu.Unlock()
		}
		if done != nil {
			done(err)
		}
	})
}

// persistConsumerLocked queues whatever changed in the entry's consumer
// group without waiting for it (a session expiry, a conversion).
func (c *Coordinator) persistConsumerLocked(e *groupEntry) {
	if recs := c.consumerDiffLocked(e); len(recs) > 0 {
		c.enqueueConsumerLocked(e, recs, nil)
	}
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
