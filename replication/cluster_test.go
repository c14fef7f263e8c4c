package replication_test

// In-process clusters: three brokers in one process, each a partition.Manager
// on its own in-memory disk (so a crash keeps only what was synced), a
// replication.Manager, the Kafka handlers and a protocol.Server on
// 127.0.0.1:0. Followers fetch from leaders over real connections. The
// metadata is the real cluster.Controller over an in-memory metadata log
// (cluster.OpenInMemory): registration, AlterPartition with its epoch
// checks, fencing and elections are the controller's own. A test that
// needs a record no controller decision would make (a leadership moved by
// hand, an election as an older Kafka would have made it) writes it to the
// metadata log itself (script, elect).
//
// Nothing here asserts on time: conditions are polled with a deadline.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/handlers"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/replication"
)

// simCluster is an in-process cluster and its controller.
type simCluster struct {
	t *testing.T

	// ctrl holds the metadata, over the in-memory log mlog.
	ctrl *cluster.Controller
	mlog *cluster.MemLog
	// sessionsAhead is how far ahead of the wall clock the controller
	// measures broker sessions (see register).
	sessionsAhead atomic.Int64

	cfg   replication.Config
	hcfg  handlers.Config
	nodes map[int32]*simNode
	// racks holds each broker's broker.rack, if it has one.
	racks map[int32]string
	// altersMu guards alters, the AlterPartition requests received, in
	// order.
	altersMu sync.Mutex
	alters   []cluster.AlterPartitionRequest
}

// simNode is one broker.
type simNode struct {
	c    *simCluster
	id   int32
	fs   *partition.MemFS
	logs *partition.Manager
	rm   *replication.Manager
	srv  *protocol.Server
	h    *handlers.Handlers
	ln   net.Listener
	up   bool

	// wrapFS, if set, is the disk the broker sees over fs (faults).
	wrapFS func(partition.FS) partition.FS
	// opened, if set, runs when start has recovered the logs, before the
	// replica manager can fetch or truncate anything.
	opened func()
	// cleanEpoch is the broker epoch of the run that last stopped
	// cleanly, -1 after a crash: the next registration's previous epoch.
	cleanEpoch int64
}

// simMeta is one broker's view of the controller: the broker's own node
// id over the shared controller.
type simMeta struct {
	*cluster.Controller
	c  *simCluster
	id int32
}

func (m simMeta) NodeID() int32 { return m.id }

// AlterPartition records the request and sends it to the controller.
func (m simMeta) AlterPartition(ctx context.Context, req cluster.AlterPartitionRequest) (cluster.PartitionInfo, error) {
	m.c.altersMu.Lock()
	m.c.alters = append(m.c.alters, req)
	m.c.altersMu.Unlock()
	return m.c.ctrl.AlterPartition(ctx, req)
}

// newSimCluster starts brokers ids whose metadata is a real controller
// over an in-memory log.
func newSimCluster(t *testing.T, cfg replication.Config, ids ...int32) *simCluster {
	t.Helper()
	return newSimClusterInRacks(t, cfg, nil, ids...)
}

// newSimClusterInRacks is newSimCluster with brokers registered in racks.
func newSimClusterInRacks(t *testing.T, cfg replication.Config, racks map[int32]string, ids ...int32) *simCluster {
	t.Helper()
	return newSimClusterWith(t, cfg, handlers.Config{}, racks, ids...)
}

// newSimClusterWith is newSimClusterInRacks with the brokers' handlers
// configured as hcfg (NodeID set per broker).
func newSimClusterWith(t *testing.T, cfg replication.Config, hcfg handlers.Config, racks map[int32]string, ids ...int32) *simCluster {
	t.Helper()
	c := &simCluster{t: t, cfg: cfg, hcfg: hcfg, nodes: map[int32]*simNode{}, racks: racks}
	now := func() time.Time { return time.Now().Add(time.Duration(c.sessionsAhead.Load())) }
	ctrl, mlog, err := cluster.OpenInMemory(context.Background(), cluster.Config{
		NodeID: ids[0], ClusterID: "sim", NumPartitions: 1, DefaultReplicationFactor: 1, Now: now,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	c.ctrl, c.mlog = ctrl, mlog
	for _, id := range ids {
		n := &simNode{c: c, id: id, fs: partition.NewMemFS(), cleanEpoch: -1}
		c.nodes[id] = n
		n.start()
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop()
		}
	})
	return c
}

func (c *simCluster) image() *cluster.Image { return c.ctrl.Image() }

