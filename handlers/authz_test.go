package handlers

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/protocol"
)

// authzStack is limitsStack's broker (topic "t", one partition it leads,
// and a topic "secret") served by handlers with an authorizer holding
// bindings, and a producer-id allocator; no coordinators, so a request
// that passes authorization on a group or transactional id answers
// COORDINATOR_NOT_AVAILABLE.
func authzStack(t *testing.T, cfg acl.Config, bindings ...acl.Binding) *Handlers {
	t.Helper()
	base := limitsStack(t, Config{NodeID: 1}, 1, 1)
	meta := base.meta.(*limitsMeta)
	meta.mu.Lock()
	secret := &cluster.TopicInfo{Name: "secret", ID: cluster.TopicID{9}, Partitions: []cluster.PartitionInfo{{Partition: 0, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}}}
	meta.img.Topics["secret"] = secret
	meta.img.IDs[secret.ID] = "secret"
	meta.mu.Unlock()
	a := acl.New(cfg)
	a.Update(bindings)
	pids := idempotent.NewAllocator(func(context.Context) (int64, int32, error) { return 1000, 100, nil })
	return New(protocol.NewRegistry(), Config{NodeID: 1}, Deps{Meta: base.meta, Replicas: base.replicas, ProducerIDs: pids, Authorizer: a})
}

func allowACL(rt acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: acl.Allow}
}

func denyACL(rt acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	b := allowACL(rt, name, pt, principal, op)
	b.Permission = acl.Deny
	return b
}

// as sends body to h's handler (through the same wrapping every request
// takes) on a connection authenticated as principal from 10.0.0.1.
func as(t *testing.T, h *Handlers, principal string, version int16, body kmsg.Request) kmsg.Response {
	t.Helper()
	body.SetVersion(version)
	fn, ok := h.reg.Handler(body.Key(), version)
	if !ok {
		t.Fatalf("%s v%d not served", kmsg.NameForKey(body.Key()), version)
	}
	conn := &protocol.ConnInfo{RemoteAddr: "10.0.0.1:40000"}
	typ, name, _ := strings.Cut(principal, ":")
	conn.SetPrincipal(protocol.Principal{Type: typ, Name: name})
	resp, err := fn(context.Background(), &protocol.Request{Key: body.Key(), Version: version, Body: body, Conn: conn, ClientID: "test"})
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(body.Key()), err)
	}
	return resp
}

