package share

// The coordinator side of share groups: membership (ShareGroupHeartbeat),
// ShareGroupDescribe, listing and deletion. The coordinator of a share
// group is the broker that coordinates a classic group of that id, the
// leader of its __consumer_offsets partition. Membership is kept in
// memory only: when the coordinator moves, members find the new one,
// which does not know them (UNKNOWN_MEMBER_ID), and they join again.

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/coordinator"
	"github.com/gokafka/gokafka/group"
)

// Coordinator is the share-group coordinator of this broker.
type Coordinator struct {
	cfg    Config
	nodeID int32
	meta   cluster.Metadata
	logger zerolog.Logger
	now    func() time.Time

	mu     sync.Mutex
	groups map[string]*Group

	expiry *loop
}

// NewCoordinator starts the coordinator and its session-expiry loop.
func NewCoordinator(cfg Config, nodeID int32, meta cluster.Metadata, logger zerolog.Logger) *Coordinator {
	c := &Coordinator{cfg: cfg, nodeID: nodeID, meta: meta, logger: logger, now: time.Now,
		groups: map[string]*Group{}}
	c.expiry = startLoop(time.Second, c.expire)
	return c
}

// Close stops the expiry loop.
func (c *Coordinator) Close() { c.expiry.Close() }

// owns checks that this broker coordinates groupID.
func (c *Coordinator) owns(im *cluster.Image, groupID string) error {
	leader, ok := coordinator.LeaderFor(im, group.OffsetsTopic, groupID)
	if !ok {
		return ErrCoordinatorUnavailable
	}
	if leader != c.nodeID {
		return ErrNotCoordinator
	}
	return nil
}

// Owns reports whether this broker coordinates groupID.
func (c *Coordinator) Owns(groupID string) error { return c.owns(c.meta.Image(), groupID) }

func (c *Coordinator) groupMs(im *cluster.Image, groupID, name string, def time.Duration) int64 {
	if v, ok := im.GroupConfigs[groupID][name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return def.Milliseconds()
}

// Heartbeat serves ShareGroupHeartbeat. It returns the heartbeat interval
// the member is told along with the result.
func (c *Coordinator) Heartbeat(groupID string, req HeartbeatRequest) (HeartbeatResult, int32) {
	im := c.meta.Image()
	interval := int32(c.groupMs(im, groupID, "share.heartbeat.interval.ms", c.cfg.HeartbeatInterval))
	if groupID == "" {
		return HeartbeatResult{Err: ErrInvalidRequest}, interval
	}
	if err := c.owns(im, groupID); err != nil {
		return HeartbeatResult{Err: err}, interval
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		if req.MemberEpoch != 0 {
			return HeartbeatResult{Err: ErrUnknownMember}, interval
		}
		g = NewGroup(groupID)
		c.groups[groupID] = g
	}
	topics := func(name string) (int32, bool) {
		t := im.Topic(name)
		if t == nil || t.Internal() {
			return 0, false
		}
		return int32(len(t.Partitions)), true
	}
	session := c.groupMs(im, groupID, "share.session.timeout.ms", c.cfg.SessionTimeout)
	return g.Heartbeat(c.now().UnixMilli(), req, topics, session, c.cfg.MaxGroupSize), interval
}

// Description is a group as ShareGroupDescribe reports it.
type Description struct {
	State   string
	Epoch   int32
	Members []Member
}

// Describe describes a group this broker coordinates.
func (c *Coordinator) Describe(groupID string) (Description, error) {
	if err := c.Owns(groupID); err != nil {
		return Description{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return Description{}, ErrGroupNotFound
	}
	d := Description{State: g.State(), Epoch: g.Epoch}
	for _, m := range g.Members() {
		cp := *m
		cp.Subscribed = slices.Clone(m.Subscribed)
		d.Members = append(d.Members, cp)
	}
	return d, nil
}

// Listing is one group of ListGroups.
type Listing struct {
	GroupID, State string
}

// List lists the share groups this broker coordinates.
func (c *Coordinator) List() []Listing {
	im := c.meta.Image()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Listing
	for id, g := range c.groups {
		if c.owns(im, id) == nil {
			out = append(out, Listing{GroupID: id, State: g.State()})
		}
	}
	slices.SortFunc(out, func(a, b Listing) int {
		switch {
		case a.GroupID < b.GroupID:
			return -1
		case a.GroupID > b.GroupID:
			return 1
		}
		return 0
	})
	return out
}

// Known reports whether groupID is a share group this broker knows, and
// whether it has members.
func (c *Coordinator) Known(groupID string) (known, empty bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil {
		return false, true
	}
	return true, g.Empty()
}

// Delete forgets an empty group's membership. ErrNonEmptyGroup if it has
// members.
func (c *Coordinator) Delete(groupID string) error {
	if err := c.Owns(groupID); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[groupID]; g != nil {
		if !g.Empty() {
			return ErrNonEmptyGroup
		}
		delete(c.groups, groupID)
	}
	return nil
}

// RequireEmpty answers ErrNonEmptyGroup if the group has members (offsets
// may be altered or deleted only in an empty group).
func (c *Coordinator) RequireEmpty(groupID string) error {
	if err := c.Owns(groupID); err != nil {
		return err
	}
	if _, empty := c.Known(groupID); !empty {
		return ErrNonEmptyGroup
	}
	return nil
}

// expire drops the members whose sessions expired, and the groups this
// broker no longer coordinates.
func (c *Coordinator) expire() {
	im := c.meta.Image()
	now := c.now().UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, g := range c.groups {
		if c.owns(im, id) != nil {
			// Coordination moved away: the new coordinator starts
			// without these members, who join it again.
			delete(c.groups, id)
			continue
		}
		for _, m := range g.Expire(now) {
			c.logger.Info().Str("group", id).Str("member", m).Msg("share group member session expired")
		}
	}
}
