package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// Metadata is how the rest of gokafka reads and changes cluster metadata.
type Metadata interface {
	// Image returns the latest applied metadata.
	Image() *Image
	// Watch registers fn to run after applied changes, in log order, with
	// the image fn was last given (or the one current when it registered)
	// and the new one. Over a raft quorum fn runs on the controller's
	// watcher goroutine, which coalesces images: one published while the
	// watchers are busy with an older one is delivered once they are
	// done, with every image published meanwhile skipped (prev is then
	// several entries behind next). Over a MemLog fn runs on the
	// proposing goroutine, once per entry. fn must not call back into
	// Metadata's change methods.
	Watch(fn func(prev, next *Image))
	CreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) []error
	DeleteTopics(ctx context.Context, names []string) []error
	CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32, validateOnly bool) error
	// SetTopicConfigs replaces a topic's overrides.
	SetTopicConfigs(ctx context.Context, name string, configs map[string]string, validateOnly bool) error
	// SetBrokerConfigs replaces the dynamic configs of a broker resource
	// ("" is the cluster-wide default).
	SetBrokerConfigs(ctx context.Context, resource string, configs map[string]string, validateOnly bool) error
	// AlterPartition asks the controller to set the ISR of a partition
	// this broker leads, from the leader and partition epochs it holds.
	// It returns the partition record after the change.
	AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error)
	NodeID() int32
	BrokerDefaults() BrokerDefaults
	// PeerClientID is the client id this node sends other nodes in role
	// (PeerRoleFetcher, PeerRoleMarkers, ...): it names the node's cluster,
	// id and current run, which the receiver checks (peer.go).
	PeerClientID(role string) string
}

// AlterPartitionRequest is a leader's ISR change proposal (Kafka's
// AlterPartition).
type AlterPartitionRequest struct {
	BrokerID       int32
	Topic          string
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
	// NewISREpochs, if set, holds the broker epoch of each NewISR member
	// as the leader knows it from that replica's fetches, -1 where unknown
	// (AlterPartition v3's NewIsrWithEpochs).
	NewISREpochs []int64
}

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignment, if set, gives the replicas of each partition explicitly.
	Assignment [][]int32
	Configs    map[string]*string
}

// Config configures a Controller.
type Config struct {
	NodeID int32
	Rack   *string
	// ClusterID is used when the metadata log is new.
	ClusterID                string
	NumPartitions            int32
	DefaultReplicationFactor int16
	DeleteTopicEnable        bool
	BrokerDefaults           BrokerDefaults
	// Now is the clock broker sessions are measured with (nil: time.Now).
	Now func() time.Time
	// BootstrapScram are SCRAM credentials the cluster is created with
	// (gokafka.scram.bootstrap.users).
	BootstrapScram []ScramChange
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable: the
	// active controller moves leaderships back to preferred replicas
	// every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds) for brokers past
	// LeaderImbalancePerBrokerPercentage
	// (leader.imbalance.per.broker.percentage); see reassign.go.
	AutoLeaderRebalanceEnable          bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int
}

// Log orders, persists and applies metadata commands, and answers every
// question the Controller asks about the quorum under it: who leads it,
// in which term, and how far this node has applied it. The raft quorum
// (raft.go) is the production Log; MemLog (memlog.go) is a one-node
// in-memory Log that lets tests drive the real Controller and elections.
type Log interface {
	// Propose appends cmds and applies them to the state in order. It
	// returns once they are applied on this node, or with the first error;
	// ErrNotController off the leader.
	Propose(ctx context.Context, cmds ...*Command) error
	// Leader returns the node id leading the quorum, -1 if none is known.
	Leader() int32
	// LeaderAddr returns the leader's quorum address (its CONTROLLER
	// listener), "" if none is known or the quorum has no such address.
	LeaderAddr() string
	// IsLeader reports whether this node leads the quorum.
	IsLeader() bool
	// Term identifies the current leadership: it changes whenever the
	// quorum elects a leader.
	Term() uint64
	// Barrier returns once this node has applied every entry committed
	// before the call (ErrNotController if it lost the leadership).
	Barrier(ctx context.Context) error
	// AppliedIndex and LastIndex are the index of the last entry applied
	// here and of the last one this node knows of.
	AppliedIndex() uint64
	LastIndex() uint64
	// Close leaves the quorum and releases the log's resources.
	Close() error
}