// script writes partition 0 of topic as fn edits it, straight to the
// metadata log: a record no controller decision would produce (a
// leadership moved by hand, an election scripted as an older Kafka would
// have made it). fn bumps the epochs it means to.
func (c *simCluster) script(topic string, fn func(pi *cluster.PartitionInfo)) {
	c.t.Helper()
	cur := c.partitionInfo(topic)
	next := cur
	next.Replicas = slices.Clone(cur.Replicas)
	next.ISR = slices.Clone(cur.ISR)
	next.ELR, next.LastKnownELR = nil, nil
	fn(&next)
	err := c.mlog.Propose(context.Background(), &cluster.Command{Type: cluster.CmdChangePartitions, Changes: []cluster.PartitionChange{{
		Topic: topic, ExpectPartitionEpoch: cur.PartitionEpoch, Next: next,
	}}})
	if err != nil {
		c.t.Fatalf("scripted change of %s: %v", topic, err)
	}
}

// elect scripts leader as the leader of topic with ISR isr, in a new
// leader epoch.
func (c *simCluster) elect(topic string, leader int32, isr ...int32) {
	c.t.Helper()
	c.script(topic, func(pi *cluster.PartitionInfo) {
		pi.Leader, pi.ISR = leader, isr
		pi.LeaderEpoch++
		pi.PartitionEpoch++
	})
}

func (c *simCluster) createTopic(name string, replicas []int32, configs map[string]string) {
	c.t.Helper()
	cfgs := map[string]*string{}
	for k, v := range configs {
		cfgs[k] = &v
	}
	errs := c.ctrl.CreateTopics(context.Background(), []cluster.TopicSpec{{
		Name: name, NumPartitions: -1, ReplicationFactor: -1, Assignment: [][]int32{replicas}, Configs: cfgs,
	}}, false)
	if errs[0] != nil {
		c.t.Fatalf("create %s: %v", name, errs[0])
	}
}

// fence fences broker id as a controlled shutdown does (the same
// partition changes as a session expiry).
func (c *simCluster) fence(id int32) {
	c.t.Helper()
	if _, _, err := c.ctrl.BrokerHeartbeat(context.Background(), id, true, nil); err != nil {
		c.t.Fatalf("fence %d: %v", id, err)
	}
}

// unfence unfences broker id as its heartbeat does.
func (c *simCluster) unfence(id int32) {
	c.t.Helper()
	if fenced, _, err := c.ctrl.BrokerHeartbeat(context.Background(), id, false, nil); err != nil || fenced {
		c.t.Fatalf("unfence %d: fenced %v, %v", id, fenced, err)
	}
}

func (c *simCluster) partitionInfo(topic string) cluster.PartitionInfo {
	return *c.image().Partition(topic, 0)
}

func (c *simCluster) leader(topic string) *simNode {
	c.t.Helper()
	id := c.partitionInfo(topic).Leader
	n := c.nodes[id]
	if n == nil || !n.up {
		c.t.Fatalf("leader %d of %s is not running", id, topic)
	}
	return n
}

func (n *simNode) start() {
	t := n.c.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	// The broker (re)registers with its new address before its replica
	// manager reads the metadata.
	n.register(int32(addr.Port))
	meta := simMeta{Controller: n.c.ctrl, c: n.c, id: n.id}
	logger := zerolog.Nop()
	configFor := func(topic string) partition.Config {
		im := meta.Image()
		if im.Topics[topic] == nil {
			return partition.DefaultConfig()
		}
		return replication.LogConfig(im, im.Topics[topic], n.id, meta.BrokerDefaults())
	}
	var fs partition.FS = n.fs
	if n.wrapFS != nil {
		fs = n.wrapFS(n.fs)
	}
	n.logs, err = partition.OpenManager(fs, partition.ManagerConfig{
		Dirs: []string{"/logs"}, NodeID: n.id, ClusterID: "sim", Defaults: partition.DefaultConfig(),
		RetentionCheckInterval: time.Hour, CheckpointInterval: time.Hour, FlushSchedulerInterval: time.Hour,
	}, configFor, logger)
	if err != nil {
		t.Fatal(err)
	}
	if n.opened != nil {
		n.opened()
	}
	cfg := n.c.cfg
	cfg.NodeID = n.id
	n.rm, err = replication.NewManagerWithConfig(cfg, n.logs, meta, logger)
	if err != nil {
		t.Fatal(err)
	}
	reg := protocol.NewRegistry()
	hcfg := n.c.hcfg
	hcfg.NodeID = n.id
	n.h = handlers.Register(reg, hcfg, meta, n.rm)
	n.srv = protocol.NewServer(protocol.DefaultConfig(), reg, logger)
	go n.srv.Serve(ln)
	n.up = true
}

