package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// Voter is one member of controller.quorum.voters, or, with ID -1, one of
// controller.quorum.bootstrap.servers: a controller a node that is not a
// voter joins the quorum through.
type Voter struct {
	ID   int32
	Addr string // host:port of its CONTROLLER listener
}

// ParseVoters parses Kafka's "1@host:port,2@host:port" form.
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(item, "@")
		id, err := strconv.ParseInt(idStr, 10, 32)
		if !ok || err != nil || id < 0 || addr == "" {
			return nil, fmt.Errorf("invalid controller.quorum.voters entry %q: want id@host:port", item)
		}
		out = append(out, Voter{ID: int32(id), Addr: addr})
	}
	return out, nil
}

// QuorumConfig configures the metadata quorum.
type QuorumConfig struct {
	// Voters is controller.quorum.voters. Empty means a quorum of this
	// node alone, reached in-process.
	Voters []Voter
	// BindAddr is this node's CONTROLLER listener (host:port); unused for
	// a quorum of one.
	BindAddr string
	// Observer makes this node a non-voting member of the quorum (a
	// broker-only node, process.roles=broker): it is not one of Voters,
	// joins through them (membership.go) and receives the log at BindAddr.
	// A node with the controller role that is not one of Voters starts as
	// an observer too, until AddRaftVoter makes it a voter.
	Observer bool
	// AdvertisedAddr is where the active controller reaches an observer
	// (the controller listener of advertised.listeners); empty is
	// BindAddr.
	AdvertisedAddr string
	// Dir holds the raft log, stable store and snapshots.
	Dir string
	// HeartbeatInterval is broker.heartbeat.interval.ms, SessionTimeout
	// broker.session.timeout.ms: a broker not heard from for that long is
	// fenced and its leaderships move.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	// ElectionTimeout is controller.quorum.election.timeout.ms: how long
	// a candidate of a multi-voter quorum waits for votes before asking
	// again (raft makes it at least FetchTimeout).
	ElectionTimeout time.Duration
	// FetchTimeout is controller.quorum.fetch.timeout.ms: a voter that
	// hears nothing from the leader for this long asks for an election,
	// the leader heartbeats each voter at a tenth to a fifth of it, and
	// steps down once a majority has not answered for this long. 0 is
	// Kafka's default, 2 s.
	FetchTimeout time.Duration
	// commitTimeout overrides defaultCommitTimeout (tests).
	commitTimeout time.Duration
	// SnapshotBytes is metadata.log.max.record.bytes.between.snapshots:
	// once the entries applied since the last snapshot hold more bytes
	// than this, the node takes a snapshot, so that a restart replays at
	// most about this much of the log. 0 is Kafka's default, 20 MiB.
	// Raft's own snapshot every SnapshotThreshold entries stays on.
	SnapshotBytes int64
	// SnapshotInterval is metadata.log.max.snapshot.interval.ms: the
	// longest the node goes without a snapshot while it has applied
	// entries the last one does not hold. 0 is Kafka's default, 1 h;
	// negative never snapshots by time (Kafka's 0).
	SnapshotInterval time.Duration
	// RetentionBytes is metadata.max.retention.bytes: after a snapshot
	// the log it holds is deleted but for the newest entries holding at
	// most this many bytes (see retention.go). 0 is Kafka's default,
	// 100 MiB; negative is no limit (Kafka's -1).
	RetentionBytes int64
	// RetentionTime is metadata.max.retention.ms: after a snapshot the
	// log it holds is deleted but for entries younger than this. 0 is
	// Kafka's default, 7 days; negative is no limit (Kafka's -1).
	RetentionTime time.Duration
	// TLS, when set, runs the CONTROLLER listener inside TLS (an SSL or
	// SASL_SSL controller listener): raft traffic and the Kafka-protocol
	// requests alike, in both directions.
	TLS *QuorumTLS
	// PeerRoutes reroute this node's connections to the other voters and
	// to the active controller (tests only; see protocol.PeerRoutes).
	PeerRoutes protocol.PeerRoutes
}

// QuorumTLS is the CONTROLLER listener's TLS.
type QuorumTLS struct {
	// Server is the listener's config. It should ask for client
	// certificates: a raft connection is taken only from a peer whose
	// certificate the truststore verified.
	Server *tls.Config
	// Client is the config of the connections this node opens to the
	// other voters (raft, and the Kafka-protocol requests to the active
	// controller): its keystore as client certificate.
	Client protocol.PeerTLS
}

