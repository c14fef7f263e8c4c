package group

// Online migration between the classic and the consumer protocol
// (KIP-848's "Upgrade & Downgrade", after Kafka 4's GroupMetadataManager,
// ConsumerGroup.fromClassicGroup and ClassicGroup.fromConsumerGroup). Like
// consumer.go this is pure: no I/O, no clock; the coordinator
// (migrate_coord.go) persists and answers.
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group with
//     members that all use the "consumer" embedded protocol converts it
//     (when group.consumer.migration.policy allows): every classic member
//     becomes a member of the consumer group at epoch = the classic
//     generation, subscribed to the topics of its JoinGroup subscription
//     and owning (and targeted at) the partitions of its last SyncGroup
//     assignment. The joining member then bumps the group epoch like any
//     other join.
//   - Classic members inside a consumer group keep speaking the classic
//     protocol: JoinGroup updates the member from its subscription and
//     reconciles it (owned partitions are the subscription's), answering
//     with its member epoch as the generation and no leader; SyncGroup
//     answers its current assignment; Heartbeat answers
//     REBALANCE_IN_PROGRESS while it must rejoin to move on (the group
//     epoch moved past it, it has partitions to revoke, or partitions it
//     waited for are free). Its session is its JoinGroup session timeout;
//     it must rejoin within its rebalance timeout of being told to, and
//     sync within it after a join.
//   - Downgrade: when the last consumer-protocol member leaves (or
//     expires) and classic members remain, the group becomes a classic
//     group in generation = the group epoch before that member left (as
//     Kafka converts instead of removing it), its members keeping their
//     assignments, and a rebalance starts.

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicMemberMeta is what a classic member of a consumer group joined
// with: Kafka's ClassicMemberMetadata of ConsumerGroupMemberMetadataValue.
type classicMemberMeta struct {
	sessionTimeoutMs int32
	protocols        []Protocol
}

// decodeSubscription decodes a classic consumer's JoinGroup metadata.
func decodeSubscription(b []byte) (*kmsg.ConsumerMemberMetadata, error) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(b); err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeAssignment decodes a classic consumer's SyncGroup assignment into
// partitions of view's topics; unknown topics are dropped.
func decodeAssignment(b []byte, view *TopicsView) (partSet, error) {
	out := partSet{}
	if len(b) == 0 {
		return out, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, err
	}
	for _, t := range a.Topics {
		tm, ok := view.byName[t.Topic]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if p >= 0 && p < tm.Partitions {
				out[TopicPartitionID{tm.ID, p}] = struct{}{}
			}
		}
	}
	return out, nil
}

// encodeAssignment is a classic consumer's assignment of s, topics and
// partitions sorted.
func encodeAssignment(s partSet, view *TopicsView) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = 0
	byTopic := s.byTopic()
	names := make([]string, 0, len(byTopic))
	parts := map[string][]int32{}
	for id, ps := range byTopic {
		if n := view.Name(id); n != "" {
			names = append(names, n)
			parts[n] = ps
		}
	}
	sort.Strings(names)
	for _, n := range names {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: n, Partitions: parts[n]})
	}
	return a.AppendTo(nil)
}

// ownedOf returns a subscription's owned partitions by topic id; unknown
// topics are dropped. It is never nil.
func ownedOf(s *kmsg.ConsumerMemberMetadata, view *TopicsView) partSet {
	out := partSet{}
	for _, o := range s.OwnedPartitions {
		if tm, ok := view.byName[o.Topic]; ok {
			for _, p := range o.Partitions {
				out[TopicPartitionID{tm.ID, p}] = struct{}{}
			}
		}
	}
	return out
}

// usesConsumerProtocol is Kafka's ClassicGroup.usesConsumerGroupProtocol
// for a group with members: protocol type "consumer", a chosen protocol,
// and every member's subscription readable.
func (g *classicGroup) usesConsumerProtocol() bool {
	if g.protocolType == nil || *g.protocolType != consumerProtocolType || g.protocolName == nil {
		return false
	}
	for _, m := range g.members {
		if _, err := decodeSubscription(m.metadataFor(*g.protocolName)); err != nil {
			return false
		}
	}
	return true
}

