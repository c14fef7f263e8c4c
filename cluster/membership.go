package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

// Quorum membership: which nodes follow the metadata log and which vote.
//
// A node whose process.roles lacks "controller" (a broker-only node) is an
// observer of the quorum: a hashicorp/raft non-voter. It never votes and
// never leads, and the active controller replicates the log to it at its
// quorum address (its CONTROLLER listener, which for a broker-only node
// carries only that replication). Raft pushes the log, so the active
// controller must learn that address first: the observer asks to join
// (JoinObserver) with a BrokerRegistration that names no cluster (it does
// not know the cluster yet) and whose single listener is named
// ObserverListenerName. Only gokafka nodes send it.
//
// UnregisterBroker (key 64) removes a decommissioned broker's registration
// as Kafka does: unknown ids answer BROKER_ID_NOT_REGISTERED, the broker's
// replicas leave every ISR and ELR (as at an unclean shutdown) and its
// leaderships move; its replicas stay in the assignments, so an operator
// moves them away first. An observer also leaves the quorum.

// ObserverListenerName names the listener of an observer's join request.
const ObserverListenerName = "gokafka-quorum-observer"

// errNoNetworkQuorum is the error of a raft membership change this Log
// cannot make (a one-node or in-memory quorum).
var errNoNetworkQuorum = errors.New("the metadata quorum has no network membership")

// raftOf returns the hashicorp/raft under the Log, nil for a MemLog.
func (c *Controller) raftOf() *raft.Raft {
	if l, ok := c.log.(*raftLog); ok {
		return l.r
	}
	return nil
}

// memberChange checks that this node can change the quorum's membership
// (the active controller, on a networked quorum) and that addr, the
// quorum address of node id (what names it: observer or voter), is
// host:port. It returns raft, id's server id and the current members.
func (c *Controller) memberChange(id int32, addr, what string) (*raft.Raft, raft.ServerID, []raft.Server, error) {
	if !c.IsLeader() {
		return nil, "", nil, ErrNotController
	}
	r := c.raftOf()
	if r == nil || c.mux == nil {
		return nil, "", nil, fmt.Errorf("%w: %v", kerr.UnsupportedVersion, errNoNetworkQuorum)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, "", nil, fmt.Errorf("%w: %s address %q: %v", kerr.InvalidRequest, what, addr, err)
	}
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, "", nil, err
	}
	return r, raft.ServerID(strconv.Itoa(int(id))), cf.Configuration().Servers, nil
}

// JoinObserver, on the active controller, makes node id at quorum address
// addr a non-voting member of the metadata quorum, so that the log is
// replicated to it. A node that is already a member, voter or observer at
// that address, stays as it is.
func (c *Controller) JoinObserver(ctx context.Context, id int32, addr string) error {
	r, sid, servers, err := c.memberChange(id, addr, "observer")
	if err != nil {
		return err
	}
	for _, s := range servers {
		if s.ID != sid {
			continue
		}
		if s.Suffrage == raft.Voter || string(s.Address) == addr {
			// Already a member: a voter (added by AddRaftVoter)
			// restarting, or an observer joining again.
			return nil
		}
	}
	if err := r.AddNonvoter(sid, raft.ServerAddress(addr), 0, raftTimeout(ctx)).Error(); err != nil {
		return raftChangeErr(err)
	}
	c.logger.Info().Int32("node", id).Str("addr", addr).Msg("observer joined the metadata quorum")
	return nil
}

