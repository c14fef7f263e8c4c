package group

// The membership of share groups (KIP-932) in __consumer_offsets, in the
// formats of Kafka 4's group coordinator (keys and values encoded as for
// consumer groups, records_consumer.go):
//
//	 9 ShareGroupPartitionMetadata        {group}         → read and ignored
//	10 ShareGroupMemberMetadata           {group, member} → {RackId, ClientId,
//	   ClientHost, SubscribedTopicNames}
//	11 ShareGroupMetadata                 {group}         → {Epoch int32}
//	12 ShareGroupTargetAssignmentMetadata {group}         → {AssignmentEpoch int32}
//	13 ShareGroupTargetAssignmentMember   {group, member} → {TopicPartitions}
//	14 ShareGroupCurrentMemberAssignment  {group, member} → {MemberEpoch,
//	   PreviousMemberEpoch, State int8, AssignedPartitions}
//	15 ShareGroupStatePartitionMetadata   {group}         → read and ignored
//
// The share coordinator (share/) owns the membership; this coordinator
// stores it (StoreShareGroup, written as the records that changed and
// tombstones for those gone) and hands it back after a load
// (LoadShareGroup), so share-group members survive a coordinator change.

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/gokafka/gokafka/cluster"
)

const (
	recShareGroupPartitionMetadata      = 9
	recShareGroupMemberMetadata         = 10
	recShareGroupMetadata               = 11
	recShareGroupTargetMetadata         = 12
	recShareGroupTargetMember           = 13
	recShareGroupCurrentAssignment      = 14
	recShareGroupStatePartitionMetadata = 15
)

// ShareGroupState is a share group's membership as stored.
type ShareGroupState struct {
	Epoch   int32
	Members []ShareMemberState
}

// ShareMemberState is one share-group member as stored.
type ShareMemberState struct {
	ID, ClientID, ClientHost string
	Rack                     *string
	Subscribed               []string
	Epoch, PrevEpoch         int32
	Assignment               map[cluster.TopicID][]int32
}

func isShareRecordType(typ int16) bool {
	return typ >= recShareGroupPartitionMetadata && typ <= recShareGroupStatePartitionMetadata
}

func shareTypeHasMember(typ int16) bool {
	return typ == recShareGroupMemberMetadata || typ == recShareGroupTargetMember || typ == recShareGroupCurrentAssignment
}

// shareRecords returns the records holding st, by key; nil st has none.
func shareRecords(group string, st *ShareGroupState) map[string][]byte {
	out := map[string][]byte{}
	if st == nil {
		return out
	}
	out[string(consumerGroupKey(recShareGroupMetadata, group))] = appendEpochValue(st.Epoch)
	out[string(consumerGroupKey(recShareGroupTargetMetadata, group))] = appendEpochValue(st.Epoch)
	for _, m := range st.Members {
		b := kbin.AppendInt16(nil, 0)
		b = kbin.AppendCompactNullableString(b, m.Rack)
		b = kbin.AppendCompactString(b, m.ClientID)
		b = kbin.AppendCompactString(b, m.ClientHost)
		b = kbin.AppendCompactArrayLen(b, len(m.Subscribed))
		for _, t := range m.Subscribed {
			b = kbin.AppendCompactString(b, t)
		}
		out[string(consumerMemberKey(recShareGroupMemberMetadata, group, m.ID))] = kbin.AppendUvarint(b, 0)
		assigned := partSetOf(m.Assignment)
		out[string(consumerMemberKey(recShareGroupTargetMember, group, m.ID))] = encodeTargetMemberValue(assigned)
		b = kbin.AppendInt16(nil, 0)
		b = kbin.AppendInt32(b, m.Epoch)
		b = kbin.AppendInt32(b, m.PrevEpoch)
		b = kbin.AppendInt8(b, int8(memberStable))
		b = appendTopicPartitions(b, assigned)
		out[string(consumerMemberKey(recShareGroupCurrentAssignment, group, m.ID))] = kbin.AppendUvarint(b, 0)
	}
	return out
}

