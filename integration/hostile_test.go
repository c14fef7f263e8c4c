package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Hostile clients: requests only brokers send each other, sent by a plain
// program over a real socket, must not act on a 3-node cluster. The
// cluster has Kafka's usual listener split: CLIENT for clients, INTERNAL
// (inter.broker.listener.name) for the brokers, CONTROLLER for the
// metadata quorum.

const hostileClientID = "mallory"

// hostileCluster starts three nodes with CLIENT, INTERNAL and CONTROLLER
// listeners; broker.Addr() is the CLIENT listener.
func hostileCluster(t *testing.T) (c *cluster, internalAddrs, ctrlAddrs []string) {
	t.Helper()
	const n = 3
	client, internal, ctrl := make([]int, n), make([]int, n), make([]int, n)
	var voters []string
	for i := range n {
		client[i], internal[i], ctrl[i] = freePort(t), freePort(t), freePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
	}
	c = &cluster{t: t, paused: map[int32]bool{}}
	for i := range n {
		settings := map[string]string{}
		for k, v := range clusterDefaults {
			settings[k] = v
		}
		settings["GOKAFKA_NODE_ID"] = strconv.Itoa(i + 1)
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("CLIENT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", client[i], internal[i], ctrl[i])
		settings["GOKAFKA_INTER_BROKER_LISTENER_NAME"] = "INTERNAL"
		settings["GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
		settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = strings.Join(voters, ",")
		c.nodes = append(c.nodes, newBroker(t, brokerOpts{Port: client[i], Env: settings}))
		internalAddrs = append(internalAddrs, fmt.Sprintf("127.0.0.1:%d", internal[i]))
		ctrlAddrs = append(ctrlAddrs, fmt.Sprintf("127.0.0.1:%d", ctrl[i]))
	}
	c.boot(t)
	return c, internalAddrs, ctrlAddrs
}

// hostileConn is a client connection that sends hand-built requests.
type hostileConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialHostile(t *testing.T, addr string) *hostileConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &hostileConn{t: t, nc: nc}
}

func (c *hostileConn) send(req kmsg.Request, clientID string) {
	c.t.Helper()
	c.corr++
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, c.corr)
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write %s: %v", kmsg.NameForKey(req.Key()), err)
	}
}

// closed reports whether the broker closed the connection without
// answering; a response instead is returned as an error.
func (c *hostileConn) closed() error {
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n > 0 {
		return errors.New("the broker answered")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("the broker neither answered nor closed the connection")
	}
	if errors.Is(err, io.EOF) || err != nil {
		return nil
	}
	return errors.New("no error")
}

// roundTrip sends req and decodes its response.
func (c *hostileConn) roundTrip(req kmsg.Request, clientID string) (kmsg.Response, error) {
	c.send(req, clientID)
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := buf[4:]
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		body = body[1:] // empty header tags
	}
	return resp, resp.ReadFrom(body)
}

// brokerLogHas reports whether b's log has a line holding every one of parts.
func brokerLogHas(b *broker, parts ...string) bool {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(ansiEscape.ReplaceAllString(string(data), ""), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// forgedRequests are the broker-to-broker requests a hostile client may
// try, each built as a real node would build it.
func forgedRequests(clusterID string, topic string, topicID [16]byte, leader int32, pid int64, epoch int16) map[string]kmsg.Request {
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(1)
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = leader, -1, true

	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.SetVersion(0)
	reg.BrokerID, reg.ClusterID = leader, clusterID
	reg.IncarnationID = [16]byte{1, 2, 3}
	reg.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "evil.example", Port: 6666}}

	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.SetVersion(2)
	ap.BrokerID, ap.BrokerEpoch = leader, -1
	apt := kmsg.NewAlterPartitionRequestTopic()
	apt.TopicID = topicID
	app := kmsg.NewAlterPartitionRequestTopicPartition()
	app.Partition, app.NewISR = 0, []int32{leader}
	apt.Partitions = append(apt.Partitions, app)
	ap.Topics = append(ap.Topics, apt)

	wtm := kmsg.NewPtrWriteTxnMarkersRequest()
	wtm.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, true
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	wtm.Markers = append(wtm.Markers, m)

	wss := kmsg.NewPtrWriteShareGroupStateRequest()
	wss.SetVersion(0)
	wss.GroupID = "share-victim"
	wst := kmsg.NewWriteShareGroupStateRequestTopic()
	wst.TopicID = topicID
	wsp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wsp.Partition, wsp.StartOffset = 0, 1<<40
	wst.Partitions = append(wst.Partitions, wsp)
	wss.Topics = append(wss.Topics, wst)

	dss := kmsg.NewPtrDeleteShareGroupStateRequest()
	dss.SetVersion(0)
	dss.GroupID = "share-victim"

	apid := kmsg.NewPtrAllocateProducerIDsRequest()
	apid.SetVersion(0)
	apid.BrokerID, apid.BrokerEpoch = leader, -1

	return map[string]kmsg.Request{
		"BrokerHeartbeat(WantShutdown)": hb,
		"BrokerRegistration(evil addr)": reg,
		"AlterPartition(shrink ISR)":    ap,
		"WriteTxnMarkers(commit)":       wtm,
		"WriteShareGroupState":          wss,
		"DeleteShareGroupState":         dss,
		"AllocateProducerIds":           apid,
	}
}