// raftLog is the metadata log on hashicorp/raft: commands are raft
// entries, the fsm applies them to the State and publishes images.
type raftLog struct {
	r     *raft.Raft
	ctrl  *Controller
	fsm   *fsm
	store *raftboltdb.BoltStore
	trans raft.Transport
	// voters is the size of the quorum.
	voters int
	// applyTimeout bounds one proposal.
	applyTimeout time.Duration
	// nudgeCh asks nudgeLoop to tell the followers the commit index;
	// proposing counts the proposals under way (see nudgeLoop).
	nudgeCh   chan struct{}
	proposing atomic.Int32
	// conf changes raft's reloadable settings; tm are the quorum's
	// timeouts (paceHeartbeats).
	conf *raftConf
	tm   timings
}

// fsm applies committed commands. Apply, Snapshot and Restore are called
// by raft on one goroutine; mu also serialises publication with leader
// changes.
type fsm struct {
	ctrl *Controller
	mu   sync.Mutex
	st   *State
	// sinceSnapshot counts the bytes of the entries applied since the
	// state was last snapshotted or restored; past snapshotBytes, Apply
	// asks snapshotLoop for a snapshot on snapshotCh.
	sinceSnapshot atomic.Int64
	snapshotBytes int64
	snapshotCh    chan struct{}
	// ret bounds the log kept after a snapshot; used on the fsm
	// goroutine, outside mu.
	ret *retention
	// beforeApply, if set, runs before each entry is applied: tests hold
	// the fsm inside an entry with it.
	beforeApply atomic.Pointer[func()]
}

type applyResult struct{ err error }

func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.ret.applied(l)
	var cmds []*Command
	if err := json.Unmarshal(l.Data, &cmds); err != nil {
		return applyResult{fmt.Errorf("decode metadata entry %d: %w", l.Index, err)}
	}
	if hook := f.beforeApply.Load(); hook != nil {
		(*hook)()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// An entry applies as a whole or not at all. One that failed still
	// advances the applied offset; the state is what every node computes
	// from the same entries.
	err := f.st.ApplyEntry(int64(l.Index), cmds)
	f.st.offset = int64(l.Index)
	f.publishLocked()
	if f.sinceSnapshot.Add(int64(len(l.Data))) > f.snapshotBytes && f.snapshotBytes > 0 {
		// Raft takes the snapshot on its own goroutines and asks this
		// one (the fsm's) for the state: it cannot be taken from here.
		select {
		case f.snapshotCh <- struct{}{}:
		default:
		}
	}
	return applyResult{err}
}

func (f *fsm) publishLocked() {
	f.ctrl.published(f.st.Image(f.ctrl.leaderID()))
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	b, err := f.st.MarshalSnapshot()
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	// Raft calls this on the fsm goroutine, between two Applies: the
	// snapshot holds every entry counted so far. (One that then fails
	// to persist is retried at the next threshold.)
	f.sinceSnapshot.Store(0)
	f.mu.Unlock()
	// Raft compacts the log once it has persisted this snapshot, keeping
	// TrailingLogs entries: set it to what the retention limits allow.
	f.ret.retain()
	return snapshotBytes(b), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	start := time.Now()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if err := f.st.RestoreSnapshot(b); err != nil {
		f.mu.Unlock()
		return err
	}
	f.sinceSnapshot.Store(0)
	f.publishLocked()
	offset := f.st.offset
	f.mu.Unlock()
	f.ctrl.logger.Info().Int64("offset", offset).Int("bytes", len(b)).Dur("took", time.Since(start)).Msg("metadata snapshot restored")
	// A snapshot installed from the leader is followed by a compaction
	// too.
	f.ret.restored(uint64(max(offset, 0)))
	return nil
}

type snapshotBytes []byte

func (s snapshotBytes) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshotBytes) Release() {}