func produceReq(topic string, txnID *string, batch []byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Acks, r.TimeoutMillis, r.TransactionID = 1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func produceCode(t *testing.T, h *Handlers, principal, topic string, txnID *string, batch []byte) int16 {
	t.Helper()
	return as(t, h, principal, 9, produceReq(topic, txnID, batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// txnBatch is a transactional batch of producer 1000, epoch 0.
func txnBatch() []byte {
	b := testBatch(1, 10)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint64(b[43:], 1000)
	binary.BigEndian.PutUint16(b[51:], 0)
	binary.BigEndian.PutUint32(b[53:], 0)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

var (
	topicAuthz   = kerr.TopicAuthorizationFailed.Code
	groupAuthz   = kerr.GroupAuthorizationFailed.Code
	clusterAuthz = kerr.ClusterAuthorizationFailed.Code
	txnAuthz     = kerr.TransactionalIDAuthorizationFailed.Code
)

func TestProduceNeedsWriteOnTheTopic(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternPrefixed, "User:alice", acl.OpWrite),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:carol", acl.OpAll),
		denyACL(acl.ResourceTopic, "*", acl.PatternLiteral, "User:carol", acl.OpWrite),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:dave", acl.OpRead))
	if code := produceCode(t, h, "User:alice", "t", nil, testBatch(1, 10)); code != 0 {
		t.Fatalf("a producer with WRITE on a prefix of the topic: code %d", code)
	}
	for _, p := range []string{"User:bob", "User:carol", "User:dave"} {
		// bob has no ACL, carol's ALLOW ALL loses to a DENY on every
		// topic, dave may only read.
		if code := produceCode(t, h, p, "t", nil, testBatch(1, 10)); code != topicAuthz {
			t.Fatalf("%s produced: code %d, want TOPIC_AUTHORIZATION_FAILED", p, code)
		}
	}
}

func TestSuperUserProducesDespiteDenyACLs(t *testing.T) {
	h := authzStack(t, acl.Config{SuperUsers: []string{"User:admin"}},
		denyACL(acl.ResourceTopic, "*", acl.PatternLiteral, "User:*", acl.OpAll))
	if code := produceCode(t, h, "User:admin", "t", nil, testBatch(1, 10)); code != 0 {
		t.Fatalf("super user: code %d", code)
	}
	if code := produceCode(t, h, "User:alice", "t", nil, testBatch(1, 10)); code != topicAuthz {
		t.Fatalf("ordinary user: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

func TestAllowEveryoneIfNoACLFoundLetsUnguardedTopicsThrough(t *testing.T) {
	h := authzStack(t, acl.Config{AllowIfNoACL: true},
		allowACL(acl.ResourceTopic, "secret", acl.PatternLiteral, "User:bob", acl.OpWrite))
	if code := produceCode(t, h, "User:alice", "t", nil, testBatch(1, 10)); code != 0 {
		t.Fatalf("a topic without ACLs: code %d", code)
	}
	if code := produceCode(t, h, "User:alice", "secret", nil, testBatch(1, 10)); code != topicAuthz {
		t.Fatalf("a topic with ACLs for someone else: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

func TestTransactionalProducerWithoutTheTransactionalIDACL(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpWrite),
		allowACL(acl.ResourceTransactionalID, "app-", acl.PatternPrefixed, "User:bob", acl.OpWrite),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:bob", acl.OpWrite))
	id := "app-1"
	if code := produceCode(t, h, "User:alice", "t", &id, txnBatch()); code != txnAuthz {
		t.Fatalf("transactional produce without WRITE on the id: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", code)
	}
	init := func(p string) int16 {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionalID, r.TransactionTimeoutMillis = &id, 60000
		return as(t, h, p, 4, r).(*kmsg.InitProducerIDResponse).ErrorCode
	}
	if code := init("User:alice"); code != txnAuthz {
		t.Fatalf("InitProducerId without WRITE on the id: code %d", code)
	}
	if code := init("User:bob"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("InitProducerId with WRITE on the id: code %d, want it past authorization (no coordinator here)", code)
	}
	for _, body := range []kmsg.Request{
		&kmsg.EndTxnRequest{TransactionalID: id},
		&kmsg.AddOffsetsToTxnRequest{TransactionalID: id, Group: "g"},
	} {
		resp := as(t, h, "User:alice", 3, body)
		var code int16
		switch r := resp.(type) {
		case *kmsg.EndTxnResponse:
			code = r.ErrorCode
		case *kmsg.AddOffsetsToTxnResponse:
			code = r.ErrorCode
		}
		if code != txnAuthz {
			t.Fatalf("%s without WRITE on the id: code %d", kmsg.NameForKey(body.Key()), code)
		}
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID = id
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}
	got := as(t, h, "User:bob", 3, add).(*kmsg.AddPartitionsToTxnResponse)
	codes := map[string]int16{}
	for _, rt := range got.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["secret"] != topicAuthz || codes["t"] != kerr.OperationNotAttempted.Code {
		t.Fatalf("AddPartitionsToTxn with a topic bob may not write: %v", codes)
	}
}

func TestIdempotentProducerNeedsIdempotentWriteOrWriteOnATopic(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpWrite),
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:bob", acl.OpIdempotentWrite),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:carol", acl.OpRead))
	for p, want := range map[string]int16{"User:alice": 0, "User:bob": 0, "User:carol": clusterAuthz} {
		r := kmsg.NewPtrInitProducerIDRequest()
		if code := as(t, h, p, 4, r).(*kmsg.InitProducerIDResponse).ErrorCode; code != want {
			t.Errorf("%s: InitProducerId code %d, want %d", p, code, want)
		}
	}
}

func TestFetchNeedsReadAndAFollowerClusterAction(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpRead),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:bob", acl.OpDescribe))
	fetch := func(p string, replica int32) int16 {
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID, r.MaxBytes = replica, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return as(t, h, p, 11, r).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := fetch("User:alice", -1); code != 0 {
		t.Fatalf("consumer with READ: code %d", code)
	}
	if code := fetch("User:bob", -1); code != topicAuthz {
		t.Fatalf("consumer with DESCRIBE only: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	if code := fetch("User:alice", 2); code != topicAuthz {
		t.Fatalf("follower fetch without CLUSTER_ACTION: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "secret", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	if code := as(t, h, "User:alice", 4, lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != topicAuthz {
		t.Fatalf("ListOffsets without DESCRIBE: code %d", code)
	}
}

func TestMetadataHidesTopicsTheClientMayNotDescribe(t *testing.T) {
	h := authzStack(t, acl.Config{}, allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpRead))
	all := kmsg.NewPtrMetadataRequest()
	all.IncludeTopicAuthorizedOperations = true
	resp := as(t, h, "User:alice", 12, all).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" {
		t.Fatalf("all topics: %d listed, want only t", len(resp.Topics))
	}
	if got, want := resp.Topics[0].AuthorizedOperations, int32(1<<acl.OpRead|1<<acl.OpDescribe); got != want {
		t.Fatalf("topic authorized operations %b, want %b (READ and the DESCRIBE it implies)", got, want)
	}
	named := kmsg.NewPtrMetadataRequest()
	secret := "secret"
	named.Topics = []kmsg.MetadataRequestTopic{{Topic: &secret}}
	resp = as(t, h, "User:alice", 12, named).(*kmsg.MetadataResponse)
	if rt := resp.Topics[0]; rt.ErrorCode != topicAuthz || len(rt.Partitions) != 0 {
		t.Fatalf("named topic without DESCRIBE: code %d, %d partitions", rt.ErrorCode, len(rt.Partitions))
	}
	cl := kmsg.NewPtrMetadataRequest()
	cl.Topics = []kmsg.MetadataRequestTopic{}
	cl.IncludeClusterAuthorizedOperations = true
	if got := as(t, h, "User:alice", 10, cl).(*kmsg.MetadataResponse).AuthorizedOperations; got != 0 {
		t.Fatalf("cluster authorized operations without DESCRIBE on the cluster: %b", got)
	}
}

func TestConsumerWithoutGroupReadIsRefused(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:*", acl.OpRead),
		allowACL(acl.ResourceGroup, "ok-", acl.PatternPrefixed, "User:alice", acl.OpRead))
	codes := func(p, g string) []int16 {
		var out []int16
		out = append(out, as(t, h, p, 5, &kmsg.JoinGroupRequest{Group: g, ProtocolType: "consumer", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 10000}).(*kmsg.JoinGroupResponse).ErrorCode)
		out = append(out, as(t, h, p, 3, &kmsg.SyncGroupRequest{Group: g}).(*kmsg.SyncGroupResponse).ErrorCode)
		out = append(out, as(t, h, p, 3, &kmsg.HeartbeatRequest{Group: g}).(*kmsg.HeartbeatResponse).ErrorCode)
		out = append(out, as(t, h, p, 1, &kmsg.LeaveGroupRequest{Group: g}).(*kmsg.LeaveGroupResponse).ErrorCode)
		out = append(out, as(t, h, p, 3, &kmsg.FindCoordinatorRequest{CoordinatorKey: g}).(*kmsg.FindCoordinatorResponse).ErrorCode)
		out = append(out, as(t, h, p, 5, &kmsg.OffsetFetchRequest{Group: g}).(*kmsg.OffsetFetchResponse).ErrorCode)
		oc := &kmsg.OffsetCommitRequest{Group: g, Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}}
		out = append(out, as(t, h, p, 6, oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
		return out
	}
	for i, code := range codes("User:bob", "ok-g") {
		if code != groupAuthz {
			t.Errorf("request %d of a consumer without group READ: code %d, want GROUP_AUTHORIZATION_FAILED", i, code)
		}
	}
	for i, code := range codes("User:alice", "ok-g") {
		if code == groupAuthz || code == topicAuthz {
			t.Errorf("request %d of a consumer with group READ refused: code %d", i, code)
		}
	}
	oc := &kmsg.OffsetCommitRequest{Group: "ok-g", Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "secret", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}}
	if code := as(t, h, "User:alice", 6, oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != topicAuthz {
		t.Fatalf("commit to a topic the consumer may not read: code %d", code)
	}
	dg := as(t, h, "User:bob", 3, &kmsg.DescribeGroupsRequest{Groups: []string{"ok-g"}, IncludeAuthorizedOperations: true}).(*kmsg.DescribeGroupsResponse)
	if dg.Groups[0].ErrorCode != groupAuthz {
		t.Fatalf("DescribeGroups without DESCRIBE: code %d", dg.Groups[0].ErrorCode)
	}
	dg = as(t, h, "User:alice", 3, &kmsg.DescribeGroupsRequest{Groups: []string{"ok-g"}, IncludeAuthorizedOperations: true}).(*kmsg.DescribeGroupsResponse)
	if got, want := dg.Groups[0].AuthorizedOperations, int32(1<<acl.OpRead|1<<acl.OpDescribe); got != want {
		t.Fatalf("group authorized operations %b, want %b", got, want)
	}
	del := as(t, h, "User:alice", 2, &kmsg.DeleteGroupsRequest{Groups: []string{"ok-g"}}).(*kmsg.DeleteGroupsResponse)
	if del.Groups[0].ErrorCode != groupAuthz {
		t.Fatalf("DeleteGroups without DELETE: code %d", del.Groups[0].ErrorCode)
	}
}

func TestAdminAPIsCheckTheirOperations(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpDescribeConfigs),
		allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:admin", acl.OpAlter))
	ct := as(t, h, "User:alice", 5, &kmsg.CreateTopicsRequest{Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 1, ReplicationFactor: 1}}}).(*kmsg.CreateTopicsResponse)
	if ct.Topics[0].ErrorCode != topicAuthz {
		t.Errorf("CreateTopics without CREATE: code %d", ct.Topics[0].ErrorCode)
	}
	dt := as(t, h, "User:alice", 4, &kmsg.DeleteTopicsRequest{TopicNames: []string{"t"}}).(*kmsg.DeleteTopicsResponse)
	if dt.Topics[0].ErrorCode != topicAuthz {
		t.Errorf("DeleteTopics without DELETE: code %d", dt.Topics[0].ErrorCode)
	}
	cp := as(t, h, "User:alice", 1, &kmsg.CreatePartitionsRequest{Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}}).(*kmsg.CreatePartitionsResponse)
	if cp.Topics[0].ErrorCode != topicAuthz {
		t.Errorf("CreatePartitions without ALTER: code %d", cp.Topics[0].ErrorCode)
	}
	dc := as(t, h, "User:alice", 1, &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{
		{ResourceType: resourceTopic, ResourceName: "t"}, {ResourceType: resourceTopic, ResourceName: "secret"}, {ResourceType: resourceBroker, ResourceName: "1"},
	}}).(*kmsg.DescribeConfigsResponse)
	if got := []int16{dc.Resources[0].ErrorCode, dc.Resources[1].ErrorCode, dc.Resources[2].ErrorCode}; !slices.Equal(got, []int16{0, topicAuthz, clusterAuthz}) {
		t.Errorf("DescribeConfigs codes %v, want [0 TOPIC CLUSTER authorization failures]", got)
	}
	ld := as(t, h, "User:alice", 3, &kmsg.DescribeLogDirsRequest{}).(*kmsg.DescribeLogDirsResponse)
	if ld.ErrorCode != clusterAuthz || len(ld.Dirs) != 0 {
		t.Errorf("DescribeLogDirs without DESCRIBE on the cluster: code %d, %d dirs", ld.ErrorCode, len(ld.Dirs))
	}
	dcl := as(t, h, "User:admin", 0, &kmsg.DescribeClusterRequest{IncludeClusterAuthorizedOperations: true}).(*kmsg.DescribeClusterResponse)
	if got, want := dcl.ClusterAuthorizedOperations, int32(1<<acl.OpAlter|1<<acl.OpDescribe); got != want {
		t.Errorf("cluster authorized operations %b, want %b (ALTER and the DESCRIBE it implies)", got, want)
	}
}

func TestBrokerToBrokerRequestsNeedClusterAction(t *testing.T) {
	h := authzStack(t, acl.Config{SuperUsers: []string{"User:broker"}})
	wm := &kmsg.WriteTxnMarkersRequest{Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}}
	if code := as(t, h, "User:alice", 1, wm).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != clusterAuthz {
		t.Fatalf("WriteTxnMarkers without CLUSTER_ACTION: code %d", code)
	}
	if code := as(t, h, "User:broker", 1, wm).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code == clusterAuthz {
		t.Fatal("WriteTxnMarkers from a super user refused")
	}
	ole := &kmsg.OffsetForLeaderEpochRequest{ReplicaID: 2, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, LeaderEpoch: 1, CurrentLeaderEpoch: -1}}}}}
	if code := as(t, h, "User:alice", 3, ole).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode; code != clusterAuthz {
		t.Fatalf("a replica's OffsetForLeaderEpoch without CLUSTER_ACTION: code %d", code)
	}
}