func TestHostileClientCannotActAsABroker(t *testing.T) {
	c, internal, ctrl := hostileCluster(t)
	const topic = "hostile"
	c.createTopic(t, topic, 3, nil)

	cl, adm, before := prepareVictim(t, c, topic)
	brokersBefore := fmt.Sprint(before.Brokers)
	leader := before.Topics[0].Partitions[0].Leader
	clusterID := *before.ClusterID
	prod, pid, epoch, txnOffset := openVictimTxn(t, c, topic)
	forged := forgedRequests(clusterID, topic, before.Topics[0].TopicID, leader, pid, epoch)

	// ApiVersions on a client listener lists none of them.
	for id := int32(1); id <= 3; id++ {
		rc := dialHostile(t, c.node(id).Addr())
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		resp, err := rc.roundTrip(req, hostileClientID)
		if err != nil {
			t.Fatalf("ApiVersions: %v", err)
		}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			for _, f := range forged {
				if k.ApiKey == f.Key() {
					t.Errorf("node %d's client listener lists %s", id, kmsg.NameForKey(k.ApiKey))
				}
			}
		}
	}

	// On every node's client listener, each forged request closes the
	// connection and the broker logs the client's address and id.
	for name, req := range forged {
		for id := int32(1); id <= 3; id++ {
			rc := dialHostile(t, c.node(id).Addr())
			rc.send(req, hostileClientID)
			if err := rc.closed(); err != nil {
				t.Errorf("%s on node %d's client listener: %v", name, id, err)
			}
			local := rc.nc.LocalAddr().String()
			eventually(t, 10*time.Second, func() error {
				if !brokerLogHas(c.node(id), "does not expose", local, hostileClientID) {
					return fmt.Errorf("node %d has no log line naming %s (%s) for %s", id, local, hostileClientID, name)
				}
				return nil
			})
		}
	}

	// On the inter-broker and CONTROLLER listeners they are refused too:
	// a listener that exposes the API finds that the sender is not a node
	// of the cluster, whatever client id it claims; the others do not
	// expose it.
	fake := fmt.Sprintf("gokafka-controller-forward;cluster=%s;broker=%d;incarnation=%032x", clusterID, leader, 42)
	for name, req := range forged {
		for _, cid := range []string{hostileClientID, fake} {
			for _, l := range []struct{ name, addr string }{{"inter-broker", internal[leader-1]}, {"controller", ctrl[leader-1]}} {
				expectRefused(t, c.node(leader), l.addr, req, cid, fmt.Sprintf("%s on node %d's %s listener as %q", name, leader, l.name, cid))
			}
		}
	}
	// A replica fetch from a client is refused as well: its offsets would
	// move the high watermark.
	{
		f := kmsg.NewPtrFetchRequest()
		f.SetVersion(12)
		f.ReplicaID, f.MaxWaitMillis, f.MaxBytes = 2, 10, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = 0, 1<<30, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		rc := dialHostile(t, c.node(leader).Addr())
		rc.send(f, hostileClientID)
		if err := rc.closed(); err != nil {
			t.Errorf("replica Fetch on the client listener: %v", err)
		}
	}

	produceToOffsetsIsRefused(t, c)

	checkTxnIntact(t, adm, prod, topic, txnOffset)
	checkUnharmed(t, c, topic, brokersBefore, cl, adm)
}

// garbageBatch is a well-formed record batch whose record is no group
// record at all.
func garbageBatch() []byte {
	return buildBatch([][]byte{{0xff, 0xff, 0xff}}, time.Now().UnixMilli())
}

