package share

// The coordinator side of share groups: membership (ShareGroupHeartbeat),
// ShareGroupDescribe, listing and deletion. The coordinator of a share
// group is the broker that coordinates a classic group of that id, the
// leader of its __consumer_offsets partition. Membership is stored there
// too (a Store, the group coordinator, writes Kafka's ShareGroup*
// records): a heartbeat is answered once its change is written, and a new
// coordinator loads the group on first use, its members keeping their
// epochs and assignments, their sessions restarted. Without a Store
// (tests) membership lives in memory only.

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

	store Store

	mu     sync.Mutex
	groups map[string]*Group
	// rewrite marks groups whose last write failed: their next heartbeat
	// stores them whatever it changed.
	rewrite map[string]bool

	expiry *loop
}

// Store keeps share groups' membership in __consumer_offsets;
// group.Coordinator provides it. StoreShareGroup queues the write of a
// group's state (nil: deleted) and returns a channel for its outcome, nil
// when nothing changed; LoadShareGroup returns what was last loaded or
// stored, nil for none; ShareGroupIDs lists the stored groups this broker
// coordinates.
type Store interface {
	ShareGroupIDs() []string
	LoadShareGroup(groupID string) (*group.ShareGroupState, error)
	StoreShareGroup(groupID string, st *group.ShareGroupState) (<-chan error, error)
}

// CoordinatorOption configures a Coordinator.
type CoordinatorOption func(*Coordinator)

// WithStore persists membership in s.
func WithStore(s Store) CoordinatorOption { return func(c *Coordinator) { c.store = s } }

// WithCoordinatorClock replaces the wall clock.
func WithCoordinatorClock(now func() time.Time) CoordinatorOption {
	return func(c *Coordinator) { c.now = now }
}

// NewCoordinator starts the coordinator and its session-expiry loop.
func NewCoordinator(cfg Config, nodeID int32, meta cluster.Metadata, logger zerolog.Logger, opts ...CoordinatorOption) *Coordinator {
	c := &Coordinator{cfg: cfg, nodeID: nodeID, meta: meta, logger: logger, now: time.Now,
		groups: map[string]*Group{}, rewrite: map[string]bool{}}
	for _, o := range opts {
		o(c)
	}
	// Expiry has work only while the coordinator holds a group; adding
	// one wakes it.
	c.expiry = startLoop(time.Second, c.expire, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.groups) == 0
	})
	return c
}

// groupLocked returns the group, loading it from the store when this
// coordinator does not hold it yet (after a coordinator change); nil if
// there is none.
func (c *Coordinator) groupLocked(im *cluster.Image, groupID string) (*Group, error) {
	if g := c.groups[groupID]; g != nil || c.store == nil {
		return g, nil
	}
	st, err := c.store.LoadShareGroup(groupID)
	if err != nil || st == nil {
		return nil, err
	}
	session := c.groupMs(im, groupID, "share.session.timeout.ms", c.cfg.SessionTimeout)
	g := groupFromState(groupID, st, im, c.now().UnixMilli()+session)
	c.groups[groupID] = g
	c.expiry.Wake()
	c.logger.Info().Str("group", groupID).Int32("epoch", g.Epoch).Int("members", len(g.members)).Msg("loaded share group membership")
	return g, nil
}

// persistLocked queues the write of g's state (nil g: deleted).
func (c *Coordinator) persistLocked(im *cluster.Image, groupID string, g *Group) (<-chan error, error) {
	if c.store == nil {
		return nil, nil
	}
	var st *group.ShareGroupState
	if g != nil {
		st = g.state(im)
	}
	return c.store.StoreShareGroup(groupID, st)
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
	g, err := c.groupLocked(im, groupID)
	if err != nil {
		c.mu.Unlock()
		return HeartbeatResult{Err: err}, interval
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			c.mu.Unlock()
			return HeartbeatResult{Err: ErrUnknownMember}, interval
		}
		g = NewGroup(groupID)
		c.groups[groupID] = g
		c.expiry.Wake()
	}
	topics := func(name string) (int32, bool) {
		t := im.Topic(name)
		if t == nil || t.Internal() {
			return 0, false
		}
		return int32(len(t.Partitions)), true
	}
	session := c.groupMs(im, groupID, "share.session.timeout.ms", c.cfg.SessionTimeout)
	preEpoch, pre := g.Epoch, g.storedCopy(req.MemberID)
	res := g.Heartbeat(c.now().UnixMilli(), req, topics, session, c.cfg.MaxGroupSize)
	var written <-chan error
	if res.Err == nil && (g.Epoch != preEpoch || !sameStored(pre, g.storedCopy(req.MemberID)) || c.rewrite[groupID]) {
		// Only a heartbeat that changed something is stored: the others
		// cost no encoding of the whole group.
		delete(c.rewrite, groupID)
		written, err = c.persistLocked(im, groupID, g)
	}
	c.mu.Unlock()
	if err == nil && written != nil {
		// Answered once written, so the member's epoch is the one a new
		// coordinator would load.
		if err = <-written; err != nil {
			c.mu.Lock()
			c.rewrite[groupID] = true
			c.mu.Unlock()
		}
	}
	if err != nil {
		return HeartbeatResult{Err: err}, interval
	}
	return res, interval
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
	g, err := c.groupLocked(c.meta.Image(), groupID)
	if err != nil {
		return Description{}, err
	}
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
	var stored []string
	if c.store != nil {
		stored = c.store.ShareGroupIDs()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range stored {
		// Groups stored here but not used since this broker became their
		// coordinator.
		if _, err := c.groupLocked(im, id); err != nil {
			c.logger.Debug().Err(err).Str("group", id).Msg("loading a stored share group for listing")
		}
	}
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
	g, _ := c.groupLocked(c.meta.Image(), groupID)
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
	im := c.meta.Image()
	c.mu.Lock()
	g, err := c.groupLocked(im, groupID)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	var written <-chan error
	if g != nil {
		if !g.Empty() {
			c.mu.Unlock()
			return ErrNonEmptyGroup
		}
		delete(c.groups, groupID)
		written, err = c.persistLocked(im, groupID, nil)
	}
	c.mu.Unlock()
	if err == nil && written != nil {
		err = <-written
	}
	return err
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
			// Coordination moved away: the new coordinator loads the
			// group from __consumer_offsets.
			delete(c.groups, id)
			delete(c.rewrite, id)
			continue
		}
		gone := g.Expire(now)
		for _, m := range gone {
			c.logger.Info().Str("group", id).Str("member", m).Msg("share group member session expired")
		}
		if len(gone) > 0 {
			if _, err := c.persistLocked(im, id, g); err != nil {
				c.logger.Warn().Err(err).Str("group", id).Msg("storing a share group's membership failed")
			}
			// Not waited for: the next heartbeat stores the group again,
			// which writes whatever of this failed.
			c.rewrite[id] = true
		}
	}
}