// Open starts this node's member of the metadata quorum, waits until the
// quorum has a leader and this node has applied the log up to it, and
// returns the controller. Brokers register with Register once they listen.
func Open(ctx context.Context, cfg Config, qc QuorumConfig, logger zerolog.Logger) (*Controller, error) {
	if err := os.MkdirAll(qc.Dir, 0o755); err != nil {
		return nil, err
	}
	if qc.HeartbeatInterval <= 0 {
		qc.HeartbeatInterval = 2 * time.Second
	}
	if qc.SessionTimeout <= 0 {
		qc.SessionTimeout = 9 * time.Second
	}
	c := &Controller{cfg: cfg, qc: qc, logger: logger, stop: make(chan struct{}), hbStop: make(chan struct{}), leaderChanged: make(chan struct{}, 1)}
	c.now = cfg.Now
	if c.now == nil {
		c.now = time.Now
	}
	c.sessions = newSessions(qc.SessionTimeout)
	prev, err := takeCleanShutdown(qc.Dir)
	if err != nil {
		logger.Warn().Err(err).Msg("clean shutdown record unusable; registering as after an unclean shutdown")
	}
	c.previousEpoch = prev
	f := &fsm{ctrl: c, st: NewState(), snapshotBytes: qc.SnapshotBytes, snapshotCh: make(chan struct{}, 1)}
	if f.snapshotBytes <= 0 {
		f.snapshotBytes = defaultSnapshotBytes
	}
	c.img = f.st.Image(-1)
	f.ret = newRetention(qc, c.now, nil)

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(cfg.NodeID)))
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: zerologWriter{logger.With().Str("component", "raft").Logger()}})
	rc.SnapshotThreshold = 1024
	rc.NoSnapshotRestoreOnStart = false

	var trans raft.Transport
	var servers []raft.Server
	tm := quorumTimings(qc)
	if len(qc.Voters) == 0 {
		// A quorum of one: no network. The election itself is started at
		// once below (see electNow).
		addr, t := raft.NewInmemTransport(raft.ServerAddress("node-" + string(rc.LocalID)))
		trans = t
		servers = []raft.Server{{ID: rc.LocalID, Address: addr}}
	} else {
		found := false
		for _, v := range qc.Voters {
			servers = append(servers, raft.Server{ID: raft.ServerID(strconv.Itoa(int(v.ID))), Address: raft.ServerAddress(v.Addr)})
			found = found || v.ID == cfg.NodeID
		}
		if qc.Observer && found {
			return nil, fmt.Errorf("node.id %d is in controller.quorum.voters but process.roles has no controller role", cfg.NodeID)
		}
		// A controller not among the voters starts as an observer, as a
		// new KRaft controller does (KIP-853), until AddRaftVoter
		// promotes it.
		qc.Observer = !found
		c.qc.Observer = qc.Observer
		// The CONTROLLER listener also takes Kafka-protocol requests for
		// the controller (mux.go).
		m, err := newControllerMux(qc.BindAddr, qc.TLS, logger.With().Str("component", "controller-listener").Logger())
		if err != nil {
			return nil, fmt.Errorf("controller listener %s: %w", qc.BindAddr, err)
		}
		m.routes = qc.PeerRoutes
		c.mux = m
		trans = raft.NewNetworkTransportWithLogger(raftStream{m}, 3, 10*time.Second, rc.Logger)
	}
	// Raft starts with twice the timeouts and is lowered to them right
	// after (see electNow): that wakes its follower loop, so a node that
	// finds no leader asks for one at once instead of after a random 1-2
	// timeouts. With pre-vote (on in this raft) asking costs nothing: a
	// node whose peers are not up yet is refused and waits a normal
	// timeout, one joining a quorum that has a leader is refused by every
	// voter that hears from it, and the term only moves once a majority
	// granted the pre-vote. So a fresh cluster elects its leader when its
	// last voter starts, whatever the timeouts.
	tm.start(rc)

	store, err := raftboltdb.NewBoltStore(filepath.Join(qc.Dir, "raft.db"))
	if err != nil {
		closeTransport(trans)
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(qc.Dir, 2, rc.Logger)
	if err != nil {
		store.Close()
		closeTransport(trans)
		return nil, err
	}
	f.ret.store = store
	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		store.Close()
		closeTransport(trans)
		return nil, err
	}
	if !existing && !qc.Observer {
		// Every voter bootstraps with the same configuration; raft
		// treats that as one bootstrap.
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			store.Close()
			closeTransport(trans)
			return nil, fmt.Errorf("bootstrap metadata quorum: %w", err)
		}
	}
	// Watchers run on a goroutine of their own, off raft's fsm goroutine
	// (runWatchers), from the first image raft applies.
	c.startWatchers()
	r, err := raft.NewRaft(rc, f, store, store, snaps, trans)
	if err != nil {
		close(c.stop)
		c.wg.Wait()
		store.Close()
		closeTransport(trans)
		return nil, fmt.Errorf("start metadata quorum: %w", err)
	}
	conf := &raftConf{r: r}
	f.ret.conf.Store(conf)
	// Voters that start together would all ask at once and split the
	// vote (each votes for itself), costing a full election timeout. So
	// they ask in the order of their ids, startStagger apart: the first
	// one up and asked usually wins, and a later one that has heard from
	// the leader by its turn does not ask.
	if rank := voterRank(qc.Voters, cfg.NodeID); rank == 0 {
		electNow(conf, tm)
	} else {
		stop := c.stop
		time.AfterFunc(time.Duration(rank)*min(tm.election/5, startStagger), func() {
			select {
			case <-stop:
			default:
				electNow(conf, tm)
			}
		})
	}
	l := &raftLog{r: r, ctrl: c, fsm: f, store: store, trans: trans, voters: len(qc.Voters), applyTimeout: 10 * time.Second,
		nudgeCh: make(chan struct{}, 1), conf: conf, tm: tm}
	c.log = l
	c.logOpen.Store(true)

	obsCh := make(chan raft.Observation, 16)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(obs)
	c.wg.Add(4)
	go l.watchLeader(obsCh, obs)
	go c.leaderLoop()
	go l.nudgeLoop()
	go l.snapshotLoop(snapshotInterval(qc))

	if qc.Observer {
		// The active controller adds this node to the quorum, after
		// which the log arrives (membership.go).
		if err := c.joinAsObserver(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// defaultSnapshotBytes is Kafka's
// metadata.log.max.record.bytes.between.snapshots.
const defaultSnapshotBytes = 20 << 20

// defaultSnapshotInterval is Kafka's metadata.log.max.snapshot.interval.ms.
const defaultSnapshotInterval = time.Hour

// snapshotInterval is qc's SnapshotInterval with its default, 0 for never.
func snapshotInterval(qc QuorumConfig) time.Duration {
	switch {
	case qc.SnapshotInterval < 0:
		return 0
	case qc.SnapshotInterval == 0:
		return defaultSnapshotInterval
	}
	return qc.SnapshotInterval
}

// snapshotLoop takes the snapshots Kafka takes and raft would not: raft
// snapshots every SnapshotThreshold entries, but entries that change
// thousands of partitions are few and large, so a log of a few hundred of
// them could hold tens of megabytes that every restart replays. It
// snapshots when the fsm has applied more than SnapshotBytes since the
// last snapshot, and after SnapshotInterval without one while there is
// anything new. Raft's snapshot goroutine does the work (asking the fsm
// goroutine for the state between two entries, then writing it out), so
// this loop only waits for it; a snapshot never runs under fsm.mu for
// longer than the state takes to serialise.
func (l *raftLog) snapshotLoop(interval time.Duration) {
	c := l.ctrl
	defer c.wg.Done()
	var tick <-chan time.Time
	var timer *time.Timer
	if interval > 0 {
		timer = time.NewTimer(interval)
		defer timer.Stop()
		tick = timer.C
	}
	for {
		bySize := false
		select {
		case <-c.stop:
			return
		case <-l.fsm.snapshotCh:
			bySize = true
		case <-tick:
		}
		if bySize || l.fsm.sinceSnapshot.Load() > 0 {
			l.snapshot(bySize)
		}
		if timer != nil {
			timer.Stop()
			select {
			case <-timer.C:
			default:
			}
			timer.Reset(interval)
		}
	}
}

// snapshot has raft take a snapshot now and waits for it, giving up
// when the controller closes (raft's shutdown then ends it).
func (l *raftLog) snapshot(bySize bool) {
	c := l.ctrl
	start := time.Now()
	pending := l.fsm.sinceSnapshot.Load()
	fut := l.r.Snapshot()
	done := make(chan error, 1)
	go func() { done <- fut.Error() }()
	select {
	case <-c.stop:
		return
	case err := <-done:
		switch {
		case errors.Is(err, raft.ErrNothingNewToSnapshot):
		case err != nil:
			c.logger.Warn().Err(err).Msg("metadata snapshot failed")
		default:
			c.logger.Info().Bool("by_size", bySize).Int64("bytes_since_last", pending).
				Dur("took", time.Since(start)).Msg("metadata snapshot taken")
		}
	}
}

// soloTimeout is the heartbeat, election and lease timeout of a one-node
// quorum. Its election does not wait for it (see electNow), and it never
// loses contact with a majority of itself; its leader only checks its
// lease this often.
const soloTimeout = time.Second

// defaultCommitTimeout is raft's CommitTimeout in a multi-voter quorum.
// With no new entry, the leader tells each follower the commit index
// every CommitTimeout (randomised up to twice that) in an AppendEntries
// that reads the log store and wakes three of the leader's goroutines
// per follower. Followers do not wait for it to apply a proposal: the
// leader nudges them at once (see nudgeLoop); nor to hear from the
// leader, which heartbeats every 400-800 ms. So it is only a backstop:
// every 2-4 s, raft's 50 ms being most of an idle leader's work.
const defaultCommitTimeout = 2 * time.Second

// defaultFetchTimeout is Kafka's controller.quorum.fetch.timeout.ms.
const defaultFetchTimeout = 2 * time.Second

// timings are a quorum's steady-state raft timeouts.
type timings struct {
	// heartbeat is raft's HeartbeatTimeout: a follower that hears
	// nothing for a random 1-2 of it asks for an election, and the
	// leader heartbeats each follower every random 1/10-2/10 of it.
	heartbeat time.Duration
	// election is raft's ElectionTimeout, a candidate's wait for votes;
	// raft wants it no smaller than heartbeat.
	election time.Duration
	// lease is raft's LeaderLeaseTimeout: a leader that has not heard
	// from a majority for this long steps down. Fixed at start, and at
	// most heartbeat.
	lease time.Duration
	// commit is raft's CommitTimeout (see defaultCommitTimeout).
	commit time.Duration
}

// quorumTimings are the timeouts of qc's quorum. In a multi-voter quorum
// they follow KRaft's: a voter elects after controller.quorum.fetch
// .timeout.ms without the leader, a leader resigns after as long without
// a majority (KRaft: 1.5 times it), and the leader heartbeats each
// follower every 400-800 ms (a KRaft follower fetches every 500 ms when
// idle), so the lease spans at least two of them and a leader starved of
// CPU for a moment does not step down.
func quorumTimings(qc QuorumConfig) timings {
	if len(qc.Voters) == 0 {
		return timings{heartbeat: soloTimeout, election: soloTimeout, lease: soloTimeout, commit: defaultCommitTimeout}
	}
	fetch := qc.FetchTimeout
	if fetch <= 0 {
		fetch = defaultFetchTimeout
	}
	et := qc.ElectionTimeout
	if et <= 0 {
		et = 500 * time.Millisecond
	}
	commit := defaultCommitTimeout
	if qc.commitTimeout > 0 {
		commit = qc.commitTimeout
	}
	return timings{heartbeat: fetch, election: max(et, fetch), lease: fetch, commit: commit}
}

// start sets rc's timeouts for raft's start: twice tm's heartbeat and
// election timeouts, lowered to tm's by electNow. The leader lease cannot
// change after start and may never exceed the heartbeat timeout, so it is
// the steady-state one from the start.
func (tm timings) start(rc *raft.Config) {
	rc.HeartbeatTimeout, rc.ElectionTimeout = 2*tm.heartbeat, 2*tm.election
	rc.LeaderLeaseTimeout = tm.lease
	rc.CommitTimeout = tm.commit
}

// electNow makes a node that knows no leader ask for an election now
// instead of after a random heartbeat timeout: lowering the heartbeat
// timeout of a running raft (started with twice tm's) to tm's wakes its
// follower loop, which finds no recent leader contact and starts an
// election at once (a pre-vote first, in a quorum of more than one).
// Start-up waits for the quorum to have a leader, so this takes one to
// two heartbeat timeouts off every start.
func electNow(conf *raftConf, tm timings) {
	// The lease (tm.lease) is at most tm.heartbeat: still valid.
	_ = conf.update(func(rc *raft.ReloadableConfig) {
		rc.HeartbeatTimeout, rc.ElectionTimeout = tm.of(conf.r.State())
		conf.started = true
	})
}

// of is the HeartbeatTimeout and ElectionTimeout of a node in state st.
// Raft uses the heartbeat timeout for two things: a follower's election
// timer (a random 1-2 of it without hearing from the leader) and a
// leader's heartbeat interval (a random 1/10-2/10 of it). Ten or more
// heartbeats per election timeout are more than a leader needs, and an
// idle quorum's leader spends most of its time on them, so a leader runs
// with twice the heartbeat timeout (heartbeats every 400-800 ms at
// Kafka's 2 s fetch timeout) and every other node with it. Raft wants
// the election timeout no shorter; a leader does not use it.
func (tm timings) of(st raft.RaftState) (heartbeat, election time.Duration) {
	if st == raft.Leader {
		return 2 * tm.heartbeat, max(tm.election, 2*tm.heartbeat)
	}
	return tm.heartbeat, tm.election
}

// paceHeartbeats sets the heartbeat timeout for the role this node has
// now (see timings.of); watchLeader calls it on every leadership change.
// Raising it on a new leader only spaces out its heartbeats; lowering it
// on a leader that stepped down wakes its follower loop, which elects at
// once only if it has not heard from a new leader within the timeout.
// Before start-up's electNow the node keeps its doubled start-up timeout.
func (l *raftLog) paceHeartbeats() {
	st := l.r.State()
	err := l.conf.update(func(rc *raft.ReloadableConfig) {
		if l.conf.started || st == raft.Leader {
			rc.HeartbeatTimeout, rc.ElectionTimeout = l.tm.of(st)
		}
	})
	if err != nil {
		l.ctrl.logger.Warn().Err(err).Str("state", st.String()).Msg("setting the metadata quorum's heartbeat timeout")
	}
}

// startStagger is the most that voters of consecutive ids wait one after
// the other before asking for an election at start (see Open).
const startStagger = 100 * time.Millisecond

// voterRank is id's place among voters by id, 0 for a quorum of one.
func voterRank(voters []Voter, id int32) int {
	rank := 0
	for _, v := range voters {
		if v.ID < id {
			rank++
		}
	}
	return rank
}

func closeTransport(t raft.Transport) {
	if c, ok := t.(io.Closer); ok {
		c.Close()
	}
}

// waitReady waits until there is a leader, this node has applied the log
// as far as it knows, and the cluster has an id.
func (c *Controller) waitReady(ctx context.Context) error {
	// A fine tick: a one-node quorum is ready a few milliseconds after
	// its self-election, and start-up waits for this.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if c.log.Leader() != -1 {
			if c.log.IsLeader() {
				bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := c.log.Barrier(bctx)
				cancel()
				if err != nil {
					return err
				}
				if err := c.ensureClusterID(ctx); err != nil {
					return err
				}
			}
			if applied(c.log) && c.Image().ClusterID != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the metadata quorum: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// applied reports whether log has applied every command it holds.
func applied(log Log) bool {
	if l, ok := log.(*raftLog); ok {
		return l.commandsApplied()
	}
	return log.AppliedIndex() >= log.LastIndex()
}

// ensureClusterID gives a new cluster its id, once, from the leader.
func (c *Controller) ensureClusterID(ctx context.Context) error {
	if c.Image().ClusterID != "" {
		return nil
	}
	id := c.cfg.ClusterID
	if id == "" {
		id = NewClusterID()
	}
	cmds := []*Command{{Type: CmdInitCluster, ClusterID: id}}
	if cmd := BootstrapScramCommand(c.cfg.BootstrapScram); cmd != nil {
		// Seeded with the cluster, once, as kafka-storage format
		// --add-scram does.
		cmds = append(cmds, cmd)
	}
	return c.log.Propose(ctx, cmds...)
}

// Propose implements Log: on the leader it appends the commands as one
// raft entry and returns once applied here; elsewhere ErrNotController.
func (l *raftLog) Propose(ctx context.Context, cmds ...*Command) error {
	if l.r.State() != raft.Leader {
		return ErrNotController
	}
	b, err := json.Marshal(cmds)
	if err != nil {
		return err
	}
	timeout := l.applyTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	l.proposing.Add(1)
	defer l.nudge()
	defer l.proposing.Add(-1)
	fut := l.r.Apply(b, timeout)
	if err := fut.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotController
		}
		return err
	}
	if res, ok := fut.Response().(applyResult); ok {
		return res.err
	}
	return nil
}

// nudge asks nudgeLoop to tell the followers the commit index.
func (l *raftLog) nudge() {
	select {
	case l.nudgeCh <- struct{}{}:
	default:
	}
}

// nudgeLoop makes followers apply a proposal as soon as it is committed.
// Raft tells a follower that an entry is committed only in the next
// AppendEntries it sends it: one carrying a later entry, or the one it
// sends after CommitTimeout without new entries. So once a proposal is
// applied here, with no other proposal under way (whose entry would carry
// the news), the leader appends a barrier, an entry the state machine
// does not see, whose AppendEntries carries the commit index; the
// barrier's own commit reaches the followers later, which changes nothing
// for them. A new leader nudges too, for the entries of the previous term
// it committed. Requests coalesce: one barrier at a time.
func (l *raftLog) nudgeLoop() {
	c := l.ctrl
	defer c.wg.Done()
	if len(c.qc.Voters) == 0 {
		// A quorum of one has no follower to tell.
		return
	}
	for {
		select {
		case <-c.stop:
			return
		case <-l.nudgeCh:
		}
		if l.proposing.Load() > 0 || l.r.State() != raft.Leader {
			// The proposal under way nudges when it is done; a
			// follower has nobody to tell.
			continue
		}
		// Closing does not wait for the barrier: raft's shutdown, after
		// this loop is gone, answers it.
		fut := l.r.Barrier(l.applyTimeout)
		done := make(chan error, 1)
		go func() { done <- fut.Error() }()
		select {
		case <-c.stop:
			return
		case err := <-done:
			if err != nil {
				c.logger.Debug().Err(err).Msg("telling the followers the metadata commit index")
			}
		}
	}
}

// commandsApplied reports whether this node has applied every command of
// its log: the entries it holds beyond the last applied are raft's own
// (barriers, a new leader's no-op, configurations), which the state
// machine does not see. A follower learns that the last entry it holds
// is committed only with the leader's next AppendEntries, and that
// entry is usually such a barrier (see nudgeLoop).
func (l *raftLog) commandsApplied() bool {
	applied, last := l.r.AppliedIndex(), l.r.LastIndex()
	if applied >= last {
		return true
	}
	if last-applied > 64 {
		return false
	}
	for i := applied + 1; i <= last; i++ {
		var e raft.Log
		if err := l.store.GetLog(i, &e); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				continue
			}
			return false
		}
		if e.Type == raft.LogCommand {
			return false
		}
	}
	return true
}