func TestACLAPIsNeedAnAuthorizerAndClusterRights(t *testing.T) {
	plain := limitsStack(t, Config{NodeID: 1}, 1, 1)
	d := as(t, plain, "User:alice", 1, kmsg.NewPtrDescribeACLsRequest()).(*kmsg.DescribeACLsResponse)
	if d.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: code %d, want SECURITY_DISABLED", d.ErrorCode)
	}
	c := as(t, plain, "User:alice", 1, &kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{}}}).(*kmsg.CreateACLsResponse)
	if c.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without an authorizer: code %d, want SECURITY_DISABLED", c.Results[0].ErrorCode)
	}

	stored := allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpRead)
	h := authzStack(t, acl.Config{}, allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:admin", acl.OpDescribe))
	h.meta.(*limitsMeta).img.ACLs = []acl.Binding{stored}
	c = as(t, h, "User:admin", 1, &kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{}}}).(*kmsg.CreateACLsResponse)
	if c.Results[0].ErrorCode != clusterAuthz {
		t.Fatalf("CreateAcls without ALTER on the cluster: code %d", c.Results[0].ErrorCode)
	}
	del := as(t, h, "User:admin", 1, &kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{{}}}).(*kmsg.DeleteACLsResponse)
	if del.Results[0].ErrorCode != clusterAuthz {
		t.Fatalf("DeleteAcls without ALTER on the cluster: code %d", del.Results[0].ErrorCode)
	}
	if d := as(t, h, "User:alice", 1, kmsg.NewPtrDescribeACLsRequest()).(*kmsg.DescribeACLsResponse); d.ErrorCode != clusterAuthz {
		t.Fatalf("DescribeAcls without DESCRIBE on the cluster: code %d", d.ErrorCode)
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	name := "t"
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeMatch
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	d = as(t, h, "User:admin", 1, req).(*kmsg.DescribeACLsResponse)
	if d.ErrorCode != 0 || len(d.Resources) != 1 || len(d.Resources[0].ACLs) != 1 || d.Resources[0].ACLs[0].Principal != "User:alice" {
		t.Fatalf("DescribeAcls MATCH t: code %d, resources %+v", d.ErrorCode, d.Resources)
	}
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeUnknown
	if d = as(t, h, "User:admin", 1, req).(*kmsg.DescribeACLsResponse); d.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("DescribeAcls with an unknown pattern type: code %d, want INVALID_REQUEST", d.ErrorCode)
	}
}

