package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The quota keys a user or client-id entity takes (Kafka's QuotaConfigs).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	// ConnectionCreationRate is the one key of an ip entity.
	ConnectionCreationRate = "connection_creation_rate"
)

// Entity types, as AlterClientQuotas and DescribeClientQuotas name them.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// AnonymousUser is the principal of every connection until
// authentication exists; user quotas match it by this name.
const AnonymousUser = "ANONYMOUS"

// NameKind tells an entity part's form.
type NameKind uint8

const (
	// Absent: the entity does not name this type.
	Absent NameKind = iota
	// Default: the type's <default> entity.
	Default
	// Named: one name.
	Named
)

// Name is one part of a quota entity.
type Name struct {
	Kind NameKind
	Name string
}

// Of returns a named part.
func Of(name string) Name { return Name{Kind: Named, Name: name} }

// DefaultName is the <default> part.
var DefaultName = Name{Kind: Default}

// Entity is a user and client-id quota entity (either part may be
// absent): the level a quota is set at, or, with only Absent and Named
// parts, the level a request is counted at.
type Entity struct {
	User     Name
	ClientID Name
}

// Limits are the configured quotas: entity → quota key → value.
type Limits map[Entity]map[string]float64

// Manager enforces one quota key (a byte rate or the request time).
// It is safe for concurrent use.
type Manager struct {
	cfg Config
	key string
	// maxThrottleMs bounds the throttle time; 0 leaves it unbounded
	// (Kafka bounds only the request-time quota, to one window).
	maxThrottleMs int64
	// enabled is set while any entity has this quota, so that a broker
	// without quotas takes no lock per request.
	enabled atomic.Bool

	mu struct {
		sync.Mutex
		limits    map[Entity]float64
		sensors   map[Entity]*rate
		lastSweep int64
	}
}

func newManager(cfg Config, key string, maxThrottleMs int64) *Manager {
	m := &Manager{cfg: cfg, key: key, maxThrottleMs: maxThrottleMs}
	m.mu.sensors = make(map[Entity]*rate)
	return m
}

// setLimits keeps this manager's key of all.
func (m *Manager) setLimits(all Limits) {
	limits := make(map[Entity]float64)
	for e, kv := range all {
		if v, ok := kv[m.key]; ok {
			limits[e] = v
		}
	}
	m.mu.Lock()
	m.mu.limits = limits
	m.enabled.Store(len(limits) > 0)
	m.mu.Unlock()
}

// Enabled reports whether any entity has this quota.
func (m *Manager) Enabled() bool { return m.enabled.Load() }

// resolve finds the entity a request of user and clientID is counted
// against and its quota, following Kafka's precedence:
//
//  1. /config/users/<user>/clients/<client-id>
//  2. /config/users/<user>/clients/<default>
//  3. /config/users/<user>
//  4. /config/users/<default>/clients/<client-id>
//  5. /config/users/<default>/clients/<default>
//  6. /config/users/<default>
//  7. /config/clients/<client-id>
//  8. /config/clients/<default>
//
// The counted entity carries the names the matching level names or
// defaults: a <default> client-id quota is counted per client id, a user
// quota across all the user's clients. ok is false when no quota applies.
func resolve(limits map[Entity]float64, user, clientID string) (counted Entity, limit float64, ok bool) {
	u, c := Of(user), Of(clientID)
	has := func(e Entity) bool { _, ok := limits[e]; return ok }
	switch {
	case has(Entity{u, c}), has(Entity{u, DefaultName}):
		counted = Entity{u, c}
	case has(Entity{u, Name{}}):
		counted = Entity{User: u}
	case has(Entity{DefaultName, c}), has(Entity{DefaultName, DefaultName}):
		counted = Entity{u, c}
	case has(Entity{DefaultName, Name{}}):
		counted = Entity{User: u}
	default:
		counted = Entity{ClientID: c}
	}
	first := func(es ...Entity) (float64, bool) {
		for _, e := range es {
			if v, ok := limits[e]; ok {
				return v, true
			}
		}
		return 0, false
	}
	switch {
	case counted.User.Kind == Named && counted.ClientID.Kind == Named:
		limit, ok = first(Entity{u, c}, Entity{u, DefaultName}, Entity{DefaultName, c}, Entity{DefaultName, DefaultName})
	case counted.User.Kind == Named:
		limit, ok = first(Entity{User: u}, Entity{User: DefaultName})
	default:
		limit, ok = first(Entity{ClientID: c}, Entity{ClientID: DefaultName})
	}
	return counted, limit, ok
}

