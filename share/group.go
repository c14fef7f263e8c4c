package share

// The share-group membership state machine (ShareGroupHeartbeat, KIP-932).
// Like the share-partition state it reads no clock: calls take now in Unix
// milliseconds.
//
// Epochs: the group epoch moves whenever the membership, a subscription or
// a member's assignment changes. A member's epoch catches up with the group
// epoch on its own heartbeat (Kafka's ShareGroupAssignmentBuilder), and a
// heartbeat may carry the member's current epoch or the one before it (the
// response that moved it may have been lost); anything else is
// FENCED_MEMBER_EPOCH.
//
// Assignment: share groups need no exclusive ownership, since the
// partition leaders hand out records one by one; gokafka's assignor gives
// every member every partition of every topic it subscribes to. That is a
// valid share assignment (Kafka's SimpleAssignor spreads members over
// partitions when there are many) and it never has to revoke anything.

import (
	"maps"
	"slices"
	"sort"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
)

// Member is one share-group member.
type Member struct {
	ID         string
	ClientID   string
	ClientHost string
	Rack       *string
	Epoch      int32
	prevEpoch  int32
	Subscribed []string // sorted
	// Assignment is topic name → partitions (sorted).
	Assignment map[string][]int32
	deadline   int64
}

// Group is one share group's membership.
type Group struct {
	ID      string
	Epoch   int32
	members map[string]*Member
}

// NewGroup returns an empty group.
func NewGroup(id string) *Group { return &Group{ID: id, members: map[string]*Member{}} }

// HeartbeatRequest is a member's heartbeat.
type HeartbeatRequest struct {
	MemberID    string
	MemberEpoch int32
	Rack        *string
	// Subscribed is nil when unchanged since the last heartbeat.
	Subscribed []string
	ClientID   string
	ClientHost string
}

// HeartbeatResult is what the member is told.
type HeartbeatResult struct {
	MemberEpoch int32
	// Assignment is set when the member must be told its assignment.
	Assignment map[string][]int32
	Err        error
}

// TopicPartitions resolves a topic name to its partition count, false
// when the topic does not exist.
type TopicPartitions func(topic string) (int32, bool)

// Members returns the members sorted by id.
func (g *Group) Members() []*Member {
	out := slices.Collect(maps.Values(g.members))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Empty reports whether the group has no members.
func (g *Group) Empty() bool { return len(g.members) == 0 }

// State is the group state ShareGroupDescribe and ListGroups report.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Heartbeat applies one heartbeat at now. sessionMs is the session
// timeout; maxSize bounds the membership.
func (g *Group) Heartbeat(now int64, req HeartbeatRequest, topics TopicPartitions, sessionMs int64, maxSize int) HeartbeatResult {
	switch {
	case req.MemberID == "" || len(req.MemberID) > 36:
		return HeartbeatResult{Err: ErrInvalidRequest}
	case req.MemberEpoch == -1:
		if g.members[req.MemberID] == nil {
			return HeartbeatResult{Err: ErrUnknownMember}
		}
		g.remove(req.MemberID)
		return HeartbeatResult{MemberEpoch: -1}
	case req.MemberEpoch < -1:
		return HeartbeatResult{Err: ErrInvalidRequest}
	}
	m := g.members[req.MemberID]
	full := req.Subscribed != nil
	if req.MemberEpoch == 0 {
		if req.Subscribed == nil {
			return HeartbeatResult{Err: ErrInvalidRequest}
		}
		if m == nil {
			if len(g.members) >= maxSize {
				return HeartbeatResult{Err: ErrGroupMaxSize}
			}
			m = &Member{ID: req.MemberID, Assignment: map[string][]int32{}}
			g.members[m.ID] = m
			g.Epoch++
		}
	} else {
		if m == nil {
			return HeartbeatResult{Err: ErrUnknownMember}
		}
		if req.MemberEpoch != m.Epoch && req.MemberEpoch != m.prevEpoch {
			return HeartbeatResult{Err: ErrFencedMemberEpoch}
		}
	}
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	if req.Rack != nil {
		m.Rack = req.Rack
	}
	m.deadline = now + sessionMs
	if req.Subscribed != nil {
		subs := slices.Clone(req.Subscribed)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.Subscribed) {
			m.Subscribed = subs
			g.Epoch++
		}
	}
	if next := assign(m.Subscribed, topics); !sameAssignment(next, m.Assignment) {
		m.Assignment = next
		g.Epoch++
	}
	before := m.Epoch
	if m.Epoch != g.Epoch {
		m.prevEpoch, m.Epoch = m.Epoch, g.Epoch
	}
	res := HeartbeatResult{MemberEpoch: m.Epoch}
	if full || m.Epoch != before {
		res.Assignment = m.Assignment
	}
	return res
}

