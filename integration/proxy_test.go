package integration

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/integration/confluentgo"
)

// proxyFault is what the fault proxy does to every Nth request.
type proxyFault int32

const (
	// passThrough forwards everything.
	passThrough proxyFault = iota
	// dropResponse forwards the request, then swallows its response and
	// closes the client's connection: the broker did the work, the client
	// never hears of it.
	dropResponse
	// cutAfterRequest forwards the request and closes both connections at
	// once, so the broker may or may not get to answer it.
	cutAfterRequest
)

// faultProxy is a TCP proxy in front of one broker that follows the Kafka
// framing (4-byte size, then the frame) in both directions, to count
// requests and to know which response answers which request (a broker
// answers a connection's requests in order). It never alters a byte: the
// broker advertises the proxy's address, so clients come back through it
// after every cut.
type faultProxy struct {
	ln     net.Listener
	target string
	every  int64

	fault    atomic.Int32
	requests atomic.Int64 // produce requests forwarded, over all connections
	faults   atomic.Int64 // faults injected

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startFaultProxy(t testing.TB, addr, target string, every int64) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy listen on %s: %v", addr, err)
	}
	p := &faultProxy{ln: ln, target: target, every: every, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) setFault(f proxyFault) { p.fault.Store(int32(f)) }

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers a connection to be closed with the proxy; it returns
// false once the proxy is closing.
func (p *faultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *faultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			client.Close()
			server.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(client, server)
	}
}

// serve relays one client connection. dropAt is the ordinal (on this
// connection) of the request whose response is to be swallowed, 0 for none.
func (p *faultProxy) serve(client, server net.Conn) {
	defer p.wg.Done()
	var once sync.Once
	cut := func() {
		once.Do(func() {
			p.untrack(client)
			p.untrack(server)
		})
	}
	defer cut()
	var dropAt atomic.Int64

	done := make(chan struct{})
	go func() { // responses: broker → client
		defer close(done)
		defer cut()
		for n := int64(1); ; n++ {
			frame, err := readFrame(server)
			if err != nil {
				return
			}
			if at := dropAt.Load(); at != 0 && n == at {
				p.faults.Add(1)
				return
			}
			if _, err := client.Write(frame); err != nil {
				return
			}
		}
	}()

	for n := int64(1); ; n++ { // requests: client → broker
		frame, err := readFrame(client)
		if err != nil {
			break
		}
		// Faults hit produce requests only (API key 0): a client that
		// loses its connection setup (ApiVersions, Metadata) to every Nth
		// fault backs off reconnecting, which tests its patience, not the
		// broker's deduplication.
		hit := false
		fault := proxyFault(p.fault.Load())
		if len(frame) >= 6 && binary.BigEndian.Uint16(frame[4:]) == 0 {
			total := p.requests.Add(1)
			hit = fault != passThrough && total%p.every == 0
		}
		if hit && fault == dropResponse {
			dropAt.CompareAndSwap(0, n)
		}
		if _, err := server.Write(frame); err != nil {
			break
		}
		if hit && fault == cutAfterRequest {
			p.faults.Add(1)
			break
		}
	}
	cut()
	<-done
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 128<<20 {
		return nil, fmt.Errorf("frame size %d", n)
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	if _, err := io.ReadFull(c, frame[4:]); err != nil {
		return nil, err
	}
	return frame, nil
}

// TestProxyIdempotentProduce sends 50,000 small records with kgo's
// idempotent producer through a proxy that (1) swallows the response to
// every Nth request and closes the connection, or (2) closes the connection
// right after forwarding every Nth request. Each fault leaves up to five
// produce requests whose outcome the client does not know; it resends them
// with the same producer id and sequence numbers, and the broker must
// answer the ones it already appended with their original offsets instead
// of appending them again. Exactly 50,000 records must land, each once, in
// the order produced within each partition, at the offsets acknowledged.
func TestProxyIdempotentProduce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault proxyFault
		every int64
	}{
		{"drop-every-10th-response", dropResponse, 10},
		{"cut-after-every-9th-request", cutAfterRequest, 9},
	} {
		t.Run(tc.name, func(t *testing.T) { proxyIdempotentProduce(t, tc.fault, tc.every) })
	}
}