// Controller validates metadata changes and proposes them to the log. It
// implements Metadata. On the node that leads the quorum it applies
// changes itself; elsewhere it forwards them, as Kafka requests, to the
// leader's broker listener.
type Controller struct {
	cfg Config
	qc  QuorumConfig
	// log is set once by Open, after raft has started; logOpen is set
	// after it, and raft's own goroutines (the fsm publishing an image)
	// read log only once they see logOpen.
	log     Log
	logOpen atomic.Bool
	logger  zerolog.Logger
	stop    chan struct{}
	wg      sync.WaitGroup
	// killed is set by Kill: Close skips the leadership hand-over.
	killed atomic.Bool

	// incarnation identifies this process in its broker registration
	// (see Incarnation).
	incMu       sync.Mutex
	incarnation string
	// previousEpoch is the broker epoch of this node's previous run if
	// it shut down cleanly, -1 otherwise (see cleanshutdown.go).
	previousEpoch int64
	// hbStop ends the regular heartbeats once a controlled shutdown
	// begins.
	hbStop     chan struct{}
	hbStopOnce sync.Once

	// sessions tracks, on the active controller, when each broker last
	// heartbeated. Guarded by proposeMu.
	sessions *sessions
	// leaderChanged wakes leaderLoop when the quorum's leader changes.
	leaderChanged chan struct{}
	// now is the controller's clock.
	now func() time.Time

	fwdMu   sync.Mutex
	fwdConn *protocol.Client
	// fwdAlters holds the AlterPartition calls waiting to be forwarded
	// to the active controller; sending is true while a sender runs
	// (forward.go, sendForwardedAlters).
	fwdAlters struct {
		mu      sync.Mutex
		pending []*alterCall
		sending bool
	}
	// mux splits the CONTROLLER listener between raft and the Kafka
	// protocol; nil for a one-node quorum.
	mux *controllerMux

	// applied is the image after the last applied command.
	imgMu sync.RWMutex
	img   *Image
	// imgMoved is closed (and replaced) when the next image is
	// published; see imageAndNext.
	imgMoved chan struct{}
	watchMu  sync.Mutex
	watches  []*watcher
	// watchKick, when set (asynchronous watchers, see runWatchers), is
	// signalled on every published image; nil runs watchers on the
	// publishing goroutine.
	watchKick chan struct{}
	// watched is the offset of the last image every watcher has been
	// given; watchedMoved is closed (and replaced) when it grows. Both
	// guarded by watchMu.
	watched      int64
	watchedMoved chan struct{}

	// alters holds AlterPartition calls waiting for proposeMu; whoever
	// takes it next commits them all in one metadata entry (alterMu
	// guards the slice; it is taken with or without proposeMu held,
	// never the other way round).
	alterMu sync.Mutex
	alters  []*alterCall
	// proposeMu serialises validate-then-propose so that two creations of
	// the same topic cannot both pass validation.
	proposeMu sync.Mutex

	// dirs are this broker's log dirs, as registered and heartbeated.
	dirs logDirState
	// caughtUpTerm is the raft term in which this node, as the active
	// controller, last applied everything committed before it (a raft
	// barrier). Guarded by proposeMu.
	caughtUpTerm uint64

	// offsets are the metadata offsets nodes last reported, for
	// DescribeQuorum (membership.go).
	offsets replicaOffsets

	// rebalanceMu guards lastRebalance, when the auto leader rebalance
	// last ran (reassign.go).
	rebalanceMu   sync.Mutex
	lastRebalance time.Time
}

// lockLeader takes proposeMu for validate-then-propose on the active
// controller, once this node has applied the whole committed log. A node
// elected controller may not have applied every entry its predecessor
// committed (raft commits them through its first entry of the new term,
// the fsm applies them after); validating a change against that older
// image would accept an ISR naming a broker fenced in the meantime, hand
// out a producer id block twice, or fence from a stale partition record.
// The first change of each term therefore waits for a raft barrier, as
// Kafka's controller replays the log before it acts.
func (c *Controller) lockLeader(ctx context.Context) error {
	c.proposeMu.Lock()
	if err := c.caughtUpLocked(ctx); err != nil {
		c.proposeMu.Unlock()
		return err
	}
	return nil
}

// caughtUpLocked is lockLeader's barrier; proposeMu is held.
func (c *Controller) caughtUpLocked(ctx context.Context) error {
	term := c.log.Term()
	if term == c.caughtUpTerm {
		return nil
	}
	if err := c.log.Barrier(ctx); err != nil {
		if errors.Is(err, ErrNotController) {
			return err
		}
		return fmt.Errorf("applying the committed metadata log: %w", err)
	}
	c.caughtUpTerm = term
	return nil
}

// NewClusterID returns a random cluster id in Kafka's format (a base64url
// UUID without padding).
func NewClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func newTopicID() TopicID {
	var id TopicID
	for id == (TopicID{}) {
		rand.Read(id[:])
	}
	return id
}

