package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/protocol"
)

// A request one gokafka node forwards to the active controller carries
// the client id PeerClientID(PeerRoleController, ...). A node receiving
// such a request must not forward it again (it answers NOT_CONTROLLER
// instead), so that a request never travels in circles while leadership
// moves.

// IsForwarded reports whether a client id is a controller forward's.
func IsForwarded(clientID string) bool {
	p, ok := ParsePeerClientID(clientID)
	return ok && p.Role == PeerRoleController
}

type noForwardKey struct{}

// WithNoForward marks ctx as serving a forwarded request.
func WithNoForward(ctx context.Context) context.Context {
	return context.WithValue(ctx, noForwardKey{}, true)
}

func noForward(ctx context.Context) bool {
	v, _ := ctx.Value(noForwardKey{}).(bool)
	return v
}

// forward sends req to the active controller's broker listener and
// returns its response, retrying while there is no leader, the leader's
// address is not known yet, or the call fails, until ctx ends.
// retryable tells whether a decoded response asks for another try
// (NOT_CONTROLLER while leadership moves).
func (c *Controller) forward(ctx context.Context, req kmsg.Request, retryable func(kmsg.Response) bool) (kmsg.Response, error) {
	if noForward(ctx) {
		return nil, ErrNotController
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	backoff := 20 * time.Millisecond
	var lastErr error = ErrNotController
	for {
		if c.IsLeader() {
			return nil, errLocalLeader
		}
		if cl := c.controllerClient(); cl != nil {
			resp, err := cl.Request(ctx, req)
			if err == nil && (retryable == nil || !retryable(resp)) {
				return resp, nil
			}
			if err != nil {
				lastErr = err
			} else {
				lastErr = ErrNotController
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("forwarding %s to the controller: %w (last: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), lastErr)
		case <-c.stop:
			return nil, ErrNotController
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// errLocalLeader tells a forwarding caller that this node became the
// leader meanwhile and should apply the change itself.
var errLocalLeader = errors.New("this node leads the quorum")

// controllerClient returns a client for the current leader's CONTROLLER
// listener (its quorum address), or nil if it is not known yet.
func (c *Controller) controllerClient() *protocol.Client {
	id := c.leaderID()
	if id < 0 {
		return nil
	}
	var addr string
	if c.mux == nil {
		// A one-node quorum has no CONTROLLER listener (and never
		// forwards); reach the leader's broker listener.
		b, ok := c.Image().Brokers[id]
		if !ok {
			return nil
		}
		addr = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	} else if addr = c.log.LeaderAddr(); addr == "" {
		return nil
	}
	// The client id names this node (see peer.go); it changes once the
	// cluster id is known.
	cid := c.PeerClientID(PeerRoleController)
	c.fwdMu.Lock()
	defer c.fwdMu.Unlock()
	if c.fwdConn == nil || c.fwdConn.Addr() != addr || c.fwdConn.ClientID() != cid {
		if c.fwdConn != nil {
			c.fwdConn.Close()
		}
		var peerTLS protocol.PeerTLS
		if c.mux != nil && c.mux.tls != nil {
			peerTLS = c.mux.tls.Client
		}
		c.fwdConn = protocol.NewTLSClient(addr, cid, 30*time.Second, peerTLS).Via(c.qc.PeerRoutes)
	}
	return c.fwdConn
}

func codeErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if code == kerr.NotController.Code {
		err = ErrNotController
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

func (c *Controller) forwardCreateTopics(ctx context.Context, specs []TopicSpec, validateOnly bool) []error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 30000
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.Name, s.NumPartitions, s.ReplicationFactor
		for i, a := range s.Assignment {
			t.ReplicaAssignment = append(t.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: a})
		}
		for k, v := range s.Configs {
			t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: v})
		}
		req.Topics = append(req.Topics, t)
	}
	errs := make([]error, len(specs))
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.CreateTopics(ctx, specs, validateOnly)
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	byName := map[string]error{}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		byName[t.Topic] = codeErr(t.ErrorCode, t.ErrorMessage)
	}
	for i, s := range specs {
		errs[i] = byName[s.Name]
		if errs[i] == nil && !validateOnly {
			errs[i] = c.awaitLocal(ctx, func(im *Image) bool { return im.Topics[s.Name] != nil })
		}
	}
	return errs
}

func (c *Controller) forwardDeleteTopics(ctx context.Context, names []string) []error {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.TimeoutMillis = 30000
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		name := n
		t.Topic = &name
		req.Topics = append(req.Topics, t)
	}
	errs := make([]error, len(names))
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, t := range r.(*kmsg.DeleteTopicsResponse).Topics {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.DeleteTopics(ctx, names)
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	byName := map[string]error{}
	for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		if t.Topic != nil {
			byName[*t.Topic] = codeErr(t.ErrorCode, t.ErrorMessage)
		}
	}
	for i, n := range names {
		errs[i] = byName[n]
		if errs[i] == nil {
			errs[i] = c.awaitLocal(ctx, func(im *Image) bool { return im.Topics[n] == nil })
		}
	}
	return errs
}