// Leader implements Log.
func (l *raftLog) Leader() int32 {
	_, id := l.r.LeaderWithID()
	if id == "" {
		return -1
	}
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// LeaderAddr implements Log.
func (l *raftLog) LeaderAddr() string {
	addr, id := l.r.LeaderWithID()
	if id == "" {
		return ""
	}
	return string(addr)
}

// IsLeader implements Log.
func (l *raftLog) IsLeader() bool { return l.r.State() == raft.Leader }

// Term implements Log.
func (l *raftLog) Term() uint64 { return l.r.CurrentTerm() }

// AppliedIndex implements Log.
func (l *raftLog) AppliedIndex() uint64 { return l.r.AppliedIndex() }

// LastIndex implements Log.
func (l *raftLog) LastIndex() uint64 { return l.r.LastIndex() }

// Barrier implements Log, waiting at most 10 s or ctx's deadline.
func (l *raftLog) Barrier(ctx context.Context) error {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := l.r.Barrier(timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotController
		}
		return err
	}
	return nil
}

// leaderID returns the node leading the metadata quorum, -1 if none is
// known (or the log is not open yet).
// It may run on raft's goroutines before Open has returned.
func (c *Controller) leaderID() int32 {
	if !c.logOpen.Load() {
		return -1
	}
	return c.log.Leader()
}