// Image implements Metadata.
func (c *Controller) Image() *Image {
	c.imgMu.RLock()
	defer c.imgMu.RUnlock()
	return c.img
}

// imageAndNext returns the current image and a channel closed when the
// next one is published.
func (c *Controller) imageAndNext() (*Image, <-chan struct{}) {
	c.imgMu.Lock()
	defer c.imgMu.Unlock()
	if c.imgMoved == nil {
		c.imgMoved = make(chan struct{})
	}
	return c.img, c.imgMoved
}

// watcher is one Watch registration and the image it was last given.
type watcher struct {
	fn   func(prev, next *Image)
	last *Image // guarded by Controller.watchMu
}

// Watch implements Metadata.
func (c *Controller) Watch(fn func(prev, next *Image)) {
	// The caller reads the current image after registering: an image
	// published before that is not delivered again. (Read before
	// watchMu: imgMu and watchMu are never nested. One published in
	// between is delivered from this older one, which costs a watcher
	// at most some work again.)
	w := &watcher{fn: fn, last: c.Image()}
	c.watchMu.Lock()
	c.watches = append(c.watches, w)
	c.watchMu.Unlock()
}

// deliver runs every watcher for next, in registration order, from the
// image each was given last. It runs on one goroutine at a time (the
// publishing one, or runWatchers).
func (c *Controller) deliver(next *Image) {
	c.watchMu.Lock()
	watches := slices.Clone(c.watches)
	c.watchMu.Unlock()
	for _, w := range watches {
		c.watchMu.Lock()
		prev := w.last
		// Never the same image twice, never an older one (one read at
		// registration may be newer than the image being delivered).
		if prev == next || prev != nil && prev.Offset > next.Offset {
			c.watchMu.Unlock()
			continue
		}
		w.last = next
		c.watchMu.Unlock()
		c.runWatcher(w, prev, next)
	}
	c.watchMu.Lock()
	if next.Offset > c.watched {
		c.watched = next.Offset
		if c.watchedMoved != nil {
			close(c.watchedMoved)
			c.watchedMoved = nil
		}
	}
	c.watchMu.Unlock()
}

var errControllerClosed = errors.New("metadata controller closed")

// AwaitWatchers returns once every watcher has been given the image
// current when it was called, or a later one, or when ctx ends. The
// change methods return once a change is in the image; this waits for
// this broker to act on it too (its replicas, coordinators, quotas).
// It must not be called from a watcher.
func (c *Controller) AwaitWatchers(ctx context.Context) error {
	target := c.Image().Offset
	for {
		c.watchMu.Lock()
		if c.watched >= target || c.watchKick == nil {
			c.watchMu.Unlock()
			return nil
		}
		if c.watchedMoved == nil {
			c.watchedMoved = make(chan struct{})
		}
		moved := c.watchedMoved
		c.watchMu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return errControllerClosed
		case <-moved:
		}
	}
}

// runWatcher runs one watcher; a panic is logged, not fatal, as the
// applying goroutine must go on.
func (c *Controller) runWatcher(w *watcher, prev, next *Image) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Int64("offset", next.Offset).Msg("metadata watcher panicked")
		}
	}()
	w.fn(prev, next)
}

// startWatchers moves the watchers off the publishing goroutine onto
// runWatchers, until Close.
func (c *Controller) startWatchers() {
	c.watchKick = make(chan struct{}, 1)
	c.wg.Add(1)
	go c.runWatchers()
}

// runWatchers is the watcher goroutine of a raft quorum's controller.
// Applying an image to the broker (creating logs with their fsyncs,
// becoming leader or follower, starting fetchers) can take seconds for a
// topic with thousands of partitions; on raft's fsm goroutine it held up
// every later entry of the quorum, and CreateTopics answered only once
// the leader's own broker had created its logs. Here the fsm only
// publishes the image and signals; this goroutine delivers the latest
// image once the watchers are done with the previous one, so the images
// published meanwhile coalesce into one. Watchers still see images in log
// order, one at a time, and the broker reports an offset applied
// (handlers/propagate.go) only once every watcher has run for it.
func (c *Controller) runWatchers() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.watchKick:
		}
		c.deliver(c.Image())
	}
}

// NodeID implements Metadata.
func (c *Controller) NodeID() int32 { return c.cfg.NodeID }

// BrokerDefaults implements Metadata.
func (c *Controller) BrokerDefaults() BrokerDefaults { return c.cfg.BrokerDefaults }