// Expire removes the members whose session ended at or before now and
// returns their ids.
func (g *Group) Expire(now int64) []string {
	var gone []string
	for id, m := range g.members {
		if m.deadline <= now {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		g.remove(id)
	}
	return gone
}

func (g *Group) remove(id string) {
	delete(g.members, id)
	g.Epoch++
}

// assign gives the member every partition of the topics it subscribes to
// that exist.
func assign(subs []string, topics TopicPartitions) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range subs {
		n, ok := topics(t)
		if !ok || n <= 0 {
			continue
		}
		ps := make([]int32, n)
		for i := range ps {
			ps[i] = int32(i)
		}
		out[t] = ps
	}
	return out
}

func sameAssignment(a, b map[string][]int32) bool {
	return maps.EqualFunc(a, b, func(x, y []int32) bool { return slices.Equal(x, y) })
}

// state is the group's membership as stored (group.ShareGroupState), its
// assignments by topic id; topics gone from im are left out.
func (g *Group) state(im *cluster.Image) *group.ShareGroupState {
	st := &group.ShareGroupState{Epoch: g.Epoch}
	for _, m := range g.Members() {
		ms := group.ShareMemberState{
			ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost, Rack: m.Rack,
			Subscribed: slices.Clone(m.Subscribed), Epoch: m.Epoch, PrevEpoch: m.prevEpoch,
			Assignment: map[cluster.TopicID][]int32{},
		}
		for name, ps := range m.Assignment {
			if t := im.Topic(name); t != nil {
				ms.Assignment[t.ID] = slices.Clone(ps)
			}
		}
		st.Members = append(st.Members, ms)
	}
	return st
}

// groupFromState rebuilds a stored group; every member's session ends at
// deadline (sessions restart on load), assignments are named by im.
func groupFromState(id string, st *group.ShareGroupState, im *cluster.Image, deadline int64) *Group {
	g := NewGroup(id)
	g.Epoch = st.Epoch
	for _, ms := range st.Members {
		m := &Member{
			ID: ms.ID, ClientID: ms.ClientID, ClientHost: ms.ClientHost, Rack: ms.Rack,
			Epoch: ms.Epoch, prevEpoch: ms.PrevEpoch, Subscribed: slices.Clone(ms.Subscribed),
			Assignment: map[string][]int32{}, deadline: deadline,
		}
		for tid, ps := range ms.Assignment {
			if t := im.TopicByID(tid); t != nil {
				m.Assignment[t.Name] = slices.Clone(ps)
			}
		}
		g.members[m.ID] = m
	}
	return g
}

// storedCopy returns a copy of member id's stored fields, nil if none.
func (g *Group) storedCopy(id string) *Member {
	m := g.members[id]
	if m == nil {
		return nil
	}
	return &Member{ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost, Rack: m.Rack,
		Epoch: m.Epoch, prevEpoch: m.prevEpoch, Subscribed: m.Subscribed, Assignment: m.Assignment}
}

// sameStored reports whether two copies of a member store the same
// records.
func sameStored(a, b *Member) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && a.ClientID == b.ClientID && a.ClientHost == b.ClientHost &&
		(a.Rack == nil) == (b.Rack == nil) && (a.Rack == nil || *a.Rack == *b.Rack) &&
		a.Epoch == b.Epoch && a.prevEpoch == b.prevEpoch &&
		slices.Equal(a.Subscribed, b.Subscribed) && sameAssignment(a.Assignment, b.Assignment)
}
