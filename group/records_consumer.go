package group

// The records of a consumer-protocol group (KIP-848) in __consumer_offsets,
// in the formats of Kafka 4's group coordinator, so that a compacted log
// holds exactly the group's latest state and tools reading the topic
// recognise them. A key is an int16 record type followed by the key's
// fields (non-flexible strings); a value is an int16 version (0) followed
// by the flexible encoding of its fields (compact strings and arrays,
// tagged fields at the end):
//
//	3 ConsumerGroupMetadata            {group}         → {Epoch int32}
//	4 ConsumerGroupPartitionMetadata   {group}         → read and ignored (Kafka 3.x)
//	5 ConsumerGroupMemberMetadata      {group, member} → {InstanceId, RackId, ClientId,
//	  ClientHost, SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs, ServerAssignor,
//	  tag 0: ClassicMemberMetadata {SessionTimeoutMs, SupportedProtocols [{Name, Metadata}]},
//	  set only for a member using the classic protocol (migrate.go)}
//	6 ConsumerGroupTargetAssignmentMetadata {group}    → {AssignmentEpoch int32}
//	7 ConsumerGroupTargetAssignmentMember {group, member} → {TopicPartitions}
//	8 ConsumerGroupCurrentMemberAssignment {group, member} → {MemberEpoch,
//	  PreviousMemberEpoch, State int8, AssignedPartitions, PartitionsPendingRevocation}
//
// A null value is a tombstone: the member or the group is gone.

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/gokafka/gokafka/cluster"
)

// Record types (the key's leading int16) of a consumer group's records.
const (
	recConsumerGroupMetadata          = 3
	recConsumerGroupPartitionMetadata = 4
	recConsumerGroupMemberMetadata    = 5
	recConsumerGroupTargetMetadata    = 6
	recConsumerGroupTargetMember      = 7
	recConsumerGroupCurrentAssignment = 8
)

func consumerGroupKey(typ int16, group string) []byte {
	b := kbin.AppendInt16(nil, typ)
	return kbin.AppendString(b, group)
}

func consumerMemberKey(typ int16, group, member string) []byte {
	b := consumerGroupKey(typ, group)
	return kbin.AppendString(b, member)
}

func appendEpochValue(epoch int32) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, epoch)
	return kbin.AppendUvarint(b, 0)
}

// appendTopicPartitions writes a []TopicPartitions in a stable order
// (topic ids, then partitions ascending), so equal sets encode equally.
func appendTopicPartitions(b []byte, s partSet) []byte {
	byTopic := s.byTopic()
	ids := make([]cluster.TopicID, 0, len(byTopic))
	for id := range byTopic {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b cluster.TopicID) int { return bytes.Compare(a[:], b[:]) })
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		ps := byTopic[id]
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func encodeMemberMetadataValue(m *consumerMember) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	var regex, assignor *string
	if m.regex != "" {
		regex = &m.regex
	}
	if m.assignor != "" {
		assignor = &m.assignor
	}
	b = kbin.AppendCompactNullableString(b, regex)
	b = kbin.AppendInt32(b, m.rebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, assignor)
	if m.classic == nil {
		return kbin.AppendUvarint(b, 0)
	}
	// A nullable struct in a tagged field: its size counts a leading
	// presence varint (1), as Kafka's generated code writes it.
	cm := appendClassicMemberMetadata(kbin.AppendUvarint(nil, 1), m.classic)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0: ClassicMemberMetadata
	b = kbin.AppendUvarint(b, uint32(len(cm)))
	return append(b, cm...)
}