// IsLeader reports whether this node is the active controller.
func (c *Controller) IsLeader() bool { return c.logOpen.Load() && c.log.IsLeader() }

// watchLeader republishes the image when the quorum leader changes, so
// that Metadata answers carry the current controller id.
func (l *raftLog) watchLeader(ch chan raft.Observation, obs *raft.Observer) {
	c := l.ctrl
	defer c.wg.Done()
	defer l.r.DeregisterObserver(obs)
	// The first election may have ended before the observer was
	// registered.
	l.paceHeartbeats()
	for {
		select {
		case <-c.stop:
			return
		case <-ch:
			l.fsm.mu.Lock()
			l.fsm.publishLocked()
			l.fsm.mu.Unlock()
			l.paceHeartbeats()
			if l.IsLeader() {
				l.nudge()
			}
			select {
			case c.leaderChanged <- struct{}{}:
			default:
			}
		}
	}
}

// Close leaves the quorum and closes its stores.
func (c *Controller) Close() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	c.wg.Wait()
	if c.log == nil {
		return nil
	}
	return c.log.Close()
}

// Kill closes the controller as a killed process leaves it: the quorum
// leadership is not handed over (the other voters elect a leader after
// controller.quorum.fetch.timeout.ms without it), nothing else differs
// from Close.
func (c *Controller) Kill() error {
	c.killed.Store(true)
	return c.Close()
}