// A client cannot make the broker roll segments every few bytes or
// milliseconds (KIP-1030 floors): INVALID_CONFIG on create and on alter.
func TestClientSetSegmentConfigsBelowKafkasFloorsAreInvalidConfig(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	ctx := testCtx(t, 30*time.Second)
	createTopic(t, adm, "floors", 1, nil)
	for _, tc := range []struct{ name, value string }{
		{"segment.bytes", "1024"},
		{"segment.index.bytes", "100"},
		{"segment.ms", "100"},
	} {
		resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{tc.name: strp(tc.value)}, "floors-"+strings.ReplaceAll(tc.name, ".", "-"))
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("CreateTopics with %s=%s: %v (%s), want INVALID_CONFIG", tc.name, tc.value, err, resp.ErrMessage)
		}
		ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.name, Value: strp(tc.value)}}, "floors")
		if err != nil || len(ar) != 1 || !errors.Is(ar[0].Err, kerr.InvalidConfig) {
			t.Errorf("IncrementalAlterConfigs %s=%s: %v %+v, want INVALID_CONFIG", tc.name, tc.value, err, ar)
		}
		ar, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: tc.name, Value: strp(tc.value)}}, "floors")
		if err != nil || len(ar) != 1 || !errors.Is(ar[0].Err, kerr.InvalidConfig) {
			t.Errorf("AlterConfigs %s=%s: %v %+v, want INVALID_CONFIG", tc.name, tc.value, err, ar)
		}
	}
	// At the floor they are taken.
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: strp("1048576")}}, "floors")
	if err != nil || len(ar) != 1 || ar[0].Err != nil {
		t.Errorf("segment.bytes=1048576: %v %+v", err, ar)
	}
}

// checkUnharmed checks the cluster is as it was before the hostile
// requests: every partition of topic led with a full ISR, the same broker
// addresses, the group "victim"'s offsets, and produce still works.
func checkUnharmed(t *testing.T, c *cluster, topic, brokersBefore string, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	// The cluster is as it was: every partition led with a full ISR,
	// the same broker addresses, the group's offsets.
	for p := range int32(3) {
		c.waitPartition(t, topic, p, "a leader and a full ISR", func(s partState) bool { return s.Leader > 0 && len(s.ISR) == 3 })
	}
	for id := int32(1); id <= 3; id++ {
		after, err := c.metadataFrom(id, topic)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(after.Brokers); got != brokersBefore {
			t.Errorf("node %d advertises %s, before %s", id, got, brokersBefore)
		}
		for _, mp := range after.Topics[0].Partitions {
			if mp.Leader < 1 || len(mp.ISR) != 3 {
				t.Errorf("node %d: %s-%d leader %d ISR %v", id, topic, mp.Partition, mp.Leader, mp.ISR)
			}
		}
		for _, b := range after.Brokers {
			if b.Host != "127.0.0.1" || !slices.Contains(c.addrs(), net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))) {
				t.Errorf("node %d advertises broker %d at %s:%d, not its client listener", id, b.NodeID, b.Host, b.Port)
			}
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "victim")
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p := range int32(3) {
		if o, ok := fetched.Lookup(topic, p); !ok || o.At != int64(5+p) {
			t.Errorf("victim's offset of %s-%d: %+v, want %d", topic, p, o, 5+p)
		}
	}
	// And it still takes records.
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the hostile requests: %v", err)
	}
}

// prepareVictim produces records to topic and commits offsets 5, 6, 7 for
// group "victim", and returns node 1's metadata of topic.
func prepareVictim(t *testing.T, c *cluster, topic string) (*kgo.Client, *kadm.Client, *kmsg.MetadataResponse) {
	t.Helper()
	// Something worth protecting: records and a group's offsets.
	cl := c.client(t)
	ctx := testCtx(t, 60*time.Second)
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	adm := c.admin(t)
	offsets := kadm.Offsets{}
	for p := range int32(3) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(5 + p), LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, "victim", offsets); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}

	before, err := c.metadataFrom(1, topic)
	if err != nil {
		t.Fatal(err)
	}
	return cl, adm, before
}