// consumerGroupFromClassic builds the consumer group a classic group
// becomes (Kafka's ConsumerGroup.fromClassicGroup). The caller checked
// usesConsumerProtocol. A partition two members' assignments claim (a
// stale assignment mid-rebalance) stays with the first by member id.
func consumerGroupFromClassic(g *classicGroup, deps *consumerDeps, view *TopicsView, nowMs int64) *consumerGroup {
	cg := newConsumerGroup(g.id, deps)
	cg.groupEpoch, cg.assignmentEpoch = g.generation, g.generation
	for _, id := range sortedKeys(g.members) {
		cm := g.members[id]
		sub, err := decodeSubscription(cm.metadataFor(*g.protocolName))
		if err != nil {
			sub = &kmsg.ConsumerMemberMetadata{} // usesConsumerProtocol rules it out
		}
		assigned, err := decodeAssignment(cm.assignment, view)
		if err != nil {
			assigned = partSet{}
		}
		for tp := range assigned {
			if _, taken := cg.owners[tp]; taken {
				delete(assigned, tp)
				continue
			}
			cg.owners[tp] = id
		}
		topics := slices.Clone(sub.Topics)
		slices.Sort(topics)
		m := &consumerMember{
			id: id, instanceID: cm.instanceID, rackID: sub.Rack, clientID: cm.clientID, clientHost: cm.clientHost,
			epoch: g.generation, prevEpoch: g.generation, state: memberStable,
			rebalanceTimeoutMs: cm.rebalanceTimeoutMs, topics: slices.Compact(topics),
			assigned: assigned, revoking: partSet{},
			classic:         &classicMemberMeta{sessionTimeoutMs: cm.sessionTimeoutMs, protocols: slices.Clone(cm.protocols)},
			sessionDeadline: nowMs + int64(cm.sessionTimeoutMs), rebalanceDeadline: noDeadline, classicDeadline: noDeadline,
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.target[id] = assigned.clone()
		cg.membership++
	}
	cg.subscribed = cg.subscriptionMeta(view)
	cg.subscribedView = view
	cg.assignorName = cg.preferredAssignor()
	cg.updateState()
	return cg
}

// onlyClassicMembers reports whether the group has members and all use the
// classic protocol.
func (g *consumerGroup) onlyClassicMembers() bool {
	if len(g.members) == 0 {
		return false
	}
	for _, m := range g.members {
		if m.classic == nil {
			return false
		}
	}
	return true
}

// classicValue is the classic group's record a consumer group with only
// classic members becomes (after Kafka's ClassicGroup.fromConsumerGroup):
// generation is the group epoch the conversion happens at, the protocol
// the first of the first member's that every member supports, and each
// member's assignment what it owns now (Kafka writes its target; what it
// owns is what a coordinator loading the record finds it consuming).
func (g *consumerGroup) classicValue(view *TopicsView, nowMs int64, generation int32) *groupValue {
	ids := sortedKeys(g.members)
	proto := ""
	for _, p := range g.members[ids[0]].classic.protocols {
		all := true
		for _, id := range ids {
			if !slices.ContainsFunc(g.members[id].classic.protocols, func(q Protocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			proto = p.Name
			break
		}
	}
	if proto == "" && len(g.members[ids[0]].classic.protocols) > 0 {
		proto = g.members[ids[0]].classic.protocols[0].Name
	}
	leader := ids[0]
	v := &groupValue{ProtocolType: consumerProtocolType, Generation: generation, Protocol: &proto, Leader: &leader, CurrentStateTimestamp: nowMs}
	for _, id := range ids {
		m := g.members[id]
		var sub []byte
		for _, p := range m.classic.protocols {
			if p.Name == proto {
				sub = p.Metadata
			}
		}
		v.Members = append(v.Members, memberValue{
			MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeoutMs: m.rebalanceTimeoutMs, SessionTimeoutMs: m.classic.sessionTimeoutMs,
			Subscription: sub, Assignment: encodeAssignment(m.assigned, view),
		})
	}
	return v
}

// classicJoin serves a JoinGroup of a classic member inside the consumer
// group (Kafka's classicGroupJoinToConsumerGroup). p.MemberID is the
// member's id, new or known; the caller has handled KIP-394's
// MEMBER_ID_REQUIRED.
func (g *consumerGroup) classicJoin(nowMs int64, view *TopicsView, p JoinParams) JoinResult {
	if err := g.checkClassicJoin(p); err != nil {
		return joinError(p.MemberID, err)
	}
	sub, err := decodeSubscription(p.Protocols[0].Metadata)
	if err != nil {
		return joinError(p.MemberID, ErrInconsistentProtocol)
	}
	id := p.MemberID
	var m *consumerMember
	changed, replaced := false, false
	if p.InstanceID != nil {
		if oldID, ok := g.static[*p.InstanceID]; ok && oldID != id {
			// A static member back under a new id takes over its
			// predecessor's place (whichever protocol it used), as in
			// the classic protocol.
			if _, taken := g.members[id]; taken {
				return joinError(p.MemberID, ErrFencedInstanceID)
			}
			g.replaceMember(g.members[oldID], id)
			replaced = true
			// Its epoch starts over (the predecessor may have left
			// with the static-leave epoch), its partitions kept.
			r := g.members[id]
			g.releaseAll(r.revoking)
			r.revoking = partSet{}
			r.prevEpoch, r.epoch, r.state = 0, joinEpoch, memberStable
			r.rebalanceDeadline = noDeadline
		}
	}
	m = g.members[id]
	if m != nil && m.classic == nil && !replaced {
		// A consumer-protocol member does not join with JoinGroup.
		return joinError(p.MemberID, ErrUnknownMemberID)
	}
	if m == nil {
		if len(g.members) >= g.deps.maxSize {
			return joinError(p.MemberID, ErrGroupMaxSizeReached)
		}
		m = &consumerMember{id: id, assigned: partSet{}, revoking: partSet{}, rebalanceDeadline: noDeadline, classicDeadline: noDeadline}
		if p.InstanceID != nil {
			inst := *p.InstanceID
			m.instanceID = &inst
			g.static[inst] = id
		}
		g.members[id] = m
		g.membership++
		changed = true
	}
	if sub.Rack != nil && (m.rackID == nil || *m.rackID != *sub.Rack) {
		r := *sub.Rack
		m.rackID = &r
		changed = true
	}
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if !slices.Equal(topics, m.topics) {
		m.topics = topics
		changed = true
	}
	if m.regex != "" || m.assignor != "" {
		m.regex, m.re, m.assignor = "", nil, ""
		changed = true
	}
	if p.RebalanceTimeoutMs > 0 {
		m.rebalanceTimeoutMs = p.RebalanceTimeoutMs
	}
	m.clientID, m.clientHost = p.ClientID, p.ClientHost
	m.classic = &classicMemberMeta{sessionTimeoutMs: p.SessionTimeoutMs, protocols: slices.Clone(p.Protocols)}
	m.sessionDeadline = nowMs + int64(p.SessionTimeoutMs)

	g.maybeBumpEpoch(view, changed)
	if g.groupEpoch > g.assignmentEpoch {
		g.computeTarget(view)
	}
	g.reconcileMember(nowMs, m, ownedOf(sub, view).byTopic())
	g.updateState()
	// The member must now sync within its rebalance timeout.
	m.classicDeadline = nowMs + int64(m.rebalanceTimeoutMs)
	pt, pn := consumerProtocolType, p.Protocols[0].Name
	return JoinResult{MemberID: id, Generation: m.epoch, ProtocolType: &pt, ProtocolName: &pn}
}

// checkClassicJoin is Kafka's throwIfConsumerGroupIsFull and
// throwIfClassicProtocolIsNotSupported for a JoinGroup: a new member needs
// room, the protocol type must be "consumer", and the protocols must
// include one every other classic member supports.
func (g *consumerGroup) checkClassicJoin(p JoinParams) error {
	if _, known := g.members[p.MemberID]; !known && len(g.members) >= g.deps.maxSize {
		return ErrGroupMaxSizeReached
	}
	if p.ProtocolType != consumerProtocolType || len(p.Protocols) == 0 {
		return ErrInconsistentProtocol
	}
	for _, proto := range p.Protocols {
		all := true
		for id, m := range g.members {
			if id == p.MemberID || m.classic == nil {
				continue
			}
			if !slices.ContainsFunc(m.classic.protocols, func(q Protocol) bool { return q.Name == proto.Name }) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
	}
	return ErrInconsistentProtocol
}

// classicMember finds a classic member for SyncGroup, Heartbeat and
// LeaveGroup (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (g *consumerGroup) classicMember(memberID string, instanceID *string) (*consumerMember, error) {
	m := g.members[memberID]
	if m == nil {
		return nil, ErrUnknownMemberID
	}
	if instanceID != nil && (m.instanceID == nil || *m.instanceID != *instanceID) {
		return nil, ErrFencedInstanceID
	}
	if m.classic == nil {
		return nil, ErrUnknownMemberID
	}
	return m, nil
}

// waitingOnUnreleased reports whether some partition of the member's
// target that it does not own is still owned by another member.
func (g *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for tp := range g.target[m.id] {
		if m.assigned.has(tp) {
			continue
		}
		if owner, ok := g.owners[tp]; ok && owner != m.id {
			return true
		}
	}
	return false
}

// mustRejoin reports whether a classic member has to rejoin to move
// towards its target.
func (g *consumerGroup) mustRejoin(m *consumerMember) bool {
	return m.epoch < g.groupEpoch || m.state == memberUnrevoked ||
		m.state == memberUnreleased && !g.waitingOnUnreleased(m)
}

// classicHeartbeat serves a Heartbeat of a classic member (Kafka's
// classicGroupHeartbeatToConsumerGroup).
func (g *consumerGroup) classicHeartbeat(nowMs int64, memberID string, instanceID *string, generation int32) error {
	m, err := g.classicMember(memberID, instanceID)
	if err != nil {
		return err
	}
	if generation != m.epoch {
		return ErrIllegalGeneration
	}
	m.sessionDeadline = nowMs + int64(m.classic.sessionTimeoutMs)
	if g.mustRejoin(m) {
		if m.classicDeadline == noDeadline {
			// It must rejoin within its rebalance timeout.
			m.classicDeadline = nowMs + int64(m.rebalanceTimeoutMs)
		}
		return ErrRebalanceInProgress
	}
	return nil
}

// classicSync serves a SyncGroup of a classic member (Kafka's
// classicGroupSyncToConsumerGroup): its assignment is what it owns now.
func (g *consumerGroup) classicSync(nowMs int64, view *TopicsView, p SyncParams) SyncResult {
	m, err := g.classicMember(p.MemberID, p.InstanceID)
	if err != nil {
		return SyncResult{Err: err}
	}
	if p.Generation != m.epoch {
		return SyncResult{Err: ErrIllegalGeneration}
	}
	if p.ProtocolType != nil && *p.ProtocolType != consumerProtocolType {
		return SyncResult{Err: ErrInconsistentProtocol}
	}
	// The protocol name must be the one its JoinGroup was answered with.
	if p.ProtocolName != nil && (len(m.classic.protocols) == 0 || *p.ProtocolName != m.classic.protocols[0].Name) {
		return SyncResult{Err: ErrInconsistentProtocol}
	}
	if g.groupEpoch > m.epoch && m.state != memberUnrevoked {
		// A new rebalance: it must rejoin, within its rebalance timeout.
		if m.classicDeadline == noDeadline {
			m.classicDeadline = nowMs + int64(m.rebalanceTimeoutMs)
		}
		return SyncResult{Err: ErrRebalanceInProgress}
	}
	m.classicDeadline = noDeadline
	m.sessionDeadline = nowMs + int64(m.classic.sessionTimeoutMs)
	pt := consumerProtocolType
	r := SyncResult{ProtocolType: &pt, ProtocolName: p.ProtocolName, Assignment: encodeAssignment(m.assigned, view)}
	if r.ProtocolName == nil && len(m.classic.protocols) > 0 {
		pn := m.classic.protocols[0].Name
		r.ProtocolName = &pn
	}
	return r
}

// classicLeave serves a LeaveGroup of classic members (Kafka's
// classicGroupLeaveToConsumerGroup); one error per member.
func (g *consumerGroup) classicLeave(leaving []LeaveMember) []error {
	errs := make([]error, len(leaving))
	for i, l := range leaving {
		id := l.MemberID
		if id == "" {
			if l.InstanceID == nil {
				errs[i] = ErrUnknownMemberID
				continue
			}
			cur, ok := g.static[*l.InstanceID]
			if !ok {
				errs[i] = ErrUnknownMemberID
				continue
			}
			id = cur
		}
		m, err := g.classicMember(id, l.InstanceID)
		if err != nil {
			errs[i] = err
			continue
		}
		g.removeMember(m)
	}
	g.updateState()
	return errs
}