// published is called by the log after applying commands.
func (c *Controller) published(next *Image) {
	c.imgMu.Lock()
	c.img = next
	if c.imgMoved != nil {
		close(c.imgMoved)
	}
	c.imgMoved = make(chan struct{})
	c.imgMu.Unlock()
	if c.watchKick != nil {
		select {
		case c.watchKick <- struct{}{}:
		default: // already signalled: the watchers will take this image
		}
		return
	}
	c.deliver(next)
}

func equalRack(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ValidateTopicName applies Kafka's topic name rules.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is illegal, it can't be empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be \".\" or \"..\"", ErrInvalidTopic)
	case len(name) > 249:
		return fmt.Errorf("%w: topic name is illegal, it can't be longer than 249 characters", ErrInvalidTopic)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return fmt.Errorf("%w: topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", ErrInvalidTopic, name)
		}
	}
	return nil
}

func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopics implements Metadata.
func (c *Controller) CreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) []error {
	if !c.IsLeader() {
		return c.forwardCreateTopics(ctx, specs, validateOnly)
	}
	if err := c.lockLeader(ctx); err != nil {
		return allErrs(len(specs), err)
	}
	defer c.proposeMu.Unlock()
	errs := make([]error, len(specs))
	im := c.Image()
	var cmds []*Command
	var cmdIdx []int
	pending := map[string]bool{}
	for i, spec := range specs {
		t, err := c.planTopic(im, spec, pending)
		if err != nil {
			errs[i] = err
			continue
		}
		pending[collisionName(spec.Name)] = true
		if !validateOnly {
			cmds = append(cmds, &Command{Type: CmdCreateTopic, Topic: t})
			cmdIdx = append(cmdIdx, i)
		}
	}
	// Topics are proposed one by one so that one failure does not fail
	// the others.
	for j, cmd := range cmds {
		if err := c.log.Propose(ctx, cmd); err != nil {
			errs[cmdIdx[j]] = err
		} else {
			c.logger.Info().Str("topic", cmd.Topic.Name).Int("partitions", len(cmd.Topic.Partitions)).Msg("topic created")
		}
	}
	return errs
}

// allErrs is n copies of err, the answer to every item of a request.
func allErrs(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func (c *Controller) planTopic(im *Image, spec TopicSpec, pending map[string]bool) (*TopicInfo, error) {
	if err := ValidateTopicName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Name == partition.MetadataTopic {
		return nil, fmt.Errorf("%w: creation of internal topic %s is prohibited", ErrInvalidRequest, spec.Name)
	}
	if im.Topics[spec.Name] != nil {
		return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
	}
	cn := collisionName(spec.Name)
	if pending[cn] {
		return nil, fmt.Errorf("%w: topic '%s' collides with another topic in the request", ErrInvalidTopic, spec.Name)
	}
	for name := range im.Topics {
		if collisionName(name) == cn {
			return nil, fmt.Errorf("%w: topic '%s' collides with existing topic: %s", ErrInvalidTopic, spec.Name, name)
		}
	}
	configs := make(map[string]string, len(spec.Configs))
	for k, v := range spec.Configs {
		if err := ValidateTopicConfig(k, v); err != nil {
			return nil, err
		}
		configs[k] = strings.TrimSpace(*v)
	}
	if err := ValidateTopicConfigSet(configs); err != nil {
		return nil, err
	}
	var assignment [][]int32
	if len(spec.Assignment) > 0 {
		if spec.NumPartitions != -1 || spec.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: both numPartitions or replicationFactor and replicasAssignments were set", ErrInvalidRequest)
		}
		if err := c.checkAssignment(im, spec.Assignment, 0); err != nil {
			return nil, err
		}
		assignment = spec.Assignment
	} else {
		n, rf := spec.NumPartitions, spec.ReplicationFactor
		if n == -1 {
			n = c.cfg.NumPartitions
		}
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if n <= 0 {
			return nil, fmt.Errorf("%w: number of partitions was set to an invalid non-positive value", ErrInvalidPartitions)
		}
		if rf <= 0 {
			return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
		}
		live := liveBrokers(im)
		if int(rf) > len(live) {
			return nil, fmt.Errorf("%w: unable to replicate the partition %d time(s): the number of brokers is only %d", ErrInvalidReplicationFactor, rf, len(live))
		}
		assignment = placeReplicas(im, live, int(n), int(rf), 0)
	}
	t := &TopicInfo{Name: spec.Name, ID: newTopicID(), Configs: configs}
	for p, replicas := range assignment {
		t.Partitions = append(t.Partitions, PartitionInfo{
			Partition: int32(p), Leader: replicas[0], Replicas: append([]int32(nil), replicas...), ISR: append([]int32(nil), replicas...),
		})
	}
	return t, nil
}