// Close implements Log: it hands the leadership over if it can, shuts
// raft down and closes the transport and the store.
func (l *raftLog) Close() error {
	var errs []error
	if l.IsLeader() && l.currentVoters() > 1 && !l.ctrl.killed.Load() {
		// Hand leadership over first: a leader that just stops may have
		// committed entries no follower knows are committed yet, and
		// with one voter left of three nobody could elect itself to
		// finish applying them.
		done := make(chan error, 1)
		go func() { done <- l.r.LeadershipTransfer().Error() }()
		select {
		case err := <-done:
			if err != nil {
				l.ctrl.logger.Debug().Err(err).Msg("leadership transfer at shutdown failed")
			}
		case <-time.After(3 * time.Second):
		}
	}
	if !l.ctrl.killed.Load() && l.fsm.sinceSnapshot.Load() > 0 {
		// A clean shutdown leaves a snapshot of everything applied, so
		// the next start restores it instead of replaying (and
		// decoding) the entries since the last one: with thousands of
		// partitions those are megabytes. Kafka's replay is cheaper.
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- l.r.Snapshot().Error() }()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
				l.ctrl.logger.Warn().Err(err).Msg("metadata snapshot at shutdown failed")
			} else if err == nil {
				l.ctrl.logger.Info().Dur("took", time.Since(start)).Msg("metadata snapshot taken at shutdown")
			}
		case <-time.After(shutdownSnapshotWait):
			l.ctrl.logger.Warn().Msg("metadata snapshot at shutdown still running; shutting down without it")
		}
	}
	if err := l.r.Shutdown().Error(); err != nil {
		errs = append(errs, err)
	}
	closeTransport(l.trans)
	if err := l.store.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// shutdownSnapshotWait bounds the snapshot a clean shutdown takes.
