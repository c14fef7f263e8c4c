package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker lifecycle, as in KRaft: a broker registers with the active
// controller (a new incarnation first fences the old one, so leaderships
// it held move away), starts fenced, and is unfenced by its first
// heartbeat. It heartbeats every broker.heartbeat.interval.ms; the
// controller fences a broker not heard from for broker.session.timeout.ms.
// A broker shutting down asks to be fenced (controlled shutdown) so its
// leaderships move before it exits.

func newIncarnation() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Register records this broker at its advertised address and waits until
// it is unfenced, which its first heartbeat does.
//
// endpoints lists every listener clients may use, by name; host:port is
// the inter-broker listener's, where the other nodes reach this one.
// While the previous run of this node is still alive in the controller's
// eyes (it crashed less than broker.session.timeout.ms ago), the
// controller refuses the new run with DUPLICATE_BROKER_REGISTRATION, and
// Register retries until that session has expired, as Kafka's broker does.
func (c *Controller) Register(ctx context.Context, host string, port int32, endpoints ...Endpoint) error {
	if err := c.RegisterFenced(ctx, host, port, endpoints...); err != nil {
		return err
	}
	return c.Unfence(ctx)
}

// RegisterFenced is the first half of Register: it records this broker,
// fenced, and returns once this node has applied the registration. Kafka's
// broker registers this way while it takes up its partitions, and asks to
// be unfenced (Unfence) once it can serve them: the other brokers then
// accept its replica fetches (they know this incarnation) while nothing is
// led by it yet.
func (c *Controller) RegisterFenced(ctx context.Context, host string, port int32, endpoints ...Endpoint) error {
	info := BrokerInfo{NodeID: c.cfg.NodeID, Host: host, Port: port, Rack: c.cfg.Rack, Incarnation: c.Incarnation(), Endpoints: endpoints,
		LogDirs: c.registeredLogDirs(), PreviousEpoch: c.previousEpoch}
	for {
		err := c.RegisterBroker(ctx, info)
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
			return err
		}
		c.logger.Info().Err(err).Msg("previous run of this broker still registered; retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("registering: %w (last: %v)", ctx.Err(), err)
		case <-time.After(c.qc.HeartbeatInterval):
		}
	}
	return c.awaitLocal(ctx, func(im *Image) bool { b, ok := im.Brokers[info.NodeID]; return ok && b.Incarnation == info.Incarnation })
}

