package replication

// Follower replication throttle, as Kafka's replication quotas (KIP-73)
// on the follower side: follower.replication.throttled.rate (a dynamic
// broker config, bytes per second, of this broker or the cluster default)
// caps what this broker's fetchers copy for the partitions the topic
// config follower.replication.throttled.replicas names with this broker
// ("partition:broker" entries, or "*" for every replica), so that a
// reassignment's catch-up does not starve producers of the disks and
// network. A replica in the ISR is never throttled, as in Kafka: only one
// catching up is. A throttled partition is left out of the fetch while
// the rate is spent and waits (its fetch state's delay) until it is back
// under; the bytes it fetched are counted against the rate.
//
// The rate is a token bucket of one second's bytes, refilled by the
// manager's clock; one fetch may overdraw it (a partition's fetch is at
// most replica.fetch.max.bytes), which the following wait pays back.
//
// The leader side is the same budget on the serving end:
// leader.replication.throttled.rate caps what this broker sends follower
// fetches for the partitions leader.replication.throttled.replicas names
// with this broker, to followers outside the ISR. Over the rate, such a
// partition is answered with no records (the follower's position still
// counts), as Kafka's ReplicaManager answers it.

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gokafka/gokafka/cluster"
)

const (
	followerThrottledRate     = "follower.replication.throttled.rate"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
	leaderThrottledRate       = "leader.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
)

// replicaThrottle is a bytes-per-second budget. Safe for concurrent use.
type replicaThrottle struct {
	mu sync.Mutex
	// rate is the budget in bytes per second; < 0 means unlimited (the
	// zero value is set to -1 by setRate before any use).
	rate   int64
	tokens float64
	last   time.Time
}

// setRate changes the budget (< 0 or math.MaxInt64: unlimited).
func (q *replicaThrottle) setRate(rate int64) {
	if rate < 0 || rate == math.MaxInt64 {
		rate = -1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if rate != q.rate {
		q.rate = rate
		q.tokens = float64(rate)
		q.last = time.Time{}
	}
}

// refillLocked adds what the time since the last call earned, up to one
// second's worth.
func (q *replicaThrottle) refillLocked(now time.Time) {
	if !q.last.IsZero() && now.After(q.last) {
		q.tokens = min(float64(q.rate), q.tokens+float64(q.rate)*now.Sub(q.last).Seconds())
	}
	if q.last.IsZero() || now.After(q.last) {
		q.last = now
	}
}

// wait returns how long a throttled fetch must wait at now; 0 when it may
// fetch.
func (q *replicaThrottle) wait(now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate < 0 {
		return 0
	}
	q.refillLocked(now)
	switch {
	case q.tokens >= 0 && q.rate > 0:
		return 0
	case q.rate == 0:
		// Nothing may be copied; look again in a second (the rate may
		// change meanwhile).
		return time.Second
	}
	return time.Duration(-q.tokens / float64(q.rate) * float64(time.Second))
}

// record counts n bytes fetched for throttled partitions at now.
func (q *replicaThrottle) record(now time.Time, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate < 0 {
		return
	}
	q.refillLocked(now)
	q.tokens -= float64(n)
}

// throttledReplica reports whether a *.replication.throttled.replicas
// value names broker's replica of partition p.
func throttledReplica(value string, p, broker int32) bool {
	value = strings.TrimSpace(value)
	if value == "*" {
		return true
	}
	for _, item := range strings.Split(value, ",") {
		ps, bs, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		pn, err1 := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		bn, err2 := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if err1 == nil && err2 == nil && int32(pn) == p && int32(bn) == broker {
			return true
		}
	}
	return false
}

// throttleRate returns a *.replication.throttled.rate for node in im:
// this broker's dynamic value, else the cluster default, else the static
// one, else unlimited (-1).
func throttleRate(im *cluster.Image, node int32, bd cluster.BrokerDefaults, name string) int64 {
	v, ok := im.BrokerConfigs[strconv.Itoa(int(node))][name]
	if !ok {
		v, ok = im.BrokerConfigs[""][name]
	}
	if !ok {
		v, ok = bd.Values[name]
	}
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// followerThrottledNow reports whether p's follower fetches count against
// the follower throttle: the topic names this replica and it is not in
// the ISR.
func (p *Partition) followerThrottledNow(node int32) bool {
	if !p.followerThrottled.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !slices.Contains(p.mu.isr, node)
}

// leaderThrottledFor reports whether what p's leader sends replica counts
// against the leader throttle: the topic names this leader's replica and
// replica is not in the ISR.
func (p *Partition) leaderThrottledFor(replica int32) bool {
	if !p.leaderThrottled.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.mu.st
	return st != nil && !slices.Contains(st.ISR(), replica)
}