// register records the broker at port as a new incarnation, which its
// first heartbeat unfences, as a restarted broker registers. The
// controller refuses a new incarnation while the previous one's session
// is alive (DUPLICATE_BROKER_REGISTRATION), and a restarted broker retries
// until it expires; here the controller's clock moves past the session
// instead, which nothing else in an in-memory controller measures.
func (n *simNode) register(port int32) {
	t := n.c.t
	t.Helper()
	if b, ok := n.c.image().Brokers[n.id]; ok && !b.Fenced {
		n.c.sessionsAhead.Add(int64(time.Minute))
	}
	inc := make([]byte, 16)
	rand.Read(inc)
	info := cluster.BrokerInfo{NodeID: n.id, Host: "127.0.0.1", Port: port, Incarnation: hex.EncodeToString(inc), PreviousEpoch: n.cleanEpoch}
	if r, ok := n.c.racks[n.id]; ok {
		info.Rack = &r
	}
	if err := n.c.ctrl.RegisterBroker(context.Background(), info); err != nil {
		t.Fatalf("register broker %d: %v", n.id, err)
	}
	n.c.unfence(n.id)
}

// stop shuts the broker down cleanly: everything written is kept.
func (n *simNode) stop() {
	if !n.up {
		return
	}
	n.cleanEpoch = n.c.image().Brokers[n.id].Epoch
	n.up = false
	n.rm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	n.srv.Shutdown(ctx)
	cancel()
	n.logs.Close()
}

// crash stops the broker losing every byte not yet fsynced.
func (n *simNode) crash() {
	durable := n.fs.CrashClone()
	n.stop()
	n.fs = durable
	n.cleanEpoch = -1
}

func (n *simNode) log(topic string) *partition.Log {
	p := n.rm.Get(partition.TopicPartition{Topic: topic, Partition: 0})
	if p == nil {
		n.c.t.Fatalf("broker %d does not host %s", n.id, topic)
	}
	return p.Log()
}

// produce sends one record with value v through the broker's replica
// manager.
func (n *simNode) produce(topic, v string, acks int16) (int64, error) {
	info, err := n.rm.Produce(context.Background(), partition.TopicPartition{Topic: topic, Partition: 0}, recordBatch(v), acks, 5*time.Second)
	return info.FirstOffset, err
}

func (n *simNode) mustProduce(topic, v string, acks int16) int64 {
	n.c.t.Helper()
	off, err := n.produce(topic, v, acks)
	if err != nil {
		n.c.t.Fatalf("produce %q to broker %d: %v", v, n.id, err)
	}
	return off
}

// recordBatch encodes a one-record v2 batch with value v, as a producer
// sends it.
func recordBatch(v string) []byte {
	var body []byte
	body = append(body, 0)              // attributes
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, 0) // offset delta
	body = binary.AppendVarint(body, -1)
	body = binary.AppendVarint(body, int64(len(v)))
	body = append(body, v...)
	body = binary.AppendVarint(body, 0)
	recs := binary.AppendVarint(nil, int64(len(body)))
	recs = append(recs, body...)
	b := make([]byte, partition.BatchHeaderSize, partition.BatchHeaderSize+len(recs))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint64(b[27:], 1000)
	binary.BigEndian.PutUint64(b[35:], 1000)
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], 1)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// batchValue extracts the value of a one-record batch written by recordBatch.
func batchValue(b []byte) string {
	r := b[partition.BatchHeaderSize:]
	_, n := binary.Varint(r) // record length
	r = r[n:]
	r = r[1:] // attributes
	for range 3 {
		_, n = binary.Varint(r) // timestamp delta, offset delta, key length (-1)
		r = r[n:]
	}
	l, n := binary.Varint(r)
	return string(r[n : n+int(l)])
}

// logBatch is one batch of a log as compared across replicas.
type logBatch struct {
	offset int64
	epoch  int32
	value  string
}