// Unfence is the second half of Register: it heartbeats until the active
// controller has unfenced this broker, waits until this node has applied
// that and its watchers (the replicas) have acted on it, and starts the
// heartbeats.
func (c *Controller) Unfence(ctx context.Context) error {
	id := c.cfg.NodeID
	for {
		fenced, _, err := c.Heartbeat(ctx, false)
		if err == nil && !fenced {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to be unfenced: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := c.awaitLocal(ctx, func(im *Image) bool { return !im.Brokers[id].Fenced }); err != nil {
		return err
	}
	// The leaderships the unfencing gave back come in the same entry;
	// serve once this broker's replicas have taken them up, or a client
	// that reaches it at once is told NOT_LEADER_OR_FOLLOWER.
	if err := c.AwaitWatchers(ctx); err != nil {
		return err
	}
	c.wg.Add(1)
	go c.heartbeatLoop()
	return nil
}

// RegisterBroker registers info on the active controller (forwarding it
// there when needed). A registration with a new incarnation fences the
// broker's previous run first, and unless info.PreviousEpoch proves that
// run shut down cleanly, takes the broker out of every ELR as well.
func (c *Controller) RegisterBroker(ctx context.Context, info BrokerInfo) error {
	if !c.IsLeader() {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID = info.NodeID
		req.ClusterID = c.Image().ClusterID
		copy(req.IncarnationID[:], mustHex(info.Incarnation))
		req.PreviousBrokerEpoch = -1
		if info.PreviousEpoch > 0 {
			req.PreviousBrokerEpoch = info.PreviousEpoch
		}
		// The first listener is the inter-broker one (Host and Port).
		req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: info.Host, Port: uint16(info.Port)}}
		for _, e := range info.Endpoints {
			req.Listeners = append(req.Listeners, kmsg.BrokerRegistrationRequestListener{Name: e.Name, Host: e.Host, Port: uint16(e.Port)})
		}
		req.Rack = info.Rack
		req.Version = 2 // LogDirs
		for _, d := range info.LogDirs {
			if raw, err := base64.RawURLEncoding.DecodeString(d); err == nil && len(raw) == 16 {
				req.LogDirs = append(req.LogDirs, [16]byte(raw))
			}
		}
		resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
			return r.(*kmsg.BrokerRegistrationResponse).ErrorCode == kerr.NotController.Code
		})
		if errors.Is(err, errLocalLeader) {
			return c.RegisterBroker(ctx, info)
		}
		if err != nil {
			return err
		}
		return codeErr(resp.(*kmsg.BrokerRegistrationResponse).ErrorCode, nil)
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	cur, exists := im.Brokers[info.NodeID]
	if exists && cur.Incarnation == info.Incarnation {
		return nil
	}
	cleanRestart := exists && info.PreviousEpoch > 0 && info.PreviousEpoch == cur.Epoch
	if exists && !cur.Fenced && !cleanRestart {
		// Kafka's ClusterControlManager: a new incarnation of a broker
		// whose session is still alive is refused, so that a second
		// process (or a forged registration) cannot take over a live
		// broker's identity and address. A broker not heard from since
		// this controller took over, or past its session, may re-register.
		// So may the next run of a broker that shut down cleanly without
		// being fenced (its controlled shutdown timed out, or it was the
		// only node): the broker epoch it wrote at exit (KIP-966's
		// previous broker epoch) proves that run has ended, and it would
		// otherwise wait out a session it cannot be using.
		if c.sessions.Alive(info.NodeID, c.now()) {
			return fmt.Errorf("%w: broker %d is registered with another incarnation and its session is alive", kerr.DuplicateBrokerRegistration, info.NodeID)
		}
	}
	var cmds []*Command
	if exists {
		// A new incarnation: the old one is fenced and, unless it shut
		// down cleanly, may have lost what it had not flushed, so it
		// leaves every ELR as well (Kafka's unclean shutdown handling).
		var ch []PartitionChange
		switch {
		case info.PreviousEpoch <= 0 || info.PreviousEpoch != cur.Epoch:
			ch = restartChanges(im, info.NodeID, c.policyFor(im))
		case !cur.Fenced:
			ch = fenceChanges(im, info.NodeID, c.policyFor(im))
		}
		if len(ch) > 0 {
			cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
		}
	}
	info.Fenced = true
	cmds = append(cmds, &Command{Type: CmdRegisterBroker, Broker: &info})
	if err := c.log.Propose(ctx, cmds...); err != nil {
		return err
	}
	c.sessions.Seen(info.NodeID, c.now())
	c.logger.Info().Int32("broker", info.NodeID).Str("host", info.Host).Int32("port", info.Port).
		Bool("clean_shutdown", cleanRestart).Msg("broker registered")
	return nil
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// IncarnationString renders a registration's incarnation id.
func IncarnationString(id [16]byte) string { return hex.EncodeToString(id[:]) }

// Heartbeat reports this broker alive to the active controller; with
// shutdown set it asks to be fenced so its leaderships move.
func (c *Controller) Heartbeat(ctx context.Context, shutdown bool) (fenced, shouldShutdown bool, err error) {
	return c.BrokerHeartbeat(ctx, c.cfg.NodeID, shutdown, c.offlineLogDirs())
}

