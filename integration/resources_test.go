package integration

// Resource bounds under hostile clients (issue 12). Each scenario starts
// its own broker, so that its peak RSS (VmHWM, a high-water mark over the
// process's life) is the scenario's, attacks it, and checks that:
//   - the broker's peak RSS and its open file descriptors stay under the
//     bounds below (the README lists them too);
//   - another client's produce and consume keep working meanwhile (no
//     timing assertion: they succeed within the test's deadline).
//
// Bounds, with the default limits unless the scenario says:
//   - pipelined large fetches, never read (4 connections × 200 fetches of
//     8 partitions × 2 MiB): peak RSS < 256 MiB, fds < 512, and the
//     connections are closed after connections.max.idle.ms (3 s here);
//   - one partition named 50,000 times in one Fetch (4 connections, 5
//     requests each): peak RSS < 256 MiB, fds < 256; answered once;
//   - a 70 KiB zstd batch that expands to 1 GiB, then ListOffsets by
//     timestamp on it from 8 connections at once: CORRUPT_MESSAGE, peak RSS
//     < 256 MiB;
//   - 10,000 connections from one address: held with the default limits,
//     peak RSS < 768 MiB and fds < 10,512; with max.connections.per.ip.overrides
//     capping that address at 1,000, fds < 1,512.
// The test process raises its own RLIMIT_NOFILE to the hard limit for the
// 10,000 connections (the broker inherits it).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *broker) pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd.Process.Pid
}

// peakRSS is the broker's VmHWM in bytes.
func (b *broker) peakRSS(t testing.TB) int64 {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// openFDs counts the broker's open file descriptors.
func (b *broker) openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", b.pid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// resourceWatch samples the broker's fd count until stopped, keeping the
// largest.
type resourceWatch struct {
	stop    chan struct{}
	done    chan struct{}
	peakFDs int
}

func watchResources(t *testing.T, b *broker) *resourceWatch {
	w := &resourceWatch{stop: make(chan struct{}), done: make(chan struct{})}
	pid := b.pid()
	go func() {
		defer close(w.done)
		for {
			if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				w.peakFDs = max(w.peakFDs, len(ents))
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *resourceWatch) finish() int {
	close(w.stop)
	<-w.done
	return w.peakFDs
}

// checkBounds fails the test if the broker's peak RSS or peak fds passed
// their bounds, and logs what was measured.
func checkBounds(t *testing.T, b *broker, w *resourceWatch, maxRSS int64, maxFDs int) {
	t.Helper()
	fds := max(w.finish(), b.openFDs(t))
	rss := b.peakRSS(t)
	t.Logf("broker peak RSS %d MiB (bound %d MiB), peak fds %d (bound %d)", rss>>20, maxRSS>>20, fds, maxFDs)
	testReport(t, fmt.Sprintf("%s: peak RSS %d MiB (bound %d MiB), peak fds %d (bound %d)", t.Name(), rss>>20, maxRSS>>20, fds, maxFDs))
	if rss > maxRSS {
		t.Errorf("broker peak RSS %d MiB exceeds %d MiB", rss>>20, maxRSS>>20)
	}
	if fds > maxFDs {
		t.Errorf("broker held %d file descriptors, bound %d", fds, maxFDs)
	}
	b.CheckAlive(t)
}

// stillServes produces a record with acks=all through a fresh client and
// consumes it back.
func stillServes(t *testing.T, b *broker, topic string) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	val := []byte(fmt.Sprintf("still-serving-%d", time.Now().UnixNano()))
	res := cl.ProduceSync(ctx, &kgo.Record{Value: val})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("another client's produce failed: %v", err)
	}
	off := res[0].Record.Offset
	cons := b.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(off)}}))
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("another client's consume did not get its record: %v", err)
		}
		for _, r := range fs.Records() {
			if bytes.Equal(r.Value, val) {
				return
			}
		}
	}
}

func resourceBroker(t *testing.T, env map[string]string) *broker {
	t.Helper()
	b := startBroker(t, brokerOpts{Env: env})
	adm := b.admin(t)
	createTopic(t, adm, "healthy", 1, nil)
	return b
}

