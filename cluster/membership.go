package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
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

// ErrNotQuorumMember is the error of a raft membership change this Log
// cannot make (a one-node or in-memory quorum).
var ErrNotQuorumMember = errors.New("the metadata quorum has no network membership")

// raftOf returns the hashicorp/raft under the Log, nil for a MemLog.
func (c *Controller) raftOf() *raft.Raft {
	if l, ok := c.log.(*raftLog); ok {
		return l.r
	}
	return nil
}

// JoinObserver, on the active controller, makes node id at quorum address
// addr a non-voting member of the metadata quorum, so that the log is
// replicated to it. Joining again at the same address changes nothing; a
// voter cannot join as an observer.
func (c *Controller) JoinObserver(ctx context.Context, id int32, addr string) error {
	if !c.IsLeader() {
		return ErrNotController
	}
	r := c.raftOf()
	if r == nil || c.mux == nil {
		return ErrNotQuorumMember
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%w: observer address %q: %v", kerr.InvalidRequest, addr, err)
	}
	sid := raft.ServerID(strconv.Itoa(int(id)))
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != sid {
			continue
		}
		if s.Suffrage == raft.Voter {
			return fmt.Errorf("%w: node %d is a voter of the metadata quorum", kerr.InvalidRequest, id)
		}
		if string(s.Address) == addr {
			return nil
		}
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := r.AddNonvoter(sid, raft.ServerAddress(addr), 0, timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotController
		}
		return err
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
	host, portStr, err := net.SplitHostPort(c.qc.BindAddr)
	if err != nil {
		return fmt.Errorf("quorum address %q: %w", c.qc.BindAddr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return fmt.Errorf("quorum address %q: %w", c.qc.BindAddr, err)
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
	for {
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