// joinAsObserver asks the voters, one after another, to add this node as an
// observer until the active controller accepts, then returns; the log
// arrives after that. It gives up when ctx ends.
func (c *Controller) joinAsObserver(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = c.cfg.NodeID
	copy(req.IncarnationID[:], mustHex(c.Incarnation()))
	addr := c.qc.BindAddr
	if c.qc.AdvertisedAddr != "" {
		addr = c.qc.AdvertisedAddr
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("quorum address %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return fmt.Errorf("quorum address %q: %w", addr, err)
	}
	if port == 0 && c.mux != nil {
		port = uint64(c.mux.ln.Addr().(*net.TCPAddr).Port)
	}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: ObserverListenerName, Host: host, Port: uint16(port)}}
	var peerTLS protocol.PeerTLS
	if c.mux != nil && c.mux.tls != nil {
		peerTLS = c.mux.tls.Client
	}
	backoff := 50 * time.Millisecond
	var last error = ErrNotController
	for round := 0; ; round++ {
		if round > 0 && round%20 == 0 {
			c.logger.Warn().Err(last).Str("quorum_addr", net.JoinHostPort(host, strconv.Itoa(int(port)))).
				Msg("still waiting for the active controller to add this node to the metadata quorum")
		}
		for _, v := range c.qc.Voters {
			cl := protocol.NewTLSClient(v.Addr, c.PeerClientID(PeerRoleController), 5*time.Second, peerTLS).Via(c.qc.PeerRoutes)
			resp, err := cl.Request(ctx, req)
			cl.Close()
			if err != nil {
				last = err
				continue
			}
			code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode
			if code == 0 {
				return nil
			}
			last = codeErr(code, nil)
			if code != kerr.NotController.Code {
				return fmt.Errorf("joining the metadata quorum via node %d: %w", v.ID, last)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("joining the metadata quorum as an observer: %w (last: %v)", ctx.Err(), last)
		case <-c.stop:
			return ErrNotController
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// UnregisterBroker removes broker id's registration on the active
// controller (forwarding it there when needed).
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	if !c.IsLeader() {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
			return r.(*kmsg.UnregisterBrokerResponse).ErrorCode == kerr.NotController.Code
		})
		if errors.Is(err, errLocalLeader) {
			return c.UnregisterBroker(ctx, id)
		}
		if err != nil {
			return err
		}
		r := resp.(*kmsg.UnregisterBrokerResponse)
		return codeErr(r.ErrorCode, r.ErrorMessage)
	}
	if err := c.lockLeader(ctx); err != nil {
		return err
	}
	im := c.Image()
	if _, ok := im.Brokers[id]; !ok {
		c.proposeMu.Unlock()
		return kerr.BrokerIDNotRegistered
	}
	cmds := []*Command{{Type: CmdUnregisterBroker, BrokerID: id}}
	if ch := restartChanges(im, id, c.policyFor(im)); len(ch) > 0 {
		cmds = append([]*Command{{Type: CmdChangePartitions, Changes: ch}}, cmds...)
	}
	err := c.log.Propose(ctx, cmds...)
	c.proposeMu.Unlock()
	if err != nil {
		return err
	}
	c.logger.Info().Int32("broker", id).Msg("broker unregistered")
	// A broker-only node also stops receiving the metadata log.
	if r := c.raftOf(); r != nil {
		c.removeObserver(r, id)
	}
	return nil
}

// removeObserver takes non-voter id out of the raft configuration, if it
// is one.
func (c *Controller) removeObserver(r *raft.Raft, id int32) {
	cf := r.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	sid := raft.ServerID(strconv.Itoa(int(id)))
	for _, s := range cf.Configuration().Servers {
		if s.ID == sid && s.Suffrage != raft.Voter {
			if err := r.RemoveServer(sid, 0, 10*time.Second).Error(); err != nil {
				c.logger.Warn().Err(err).Int32("node", id).Msg("observer not removed from the metadata quorum")
			}
			return
		}
	}
}

// QuorumReplica is one member of the metadata quorum as DescribeQuorum
// reports it. LogEndOffset is the metadata offset the member last told
// the active controller it had applied (a broker's heartbeat carries it;
// hashicorp/raft does not expose its followers' progress), the leader's
// own last index for the leader, -1 when unknown; LastFetch is when that
// was (Unix ms), -1 when unknown.
type QuorumReplica struct {
	ID           int32
	Addr         string
	LogEndOffset int64
	LastFetch    int64
}

// QuorumDescription is the active controller's view of the metadata
// quorum (DescribeQuorum, key 55): the raft term stands for Kafka's
// leader epoch and the raft commit index for the high watermark.
type QuorumDescription struct {
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	Voters        []QuorumReplica
	Observers     []QuorumReplica
}

// replicaOffsets holds each node's last reported metadata offset.
type replicaOffsets struct {
	mu sync.Mutex
	m  map[int32]QuorumReplica
}

// NoteMetadataOffset records the metadata offset broker id reported in a
// heartbeat, for DescribeQuorum.
func (c *Controller) NoteMetadataOffset(id int32, offset int64) {
	c.offsets.mu.Lock()
	defer c.offsets.mu.Unlock()
	if c.offsets.m == nil {
		c.offsets.m = map[int32]QuorumReplica{}
	}
	c.offsets.m[id] = QuorumReplica{ID: id, LogEndOffset: offset, LastFetch: c.now().UnixMilli()}
}