func TestResourceBounds(t *testing.T) {
	t.Run("PipelinedFetchesNeverRead", testPipelinedFetchesNeverRead)
	t.Run("PartitionListedThousandsOfTimes", testPartitionListedThousandsOfTimes)
	t.Run("DecompressionBomb", testDecompressionBomb)
	t.Run("TenThousandConnections", testTenThousandConnections)
}

// fillTopic writes about perPartition bytes to each partition of topic.
func fillTopic(t *testing.T, b *broker, topic string, partitions int32, perPartition int) {
	t.Helper()
	createTopic(t, b.admin(t), topic, partitions, nil)
	ctx := testCtx(t, 60*time.Second)
	val := bytes.Repeat([]byte("x"), 100<<10)
	var rs []*kgo.Record
	for p := range partitions {
		for range perPartition / len(val) {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: val})
		}
	}
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("filling %s: %v", topic, err)
	}
}

func fetchRequest(topic string, partitions []int32, maxBytes, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes = maxBytes
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	for _, p := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = p, partMax, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

func testPipelinedFetchesNeverRead(t *testing.T) {
	b := resourceBroker(t, map[string]string{"GOKAFKA_CONNECTIONS_MAX_IDLE_MS": "3000"})
	fillTopic(t, b, "big", 8, 2<<20)
	base := b.openFDs(t)
	w := watchResources(t, b)

	req := fetchRequest("big", []int32{0, 1, 2, 3, 4, 5, 6, 7}, 1<<30, 10<<20)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("never-reads"))
	var conns []net.Conn
	var wg sync.WaitGroup
	for range 4 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(f.AppendRequest(nil, req, int32(i))); err != nil {
					return // the broker stopped reading or closed: expected
				}
			}
		}()
	}
	stillServes(t, b, "healthy")
	wg.Wait()
	// connections.max.idle.ms also bounds a blocked response write: the
	// broker drops these connections and the files their responses pin.
	eventually(t, 60*time.Second, func() error {
		if n := b.openFDs(t); n > base+8 {
			return fmt.Errorf("broker still holds %d fds (%d before the attack)", n, base)
		}
		return nil
	})
	checkBounds(t, b, w, 256<<20, 512)
}

func testPartitionListedThousandsOfTimes(t *testing.T) {
	b := resourceBroker(t, nil)
	fillTopic(t, b, "dup", 1, 1<<20)
	w := watchResources(t, b)
	parts := make([]int32, 50000)
	req := fetchRequest("dup", parts, 1<<30, 1<<20)
	var wg sync.WaitGroup
	for range 4 {
		rc := dialRaw(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				corr := rc.send(req)
				frame, err := rc.readFrame(60 * time.Second)
				if err != nil {
					t.Errorf("reading the fetch response: %v", err)
					return
				}
				if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
					t.Errorf("correlation %d, want %d", got, corr)
					return
				}
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(req.Version)
				body, err := skipTags(frame[4:])
				if err == nil {
					err = resp.ReadFrom(body)
				}
				if err != nil {
					t.Errorf("decoding the fetch response (%d bytes): %v", len(frame), err)
					return
				}
				n := 0
				for _, tp := range resp.Topics {
					n += len(tp.Partitions)
				}
				if n != 1 {
					t.Errorf("a fetch naming partition 0 %d times was answered with %d partitions, want 1", len(parts), n)
					return
				}
			}
		}()
	}
	stillServes(t, b, "healthy")
	wg.Wait()
	checkBounds(t, b, w, 256<<20, 256)
}

// zstdBomb is a v2 batch of 1024 records of 1 MiB of zeros: one zstd
// frame of one record repeated 1024 times (concatenated frames decode to
// the concatenation), about 70 KiB on the wire, 1 GiB decompressed. Its
// max timestamp claims a record later than any, so a lookup by timestamp
// reads every record.
func zstdBomb(t *testing.T) []byte {
	const value = 1 << 20
	var rec []byte
	rec = append(rec, 0)
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, -1)
	rec = binary.AppendVarint(rec, value)
	rec = append(rec, make([]byte, value)...)
	rec = binary.AppendVarint(rec, 0)
	framed := append(binary.AppendVarint(nil, int64(len(rec))), rec...)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat(enc.EncodeAll(framed, nil), 1024)
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: 4, // zstd
		LastOffsetDelta: 1023, FirstTimestamp: 1000, MaxTimestamp: 1_000_000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1024, Records: body,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

