package integration

// Node roles and cluster membership: a broker-only node
// (process.roles=broker) added to a running cluster, a cluster whose
// controller is controller-only, and a decommissioned broker removed with
// UnregisterBroker.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// roleNodeEnv is the settings of node id with the given process.roles in
// a cluster whose voters are voters: a broker listener unless the node is
// controller-only, and a CONTROLLER listener (a broker-only node receives
// the metadata log on it).
func roleNodeEnv(id int, roles, voters string, port, ctrl int, env map[string]string) map[string]string {
	settings := maps.Clone(clusterDefaults)
	maps.Copy(settings, env)
	settings["GOKAFKA_NODE_ID"] = strconv.Itoa(id)
	settings["GOKAFKA_PROCESS_ROLES"] = roles
	settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = voters
	if roles == "controller" {
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ctrl)
	} else {
		settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl)
	}
	return settings
}

// addBrokerOnly starts a broker-only node with the next node id in the
// running cluster and waits until every broker lists it as live.
func (c *cluster) addBrokerOnly(t *testing.T) int32 {
	t.Helper()
	id, _ := c.addNode(t, "broker", nil)
	return id
}

// bootstrapServers is the voters' CONTROLLER addresses, as
// controller.quorum.bootstrap.servers names them.
func (c *cluster) bootstrapServers() string {
	var out []string
	for _, v := range strings.Split(c.voters, ",") {
		_, addr, _ := strings.Cut(v, "@")
		out = append(out, addr)
	}
	return strings.Join(out, ",")
}

// addNode starts a node with the next node id and the given roles (with
// the broker role) in the running cluster, outside
// controller.quorum.voters, and waits until every broker lists it as
// live. env overrides its settings. It returns the id and the port of its
// CONTROLLER listener.
func (c *cluster) addNode(t *testing.T, roles string, env map[string]string) (int32, int) {
	t.Helper()
	id := int32(len(c.nodes) + 1)
	port, ctrl := freePort(t), freePort(t)
	settings := roleNodeEnv(int(id), roles, c.voters, port, ctrl, nil)
	maps.Copy(settings, env)
	b := newBroker(t, brokerOpts{Port: port, Env: settings})
	c.nodes = append(c.nodes, b)
	b.start()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ClientID("gokafka-integration-probe")}, c.clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.probes = append(c.probes, cl)
	c.waitLiveBrokers(t, c.brokerIDs())
	return id, ctrl
}

// brokerIDs lists the nodes that are brokers.
func (c *cluster) brokerIDs() []int32 {
	var out []int32
	for i := range c.nodes {
		if id := int32(i + 1); !c.controllerOnly[id] {
			out = append(out, id)
		}
	}
	return out
}

// waitLiveBrokers waits until every running broker lists exactly want as
// its live brokers.
func (c *cluster) waitLiveBrokers(t *testing.T, want []int32) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		for _, id := range c.reachable() {
			got, err := c.liveBrokers(id)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("node %d lists brokers %v, want %v", id, got, want)
			}
		}
		return nil
	})
}

// startRolesCluster starts one node per entry of roles (node ids from 1),
// every node with the controller role a voter, and waits until every
// broker lists every broker as live.
func startRolesCluster(t *testing.T, roles []string) *cluster {
	t.Helper()
	n := len(roles)
	ports, ctrl := make([]int, n), make([]int, n)
	var voters []string
	c := &cluster{t: t, paused: map[int32]bool{}, controllerOnly: map[int32]bool{}}
	for i := range n {
		ports[i], ctrl[i] = freePort(t), freePort(t)
		if strings.Contains(roles[i], "controller") {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
		}
		if roles[i] == "controller" {
			// Ready, for the harness, is the CONTROLLER listener
			// accepting.
			ports[i] = ctrl[i]
			c.controllerOnly[int32(i+1)] = true
		}
	}
	c.voters = strings.Join(voters, ",")
	for i := range n {
		c.nodes = append(c.nodes, newBroker(t, brokerOpts{Port: ports[i], Env: roleNodeEnv(i+1, roles[i], c.voters, ports[i], ctrl[i], nil)}))
	}
	for _, b := range c.nodes {
		b.launch()
	}
	for _, b := range c.nodes {
		b.waitReady()
	}
	for _, b := range c.nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("gokafka-integration-probe"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		c.probes = append(c.probes, cl)
	}
	c.waitLiveBrokers(t, c.brokerIDs())
	return c
}