// DescribeQuorum describes the metadata quorum; only the active
// controller can (ErrNotController elsewhere).
func (c *Controller) DescribeQuorum() (QuorumDescription, error) {
	r := c.raftOf()
	if !c.IsLeader() {
		return QuorumDescription{}, ErrNotController
	}
	d := QuorumDescription{LeaderID: c.cfg.NodeID, LeaderEpoch: int32(c.log.Term()), HighWatermark: int64(c.log.AppliedIndex())}
	if ci, ok := c.log.(interface{ CommitIndex() uint64 }); ok {
		d.HighWatermark = int64(ci.CommitIndex())
	}
	self := QuorumReplica{ID: c.cfg.NodeID, Addr: c.qc.BindAddr, LogEndOffset: int64(c.log.LastIndex()), LastFetch: c.now().UnixMilli()}
	if r == nil {
		d.Voters = []QuorumReplica{self}
		return d, nil
	}
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return QuorumDescription{}, err
	}
	c.offsets.mu.Lock()
	defer c.offsets.mu.Unlock()
	for _, s := range cf.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		q := QuorumReplica{ID: int32(id), Addr: string(s.Address), LogEndOffset: -1, LastFetch: -1}
		if q.ID == self.ID {
			q = self
		} else if seen, ok := c.offsets.m[q.ID]; ok {
			q.LogEndOffset, q.LastFetch = seen.LogEndOffset, seen.LastFetch
		}
		if s.Suffrage == raft.Voter {
			d.Voters = append(d.Voters, q)
		} else {
			d.Observers = append(d.Observers, q)
		}
	}
	return d, nil
}

// AddRaftVoter (KIP-853), on the active controller, makes node id at
// quorum address addr a voter. A node that already votes answers
// DUPLICATE_VOTER, as Kafka does; one that is not an observer of the
// quorum (a running node outside controller.quorum.voters whose roles
// include controller) REQUEST_TIMED_OUT, as Kafka answers for a new voter
// it has not seen fetch.
func (c *Controller) AddRaftVoter(ctx context.Context, id int32, addr string) error {
	r, sid, servers, err := c.memberChange(id, addr, "voter")
	if err != nil {
		return err
	}
	observer := false
	for _, s := range servers {
		if s.ID != sid {
			continue
		}
		if s.Suffrage == raft.Voter {
			return fmt.Errorf("%w: node %d already votes", kerr.DuplicateVoter, id)
		}
		observer = true
	}
	if !observer {
		// As Kafka's leader, which adds only a replica it has seen
		// fetch: a voter that cannot be reached would count against
		// the majority from the moment it is added.
		return fmt.Errorf("%w: node %d does not follow the metadata quorum; start it (outside controller.quorum.voters) first", kerr.RequestTimedOut, id)
	}
	if err := r.AddVoter(sid, raft.ServerAddress(addr), 0, raftTimeout(ctx)).Error(); err != nil {
		return raftChangeErr(err)
	}
	c.logger.Info().Int32("node", id).Str("addr", addr).Msg("voter added to the metadata quorum")
	return nil
}

// RemoveRaftVoter (KIP-853), on the active controller, takes voter id out
// of the quorum. A node that is also a registered broker stays an
// observer, so that it still receives the metadata it needs; any other
// leaves the quorum. Removing a node that does not vote answers
// VOTER_NOT_FOUND, as Kafka does; the last voter cannot be removed.
func (c *Controller) RemoveRaftVoter(ctx context.Context, id int32) error {
	if !c.IsLeader() {
		return ErrNotController
	}
	r := c.raftOf()
	if r == nil || c.mux == nil {
		return fmt.Errorf("%w: %v", kerr.UnsupportedVersion, errNoNetworkQuorum)
	}
	sid := raft.ServerID(strconv.Itoa(int(id)))
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	voters, found := 0, false
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			found = found || s.ID == sid
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%w: node %d does not vote", kerr.VoterNotFound, id)
	case voters == 1:
		return fmt.Errorf("%w: node %d is the only voter", kerr.InvalidRequest, id)
	}
	var f raft.IndexFuture
	if _, broker := c.Image().Brokers[id]; broker {
		f = r.DemoteVoter(sid, 0, raftTimeout(ctx))
	} else {
		f = r.RemoveServer(sid, 0, raftTimeout(ctx))
	}
	if err := f.Error(); err != nil {
		return raftChangeErr(err)
	}
	c.logger.Info().Int32("node", id).Msg("voter removed from the metadata quorum")
	return nil
}

// raftTimeout bounds a raft membership change by ctx's deadline, 10 s at
// most.
func raftTimeout(ctx context.Context) time.Duration {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	return timeout
}

func raftChangeErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return ErrNotController
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	}
	return err
}

// Forward sends req to the active controller, retrying while there is
// none or it answers NOT_CONTROLLER (notController reads that from a
// response), for the admin requests handlers pass through unchanged
// (DescribeQuorum, AddRaftVoter, RemoveRaftVoter). On the active
// controller it returns ErrNotController: the caller answers itself.
func (c *Controller) Forward(ctx context.Context, req kmsg.Request, notController func(kmsg.Response) bool) (kmsg.Response, error) {
	resp, err := c.forward(ctx, req, notController)
	if errors.Is(err, errLocalLeader) {
		return nil, ErrNotController
	}
	return resp, err
}
