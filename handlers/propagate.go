package handlers

// Read your own admin writes, on every broker. A handler of any API that
// changes the metadata calls awaitPropagation once the change is made.
//
// Kafka answers CreateTopics, DeleteTopics, AlterConfigs and the other
// metadata-changing APIs once the controller has committed the change;
// the other brokers apply it a little later, so a DescribeConfigs or a
// Produce sent to another broker right afterwards may still get
// UNKNOWN_TOPIC_OR_PARTITION. gokafka answers those APIs only once every
// live broker has applied the metadata up to the change (awaitPropagation):
// any request sent to any broker afterwards sees it, and a created topic's
// leaders already serve it, with the ISR the controller gave it.
//
// How: the broker that answers the client takes its own applied metadata
// offset X (it has applied the change: the controller applied it before
// answering, a forwarding broker waited for it), then asks every other
// registered, unfenced broker whether it has applied X. The question is a
// Fetch of the metadata log, __cluster_metadata partition 0, at offset X,
// sent as a replica (the receiver checks the sender is a node of this
// cluster, handlers/roles.go) on the inter-broker listener: the receiver
// parks it until its own applied offset reaches X or MaxWaitMillis passes
// and answers its applied offset as the high watermark (metadataPosition).
// "Applied" here means every metadata watcher has run for that image, so
// the replicas, coordinators and quotas of that broker act on it.
//
// A Metadata request that auto-creates topics waits the same way, for at
// most autoCreatePropagationTimeout. The wait is bounded by the
// request's timeout (30 s for APIs that have none). A broker that is fenced, or becomes fenced while it is waited
// for, is not waited for, nor is one that cannot be reached (two failed
// round trips in a row). Running out of time does not fail the request:
// the change is committed, and an error would only make the client retry
// into TOPIC_ALREADY_EXISTS; the broker logs which brokers lag instead.
// A request forwarded by another node is not waited on here: the node
// that forwarded it waits.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// peerRoleMetadata is the peer client role of the applied-offset
// questions.
const peerRoleMetadata = "metadata-wait"

// defaultPropagationTimeout bounds the wait of APIs whose request has no
// timeout (AlterConfigs, IncrementalAlterConfigs, AlterClientQuotas).
const defaultPropagationTimeout = 30 * time.Second

// autoCreatePropagationTimeout bounds the wait of a Metadata request that
// created topics: shorter than a client's request timeout.
const autoCreatePropagationTimeout = 10 * time.Second

// propagationPoll is the longest one question to a broker parks there; a
// broker still behind after it is asked again once the image has been
// checked for its fencing.
const propagationPoll = time.Second

// applied tracks the offset of the last metadata image every watcher of
// this broker has run for. Its watcher is registered after those of the
// replicas and coordinators (the broker builds the handlers last), and
// watchers run in registration order, so an image counted here is one
// this broker acts on.
type applied struct {
	mu     sync.Mutex // a leaf
	offset int64
	// moved is closed, and replaced, whenever offset grows.
	moved chan struct{}
}

func newApplied(meta cluster.Metadata) *applied {
	a := &applied{offset: -1, moved: make(chan struct{})}
	meta.Watch(func(_, next *cluster.Image) { a.advance(next.Offset) })
	a.advance(meta.Image().Offset)
	return a
}

func (a *applied) advance(off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if off <= a.offset {
		return
	}
	a.offset = off
	close(a.moved)
	a.moved = make(chan struct{})
}

func (a *applied) get() (int64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.offset, a.moved
}

// wait waits until offset off is applied, or ctx ends; it returns the
// applied offset.
func (a *applied) wait(ctx context.Context, off int64) int64 {
	for {
		cur, moved := a.get()
		if cur >= off {
			return cur
		}
		select {
		case <-ctx.Done():
			return cur
		case <-moved:
		}
	}
}

// peers holds one client per broker for the applied-offset questions.
type peers struct {
	// tls and sasl secure the connections as the inter-broker listener
	// requires (Deps.PeerTLS, Deps.PeerSASL); set before first use.
	tls  protocol.PeerTLS
	sasl kgosasl.Mechanism

	mu      sync.Mutex // a leaf, never held across a request
	clients map[int32]*protocol.Client
}

func (p *peers) client(id int32, addr, clientID string) *protocol.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients == nil {
		p.clients = map[int32]*protocol.Client{}
	}
	cl := p.clients[id]
	if cl == nil || cl.Addr() != addr || cl.ClientID() != clientID {
		if cl != nil {
			cl.Close()
		}
		cl = protocol.NewTLSClient(addr, clientID, propagationPoll+5*time.Second, p.tls)
		if p.sasl != nil {
			cl.SetSASL(p.sasl)
		}
		p.clients[id] = cl
	}
	return cl
}