func testDecompressionBomb(t *testing.T) {
	b := resourceBroker(t, nil)
	createTopic(t, b.admin(t), "bomb", 1, nil)
	bomb := zstdBomb(t)
	t.Logf("bomb batch: %d bytes, 1 GiB decompressed", len(bomb))
	rc := dialRaw(t, b)
	if pr := producePartitionResult(t, rc.roundTrip(produceRequest(7, 1, "bomb", 0, bomb))); pr.ErrorCode != 0 {
		t.Fatalf("producing the bomb: %v", kerr.ErrorForCode(pr.ErrorCode))
	}
	w := watchResources(t, b)
	var wg sync.WaitGroup
	for range 8 {
		rc := dialRaw(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				req := kmsg.NewPtrListOffsetsRequest()
				req.SetVersion(4)
				req.ReplicaID = -1
				lt := kmsg.NewListOffsetsRequestTopic()
				lt.Topic = "bomb"
				lp := kmsg.NewListOffsetsRequestTopicPartition()
				lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, 2000, -1
				lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
				req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
				corr := rc.send(req)
				resp := kmsg.NewPtrListOffsetsResponse()
				frame, err := rc.readFrame(120 * time.Second)
				if err != nil {
					t.Errorf("ListOffsets on the bomb: %v", err)
					return
				}
				if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
					t.Errorf("correlation %d, want %d", got, corr)
					return
				}
				resp.SetVersion(4)
				if err := resp.ReadFrom(frame[4:]); err != nil {
					t.Errorf("decoding ListOffsets: %v", err)
					return
				}
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
					t.Errorf("ListOffsets by timestamp on the bomb: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(code))
					return
				}
			}
		}()
	}
	stillServes(t, b, "healthy")
	wg.Wait()
	checkBounds(t, b, w, 256<<20, 256)
}

// raiseNoFile lifts this process's RLIMIT_NOFILE to its hard limit (the
// broker, started afterwards, inherits it) and returns the soft limit.
func raiseNoFile(t *testing.T) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	return lim.Cur
}

// dialFrom opens n connections to addr from the local address from,
// returning those that connected.
func dialFrom(t *testing.T, addr, from string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 64)
	)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := d.DialContext(context.Background(), "tcp", addr)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

func testTenThousandConnections(t *testing.T) {
	const n = 10000
	// This process holds the client ends, the broker the server ends:
	// each needs n descriptors and some to spare.
	if lim := raiseNoFile(t); lim < n+1000 {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d this test needs", lim, n+1000)
	}
	// The attack comes from 127.0.0.2; the healthy client from 127.0.0.1.
	t.Run("DefaultLimits", func(t *testing.T) {
		b := resourceBroker(t, nil)
		w := watchResources(t, b)
		conns := dialFrom(t, b.Addr(), "127.0.0.2", n)
		if len(conns) < n {
			t.Fatalf("only %d of %d connections opened", len(conns), n)
		}
		eventually(t, 60*time.Second, func() error {
			if got := b.openFDs(t); got < n {
				return fmt.Errorf("broker holds %d fds, want the %d connections accepted", got, n)
			}
			return nil
		})
		stillServes(t, b, "healthy")
		checkBounds(t, b, w, 768<<20, n+512)
	})
	t.Run("PerIPOverride", func(t *testing.T) {
		b := resourceBroker(t, map[string]string{"GOKAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES": "127.0.0.2:1000"})
		w := watchResources(t, b)
		dialFrom(t, b.Addr(), "127.0.0.2", n)
		stillServes(t, b, "healthy")
		checkBounds(t, b, w, 256<<20, 1000+512)
		if !strings.Contains(b.logTail(50), "rejected connection from 127.0.0.2") {
			t.Errorf("no log line names the rejected address:\n%s", b.logTail(20))
		}
	})
}