const shutdownSnapshotWait = 5 * time.Second

// currentVoters is the number of voters in the quorum's latest
// configuration, which AddRaftVoter and RemoveRaftVoter change.
func (l *raftLog) currentVoters() int {
	cf := l.r.GetConfiguration()
	if cf.Error() != nil {
		return l.voters
	}
	n := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// zerologWriter routes hclog output into zerolog.
type zerologWriter struct{ l zerolog.Logger }

func (w zerologWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSpace(p))
	switch {
	case strings.Contains(msg, "connection refused") || strings.Contains(msg, "starting election"):
		// A voter that is down is reported by fencing, not by a line
		// every heartbeat.
		w.l.Debug().Msg(msg)
	case strings.Contains(msg, "[ERROR]"):
		w.l.Error().Msg(msg)
	case strings.Contains(msg, "[WARN]"):
		w.l.Warn().Msg(msg)
	default:
		w.l.Info().Msg(msg)
	}
	return len(p), nil
}

// MetadataDirName is the directory under the first log dir that holds the
// metadata quorum's log and snapshots, named as Kafka names its own.
const MetadataDirName = partition.MetadataTopic + "-0"

// CommitIndex is the index of the last entry the quorum committed, as this
// node knows it.
func (l *raftLog) CommitIndex() uint64 { return l.r.CommitIndex() }

// QuorumPosition is this node's view of the metadata quorum, for metrics
// and readiness.
type QuorumPosition struct {
	// Term is the current raft term.
	Term uint64
	// CommitIndex, AppliedIndex and LastIndex are the index of the last
	// entry committed (as this node knows it), applied here and stored
	// here.
	CommitIndex, AppliedIndex, LastIndex uint64
	// Leader is the active controller's id, -1 if none is known.
	Leader int32
}

// QuorumPosition returns this node's view of the metadata quorum.
func (c *Controller) QuorumPosition() QuorumPosition {
	if c.log == nil {
		return QuorumPosition{Leader: -1}
	}
	q := QuorumPosition{Term: c.log.Term(), AppliedIndex: c.log.AppliedIndex(), LastIndex: c.log.LastIndex(), Leader: c.log.Leader()}
	q.CommitIndex = q.AppliedIndex
	if ci, ok := c.log.(interface{ CommitIndex() uint64 }); ok {
		q.CommitIndex = ci.CommitIndex()
	}
	return q
}