func (c *Controller) forwardCreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32, validateOnly bool) error {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.SetVersion(3)
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 30000
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, total
	for _, a := range assignment {
		t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
	}
	req.Topics = append(req.Topics, t)
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		ts := r.(*kmsg.CreatePartitionsResponse).Topics
		return len(ts) == 1 && ts[0].ErrorCode == kerr.NotController.Code
	})
	if errors.Is(err, errLocalLeader) {
		return c.CreatePartitions(ctx, name, total, assignment, validateOnly)
	}
	if err != nil {
		return err
	}
	ts := resp.(*kmsg.CreatePartitionsResponse).Topics
	if len(ts) != 1 {
		return fmt.Errorf("controller answered %d topics for 1", len(ts))
	}
	if err := codeErr(ts[0].ErrorCode, ts[0].ErrorMessage); err != nil || validateOnly {
		return err
	}
	return c.awaitLocal(ctx, func(im *Image) bool {
		t := im.Topics[name]
		return t != nil && int32(len(t.Partitions)) >= total
	})
}

func (c *Controller) forwardAlterConfigs(ctx context.Context, typ int8, name string, configs map[string]string, validateOnly bool) error {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(2)
	req.ValidateOnly = validateOnly
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceType(typ)
	res.ResourceName = name
	for k, v := range configs {
		v := v
		res.Configs = append(res.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: k, Value: &v})
	}
	req.Resources = append(req.Resources, res)
	before := c.Image().Offset
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		rs := r.(*kmsg.AlterConfigsResponse).Resources
		return len(rs) == 1 && rs[0].ErrorCode == kerr.NotController.Code
	})
	if errors.Is(err, errLocalLeader) {
		if typ == 2 {
			return c.SetTopicConfigs(ctx, name, configs, validateOnly)
		}
		if typ == 32 {
			return c.SetGroupConfigs(ctx, name, configs, validateOnly)
		}
		return c.SetBrokerConfigs(ctx, name, configs, validateOnly)
	}
	if err != nil {
		return err
	}
	rs := resp.(*kmsg.AlterConfigsResponse).Resources
	if len(rs) != 1 {
		return fmt.Errorf("controller answered %d resources for 1", len(rs))
	}
	if err := codeErr(rs[0].ErrorCode, rs[0].ErrorMessage); err != nil || validateOnly {
		return err
	}
	return c.awaitLocal(ctx, func(im *Image) bool { return im.Offset > before })
}

// forwardAlterPartition sends an AlterPartition to the active controller.
// Calls made while a request is in flight wait and go together in the
// next one, as Kafka's AlterPartitionManager sends every pending item in
// one request with one in flight, and the controller commits a request as
// one entry (AlterPartitions): a broker whose followers rejoin thousands
// of ISRs at once sends a few requests, not thousands one after the other
// on the forwarding connection, where its heartbeats would queue behind
// them until its session expired.
func (c *Controller) forwardAlterPartition(ctx context.Context, ap AlterPartitionRequest) (PartitionInfo, error) {
	call := &alterCall{req: ap, done: make(chan alterResult, 1)}
	f := &c.fwdAlters
	f.mu.Lock()
	f.pending = append(f.pending, call)
	start := !f.sending
	f.sending = true
	f.mu.Unlock()
	if start {
		go c.sendForwardedAlters()
	}
	select {
	case r := <-call.done:
		if errors.Is(r.err, errLocalLeader) {
			return c.AlterPartition(ctx, ap)
		}
		return r.pi, r.err
	case <-ctx.Done():
		// The call may still be sent; its answer is dropped.
		return PartitionInfo{}, ctx.Err()
	}
}