// BrokerHeartbeat handles a heartbeat from broker id on the active
// controller, forwarding it there when needed. offline names the broker's
// log dirs that are offline (see logdirs.go).
func (c *Controller) BrokerHeartbeat(ctx context.Context, id int32, shutdown bool, offline [][16]byte) (fenced, shouldShutdown bool, err error) {
	if !c.IsLeader() {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID = id
		im := c.Image()
		req.CurrentMetadataOffset = im.Offset
		if b, ok := im.Brokers[id]; ok && id == c.cfg.NodeID && b.Incarnation == c.incarnation && b.Epoch > 0 {
			req.BrokerEpoch = b.Epoch
		}
		req.WantShutdown = shutdown
		req.Version = 1 // OfflineLogDirs
		req.OfflineLogDirs = offline
		resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
			return r.(*kmsg.BrokerHeartbeatResponse).ErrorCode == kerr.NotController.Code
		})
		if errors.Is(err, errLocalLeader) {
			return c.BrokerHeartbeat(ctx, id, shutdown, offline)
		}
		if err != nil {
			return true, false, err
		}
		r := resp.(*kmsg.BrokerHeartbeatResponse)
		return r.IsFenced, r.ShouldShutdown, codeErr(r.ErrorCode, nil)
	}
	if err := c.lockLeader(ctx); err != nil {
		return true, false, err
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	b, ok := im.Brokers[id]
	if !ok {
		return true, false, fmt.Errorf("%w: broker %d is not registered", kerr.BrokerIDNotRegistered, id)
	}
	c.sessions.Seen(id, c.now())
	switch {
	case shutdown && !b.Fenced:
		if err := c.fenceLocked(ctx, im, id, "controlled shutdown"); err != nil {
			return false, false, err
		}
		return true, true, nil
	case shutdown:
		return true, true, nil
	case b.Fenced:
		cmds := []*Command{{Type: CmdUnfenceBroker, BrokerID: id}}
		unfenced := *im
		unfenced.Brokers = map[int32]BrokerInfo{}
		for k, v := range im.Brokers {
			unfenced.Brokers[k] = v
		}
		b.Fenced = false
		unfenced.Brokers[id] = b
		if ch := unfenceChanges(&unfenced, id, c.policyFor(im)); len(ch) > 0 {
			cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
		}
		if err := c.log.Propose(ctx, cmds...); err != nil {
			return true, false, err
		}
		c.logger.Info().Int32("broker", id).Msg("broker unfenced")
		return false, false, nil
	}
	return false, false, c.handleOfflineDirsLocked(ctx, im, id, offline)
}

// fenceLocked fences broker id and moves its leaderships, in one entry.
func (c *Controller) fenceLocked(ctx context.Context, im *Image, id int32, why string) error {
	cmds := []*Command{{Type: CmdFenceBroker, BrokerID: id}}
	if ch := fenceChanges(im, id, c.policyFor(im)); len(ch) > 0 {
		cmds = append(cmds, &Command{Type: CmdChangePartitions, Changes: ch})
	}
	if err := c.log.Propose(ctx, cmds...); err != nil {
		return err
	}
	c.logger.Info().Int32("broker", id).Str("reason", why).Msg("broker fenced")
	return nil
}

// policyFor returns the election settings of topics in im:
// unclean.leader.election.enable and min.insync.replicas.
func (c *Controller) policyFor(im *Image) policy {
	return policy{
		unclean: func(t *TopicInfo) bool {
			return TopicConfigValue(im, t, c.cfg.NodeID, c.cfg.BrokerDefaults, "unclean.leader.election.enable") == "true"
		},
		minISR: func(t *TopicInfo) int { return MinInsyncReplicas(im, t, c.cfg.NodeID, c.cfg.BrokerDefaults) },
	}
}

func (c *Controller) heartbeatLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.qc.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.hbStop:
			// Controlled shutdown sends its own heartbeats; a regular one
			// would unfence the broker again.
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.qc.HeartbeatInterval*2)
		if _, _, err := c.Heartbeat(ctx, false); err != nil {
			c.logger.Debug().Err(err).Msg("heartbeat failed")
		}
		cancel()
	}
}