// appendClassicMemberMetadata writes a ClassicMemberMetadata struct.
func appendClassicMemberMetadata(b []byte, c *classicMemberMeta) []byte {
	b = kbin.AppendInt32(b, c.sessionTimeoutMs)
	b = kbin.AppendCompactArrayLen(b, len(c.protocols))
	for _, p := range c.protocols {
		b = kbin.AppendCompactString(b, p.Name)
		b = kbin.AppendCompactBytes(b, p.Metadata)
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

// readClassicMemberMetadata reads the ClassicMemberMetadata tagged field:
// a presence varint (1; 0 for null) then the struct. The struct alone, as
// writers predating nullable structs wrote it, is read too: it starts with
// the session timeout's high byte, 0 for any timeout below 4.6 hours, so
// it is told apart from a presence byte of 1 (nil, nil for a null).
func readClassicMemberMetadata(b []byte) (*classicMemberMeta, error) {
	switch {
	case len(b) == 1 && b[0] == 0:
		return nil, nil
	case len(b) > 0 && b[0] == 1:
		b = b[1:]
	}
	r := kbin.Reader{Src: b}
	c := &classicMemberMeta{sessionTimeoutMs: r.Int32()}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(b) {
		return nil, fmt.Errorf("%w: classic member metadata protocol count %d", errBadRecord, n)
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		p := Protocol{Name: r.CompactString(), Metadata: slices.Clone(r.CompactBytes())}
		skipTags(&r)
		c.protocols = append(c.protocols, p)
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: classic member metadata: %v", errBadRecord, err)
	}
	return c, nil
}

func encodeTargetMemberValue(s partSet) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTopicPartitions(b, s)
	return kbin.AppendUvarint(b, 0)
}

func encodeCurrentAssignmentValue(m *consumerMember) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt32(b, m.prevEpoch)
	b = kbin.AppendInt8(b, int8(m.state))
	b = appendTopicPartitions(b, m.assigned)
	b = appendTopicPartitions(b, m.revoking)
	return kbin.AppendUvarint(b, 0)
}

// consumerRecords returns the records that hold g's state, by key (as a
// string). An unloaded (Dead) group has none.
func (g *consumerGroup) consumerRecords() map[string][]byte {
	out := map[string][]byte{}
	if g.state == ConsumerDead {
		return out
	}
	out[string(consumerGroupKey(recConsumerGroupMetadata, g.id))] = appendEpochValue(g.groupEpoch)
	out[string(consumerGroupKey(recConsumerGroupTargetMetadata, g.id))] = appendEpochValue(g.assignmentEpoch)
	for id, m := range g.members {
		out[string(consumerMemberKey(recConsumerGroupMemberMetadata, g.id, id))] = encodeMemberMetadataValue(m)
		out[string(consumerMemberKey(recConsumerGroupCurrentAssignment, g.id, id))] = encodeCurrentAssignmentValue(m)
	}
	for id, s := range g.target {
		out[string(consumerMemberKey(recConsumerGroupTargetMember, g.id, id))] = encodeTargetMemberValue(s)
	}
	return out
}

// memberRecords returns the records of member id alone (its metadata,
// target and current assignment), by key.
func (g *consumerGroup) memberRecords(id string) map[string][]byte {
	out := map[string][]byte{}
	if m := g.members[id]; m != nil && g.state != ConsumerDead {
		out[string(consumerMemberKey(recConsumerGroupMemberMetadata, g.id, id))] = encodeMemberMetadataValue(m)
		out[string(consumerMemberKey(recConsumerGroupCurrentAssignment, g.id, id))] = encodeCurrentAssignmentValue(m)
	}
	if s, ok := g.target[id]; ok && g.state != ConsumerDead {
		out[string(consumerMemberKey(recConsumerGroupTargetMember, g.id, id))] = encodeTargetMemberValue(s)
	}
	return out
}

// consumerShape is what, unchanged across a heartbeat, confines the
// heartbeat's changes to its own member's records.
type consumerShape struct {
	groupEpoch, assignmentEpoch int32
	membership                  uint64
}

func (g *consumerGroup) shape() consumerShape {
	return consumerShape{g.groupEpoch, g.assignmentEpoch, g.membership}
}

// consumerKeyOrder sorts a group's records as Kafka writes them: the group
// epoch, members, target assignment, then current assignments; tombstones
// in the same order.
func consumerKeyOrder(key string) int16 {
	switch recordType(key) {
	case recConsumerGroupMetadata, recShareGroupMetadata:
		return 0
	case recConsumerGroupMemberMetadata, recShareGroupMemberMetadata:
		return 1
	case recConsumerGroupTargetMember, recShareGroupTargetMember:
		return 2
	case recConsumerGroupTargetMetadata, recShareGroupTargetMetadata:
		return 3
	default:
		return 4
	}
}

// recordType is the record type a key starts with (its leading int16),
// -1 for a key too short to hold one.
func recordType[K string | []byte](key K) int16 {
	if len(key) < 2 {
		return -1
	}
	return int16(key[0])<<8 | int16(key[1])
}