// TestClusterBrokerOnlyNodeJoinsARunningClusterAndTakesPartitions adds a
// broker-only node to a running three-node cluster: it joins the metadata
// quorum without voting, registers, and takes partitions by reassignment,
// leading one of them; every acknowledged record is read back. Stopping
// it leaves the quorum as it was: the voters still make changes; started
// again, it rejoins.
func TestClusterBrokerOnlyNodeJoinsARunningClusterAndTakesPartitions(t *testing.T) {
	c := startCluster(t, nil)
	const topic, parts = "to-broker-only", 2
	c.createTopicAssigned(t, topic, [][]int32{{1, 2, 3}, {2, 3, 1}})
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	prod.waitMoreAcks(t, 300, "before node 4 joins")

	id := c.addBrokerOnly(t)
	if id != 4 {
		t.Fatalf("new node id %d", id)
	}
	adm := c.admin(t)
	targets := map[int32][]int32{0: {4, 2, 3}, 1: {2, 3, 4}}
	reassign(t, adm, topic, targets)
	c.waitReassigned(t, adm, topic, targets)
	c.waitPartition(t, topic, 0, "node 4 leading partition 0 with a full ISR", func(s partState) bool {
		return s.Leader == 4 && slices.Equal(s.ISR, []int32{2, 3, 4})
	})
	c.waitPartition(t, topic, 1, "node 4 in partition 1's ISR", func(s partState) bool {
		return slices.Equal(s.ISR, []int32{2, 3, 4})
	})
	c.waitNoPartitionDir(t, 1, topic, 0)
	prod.waitMoreAcks(t, 300, "after the move to node 4")
	prod.stop(t)
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)

	// Node 4 is no voter: the active controller is one of 1-3, and with
	// node 4 gone the three voters still make changes.
	ctrlID, err := c.controller(4)
	if err != nil {
		t.Fatal(err)
	}
	if ctrlID < 1 || ctrlID > 3 {
		t.Fatalf("node 4 reports controller %d, want a voter", ctrlID)
	}
	c.node(4).Stop()
	c.createTopic(t, "after-node-4", 1, nil)

	// Restarted, it follows the quorum again from where its log ended,
	// registers a new run and serves its partitions.
	c.node(4).Restart()
	c.waitLiveBrokers(t, []int32{1, 2, 3, 4})
	c.waitPartition(t, topic, 1, "node 4 back in partition 1's ISR", func(s partState) bool {
		return slices.Equal(s.ISR, []int32{2, 3, 4})
	})
}

// TestClusterWithAControllerOnlyNode runs a controller-only node as the
// only voter with three broker-only nodes: the brokers register through
// it, clients are told a broker as controller, topics are created
// (forwarded to the controller), written and read, and the controller
// hosts no partition.
func TestClusterWithAControllerOnlyNode(t *testing.T) {
	c := startRolesCluster(t, []string{"controller", "broker", "broker", "broker"})
	for _, id := range []int32{2, 3, 4} {
		resp, err := c.metadataFrom(id, "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.ControllerID < 2 {
			t.Fatalf("node %d tells clients controller %d, want a broker (2-4)", id, resp.ControllerID)
		}
	}
	const topic, parts = "controller-only", 3
	adm := c.admin(t)
	if _, err := adm.CreateTopic(testCtx(t, 30*time.Second), parts, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		c.waitPartition(t, topic, p, "a leader and a full ISR on the brokers", func(s partState) bool {
			return s.Leader >= 2 && slices.Equal(s.ISR, []int32{2, 3, 4})
		})
	}
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	prod.waitMoreAcks(t, 300, "on the brokers")
	prod.stop(t)
	got := seqRecords(t, c.consumeAll(t, topic, parts), parts)
	checkAckedPresent(t, prod, got)

	// The controller-only node serves the controller APIs on its
	// CONTROLLER listener and no client APIs there.
	ctrl := kgoClient(t, kgo.SeedBrokers(c.node(1).Addr()))
	if _, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(testCtx(t, 10*time.Second), ctrl); err != nil {
		t.Fatalf("DescribeCluster on the controller-only node: %v", err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t, 5*time.Second), ctrl); err == nil {
		t.Fatal("the controller-only node answered Metadata on its CONTROLLER listener")
	}
	for p := range int32(parts) {
		if _, err := os.Stat(c.node(1).PartitionDir(topic, p)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the controller-only node holds %s[%d] (%v)", topic, p, err)
		}
	}
}