func proxyIdempotentProduce(t *testing.T, fault proxyFault, every int64) {
	const n, parts = 50000, 3
	proxyAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	b := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://" + proxyAddr,
	}})
	proxy := startFaultProxy(t, proxyAddr, b.Addr(), every)
	topic := "through-proxy"
	createTopic(t, b.admin(t), topic, parts, nil)

	proxy.setFault(fault)
	// Small batches make many produce requests, so the faults hit produce
	// requests in flight many times over.
	prod := b.client(t,
		kgo.SeedBrokers(proxyAddr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(2048),
		kgo.MaxBufferedRecords(5000),
	)
	offsets := make([]int64, n)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	ctx := testCtx(t, 3*time.Minute)
	for i := range n {
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(fmt.Sprintf("rec-%06d", i))}
		prod.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("record %d: %w", i, err))
				mu.Unlock()
				return
			}
			offsets[i] = r.Offset
		})
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(3 * time.Minute):
		t.Fatalf("acknowledgements still outstanding after 3 minutes (%d requests, %d faults so far)", proxy.requests.Load(), proxy.faults.Load())
	}
	proxy.setFault(passThrough)
	t.Logf("%d produce requests through the proxy, %d faults injected", proxy.requests.Load(), proxy.faults.Load())
	if len(errs) > 0 {
		t.Fatalf("%d of %d produces failed; first: %v", len(errs), n, errs[0])
	}
	// A run of this size makes hundreds of requests; a handful of faults
	// would mean the producer bypassed the proxy.
	if f := proxy.faults.Load(); f < 10 {
		t.Fatalf("only %d faults injected; the producer did not go through the proxy", f)
	}

	checkProxiedRecords(t, b, topic, parts, n, offsets)
}

// checkProxiedRecords reads topic back and checks that records
// "rec-000000".."rec-<n-1>" each landed exactly once, record i in
// partition i%parts, in produce order within each partition, and (when
// offsets is given) at the offset its producer was told.
func checkProxiedRecords(t *testing.T, b *broker, topic string, parts, n int, offsets []int64) {
	t.Helper()
	got := consumeKgo(t, b, topic, partitionList(int32(parts)), n)
	seen := make([]int, n)
	last := map[int32]int{}
	bad := 0
	report := func(format string, args ...any) {
		if bad < 10 {
			t.Errorf(format, args...)
		}
		bad++
	}
	for _, r := range got {
		var i int
		if _, err := fmt.Sscanf(string(r.Value), "rec-%06d", &i); err != nil || i < 0 || i >= n {
			report("p%d@%d: value %q is not one we produced", r.Partition, r.Offset, r.Value)
			continue
		}
		seen[i]++
		if seen[i] > 1 {
			report("record %d stored again at p%d@%d", i, r.Partition, r.Offset)
		}
		if r.Partition != int32(i%parts) {
			report("record %d in partition %d, produced to %d", i, r.Partition, i%parts)
		}
		if prev, ok := last[r.Partition]; ok && i <= prev {
			report("partition %d: record %d at offset %d after record %d: order not kept", r.Partition, i, r.Offset, prev)
		}
		last[r.Partition] = i
		if offsets != nil && r.Offset != offsets[i] {
			report("record %d acknowledged at offset %d, stored at p%d@%d", i, offsets[i], r.Partition, r.Offset)
		}
	}
	if missing := slices.Index(seen, 0); missing >= 0 {
		t.Errorf("record %d (and maybe more) never landed", missing)
	}
	ends := endOffsets(t, b.admin(t), topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != int64(n) {
		t.Errorf("the partitions hold %d records (end offsets %v), want exactly %d", total, ends, n)
	}
	if bad > 10 {
		t.Errorf("... %d problems in all", bad)
	}
}

// TestProxyIdempotentProduceLibrdkafka is TestProxyIdempotentProduce with
// librdkafka (confluent-kafka-go, enable.idempotence=true) as the producer:
// one producer per partition, 50,000 records in all, through a proxy that
// drops every 10th response.
func TestProxyIdempotentProduceLibrdkafka(t *testing.T) {
	const n, parts = 50000, 3
	proxyAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	b := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://" + proxyAddr,
	}})
	proxy := startFaultProxy(t, proxyAddr, b.Addr(), 10)
	topic := "through-proxy-librdkafka"
	createTopic(t, b.admin(t), topic, parts, nil)
	proxy.setFault(dropResponse)

	ctx := testCtx(t, 4*time.Minute)
	var wg sync.WaitGroup
	errs := make([]error, parts)
	for p := range parts {
		var recs []confluentgo.Record
		for i := p; i < n; i += parts {
			recs = append(recs, confluentgo.Record{Value: []byte(fmt.Sprintf("rec-%06d", i))})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = confluentgo.Produce(ctx, proxyAddr, topic, recs, confluentgo.ProduceOpts{Idempotent: true, Partition: int32(p), BatchMaxBytes: 2048})
		}()
	}
	wg.Wait()
	proxy.setFault(passThrough)
	t.Logf("%d produce requests through the proxy, %d faults injected", proxy.requests.Load(), proxy.faults.Load())
	for p, err := range errs {
		if err != nil {
			t.Fatalf("librdkafka producer for partition %d: %v", p, err)
		}
	}
	if f := proxy.faults.Load(); f < 10 {
		t.Fatalf("only %d faults injected; the producers did not go through the proxy", f)
	}
	checkProxiedRecords(t, b, topic, parts, n, nil)
}