// loadShareGroup rebuilds a share group's membership from its records;
// nil when there is no ShareGroupMetadata record.
func loadShareGroup(group string, recs map[string][]byte) (*ShareGroupState, error) {
	meta, ok := recs[string(consumerGroupKey(recShareGroupMetadata, group))]
	if !ok {
		return nil, nil
	}
	st := &ShareGroupState{}
	var err error
	if st.Epoch, err = decodeEpochValue(meta, "share group metadata"); err != nil {
		return nil, err
	}
	members := map[string]*ShareMemberState{}
	current := map[string][]byte{}
	for k, v := range recs {
		sk, err := parseRecordKey([]byte(k))
		if err != nil {
			return nil, err
		}
		switch sk.typ {
		case recShareGroupMemberMetadata:
			r := kbin.Reader{Src: v}
			if err := readValueVersion(&r, "share member metadata"); err != nil {
				return nil, err
			}
			m := &ShareMemberState{ID: sk.member}
			m.Rack = r.CompactNullableString()
			m.ClientID = r.CompactString()
			m.ClientHost = r.CompactString()
			n := r.CompactArrayLen()
			if n < 0 || int(n) > len(v) {
				return nil, fmt.Errorf("%w: share member metadata topic count %d", errBadRecord, n)
			}
			for i := int32(0); i < n && r.Ok(); i++ {
				m.Subscribed = append(m.Subscribed, r.CompactString())
			}
			skipTags(&r)
			if err := r.Complete(); err != nil {
				return nil, fmt.Errorf("%w: share member metadata value: %v", errBadRecord, err)
			}
			slices.Sort(m.Subscribed)
			members[m.ID] = m
		case recShareGroupCurrentAssignment:
			current[sk.member] = v
		}
	}
	for id, m := range members {
		m.Assignment = map[cluster.TopicID][]int32{}
		if v, ok := current[id]; ok {
			r := kbin.Reader{Src: v}
			if err := readValueVersion(&r, "share current member assignment"); err != nil {
				return nil, err
			}
			m.Epoch = r.Int32()
			m.PrevEpoch = r.Int32()
			r.Int8()
			m.Assignment = readTopicPartitions(&r, len(v)).byTopic()
			skipTags(&r)
			if err := r.Complete(); err != nil {
				return nil, fmt.Errorf("%w: share current member assignment value: %v", errBadRecord, err)
			}
		}
		st.Members = append(st.Members, *m)
	}
	slices.SortFunc(st.Members, func(a, b ShareMemberState) int { return cmp.Compare(a.ID, b.ID) })
	return st, nil
}

// LoadShareGroup returns the membership of share group groupID as this
// coordinator last loaded or stored it, nil if there is none. The error
// is NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS as for any group.
func (c *Coordinator) LoadShareGroup(groupID string) (*ShareGroupState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	op, err := c.validateGroupLocked(groupID)
	if err != nil {
		return nil, err
	}
	return loadShareGroup(groupID, op.share[groupID])
}

// ShareGroupIDs lists the share groups of the partitions this coordinator
// has loaded, as last loaded or stored.
func (c *Coordinator) ShareGroupIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, op := range c.own.LoadedLocked() {
		for id := range op.share {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// StoreShareGroup writes share group groupID's membership st (nil: the
// group is gone): the records that changed since last stored, and
// tombstones for those gone. The returned channel, nil when there was
// nothing to write, gets the write's outcome (mapped as for a heartbeat).
// It never blocks on the write.
func (c *Coordinator) StoreShareGroup(groupID string, st *ShareGroupState) (<-chan error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	op, err := c.validateGroupLocked(groupID)
	if err != nil {
		return nil, err
	}
	cur := shareRecords(groupID, st)
	recs := diffRecords(op.share[groupID], cur, op.shareUnsure[groupID])
	if len(recs) == 0 {
		return nil, nil
	}
	if len(cur) == 0 {
		delete(op.share, groupID)
	} else {
		op.share[groupID] = cur
	}
	delete(op.shareUnsure, groupID)
	ch := make(chan error, 1)
	op.app.enqueue(recs, func(err error) {
		if err != nil {
			c.mu.Lock()
			u := op.shareUnsure[groupID]
			if u == nil {
				u = map[string]bool{}
				op.shareUnsure[groupID] = u
			}
			for _, r := range recs {
				u[string(r.key)] = true
			}
			c.mu.Unlock()
			err = convertConsumerWriteError(err)
		}
		ch <- err
	})
	return ch, nil
}
