package handlers

// Client quota enforcement (KIP-13, KIP-124, KIP-219), as Kafka's
// KafkaApis applies its quota managers:
//
//   - Produce counts the request's size against producer_byte_rate once
//     the partitions are appended; Fetch counts the records it returns
//     against consumer_byte_rate, after capping MaxBytes to what the
//     quota allows in one window. A throttled Fetch is answered with an
//     empty response (no partitions), and what it would have returned is
//     taken back from the rate, so the records are fetched again later.
//   - Every other request, and Produce and Fetch too, counts its handler
//     time against request_percentage; the time a Fetch or an acks=all
//     Produce spends parked is left out, as Kafka leaves out purgatory,
//     and the APIs that do little but wait (parkingKeys) are not counted.
//     acks=0 Produce is not counted against it.
//   - The larger throttle goes in the response's throttle_time_ms and
//     mutes the connection for that long (protocol: Request.Throttle).
//
// Broker-to-broker traffic is exempt, as Kafka exempts cluster actions:
// follower fetches, the inter-broker APIs, and requests forwarded to the
// controller or carrying transaction markers (recognised by gokafka's own
// client ids until authentication can tell brokers apart). A
// connection's user is the one it authenticated as on a SASL listener,
// the anonymous principal otherwise.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/quota"
	"github.com/gokafka/gokafka/replication"
)

// parkingKeys are the APIs other than Fetch and Produce whose handlers
// spend their time waiting for others (group members, records to share,
// metadata to propagate), where Kafka parks them in purgatory or on the
// controller and counts almost no request time: JoinGroup, SyncGroup,
// ShareFetch, CreateTopics, DeleteTopics, CreatePartitions. Their time is
// not counted against request_percentage.
var parkingKeys = map[int16]bool{11: true, 14: true, 78: true, 19: true, 20: true, 37: true}

// quotaExempt reports whether req is broker-to-broker traffic: an
// inter-broker API, or a request from a node of this cluster in its
// registered run (its peer client id checked against the metadata, so a
// client cannot claim one to escape its quota; roles.go).
func (h *Handlers) quotaExempt(req *protocol.Request) bool {
	if InterBrokerAPI(req.Key) {
		return true
	}
	if _, ok := cluster.ParsePeerClientID(req.ClientID); !ok {
		return false
	}
	_, err := cluster.CheckPeer(h.meta.Image(), req.ClientID)
	return err == nil
}

type quotaCallKey struct{}

// quotaCall is what the wrapper knows of a request being served.
type quotaCall struct {
	start  time.Time
	parked atomic.Int64
}

// quotaAware wraps every handler: it counts the handler's time against
// the request-time quota (Produce and Fetch do that themselves, see
// requestThrottle) and throttles the response.
func (h *Handlers) quotaAware(fn protocol.HandlerFunc) protocol.HandlerFunc {
	return func(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
		q := h.quotas
		if q == nil || !q.Enabled() || h.quotaExempt(req) {
			return fn(ctx, req)
		}
		call := &quotaCall{start: time.Now()}
		ctx = context.WithValue(replication.WithParkedTime(ctx, &call.parked), quotaCallKey{}, call)
		resp, err := fn(ctx, req)
		if err != nil || req.Key == 0 || req.Key == 1 || parkingKeys[req.Key] {
			return resp, err
		}
		setThrottle(req, resp, h.requestThrottle(ctx, req))
		return resp, err
	}
}

// quotaCallOf is the quota accounting of the request ctx serves: nil when
// quotas are off or the request is exempt (quotaAware decides once).
func quotaCallOf(ctx context.Context) *quotaCall {
	call, _ := ctx.Value(quotaCallKey{}).(*quotaCall)
	return call
}

// quotaUser is the principal quotas are counted for: the user the
// connection authenticated as, ANONYMOUS without authentication.
func quotaUser(req *protocol.Request) string {
	if p := req.Conn.Principal(); p.Name != "" {
		return p.Name
	}
	return quota.AnonymousUser
}

// requestThrottle counts the handler time of req so far, less the time it
// was parked, against the request-time quota.
func (h *Handlers) requestThrottle(ctx context.Context, req *protocol.Request) time.Duration {
	call := quotaCallOf(ctx)
	if call == nil {
		return 0
	}
	now := time.Now()
	busy := max(now.Sub(call.start)-time.Duration(call.parked.Load()), 0)
	return h.quotas.Request.Record(quotaUser(req), req.ClientID, quota.TimePercentage(busy), now)
}

// setThrottle puts d in resp's throttle_time_ms and mutes the connection
// for it.
func setThrottle(req *protocol.Request, resp kmsg.Response, d time.Duration) {
	if d <= 0 {
		return
	}
	req.Throttle = max(req.Throttle, d)
	if sr, ok := resp.(*protocol.SplicedResponse); ok {
		resp = sr.Response
	}
	if st, ok := resp.(kmsg.SetThrottleResponse); ok {
		st.SetThrottle(int32(min(req.Throttle.Milliseconds(), 1<<31-1)))
	}
}

// throttleProduce applies the produce byte-rate and request-time quotas
// to a served Produce.
func (h *Handlers) throttleProduce(ctx context.Context, req *protocol.Request, resp *kmsg.ProduceResponse, acks int16) {
	if quotaCallOf(ctx) == nil {
		return
	}
	bw := h.quotas.Produce.Record(quotaUser(req), req.ClientID, float64(req.Size), time.Now())
	var rt time.Duration
	if acks != 0 {
		rt = h.requestThrottle(ctx, req)
	}
	setThrottle(req, resp, max(bw, rt))
}

// quotaFetchMaxBytes caps a consumer's MaxBytes to what its quota allows in
// one window, as Kafka does.
func (h *Handlers) quotaFetchMaxBytes(ctx context.Context, req *protocol.Request, maxBytes int32) int32 {
	if quotaCallOf(ctx) == nil {
		return maxBytes
	}
	if w := h.quotas.Fetch.MaxValueInWindow(quotaUser(req), req.ClientID); w < float64(maxBytes) {
		return int32(max(w, 1))
	}
	return maxBytes
}

// throttleFetch applies the fetch byte-rate and request-time quotas to a
// consumer's served Fetch. When it is throttled the answer is an empty
// response carrying the throttle time (the caller must then drop resp,
// closing its file regions). The bytes counted are the records the
// response carries.
func (h *Handlers) throttleFetch(ctx context.Context, req *protocol.Request, results []replication.FetchResult) (throttled *kmsg.FetchResponse) {
	if quotaCallOf(ctx) == nil {
		return nil
	}
	var size int64
	for _, res := range results {
		size += int64(len(res.Records))
		if res.Region != nil {
			size += res.Region.Len
		}
	}
	now := time.Now()
	user := quotaUser(req)
	bw := h.quotas.Fetch.Record(user, req.ClientID, float64(size), now)
	rt := h.requestThrottle(ctx, req)
	d := max(bw, rt)
	if d <= 0 {
		return nil
	}
	h.quotas.Fetch.Unrecord(user, req.ClientID, float64(size), now)
	empty := req.Body.(*kmsg.FetchRequest).ResponseKind().(*kmsg.FetchResponse)
	setThrottle(req, empty, d)
	return empty
}