// produceToOffsetsIsRefused produces a batch to __consumer_offsets on
// every node's client listener: INVALID_TOPIC_EXCEPTION, and a log line
// naming the client.
func produceToOffsetsIsRefused(t *testing.T, c *cluster) {
	t.Helper()
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(9)
	p.Acks, p.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "__consumer_offsets"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 0
	pp.Records = garbageBatch()
	pt.Partitions = append(pt.Partitions, pp)
	p.Topics = append(p.Topics, pt)
	for id := int32(1); id <= 3; id++ {
		rc := dialHostile(t, c.node(id).Addr())
		resp, err := rc.roundTrip(p, hostileClientID)
		if err != nil {
			t.Fatalf("produce to __consumer_offsets on node %d: %v", id, err)
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		if code != 17 {
			t.Errorf("produce to __consumer_offsets on node %d: error %d, want INVALID_TOPIC_EXCEPTION (17)", id, code)
		}
		local := rc.nc.LocalAddr().String()
		eventually(t, 10*time.Second, func() error {
			if !brokerLogHas(c.node(id), "internal topic refused", local, hostileClientID) {
				return fmt.Errorf("node %d has no log line naming %s for the produce", id, local)
			}
			return nil
		})
	}
}

// With the default listeners (one PLAINTEXT listener, which is also the
// inter-broker one, and CONTROLLER) the broker-to-broker APIs are on the
// client's listener: there the sender's identity protects the cluster. A
// request that does not name a node of this cluster in its current run
// closes the connection, with a log line naming the client.
func TestHostileClientOnTheSharedListenerCannotActAsABroker(t *testing.T) {
	c := startCluster(t, nil)
	const topic = "hostile"
	c.createTopic(t, topic, 3, nil)
	cl, adm, before := prepareVictim(t, c, topic)
	brokersBefore := fmt.Sprint(before.Brokers)
	leader := before.Topics[0].Partitions[0].Leader
	clusterID := *before.ClusterID
	prod, pid, epoch, txnOffset := openVictimTxn(t, c, topic)
	forged := forgedRequests(clusterID, topic, before.Topics[0].TopicID, leader, pid, epoch)

	ids := []string{
		hostileClientID,
		// Right cluster and broker, a guessed incarnation.
		fmt.Sprintf("gokafka-controller-forward;cluster=%s;broker=%d;incarnation=%032x", clusterID, leader, 42),
		// Another cluster.
		fmt.Sprintf("gokafka-controller-forward;cluster=%s;broker=%d;incarnation=%032x", "other-cluster", leader, 42),
	}
	for name, req := range forged {
		for _, cid := range ids {
			for id := int32(1); id <= 3; id++ {
				expectRefused(t, c.node(id), c.node(id).Addr(), req, cid, fmt.Sprintf("%s on node %d as %q", name, id, cid))
			}
		}
	}
	produceToOffsetsIsRefused(t, c)
	checkTxnIntact(t, adm, prod, topic, txnOffset)
	checkUnharmed(t, c, topic, brokersBefore, cl, adm)
}

// expectRefused sends req to addr, a listener of b, as client id cid: the
// broker must close the connection without answering and log a line
// naming the client's address, because the listener does not expose the
// API or because the sender is not a node of the cluster.
func expectRefused(t *testing.T, b *broker, addr string, req kmsg.Request, cid, what string) {
	t.Helper()
	rc := dialHostile(t, addr)
	rc.send(req, cid)
	if err := rc.closed(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	local := rc.nc.LocalAddr().String()
	eventually(t, 10*time.Second, func() error {
		if !brokerLogHas(b, "does not expose", local) && !brokerLogHas(b, "not a node of this cluster", local) {
			return fmt.Errorf("%s: no log line naming %s", what, local)
		}
		return nil
	})
}

// openVictimTxn opens a transaction with one record on partition 0 of
// topic and returns its producer, producer id and epoch (what a forged
// WriteTxnMarkers would name) and the record's offset.
func openVictimTxn(t *testing.T, c *cluster, topic string) (*kgo.Client, int64, int16, int64) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	prod := c.client(t, kgo.TransactionalID("victim-txn"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(5*time.Minute))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	r, err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("in-txn")}).First()
	if err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}
	return prod, pid, epoch, r.Offset
}

// checkTxnIntact checks that the victim's transaction is still open (the
// last stable offset of partition 0 is held at its record, which no
// forged marker committed) and that its producer can still abort it.
func checkTxnIntact(t *testing.T, adm *kadm.Client, prod *kgo.Client, topic string, txnOffset int64) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list committed offsets: %v", err)
	}
	if o, ok := lso.Lookup(topic, 0); !ok || o.Offset != txnOffset {
		t.Errorf("last stable offset of %s-0: %+v, want %d (the open transaction's record)", topic, o, txnOffset)
	}
	if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Errorf("the victim's abort: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset <= txnOffset {
			return fmt.Errorf("last stable offset %d after the abort", o.Offset)
		}
		return nil
	})
}