func TestKIP848AndShareGroupAPIsCheckGroupAndTopics(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceGroup, "g", acl.PatternLiteral, "User:alice", acl.OpRead),
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpDescribe))
	hb := func(p string, topics ...string) int16 {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberEpoch, r.SubscribedTopicNames = "g", 0, topics
		return as(t, h, p, 0, r).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	if code := hb("User:bob", "t"); code != groupAuthz {
		t.Errorf("ConsumerGroupHeartbeat without group READ: code %d", code)
	}
	if code := hb("User:alice", "t", "secret"); code != topicAuthz {
		t.Errorf("ConsumerGroupHeartbeat subscribing to a topic it may not describe: code %d", code)
	}
	if code := hb("User:alice", "t"); code == groupAuthz || code == topicAuthz {
		t.Errorf("ConsumerGroupHeartbeat with its rights refused: code %d", code)
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{"g"}
	if code := as(t, h, "User:alice", 0, cgd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode; code == groupAuthz {
		t.Error("ConsumerGroupDescribe with READ (implying DESCRIBE) refused")
	}
	if code := as(t, h, "User:bob", 0, cgd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode; code != groupAuthz {
		t.Errorf("ConsumerGroupDescribe without DESCRIBE: code %d", code)
	}
	members := []kmsg.ConsumerGroupDescribeResponseGroupMember{{SubscribedTopics: []string{"t"}, Assignment: kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{{Topic: "secret"}}}}}
	if got := undescribableTopics(members, h.topicAuthorizer(&protocol.Request{Conn: aliceConn()}, acl.OpDescribe)); !slices.Equal(got, []string{"secret"}) {
		t.Errorf("topics of a described group alice may not describe: %v, want [secret]", got)
	}
	sgo := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	sgo.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}}
	if code := as(t, h, "User:bob", 0, sgo).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode; code != groupAuthz {
		t.Errorf("DescribeShareGroupOffsets without DESCRIBE on the group: code %d", code)
	}
}

