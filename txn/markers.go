package txn

// Transaction markers (Kafka's TransactionMarkerChannelManager). Once a
// transaction's decision (PrepareCommit or PrepareAbort) is replicated, a
// commit or abort marker goes to every partition of the transaction:
// through the local replica manager for partitions led here, as one
// WriteTxnMarkers request per other leader. Failed partitions are retried
// with backoff until written, while this broker still coordinates the id;
// a partition whose topic is gone is skipped. Then the final state
// (CompleteCommit or CompleteAbort) is written.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// goComplete finishes a prepared transaction in the background.
func (c *Coordinator) goComplete(e *entry, prep meta) {
	c.mu.Lock()
	if c.own.ClosedLocked() {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		c.complete(e, prep)
	}()
}

// sleep waits d unless the coordinator stops or op is unloaded first.
func (c *Coordinator) sleep(op *ownedPartition, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
	case <-op.Cancel:
	}
	return false
}

func (c *Coordinator) complete(e *entry, prep meta) {
	commit := prep.state == StatePrepareCommit
	remaining := prep.sortedPartitions()
	backoff := 20 * time.Millisecond
	for len(remaining) > 0 {
		if !c.owns(e.part) {
			return
		}
		remaining = c.writeMarkers(remaining, prep, e.part.Epoch, commit)
		if len(remaining) == 0 {
			break
		}
		if !c.sleep(e.part, backoff) {
			return
		}
		backoff = min(2*backoff, time.Second)
	}
	backoff = 20 * time.Millisecond
	for {
		e.mu.Lock()
		if e.m.state != prep.state || e.m.producerID != prep.producerID || e.m.epoch != prep.epoch {
			e.mu.Unlock()
			return
		}
		if e.pending {
			e.mu.Unlock()
		} else {
			next := e.m.prepareComplete(c.nowMs())
			e.pending = true
			e.mu.Unlock()
			err := c.write(context.Background(), e, next)
			if err == nil || errors.Is(err, ErrNotCoordinator) {
				return
			}
		}
		if !c.sleep(e.part, backoff) {
			return
		}
		backoff = min(2*backoff, time.Second)
	}
}

// writeMarkers writes the markers of one attempt and returns the
// partitions still to do.
func (c *Coordinator) writeMarkers(tps []TopicPartition, prep meta, coordinatorEpoch int32, commit bool) []TopicPartition {
	im := c.meta.Image()
	self := c.meta.NodeID()
	var local []TopicPartition
	remote := map[int32][]TopicPartition{}
	var failed []TopicPartition
	for _, tp := range tps {
		pi := im.Partition(tp.Topic, tp.Partition)
		switch {
		case pi == nil:
			c.logger.Info().Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("transactional_id", prep.id).Msg("skipping the marker of a partition that no longer exists")
		case pi.Leader == self:
			local = append(local, tp)
		case pi.Leader < 0:
			failed = append(failed, tp)
		default:
			remote[pi.Leader] = append(remote[pi.Leader], tp)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	fail := func(tp TopicPartition, err error) {
		if errors.Is(err, replication.ErrUnknownTopicOrPartition) {
			return
		}
		c.logger.Debug().Err(err).Str("topic", tp.Topic).Int32("partition", tp.Partition).Str("transactional_id", prep.id).Msg("writing a transaction marker failed; retrying")
		mu.Lock()
		failed = append(failed, tp)
		mu.Unlock()
	}
	for _, tp := range local {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.WriteTimeout+time.Second)
			defer cancel()
			if err := c.ApplyMarker(ctx, tp, prep.producerID, prep.epoch, coordinatorEpoch, commit); err != nil {
				fail(tp, err)
			}
		}()
	}
	for leader, tps := range remote {
		b, ok := im.Brokers[leader]
		if !ok {
			for _, tp := range tps {
				fail(tp, fmt.Errorf("leader %d unknown", leader))
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
			errs := c.sendMarkers(addr, tps, prep, coordinatorEpoch, commit)
			for i, tp := range tps {
				if errs[i] != nil {
					fail(tp, errs[i])
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

// ApplyMarker writes a marker to a partition this broker leads and tells
// the group coordinator about markers in __consumer_offsets. The
// WriteTxnMarkers handler serves other coordinators with it.
func (c *Coordinator) ApplyMarker(ctx context.Context, tp TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	if err := c.replicas.AppendControl(ctx, tp, pid, epoch, coordinatorEpoch, commit, c.cfg.WriteTimeout); err != nil {
		return err
	}
	if c.groups != nil {
		c.groups.CompleteTxn(tp, pid, commit)
	}
	return nil
}

// client returns the connection to a broker's listener.
func (c *Coordinator) client(addr string) *protocol.Client {
	c.clients.Lock()
	defer c.clients.Unlock()
	cl := c.clients.m[addr]
	if cl == nil {
		// Brokers take WriteTxnMarkers only from a node of the cluster
		// that names itself (cluster.PeerClientID).
		cl = protocol.NewTLSClient(addr, c.meta.PeerClientID(cluster.PeerRoleMarkers), c.cfg.WriteTimeout+5*time.Second, c.cfg.PeerTLS).Via(c.cfg.PeerRoutes)
		if c.cfg.PeerSASL != nil {
			cl.SetSASL(c.cfg.PeerSASL)
		}
		c.clients.m[addr] = cl
	}
	return cl
}

// sendMarkers sends one WriteTxnMarkers request; one error per partition.
func (c *Coordinator) sendMarkers(addr string, tps []TopicPartition, prep meta, coordinatorEpoch int32, commit bool) []error {
	errs := make([]error, len(tps))
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = prep.producerID, prep.epoch, commit, coordinatorEpoch
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(mk.Topics)
			idx[tp.Topic] = i
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			mk.Topics = append(mk.Topics, t)
		}
		mk.Topics[i].Partitions = append(mk.Topics[i].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, mk)
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.WriteTimeout+5*time.Second)
	defer cancel()
	resp, err := c.client(addr).Request(ctx, req)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	codes := map[TopicPartition]int16{}
	for _, m := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				codes[TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range tps {
		code, ok := codes[tp]
		switch {
		case !ok:
			errs[i] = fmt.Errorf("no answer for %s", tp)
		case code == kerr.UnknownTopicOrPartition.Code:
			errs[i] = replication.ErrUnknownTopicOrPartition
		case code != 0:
			errs[i] = kerr.ErrorForCode(code)
		}
	}
	return errs
}