// sendForwardedAlters forwards the pending AlterPartition calls, as many
// as one request can carry at a time, until none is left.
func (c *Controller) sendForwardedAlters() {
	f := &c.fwdAlters
	var batch []*alterCall
	defer func() {
		if p := recover(); p != nil {
			c.logger.Error().Interface("panic", p).Msg("forwarding AlterPartition panicked")
			err := fmt.Errorf("forwarding AlterPartition: panic: %v", p)
			for _, call := range batch {
				call.done <- alterResult{err: err}
			}
			f.mu.Lock()
			for _, call := range f.pending {
				call.done <- alterResult{err: err}
			}
			f.pending, f.sending = nil, false
			f.mu.Unlock()
		}
	}()
	for {
		f.mu.Lock()
		batch, f.pending = nextAlterBatch(f.pending)
		if len(batch) == 0 {
			f.sending = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		c.sendAlterBatch(batch)
		batch = nil
	}
}

// nextAlterBatch splits the calls one request carries off pending: those
// of the first call's broker, each partition once (a second change of a
// partition waits for the answer to the first).
func nextAlterBatch(pending []*alterCall) (batch, rest []*alterCall) {
	type key struct {
		topic     string
		partition int32
	}
	seen := map[key]bool{}
	for _, call := range pending {
		k := key{call.req.Topic, call.req.Partition}
		if seen[k] || call.req.BrokerID != pending[0].req.BrokerID {
			rest = append(rest, call)
			continue
		}
		seen[k] = true
		batch = append(batch, call)
	}
	return batch, rest
}

// sendAlterBatch forwards batch as one AlterPartition request and answers
// every call.
func (c *Controller) sendAlterBatch(batch []*alterCall) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	im := c.Image()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3)
	req.BrokerID = batch[0].req.BrokerID
	type key struct {
		id        TopicID
		partition int32
	}
	byKey := map[key]*alterCall{}
	topicAt := map[string]int{}
	for _, call := range batch {
		ap := call.req
		t := im.Topics[ap.Topic]
		if t == nil {
			call.done <- alterResult{err: fmt.Errorf("%w: %s", ErrUnknownTopic, ap.Topic)}
			continue
		}
		i, ok := topicAt[ap.Topic]
		if !ok {
			i = len(req.Topics)
			topicAt[ap.Topic] = i
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic, rt.TopicID = ap.Topic, t.ID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = ap.Partition, ap.LeaderEpoch, ap.PartitionEpoch
		for j, id := range ap.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID = id
			if j < len(ap.NewISREpochs) {
				e.BrokerEpoch = ap.NewISREpochs[j]
			}
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		byKey[key{t.ID, ap.Partition}] = call
	}
	if len(byKey) == 0 {
		return
	}
	answerAll := func(err error) {
		for _, call := range byKey {
			call.done <- alterResult{err: err}
		}
	}
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		return r.(*kmsg.AlterPartitionResponse).ErrorCode == kerr.NotController.Code
	})
	if err != nil {
		// errLocalLeader too: each caller then applies its change here.
		answerAll(err)
		return
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if err := codeErr(r.ErrorCode, nil); err != nil {
		answerAll(err)
		return
	}
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			k := key{TopicID(rt.TopidID), p.Partition}
			call := byKey[k]
			if call == nil {
				continue
			}
			delete(byKey, k)
			info := PartitionInfo{Partition: p.Partition, Leader: p.LeaderID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: p.ISR}
			if err := alterPartitionErr(p.ErrorCode); err != nil {
				call.done <- alterResult{info, err}
				continue
			}
			if cur := im.Partition(call.req.Topic, p.Partition); cur != nil {
				info.Replicas = cur.Replicas
			}
			call.done <- alterResult{info, nil}
		}
	}
	answerAll(errors.New("malformed AlterPartition response"))
}

// alterPartitionErr maps AlterPartition partition codes to sentinels.
func alterPartitionErr(code int16) error {
	switch code {
	case 0:
		return nil
	case kerr.InvalidUpdateVersion.Code:
		return ErrInvalidUpdateVersion
	case kerr.FencedLeaderEpoch.Code:
		return ErrFencedLeaderEpoch
	case kerr.IneligibleReplica.Code:
		return ErrIneligibleReplica
	case kerr.NotLeaderForPartition.Code:
		return ErrNotLeader
	case kerr.UnknownTopicOrPartition.Code:
		return ErrUnknownTopic
	}
	return kerr.ErrorForCode(code)
}

// awaitLocal waits until this node has applied metadata satisfying ok, so
// that a change forwarded to the controller is visible here when the
// caller answers its client. It wakes on each image published, never
// polling.
func (c *Controller) awaitLocal(ctx context.Context, ok func(*Image) bool) error {
	for {
		im, next := c.imageAndNext()
		if ok(im) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-next:
		}
	}
}