func aliceConn() *protocol.ConnInfo {
	c := &protocol.ConnInfo{RemoteAddr: "10.0.0.1:40000"}
	c.SetPrincipal(protocol.Principal{Type: "User", Name: "alice"})
	return c
}

func TestProducerTransactionAndQuotaDescribesAreAuthorized(t *testing.T) {
	h := authzStack(t, acl.Config{},
		allowACL(acl.ResourceTopic, "t", acl.PatternLiteral, "User:alice", acl.OpRead),
		allowACL(acl.ResourceTransactionalID, "tx", acl.PatternLiteral, "User:alice", acl.OpDescribe))
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}
	got := as(t, h, "User:alice", 0, dp).(*kmsg.DescribeProducersResponse)
	// The allowed topic's answer is whatever its replica says (this
	// stack's replica may not lead it yet); only the refusal is
	// authorization's.
	if got.Topics[0].Partitions[0].ErrorCode == topicAuthz || got.Topics[1].Partitions[0].ErrorCode != topicAuthz {
		t.Errorf("DescribeProducers codes %d, %d; want not and TOPIC_AUTHORIZATION_FAILED", got.Topics[0].Partitions[0].ErrorCode, got.Topics[1].Partitions[0].ErrorCode)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx", "other"}
	states := as(t, h, "User:alice", 0, dt).(*kmsg.DescribeTransactionsResponse).TransactionStates
	if states[0].ErrorCode == txnAuthz || states[1].ErrorCode != txnAuthz {
		t.Errorf("DescribeTransactions codes %d, %d; want tx past authorization and other TRANSACTIONAL_ID_AUTHORIZATION_FAILED", states[0].ErrorCode, states[1].ErrorCode)
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
	if code := as(t, h, "User:alice", 1, dr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode; code != topicAuthz {
		t.Errorf("DeleteRecords without DELETE: code %d", code)
	}
	if code := as(t, h, "User:alice", 1, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse).ErrorCode; code != clusterAuthz {
		t.Errorf("DescribeClientQuotas without DESCRIBE_CONFIGS on the cluster: code %d", code)
	}
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	aq.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}}}}
	if code := as(t, h, "User:alice", 1, aq).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode; code != clusterAuthz {
		t.Errorf("AlterClientQuotas without ALTER_CONFIGS on the cluster: code %d", code)
	}
}

func TestSCRAMCredentialAPIsNeedClusterRights(t *testing.T) {
	h := authzStack(t, acl.Config{}, allowACL(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, "User:admin", acl.OpDescribe))
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "bob", Mechanism: 1}}
	if res := as(t, h, "User:admin", 0, alter).(*kmsg.AlterUserSCRAMCredentialsResponse).Results; len(res) != 1 || res[0].ErrorCode != clusterAuthz {
		t.Fatalf("AlterUserScramCredentials without ALTER on the cluster: %+v", res)
	}
	if d := as(t, h, "User:alice", 0, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse); d.ErrorCode != clusterAuthz {
		t.Fatalf("DescribeUserScramCredentials without DESCRIBE on the cluster: code %d", d.ErrorCode)
	}
	if d := as(t, h, "User:admin", 0, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse); d.ErrorCode != 0 {
		t.Fatalf("DescribeUserScramCredentials with DESCRIBE on the cluster: code %d", d.ErrorCode)
	}
}