// readLog returns every batch of lg below end.
func readLog(t *testing.T, lg *partition.Log, end int64) []logBatch {
	t.Helper()
	var out []logBatch
	off := lg.LogStartOffset()
	for off < end {
		ri, err := lg.Read(off, 1<<20, end, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(ri.Records) == 0 {
			break
		}
		for b := ri.Records; len(b) > 0; {
			h, err := partition.ParseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, logBatch{offset: h.BaseOffset, epoch: h.PartitionLeaderEpoch, value: batchValue(b[:h.Size()])})
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return out
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitConverged waits until every running replica of topic has the
// leader's LEO and HW, then checks that their logs hold the same batches,
// offsets and epochs, and that every value in acked is among them.
func (c *simCluster) waitConverged(topic string, acked ...string) {
	c.t.Helper()
	var nodes []*simNode
	for _, id := range c.partitionInfo(topic).Replicas {
		if n := c.nodes[id]; n.up {
			nodes = append(nodes, n)
		}
	}
	eventually(c.t, "every running replica of "+topic+" has the leader's LEO and HW", func() bool {
		l := c.leader(topic).log(topic)
		leo, hw := l.LogEndOffset(), l.HighWatermark()
		if hw != leo {
			return false
		}
		for _, n := range nodes {
			lg := n.log(topic)
			if lg.LogEndOffset() != leo || lg.HighWatermark() != hw {
				return false
			}
		}
		return true
	})
	c.checkLogsAgree(topic, acked...)
}

// checkLogsAgree compares the replicas' logs batch by batch up to the
// leader's HW: no two may hold different batches at the same offset.
func (c *simCluster) checkLogsAgree(topic string, acked ...string) {
	c.t.Helper()
	l := c.leader(topic)
	hw := l.log(topic).HighWatermark()
	want := readLog(c.t, l.log(topic), hw)
	for _, id := range c.partitionInfo(topic).Replicas {
		n := c.nodes[id]
		if !n.up || n == l {
			continue
		}
		got := readLog(c.t, n.log(topic), hw)
		if !slices.Equal(got, want) {
			c.t.Fatalf("replica %d differs from leader %d below HW %d:\n got %v\nwant %v", n.id, l.id, hw, got, want)
		}
	}
	for _, v := range acked {
		if !slices.ContainsFunc(want, func(b logBatch) bool { return b.value == v }) {
			c.t.Fatalf("acknowledged record %q missing from the committed log %v", v, want)
		}
	}
}

func (c *simCluster) waitISR(topic string, want ...int32) {
	c.t.Helper()
	w := slices.Clone(want)
	slices.Sort(w)
	same := func(isr []int32) bool {
		isr = slices.Clone(isr)
		slices.Sort(isr)
		return slices.Equal(isr, w)
	}
	eventually(c.t, fmt.Sprintf("ISR of %s is %v, at the controller and at the leader", topic, want), func() bool {
		pi := c.partitionInfo(topic)
		if !same(pi.ISR) {
			return false
		}
		// The leader acts on the ISR it has applied, which may lag the
		// controller's: a produce right after this wait must see it.
		n := c.nodes[pi.Leader]
		if n == nil || !n.up {
			return true
		}
		for _, v := range n.rm.ReplicaViews() {
			if v.TP.Topic == topic && v.TP.Partition == 0 {
				return v.Leader && same(v.ISR)
			}
		}
		return false
	})
}

func testReplConfig(lag time.Duration) replication.Config {
	cfg := replication.DefaultConfig()
	cfg.ReplicaLagTimeMax = lag
	cfg.ReplicaFetchWaitMax = min(lag/4, 100*time.Millisecond)
	cfg.ReplicaFetchBackoff = 20 * time.Millisecond
	cfg.ReplicaSocketTimeout = 5 * time.Second
	return cfg
}

// Rules 1, 2, 5: acks=all with RF=3 returns once every ISR member has the
// batch; all three logs end up identical with the same HW.
func TestCluster_AcksAllReplicatesToWholeISR(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	l := c.leader("t")
	var acked []string
	for i := range 20 {
		v := fmt.Sprintf("r%d", i)
		off := l.mustProduce("t", v, -1)
		if off != int64(i) {
			t.Fatalf("record %d got offset %d", i, off)
		}
		// acks=all returned: the leader's HW has passed the record.
		if hw := l.log("t").HighWatermark(); hw <= off {
			t.Fatalf("acks=all returned with HW %d, record at %d", hw, off)
		}
		acked = append(acked, v)
	}
	c.waitConverged("t", acked...)
	c.waitISR("t", 1, 2, 3)
}

// Rules 3, 4, 6: a stopped follower leaves the ISR after the lag time;
// acks=all still succeeds with min.insync.replicas=2; with two followers
// gone it is refused before appending; a restarted follower truncates,
// catches up and rejoins.
func TestCluster_FollowerFailureShrinksAndRejoinsISR(t *testing.T) {
	c := newSimCluster(t, testReplConfig(200*time.Millisecond), 1, 2, 3)
	c.createTopic("t", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	l := c.leader("t")
	acked := []string{"a"}
	l.mustProduce("t", "a", -1)

	// A stopped follower that had everything is still caught up (Kafka's
	// isCaughtUp: its LEO equals the leader's); it falls behind, and out
	// of the ISR, once something is written without it.
	c.nodes[3].stop()
	l.mustProduce("t", "b1", 1)
	c.waitISR("t", 1, 2)
	l.mustProduce("t", "b", -1)
	acked = append(acked, "b")

	c.nodes[2].stop()
	l.mustProduce("t", "b2", 1)
	c.waitISR("t", 1)
	if _, err := l.produce("t", "c", -1); !errors.Is(err, replication.ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR [1] and min.insync.replicas=2: got %v, want ErrNotEnoughReplicas", err)
	}
	// acks=1 still works: it does not ask for the ISR.
	l.mustProduce("t", "d", 1)

	c.nodes[3].start()
	c.waitISR("t", 1, 3)
	l.mustProduce("t", "e", -1)
	acked = append(acked, "e")
	c.nodes[2].start()
	c.waitISR("t", 1, 2, 3)
	c.waitConverged("t", acked...)
	for _, b := range readLog(t, l.log("t"), l.log("t").HighWatermark()) {
		if b.value == "c" {
			t.Fatal("a produce refused with NOT_ENOUGH_REPLICAS was appended")
		}
	}
}

// Rule 4: a produce waiting for a follower that stops answering is
// released when the ISR shrinks, with NOT_ENOUGH_REPLICAS_AFTER_APPEND if
// the ISR is then below min.insync.replicas.
func TestCluster_NotEnoughReplicasAfterAppend(t *testing.T) {
	c := newSimCluster(t, testReplConfig(200*time.Millisecond), 1, 2)
	c.createTopic("t", []int32{1, 2}, map[string]string{"min.insync.replicas": "2"})
	l := c.leader("t")
	l.mustProduce("t", "a", -1)
	c.nodes[2].stop()
	if _, err := l.produce("t", "b", -1); !errors.Is(err, replication.ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("got %v, want ErrNotEnoughReplicasAfterAppend", err)
	}
}

// A follower does not serve a consumer fetch without client metadata
// (before Fetch v11; later ones, KIP-392, in preferred_test.go); the leader
// refuses a replica fetch from a broker outside the replica set.
func TestCluster_FollowerRefusesConsumers(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2, 3)
	c.createTopic("t", []int32{1, 2}, nil)
	c.leader("t").mustProduce("t", "a", -1)
	tp := partition.TopicPartition{Topic: "t", Partition: 0}
	res := c.nodes[2].rm.Fetch(context.Background(), replication.FetchParams{MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{{TP: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}})
	if !errors.Is(res[0].Err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("consumer fetch from a follower: %v, want ErrNotLeaderOrFollower", res[0].Err)
	}
	res = c.nodes[1].rm.Fetch(context.Background(), replication.FetchParams{FromFollower: true, ReplicaID: 3, MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{{TP: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}})
	if !errors.Is(res[0].Err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("replica fetch from a non-replica: %v, want ErrNotLeaderOrFollower", res[0].Err)
	}
	res = c.nodes[1].rm.Fetch(context.Background(), replication.FetchParams{FromFollower: true, ReplicaID: 3, MaxBytes: 1 << 20, Partitions: []replication.FetchPartition{{TP: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0}}})
	if !errors.Is(res[0].Err, replication.ErrUnknownLeaderEpoch) {
		t.Fatalf("replica fetch from a non-replica with an epoch: %v, want ErrUnknownLeaderEpoch", res[0].Err)
	}
	if _, err := c.nodes[2].produce("t", "x", 1); !errors.Is(err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("produce to a follower: %v, want ErrNotLeaderOrFollower", err)
	}
}

// Leadership lost while an acks=all produce waits answers it with
// NOT_LEADER_OR_FOLLOWER.
func TestCluster_LeadershipLossFailsParkedProduce(t *testing.T) {
	c := newSimCluster(t, testReplConfig(10*time.Second), 1, 2)
	c.createTopic("t", []int32{1, 2}, nil)
	l := c.leader("t")
	l.mustProduce("t", "a", -1)
	c.nodes[2].stop() // the produce below cannot complete
	done := make(chan error, 1)
	go func() {
		_, err := l.produce("t", "b", -1)
		done <- err
	}()
	eventually(t, "the produce is appended", func() bool { return l.log("t").LogEndOffset() == 2 })
	c.script("t", func(pi *cluster.PartitionInfo) {
		pi.Leader = 2
		pi.LeaderEpoch++
		pi.PartitionEpoch++
	})
	if err := <-done; !errors.Is(err, replication.ErrNotLeaderOrFollower) {
		t.Fatalf("got %v, want ErrNotLeaderOrFollower", err)
	}
}