// awaitPropagation waits until every live broker has applied the
// metadata this broker has applied now (see the file comment). timeoutMs
// is the request's timeout; 0 or less waits for nothing, as Kafka's
// CreateTopics with timeout 0 answers at once; use
// defaultPropagationTimeout for APIs without one.
func (h *Handlers) awaitPropagation(ctx context.Context, req *protocol.Request, timeout time.Duration) {
	if h.applied == nil || h.ctrl == nil || timeout <= 0 || cluster.IsForwarded(req.ClientID) {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	im := h.meta.Image()
	target := im.Offset
	h.applied.wait(ctx, target)
	g := protocol.NewGroup(8)
	var mu sync.Mutex
	var behind []int32
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if id == h.cfg.NodeID || b.Fenced {
			continue
		}
		g.Go(func() {
			if !h.awaitBroker(ctx, req.Logger(), id, target) {
				mu.Lock()
				behind = append(behind, id)
				mu.Unlock()
			}
		})
	}
	g.Wait()
	if len(behind) > 0 {
		req.Logger().Warn().Str("api", kmsg.NameForKey(req.Key)).Int64("metadata_offset", target).
			Ints32("brokers", behind).Dur("waited", time.Since(start)).
			Msg("answering before every live broker applied the change")
	}
}

// awaitBroker waits until broker id has applied target; false if the
// wait ended first while the broker was still live and reachable.
func (h *Handlers) awaitBroker(ctx context.Context, log *zerolog.Logger, id int32, target int64) bool {
	failures := 0
	for {
		b, ok := h.meta.Image().Brokers[id]
		if !ok || b.Fenced {
			return true // not live: not waited for
		}
		if ctx.Err() != nil {
			return false
		}
		wait := propagationPoll
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		cl := h.peers.client(id, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), h.meta.PeerClientID(peerRoleMetadata))
		pos, err := askApplied(ctx, cl, h.cfg.NodeID, target, wait)
		switch {
		case err == nil && pos >= target:
			return true
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return false
		default:
			failures++
			if failures >= 2 {
				log.Debug().Int32("broker", id).Err(err).Msg("broker unreachable; not waiting for it to apply metadata")
				return true
			}
		}
	}
}

// askApplied sends the applied-offset question to one broker and returns
// its answer.
func askApplied(ctx context.Context, cl *protocol.Client, self int32, target int64, wait time.Duration) (int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = self
	req.MaxWaitMillis = int32(max(wait, 0) / time.Millisecond)
	req.MinBytes = 1
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = partition.MetadataTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = target
	rp.CurrentLeaderEpoch = -1
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return -1, err
	}
	r := resp.(*kmsg.FetchResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -1, errors.New("malformed metadata position answer")
	}
	p := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.HighWatermark, nil
}

// isMetadataPositionFetch reports whether a Fetch is another node's
// applied-offset question rather than a fetch of records.
func isMetadataPositionFetch(req *protocol.Request, r *kmsg.FetchRequest) bool {
	return req.Version <= 12 && replicaID(req) >= 0 && len(r.Topics) == 1 &&
		r.Topics[0].Topic == partition.MetadataTopic && len(r.Topics[0].Partitions) == 1
}

// metadataPosition answers the applied-offset question: it parks until
// this broker has applied the asked offset or MaxWaitMillis passes, and
// answers its applied offset as the high watermark, with no records.
func (h *Handlers) metadataPosition(ctx context.Context, r *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	rp := r.Topics[0].Partitions[0]
	wait := time.Duration(min(max(r.MaxWaitMillis, 0), int32(propagationPoll/time.Millisecond))) * time.Millisecond
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var pos int64 = -1
	if h.applied != nil {
		pos = h.applied.wait(wctx, rp.FetchOffset)
	}
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = partition.MetadataTopic
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition = rp.Partition
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = pos, pos, -1
	rt.Partitions = append(rt.Partitions, p)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// Close closes the connections to other brokers.
func (p *peers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, cl := range p.clients {
		cl.Close()
		delete(p.clients, id)
	}
}

// anyNil reports whether any item of a request succeeded.
func anyNil(errs []error) bool {
	for _, err := range errs {
		if err == nil {
			return true
		}
	}
	return false
}