// TestClusterUnregisterADecommissionedBroker adds a broker-only node 4
// that knows the controllers only by controller.quorum.bootstrap.servers,
// gives it a replica, moves the replica off it again, stops it and
// unregisters it: no node lists it any more, and unregistering it again
// answers BROKER_ID_NOT_REGISTERED.
func TestClusterUnregisterADecommissionedBroker(t *testing.T) {
	c := startClusterN(t, 3, nil)
	id, _ := c.addNode(t, "broker", map[string]string{
		"GOKAFKA_CONTROLLER_QUORUM_VOTERS":            "",
		"GOKAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS": c.bootstrapServers(),
	})
	const topic = "decommission"
	c.createTopicAssigned(t, topic, [][]int32{{id, 1, 2}})
	adm := c.admin(t)
	targets := map[int32][]int32{0: {1, 2, 3}}
	reassign(t, adm, topic, targets)
	c.waitReassigned(t, adm, topic, targets)
	c.waitNoPartitionDir(t, id, topic, 0)
	c.node(id).Stop()

	cl := c.client(t)
	unregister := func() int16 {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(testCtx(t, 15*time.Second), cl)
		if err != nil {
			t.Fatalf("UnregisterBroker: %v", err)
		}
		return resp.ErrorCode
	}
	if code := unregister(); code != 0 {
		t.Fatalf("UnregisterBroker %d: %v", id, kerr.ErrorForCode(code))
	}
	c.waitLiveBrokers(t, []int32{1, 2, 3})
	if code := unregister(); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering %d again: %v, want BROKER_ID_NOT_REGISTERED", id, kerr.ErrorForCode(code))
	}
	// The cluster goes on with the three that are left.
	c.createTopic(t, "after-decommission", 3, nil)
}

// quorumView is DescribeQuorum's answer, asked of the cluster's brokers
// (which forward it to the active controller).
type quorumView struct {
	leader, epoch       int32
	hw                  int64
	voters, observers   []int32
	unknownVoterOffsets int
}

func (c *cluster) describeQuorum(t *testing.T, cl *kgo.Client) (quorumView, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 15*time.Second), cl)
	if err != nil {
		return quorumView{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return quorumView{}, err
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return quorumView{}, err
	}
	v := quorumView{leader: p.LeaderID, epoch: p.LeaderEpoch, hw: p.HighWatermark}
	for _, r := range p.CurrentVoters {
		v.voters = append(v.voters, r.ReplicaID)
		if r.LogEndOffset < 0 {
			v.unknownVoterOffsets++
		}
	}
	for _, r := range p.Observers {
		v.observers = append(v.observers, r.ReplicaID)
	}
	slices.Sort(v.voters)
	slices.Sort(v.observers)
	return v, nil
}

// waitQuorum waits until DescribeQuorum shows voters and observers.
func (c *cluster) waitQuorum(t *testing.T, cl *kgo.Client, voters, observers []int32) quorumView {
	t.Helper()
	var v quorumView
	eventually(t, 60*time.Second, func() error {
		var err error
		if v, err = c.describeQuorum(t, cl); err != nil {
			return err
		}
		if !slices.Equal(v.voters, voters) || !slices.Equal(v.observers, observers) {
			return fmt.Errorf("voters %v observers %v, want %v and %v", v.voters, v.observers, voters, observers)
		}
		return nil
	})
	return v
}