// Quota returns the quota that applies to user and clientID, if any.
func (m *Manager) Quota(user, clientID string) (float64, bool) {
	if !m.enabled.Load() {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, limit, ok := resolve(m.mu.limits, user, clientID)
	return limit, ok
}

// Record counts value for user and clientID at now and returns how long
// the client must be throttled for its rate to fall back to its quota
// (0 when within it, or when no quota applies). The value is counted even
// when it violates the quota, as Kafka does.
func (m *Manager) Record(user, clientID string, value float64, now time.Time) time.Duration {
	if !m.enabled.Load() {
		return 0
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	counted, limit, ok := resolve(m.mu.limits, user, clientID)
	if !ok {
		return 0
	}
	m.sweepLocked(nowMs)
	r := m.mu.sensors[counted]
	if r == nil {
		r = &rate{}
		m.mu.sensors[counted] = r
	}
	r.record(m.cfg, value, nowMs)
	observed := r.measure(m.cfg, nowMs)
	if observed <= limit {
		return 0
	}
	ms := throttleTime(observed, limit, r.windowSize(m.cfg, nowMs))
	if m.maxThrottleMs > 0 {
		ms = min(ms, m.maxThrottleMs)
	}
	return time.Duration(ms) * time.Millisecond
}

// Unrecord takes back a value recorded at now, for a response that was
// replaced by an empty throttled one (Kafka does this for Fetch).
func (m *Manager) Unrecord(user, clientID string, value float64, now time.Time) {
	if !m.enabled.Load() {
		return
	}
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	counted, _, ok := resolve(m.mu.limits, user, clientID)
	if !ok {
		return
	}
	if r := m.mu.sensors[counted]; r != nil {
		r.record(m.cfg, -value, nowMs)
	}
}

// MaxValueInWindow is the most a client may take within the quota
// window, quota × (WindowNum-1) × WindowSize, as Kafka caps a Fetch's
// MaxBytes by it; +Inf without a quota.
func (m *Manager) MaxValueInWindow(user, clientID string) float64 {
	limit, ok := m.Quota(user, clientID)
	if !ok {
		return math.Inf(1)
	}
	return limit * float64(m.cfg.WindowNum-1) * m.cfg.WindowSize.Seconds()
}

// sweepLocked drops, at most once per quota window, the rates whose
// samples have all expired. Such a rate measures exactly like a new one,
// so dropping it changes nothing but the memory a client that cycles
// through client ids can make the broker hold.
func (m *Manager) sweepLocked(nowMs int64) {
	expire := int64(m.cfg.WindowNum) * m.cfg.windowMs()
	if nowMs-m.mu.lastSweep < expire {
		return
	}
	m.mu.lastSweep = nowMs
	for e, r := range m.mu.sensors {
		if nowMs-r.newest() >= expire {
			delete(m.mu.sensors, e)
		}
	}
}

// sensorCount is for tests.
func (m *Manager) sensorCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.sensors)
}

// Quotas holds the managers of the three client quotas a broker
// enforces.
type Quotas struct {
	// Produce is producer_byte_rate, counted in request bytes.
	Produce *Manager
	// Fetch is consumer_byte_rate, counted in response bytes.
	Fetch *Manager
	// Request is request_percentage, counted in handler time as a
	// percentage of one second per second (100 = one thread's worth).
	Request *Manager
}

// New returns quotas with none configured.
func New(cfg Config) *Quotas {
	cfg = cfg.valid()
	return &Quotas{
		Produce: newManager(cfg, ProducerByteRate, 0),
		Fetch:   newManager(cfg, ConsumerByteRate, 0),
		// Kafka bounds request-time throttles to one window.
		Request: newManager(cfg, RequestPercentage, cfg.windowMs()),
	}
}

// Enabled reports whether any client quota is configured.
func (q *Quotas) Enabled() bool {
	return q.Produce.Enabled() || q.Fetch.Enabled() || q.Request.Enabled()
}

// Update installs a new set of configured quotas. The rates measured so
// far are kept.
func (q *Quotas) Update(all Limits) {
	q.Produce.setLimits(all)
	q.Fetch.setLimits(all)
	q.Request.setLimits(all)
}

// TimePercentage converts handler time to the unit request_percentage
// is counted in.
func TimePercentage(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * 100 / 1e9
}