// readValueVersion reads a coordinator value's version, which must be 0.
func readValueVersion(r *kbin.Reader, what string) error {
	if v := r.Int16(); v != 0 || !r.Ok() {
		return fmt.Errorf("%w: %s value version %d", errBadRecord, what, v)
	}
	return nil
}

func decodeEpochValue(b []byte, what string) (int32, error) {
	r := kbin.Reader{Src: b}
	if err := readValueVersion(&r, what); err != nil {
		return 0, err
	}
	e := r.Int32()
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return 0, fmt.Errorf("%w: %s value: %v", errBadRecord, what, err)
	}
	return e, nil
}

func readTopicPartitions(r *kbin.Reader, max int) partSet {
	out := partSet{}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > max {
		r.Span(max + 1) // fails the reader
		return out
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		id := cluster.TopicID(r.Uuid())
		np := r.CompactArrayLen()
		if np < 0 || int(np) > max {
			r.Span(max + 1)
			return out
		}
		for j := int32(0); j < np && r.Ok(); j++ {
			out[TopicPartitionID{id, r.Int32()}] = struct{}{}
		}
		skipTags(r)
	}
	return out
}

func decodeMemberMetadataValue(b []byte, m *consumerMember) error {
	r := kbin.Reader{Src: b}
	if err := readValueVersion(&r, "member metadata"); err != nil {
		return err
	}
	m.instanceID = r.CompactNullableString()
	m.rackID = r.CompactNullableString()
	m.clientID = r.CompactString()
	m.clientHost = r.CompactString()
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(b) {
		return fmt.Errorf("%w: member metadata topic count %d", errBadRecord, n)
	}
	m.topics = nil
	for i := int32(0); i < n && r.Ok(); i++ {
		m.topics = append(m.topics, r.CompactString())
	}
	slices.Sort(m.topics)
	m.topics = slices.Compact(m.topics)
	if re := r.CompactNullableString(); re != nil {
		m.regex = *re
	}
	m.rebalanceTimeoutMs = r.Int32()
	if a := r.CompactNullableString(); a != nil {
		m.assignor = *a
	}
	m.classic = nil
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		tag, size := r.Uvarint(), int(r.Uvarint())
		v := r.Span(size)
		if tag == 0 && r.Ok() {
			c, err := readClassicMemberMetadata(v)
			if err != nil {
				return err
			}
			m.classic = c
		}
	}
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: member metadata value: %v", errBadRecord, err)
	}
	if m.regex != "" {
		re, err := compileSubscription(m.regex)
		if err != nil {
			return fmt.Errorf("%w: member metadata regex: %v", errBadRecord, err)
		}
		m.re = re
	}
	return nil
}

func decodeTargetMemberValue(b []byte) (partSet, error) {
	r := kbin.Reader{Src: b}
	if err := readValueVersion(&r, "target assignment member"); err != nil {
		return nil, err
	}
	s := readTopicPartitions(&r, len(b))
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: target assignment member value: %v", errBadRecord, err)
	}
	return s, nil
}

func decodeCurrentAssignmentValue(b []byte, m *consumerMember) error {
	r := kbin.Reader{Src: b}
	if err := readValueVersion(&r, "current member assignment"); err != nil {
		return err
	}
	m.epoch = r.Int32()
	m.prevEpoch = r.Int32()
	st := r.Int8()
	m.assigned = readTopicPartitions(&r, len(b))
	m.revoking = readTopicPartitions(&r, len(b))
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: current member assignment value: %v", errBadRecord, err)
	}
	switch memberState(st) {
	case memberStable, memberUnrevoked, memberUnreleased:
		m.state = memberState(st)
	default:
		return fmt.Errorf("%w: current member assignment state %d", errBadRecord, st)
	}
	return nil
}

// consumerRecordKey is a parsed key of a consumer group's record.
type consumerRecordKey struct {
	typ           int16
	group, member string
}