// ControlledShutdown asks the controller to move this broker's
// leaderships away, waiting up to ctx for it to be done.
func (c *Controller) ControlledShutdown(ctx context.Context) error {
	c.hbStopOnce.Do(func() { close(c.hbStop) })
	for {
		_, done, err := c.Heartbeat(ctx, true)
		if err == nil && done {
			id := c.cfg.NodeID
			return c.awaitLocal(ctx, func(im *Image) bool { return im.Brokers[id].Fenced })
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaderLoop runs on every node and acts while this node leads the
// quorum: it fences brokers whose session expired, and rebalances
// leaderships when auto.leader.rebalance.enable is on. It sleeps until
// the first session can expire or the rebalance is due (see
// nextLeaderCheck), or until shortly after the leadership changes.
func (c *Controller) leaderLoop() {
	defer c.wg.Done()
	// A leadership's first check, which starts every broker's session,
	// comes a moment after the leadership does.
	first := max(c.qc.SessionTimeout/20, 50*time.Millisecond)
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.leaderChanged:
			t.Reset(first)
			continue
		case <-t.C:
		}
		c.checkSessions()
		c.maybeRebalanceLeaders()
		t.Reset(c.nextLeaderCheck())
	}
}

// nextLeaderCheck is how long leaderLoop may sleep after a check: until
// the first broker session can expire or the next leader rebalance is
// due, by the controller's clock. A session started after this (a
// broker registering, or unfenced by its heartbeat) expires no sooner
// than a session timeout from now, which bounds the sleep; off the
// leadership, only a leadership change (which wakes the loop) starts
// work.
func (c *Controller) nextLeaderCheck() time.Duration {
	wait := c.qc.SessionTimeout + time.Millisecond
	if !c.IsLeader() {
		return wait
	}
	now := c.now()
	c.proposeMu.Lock()
	at, ok := c.sessions.NextExpiry(c.Image(), c.caughtUpTerm)
	c.proposeMu.Unlock()
	if ok {
		wait = min(wait, at.Sub(now))
	}
	if c.cfg.AutoLeaderRebalanceEnable && c.cfg.LeaderImbalanceCheckInterval > 0 {
		c.rebalanceMu.Lock()
		last := c.lastRebalance
		c.rebalanceMu.Unlock()
		if !last.IsZero() {
			wait = min(wait, last.Add(c.cfg.LeaderImbalanceCheckInterval).Sub(now))
		} else {
			wait = 0
		}
	}
	// Not a busy loop if the clock stands still (a test's) or the
	// check failed: at most a few checks a second.
	return max(wait, minLeaderCheck)
}

// minLeaderCheck is the shortest sleep of leaderLoop.
const minLeaderCheck = 100 * time.Millisecond

// checkSessions fences, on the active controller, every broker whose
// session expired.
func (c *Controller) checkSessions() {
	if !c.IsLeader() {
		c.proposeMu.Lock()
		c.sessions.Resign()
		c.proposeMu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := c.lockLeader(ctx)
	cancel()
	if err != nil {
		c.logger.Debug().Err(err).Msg("controller not caught up with the metadata log")
		return
	}
	defer c.proposeMu.Unlock()
	for _, id := range c.sessions.Expired(c.Image(), c.now(), c.caughtUpTerm) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.fenceLocked(ctx, c.Image(), id, "session expired"); err != nil {
			c.logger.Warn().Err(err).Int32("broker", id).Msg("fencing failed")
		}
		cancel()
	}
}

// AllocateProducerIDs gives broker id the next block of producer ids,
// committed through the quorum so that no id is handed out twice across
// brokers and restarts. Off the active controller it is forwarded as
// Kafka's AllocateProducerIds.
func (c *Controller) AllocateProducerIDs(ctx context.Context, id int32) (start int64, n int32, err error) {
	if !c.IsLeader() {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID = id
		resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
			return r.(*kmsg.AllocateProducerIDsResponse).ErrorCode == kerr.NotController.Code
		})
		if errors.Is(err, errLocalLeader) {
			return c.AllocateProducerIDs(ctx, id)
		}
		if err != nil {
			return 0, 0, err
		}
		r := resp.(*kmsg.AllocateProducerIDsResponse)
		if err := codeErr(r.ErrorCode, nil); err != nil {
			return 0, 0, err
		}
		return r.ProducerIDStart, r.ProducerIDLen, nil
	}
	if err := c.lockLeader(ctx); err != nil {
		return 0, 0, err
	}
	defer c.proposeMu.Unlock()
	if _, ok := c.Image().Brokers[id]; !ok {
		return 0, 0, fmt.Errorf("%w: broker %d is not registered", kerr.BrokerIDNotRegistered, id)
	}
	for {
		start = c.Image().NextProducerID
		err := c.log.Propose(ctx, &Command{Type: CmdAllocateProducerIDs, BrokerID: id, ProducerIDStart: start})
		if err == nil {
			return start, ProducerIDBlockSize, nil
		}
		if !errors.Is(err, ErrInvalidUpdateVersion) {
			return 0, 0, err
		}
		// A guard: lockLeader applied the committed log this term and
		// proposeMu keeps other allocations out, so the image should be
		// current; if it was not, catch up and retry.
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = c.log.Barrier(bctx)
		cancel()
		if err != nil {
			return 0, 0, err
		}
	}
}