func (c *Controller) checkAssignment(im *Image, assignment [][]int32, firstPartition int) error {
	rf := -1
	for i, replicas := range assignment {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, firstPartition+i)
		}
		if rf == -1 {
			rf = len(replicas)
		} else if rf != len(replicas) {
			return fmt.Errorf("%w: all partitions should have the same number of replicas", ErrInvalidReplicaAssignment)
		}
		seen := map[int32]bool{}
		for _, r := range replicas {
			if seen[r] {
				return fmt.Errorf("%w: duplicate replica %d for partition %d", ErrInvalidReplicaAssignment, r, firstPartition+i)
			}
			seen[r] = true
			if _, ok := im.Brokers[r]; !ok {
				return fmt.Errorf("%w: unknown broker %d for partition %d", ErrInvalidReplicaAssignment, r, firstPartition+i)
			}
		}
	}
	return nil
}

func liveBrokers(im *Image) []int32 {
	var ids []int32
	for _, id := range im.BrokerIDs() {
		if !im.Brokers[id].Fenced {
			ids = append(ids, id)
		}
	}
	return ids
}

// assignReplicas spreads partitions over brokers the way Kafka's rack-unaware
// assignment does: leaders round-robin from a random start, followers
// shifted so that the replicas of consecutive partitions differ.
func assignReplicas(brokers []int32, partitions, rf, firstPartition, startIndex int) [][]int32 {
	n := len(brokers)
	if startIndex < 0 {
		startIndex = mrand.IntN(n)
	}
	shift := mrand.IntN(n)
	out := make([][]int32, 0, partitions)
	cur := firstPartition
	for i := 0; i < partitions; i++ {
		if cur > 0 && cur%n == 0 {
			shift++
		}
		first := (cur + startIndex) % n
		replicas := []int32{brokers[first]}
		for j := 0; j < rf-1; j++ {
			s := 1 + (shift+j)%(n-1)
			replicas = append(replicas, brokers[(first+s)%n])
		}
		out = append(out, replicas)
		cur++
	}
	return out
}

// DeleteTopics implements Metadata.
func (c *Controller) DeleteTopics(ctx context.Context, names []string) []error {
	if !c.IsLeader() {
		return c.forwardDeleteTopics(ctx, names)
	}
	if err := c.lockLeader(ctx); err != nil {
		return allErrs(len(names), err)
	}
	defer c.proposeMu.Unlock()
	errs := make([]error, len(names))
	for i, name := range names {
		if !c.cfg.DeleteTopicEnable {
			errs[i] = ErrTopicDeletionDisabled
			continue
		}
		if c.Image().Topics[name] == nil {
			errs[i] = fmt.Errorf("%w: %s", ErrUnknownTopic, name)
			continue
		}
		if err := c.log.Propose(ctx, &Command{Type: CmdDeleteTopic, Name: name}); err != nil {
			errs[i] = err
			continue
		}
		c.logger.Info().Str("topic", name).Msg("topic deleted")
	}
	return errs
}