// loadConsumerGroup rebuilds a consumer group from its records (by key, as
// replayed: the last value of each key). ok is false when there is no
// group (no ConsumerGroupMetadata record). Every member's session starts
// now, as Kafka restarts them on load, and a member still revoking gets
// its rebalance timeout anew. view is the cluster's topics at load time,
// so the group epoch moves only for topic changes made after it.
func loadConsumerGroup(id string, deps *consumerDeps, recs map[string][]byte, view *TopicsView, nowMs int64) (*consumerGroup, bool, error) {
	meta, ok := recs[string(consumerGroupKey(recConsumerGroupMetadata, id))]
	if !ok {
		return nil, false, nil
	}
	g := newConsumerGroup(id, deps)
	var err error
	if g.groupEpoch, err = decodeEpochValue(meta, "consumer group metadata"); err != nil {
		return nil, false, err
	}
	if v, ok := recs[string(consumerGroupKey(recConsumerGroupTargetMetadata, id))]; ok {
		if g.assignmentEpoch, err = decodeEpochValue(v, "target assignment metadata"); err != nil {
			return nil, false, err
		}
	}
	current := map[string][]byte{}
	for k, v := range recs {
		ck, err := parseConsumerKey([]byte(k))
		if err != nil {
			return nil, false, err
		}
		switch ck.typ {
		case recConsumerGroupMemberMetadata:
			m := &consumerMember{id: ck.member, assigned: partSet{}, revoking: partSet{}, rebalanceDeadline: noDeadline, classicDeadline: noDeadline}
			if err := decodeMemberMetadataValue(v, m); err != nil {
				return nil, false, err
			}
			g.members[m.id] = m
		case recConsumerGroupTargetMember:
			s, err := decodeTargetMemberValue(v)
			if err != nil {
				return nil, false, err
			}
			g.target[ck.member] = s
		case recConsumerGroupCurrentAssignment:
			current[ck.member] = v
		}
	}
	for id, m := range g.members {
		if v, ok := current[id]; ok {
			if err := decodeCurrentAssignmentValue(v, m); err != nil {
				return nil, false, err
			}
		}
		if m.instanceID != nil {
			g.static[*m.instanceID] = id
		}
		for tp := range m.assigned {
			g.owners[tp] = id
		}
		for tp := range m.revoking {
			g.owners[tp] = id
		}
		m.sessionDeadline = nowMs + deps.sessionTimeoutMs
		if m.classic != nil {
			m.sessionDeadline = nowMs + int64(m.classic.sessionTimeoutMs)
		}
		if m.state == memberUnrevoked {
			m.rebalanceDeadline = nowMs + int64(m.rebalanceTimeoutMs)
		}
	}
	for id := range g.target {
		if g.members[id] == nil {
			delete(g.target, id)
		}
	}
	g.assignorName = g.preferredAssignor()
	if view != nil {
		g.subscribed = g.subscriptionMeta(view)
		g.subscribedView = view
	}
	g.updateState()
	return g, true, nil
}

// parseConsumerKey parses the key of a consumer group's record.
func parseConsumerKey(b []byte) (consumerRecordKey, error) {
	k, err := parseRecordKey(b)
	if err == nil && !isConsumerRecordType(k.typ) {
		err = fmt.Errorf("%w: record type %d is not a consumer group's", errBadRecord, k.typ)
	}
	return k, err
}

// parseRecordKey parses the key of a consumer or share group's record.
func parseRecordKey(b []byte) (consumerRecordKey, error) {
	r := kbin.Reader{Src: b}
	k := consumerRecordKey{typ: r.Int16()}
	k.group = r.String()
	switch {
	case k.typ == recConsumerGroupMemberMetadata, k.typ == recConsumerGroupTargetMember, k.typ == recConsumerGroupCurrentAssignment,
		shareTypeHasMember(k.typ):
		k.member = r.String()
	case isConsumerRecordType(k.typ), isShareRecordType(k.typ):
	default:
		return k, fmt.Errorf("%w: record type %d is not a consumer or share group's", errBadRecord, k.typ)
	}
	if err := r.Complete(); err != nil {
		return k, fmt.Errorf("%w: group record key type %d: %v", errBadRecord, k.typ, err)
	}
	return k, nil
}

// isConsumerRecordType reports whether a key's type is one of a consumer
// group's records.
func isConsumerRecordType(typ int16) bool {
	return typ >= recConsumerGroupMetadata && typ <= recConsumerGroupCurrentAssignment
}