// TestClusterRaftVoterChangesPromoteAnObserverAndDemoteIt adds a fourth
// node with the controller role outside controller.quorum.voters: it
// joins as an observer, AddRaftVoter makes it a voter and RemoveRaftVoter
// an observer again (it is a broker too), with DescribeQuorum showing
// each step and Kafka's DUPLICATE_VOTER and VOTER_NOT_FOUND for the
// repeated changes. The quorum keeps making changes throughout.
func TestClusterRaftVoterChangesPromoteAnObserverAndDemoteIt(t *testing.T) {
	c := startCluster(t, nil)
	cl := c.client(t)
	v := c.waitQuorum(t, cl, []int32{1, 2, 3}, nil)
	if v.leader < 1 || v.leader > 3 || v.epoch < 1 || v.hw <= 0 {
		t.Fatalf("quorum %+v", v)
	}
	eventually(t, 30*time.Second, func() error {
		v, err := c.describeQuorum(t, cl)
		if err == nil && v.unknownVoterOffsets > 0 {
			err = fmt.Errorf("%d voters with no known log end offset", v.unknownVoterOffsets)
		}
		return err
	})

	// A node that does not follow the quorum cannot become a voter.
	stranger := kmsg.NewPtrAddRaftVoterRequest()
	stranger.VoterID, stranger.TimeoutMillis = 9, 5000
	stranger.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(freePort(t))}}
	if resp, err := stranger.RequestWith(testCtx(t, 30*time.Second), cl); err != nil || resp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("adding a voter that is not running: %v %+v, want REQUEST_TIMED_OUT", err, resp)
	}

	id, ctrl := c.addNode(t, "broker,controller", nil)
	c.waitQuorum(t, cl, []int32{1, 2, 3}, []int32{id})

	add := func() int16 {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = id, 15000
		req.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(ctrl)}}
		resp, err := req.RequestWith(testCtx(t, 30*time.Second), cl)
		if err != nil {
			t.Fatalf("AddRaftVoter: %v", err)
		}
		return resp.ErrorCode
	}
	remove := func() int16 {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(testCtx(t, 30*time.Second), cl)
		if err != nil {
			t.Fatalf("RemoveRaftVoter: %v", err)
		}
		return resp.ErrorCode
	}
	if code := add(); code != 0 {
		t.Fatalf("AddRaftVoter %d: %v", id, kerr.ErrorForCode(code))
	}
	c.waitQuorum(t, cl, []int32{1, 2, 3, id}, nil)
	if code := add(); code != kerr.DuplicateVoter.Code {
		t.Fatalf("adding voter %d again: %v, want DUPLICATE_VOTER", id, kerr.ErrorForCode(code))
	}
	c.createTopic(t, "four-voters", 1, nil)

	if code := remove(); code != 0 {
		t.Fatalf("RemoveRaftVoter %d: %v", id, kerr.ErrorForCode(code))
	}
	c.waitQuorum(t, cl, []int32{1, 2, 3}, []int32{id})
	if code := remove(); code != kerr.VoterNotFound.Code {
		t.Fatalf("removing voter %d again: %v, want VOTER_NOT_FOUND", id, kerr.ErrorForCode(code))
	}
	c.createTopic(t, "three-voters-again", 1, nil)
}

// TestClusterControllerOnlyQuorumSurvivesLosingItsLeader runs three
// controller-only voters and two broker-only nodes, kills the active
// controller, and checks that the others elect a new one that the brokers
// follow: they stay live, and a topic created afterwards is written and
// read.
func TestClusterControllerOnlyQuorumSurvivesLosingItsLeader(t *testing.T) {
	c := startRolesCluster(t, []string{"controller", "controller", "controller", "broker", "broker"})
	cl := c.client(t)
	v := c.waitQuorum(t, cl, []int32{1, 2, 3}, []int32{4, 5})
	old := v.leader
	if old < 1 || old > 3 {
		t.Fatalf("quorum leader %d, want a controller", old)
	}
	c.node(old).Kill()
	eventually(t, 60*time.Second, func() error {
		v, err := c.describeQuorum(t, cl)
		if err != nil {
			return err
		}
		if v.leader == old || v.leader < 1 || v.leader > 3 {
			return fmt.Errorf("quorum leader %d", v.leader)
		}
		return nil
	})
	c.waitLiveBrokers(t, []int32{4, 5})

	const topic, parts = "after-controller-failover", 2
	if _, err := c.admin(t).CreateTopic(testCtx(t, 30*time.Second), parts, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		c.waitPartition(t, topic, p, "a leader and a full ISR on the brokers", func(s partState) bool {
			return s.Leader >= 4 && slices.Equal(s.ISR, []int32{4, 5})
		})
	}
	prod := startSeqProducer(t, seqProducerClient(t, c), topic, parts, 5)
	prod.waitMoreAcks(t, 200, "after the controller failover")
	prod.stop(t)
	checkAckedPresent(t, prod, seqRecords(t, c.consumeAll(t, topic, parts), parts))
}