// CreatePartitions implements Metadata.
func (c *Controller) CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32, validateOnly bool) error {
	if !c.IsLeader() {
		return c.forwardCreatePartitions(ctx, name, total, assignment, validateOnly)
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	cur := int32(len(t.Partitions))
	if total < cur {
		return fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", ErrInvalidPartitions, cur, total)
	}
	if total == cur {
		return fmt.Errorf("%w: topic already has %d partitions", ErrInvalidPartitions, cur)
	}
	add := int(total - cur)
	rf := len(t.Partitions[0].TargetReplicas())
	if assignment != nil {
		if len(assignment) != add {
			return fmt.Errorf("%w: attempted to add %d additional partitions, but only %d assignments were supplied", ErrInvalidReplicaAssignment, add, len(assignment))
		}
		if err := c.checkAssignment(im, assignment, int(cur)); err != nil {
			return err
		}
		if len(assignment[0]) != rf {
			return fmt.Errorf("%w: inconsistent replication factor between partitions, partition 0 has %d while partitions [%d] have replication factors [%d]", ErrInvalidReplicaAssignment, rf, cur, len(assignment[0]))
		}
	} else {
		live := liveBrokers(im)
		if rf > len(live) {
			return fmt.Errorf("%w: unable to replicate the partition %d time(s): the number of brokers is only %d", ErrInvalidReplicationFactor, rf, len(live))
		}
		assignment = placeReplicas(im, live, add, rf, int(cur))
	}
	if validateOnly {
		return nil
	}
	parts := make([]PartitionInfo, 0, add)
	for i, replicas := range assignment {
		parts = append(parts, PartitionInfo{
			Partition: cur + int32(i), Leader: replicas[0], Replicas: append([]int32(nil), replicas...), ISR: append([]int32(nil), replicas...),
		})
	}
	return c.log.Propose(ctx, &Command{Type: CmdCreatePartitions, Name: name, Partitions: parts})
}

// SetTopicConfigs implements Metadata.
func (c *Controller) SetTopicConfigs(ctx context.Context, name string, configs map[string]string, validateOnly bool) error {
	if !c.IsLeader() {
		return c.forwardAlterConfigs(ctx, 2, name, configs, validateOnly)
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	t := im.Topics[name]
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	for k, v := range configs {
		if err := ValidateTopicConfig(k, &v); err != nil {
			return err
		}
	}
	if err := ValidateTopicConfigSet(configs); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	cmds := []*Command{{Type: CmdSetTopicConfigs, Name: name, Configs: maps.Clone(configs)}}
	if old, ok := t.Configs[minISRConfig]; configs[minISRConfig] != old || ok != hasKey(configs, minISRConfig) {
		// As Kafka: a topic's min.insync.replicas changing clears its
		// ELRs, which were chosen under the old value.
		if ch := clearELRChanges(im, func(n string) bool { return n == name }); len(ch) > 0 {
			cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
		}
	}
	return c.log.Propose(ctx, cmds...)
}

const minISRConfig = "min.insync.replicas"

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// DynamicBrokerConfigs lists the broker properties that can change without
// a restart, with the topic config each one supplies the default for.
func DynamicBrokerConfigs() []string {
	var out []string
	for _, def := range append(slices.Clone(topicConfigDefs), brokerOnlyConfigDefs...) {
		if def.BrokerSynonym != "" {
			out = append(out, def.BrokerSynonym)
		}
	}
	sort.Strings(out)
	return out
}

// SetBrokerConfigs implements Metadata.
func (c *Controller) SetBrokerConfigs(ctx context.Context, resource string, configs map[string]string, validateOnly bool) error {
	if !c.IsLeader() {
		return c.forwardAlterConfigs(ctx, 4, resource, configs, validateOnly)
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	defer c.proposeMu.Unlock()
	if resource != "" {
		if id, err := strconv.ParseInt(resource, 10, 32); err != nil || id < 0 {
			return fmt.Errorf("%w: invalid broker id %q", ErrInvalidRequest, resource)
		}
	}
	var bad []string
	for k, v := range configs {
		def := brokerSynonymDef(k)
		if def == nil {
			bad = append(bad, k)
			continue
		}
		if err := checkType(def.Type, v); err != nil {
			return fmt.Errorf("%w: invalid value %s for configuration %s", ErrInvalidConfig, v, k)
		}
		if def.Check != nil {
			if err := def.Check(strings.TrimSpace(v)); err != nil {
				return fmt.Errorf("%w: invalid value %s for configuration %s: %v", ErrInvalidConfig, v, k, err)
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%w: cannot update these configs dynamically: %s", ErrInvalidRequest, strings.Join(bad, ", "))
	}
	im := c.Image()
	_, had := im.BrokerConfigs[resource][minISRConfig]
	if resource != "" && hasKey(configs, minISRConfig) && configs[minISRConfig] != im.BrokerConfigs[resource][minISRConfig] {
		// As Kafka with ELR on: min.insync.replicas is a cluster-wide
		// setting, so that every controller elects by the same value.
		return fmt.Errorf("%w: broker-level min.insync.replicas cannot be altered while eligible leader replicas are enabled; set it cluster-wide", ErrInvalidConfig)
	}
	if validateOnly {
		return nil
	}
	cmds := []*Command{{Type: CmdSetBrokerConfigs, Name: resource, Configs: maps.Clone(configs)}}
	if resource == "" && (had || hasKey(configs, minISRConfig)) {
		// As Kafka: setting the cluster-wide min.insync.replicas, even
		// to the same value, clears every ELR.
		if ch := clearELRChanges(im, func(string) bool { return true }); len(ch) > 0 {
			cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
		}
	}
	return c.log.Propose(ctx, cmds...)
}

func brokerSynonymDef(name string) *ConfigDef {
	for i := range topicConfigDefs {
		if topicConfigDefs[i].BrokerSynonym == name {
			return &topicConfigDefs[i]
		}
	}
	for i := range brokerOnlyConfigDefs {
		if brokerOnlyConfigDefs[i].BrokerSynonym == name {
			return &brokerOnlyConfigDefs[i]
		}
	}
	return nil
}

// AlterPartition implements Metadata. The checks follow Kafka's controller:
// the sender must be the current leader at the current leader epoch
// (FENCED_LEADER_EPOCH otherwise), the partition epoch must match
// (INVALID_UPDATE_VERSION), and every new ISR member must be a replica on
// a live, unfenced broker whose broker epoch, where the request names one,
// is still the registered one (INELIGIBLE_REPLICA; KIP-903).
func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error) {
	if !c.IsLeader() {
		return c.forwardAlterPartition(ctx, req)
	}
	pis, errs := c.alterPartitions(ctx, []AlterPartitionRequest{req})
	return pis[0], errs[0]
}

// AlterPartitions is AlterPartition for the partitions of one request
// (Kafka's AlterPartition carries many; a broker rejoining every ISR after
// a restart sends thousands at once), committed together as one entry
// rather than one entry each. Off the active controller it returns
// ErrNotController for each.
func (c *Controller) AlterPartitions(ctx context.Context, reqs []AlterPartitionRequest) ([]PartitionInfo, []error) {
	if !c.IsLeader() {
		errs := make([]error, len(reqs))
		for i := range errs {
			errs[i] = ErrNotController
		}
		return make([]PartitionInfo, len(reqs)), errs
	}
	return c.alterPartitions(ctx, reqs)
}

// alterPartitions commits reqs on the active controller. Group commit:
// calls wait here; whoever holds proposeMu next validates every waiting
// call against the image and commits the accepted ones as one entry.
func (c *Controller) alterPartitions(ctx context.Context, reqs []AlterPartitionRequest) ([]PartitionInfo, []error) {
	calls := make([]*alterCall, len(reqs))
	for i, req := range reqs {
		calls[i] = &alterCall{req: req, done: make(chan alterResult, 1)}
	}
	c.alterMu.Lock()
	c.alters = append(c.alters, calls...)
	c.alterMu.Unlock()
	pis, errs := make([]PartitionInfo, len(reqs)), make([]error, len(reqs))
	if err := c.lockLeader(ctx); err != nil {
		c.alterMu.Lock()
		waiting := map[*alterCall]bool{}
		c.alters = slices.DeleteFunc(c.alters, func(a *alterCall) bool {
			if slices.Contains(calls, a) {
				waiting[a] = true
				return true
			}
			return false
		})
		c.alterMu.Unlock()
		for i, call := range calls {
			if waiting[call] {
				errs[i] = err
				continue
			}
			// Taken by a batch being committed: its outcome is this call's.
			r := <-call.done
			pis[i], errs[i] = r.pi, r.err
		}
		return pis, errs
	}
	c.alterMu.Lock()
	batch := c.alters
	c.alters = nil
	c.alterMu.Unlock()
	if len(batch) > 0 {
		c.commitAlters(ctx, batch)
	}
	c.proposeMu.Unlock()
	for i, call := range calls {
		r := <-call.done
		pis[i], errs[i] = r.pi, r.err
	}
	return pis, errs
}

// alterCall is one AlterPartition waiting to be committed.
type alterCall struct {
	req  AlterPartitionRequest
	done chan alterResult // buffered: one result, read or not
}

type alterResult struct {
	pi  PartitionInfo
	err error
}

// commitAlters validates each call against the image (and against the
// calls before it in the batch), proposes the accepted changes as one
// command and answers every call. proposeMu is held.
func (c *Controller) commitAlters(ctx context.Context, batch []*alterCall) {
	im := c.Image()
	type accepted struct {
		call      *alterCall
		cur, next PartitionInfo
		completed bool
	}
	var ok []accepted
	var changes []PartitionChange
	inBatch := map[string]map[int32]bool{}
	for _, call := range batch {
		req := call.req
		if inBatch[req.Topic][req.Partition] {
			// A second change of the same partition in one batch was
			// made from the epoch the first one replaces.
			cur := *im.Partition(req.Topic, req.Partition)
			call.done <- alterResult{cur, fmt.Errorf("%w: %d, another change of %s-%d is being committed", ErrInvalidUpdateVersion, req.PartitionEpoch, req.Topic, req.Partition)}
			continue
		}
		cur, next, completed, changed, err := c.planAlter(im, req)
		if err != nil || !changed {
			call.done <- alterResult{cur, err}
			continue
		}
		if inBatch[req.Topic] == nil {
			inBatch[req.Topic] = map[int32]bool{}
		}
		inBatch[req.Topic][req.Partition] = true
		ok = append(ok, accepted{call, cur, next, completed})
		changes = append(changes, PartitionChange{Topic: req.Topic, ExpectPartitionEpoch: cur.PartitionEpoch, Next: next})
	}
	if len(changes) == 0 {
		return
	}
	if err := c.log.Propose(ctx, &Command{Type: CmdChangePartitions, Changes: changes}); err != nil {
		for _, a := range ok {
			a.call.done <- alterResult{a.cur, err}
		}
		return
	}
	for _, a := range ok {
		req, next, cur := a.call.req, a.next, a.cur
		c.logger.Info().Str("topic", req.Topic).Int32("partition", req.Partition).Ints32("isr", next.ISR).
			Ints32("elr", next.ELR).Int32("partition_epoch", next.PartitionEpoch).Msg("ISR changed")
		if a.completed {
			c.logger.Info().Str("topic", req.Topic).Int32("partition", req.Partition).Ints32("replicas", next.Replicas).
				Int32("leader", next.Leader).Msg("partition reassignment completed")
			if next.Leader != cur.Leader {
				a.call.done <- alterResult{next, fmt.Errorf("%w: %s-%d is led by %d", ErrNewLeaderElected, req.Topic, req.Partition, next.Leader)}
				continue
			}
		}
		a.call.done <- alterResult{next, nil}
	}
}

// planAlter checks one AlterPartition against im and returns the
// partition's record now and after the change; changed is false when the
// ISR asked for is already the ISR (answered with the record, no entry).
func (c *Controller) planAlter(im *Image, req AlterPartitionRequest) (cur, next PartitionInfo, completed, changed bool, err error) {
	curp := im.Partition(req.Topic, req.Partition)
	if curp == nil {
		return PartitionInfo{}, PartitionInfo{}, false, false, fmt.Errorf("%w: %s-%d", ErrUnknownTopic, req.Topic, req.Partition)
	}
	cur = *curp
	if cur.Leader != req.BrokerID {
		return cur, next, false, false, fmt.Errorf("%w: broker %d is not the leader of %s-%d", ErrNotLeader, req.BrokerID, req.Topic, req.Partition)
	}
	if req.LeaderEpoch != cur.LeaderEpoch {
		return cur, next, false, false, fmt.Errorf("%w: %d, current %d", ErrFencedLeaderEpoch, req.LeaderEpoch, cur.LeaderEpoch)
	}
	if req.PartitionEpoch != cur.PartitionEpoch {
		return cur, next, false, false, fmt.Errorf("%w: %d, current %d", ErrInvalidUpdateVersion, req.PartitionEpoch, cur.PartitionEpoch)
	}
	if !contains32(req.NewISR, req.BrokerID) {
		return cur, next, false, false, fmt.Errorf("%w: the leader must stay in the ISR", ErrIneligibleReplica)
	}
	for i, r := range req.NewISR {
		b, ok := im.Brokers[r]
		if !contains32(cur.Replicas, r) || !ok || b.Fenced {
			return cur, next, false, false, fmt.Errorf("%w: broker %d", ErrIneligibleReplica, r)
		}
		if i < len(req.NewISREpochs) && req.NewISREpochs[i] >= 0 && req.NewISREpochs[i] != b.Epoch {
			return cur, next, false, false, fmt.Errorf("%w: broker %d is at epoch %d, not %d: it restarted since the leader saw it", ErrIneligibleReplica, r, b.Epoch, req.NewISREpochs[i])
		}
	}
	if sameMembers(cur.ISR, req.NewISR) {
		return cur, cur, false, false, nil
	}
	t := im.Topics[req.Topic]
	pol := c.policyFor(im)
	next, _ = changePartition(cur, partitionTarget{
		isr: req.NewISR, live: liveExcept(im, -1), minISR: effectiveMinISR(pol, t, cur),
	})
	if next.Leader != cur.Leader {
		return cur, next, false, false, fmt.Errorf("%w: the ISR change would move the leadership", ErrInvalidRequest)
	}
	// An ISR that now holds every target replica completes a
	// reassignment in progress (reassign.go).
	if next.Reassigning() {
		if done := completeReassignment(im, t, next, pol); !done.Reassigning() {
			next, completed = done, true
			next.PartitionEpoch = cur.PartitionEpoch + 1
		}
	}
	return cur, next, completed, true, nil
}

func contains32(s []int32, v int32) bool {
	return slices.Contains(s, v)
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !contains32(b, x) {
			return false
		}
	}
	return true
}

// orderLike returns the members of set in the order they have in order.
func orderLike(order, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, r := range order {
		if contains32(set, r) {
			out = append(out, r)
		}
	}
	return out
}
