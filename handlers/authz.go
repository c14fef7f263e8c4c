package handlers

// Authorization: the one place the handlers ask the authorizer (package
// acl) whether a request's principal may do something, and log the
// answer. With no authorizer (authorizer.class.name empty) everything is
// allowed, as before ACLs existed.
//
// Which operation each API checks follows Kafka's KafkaApis; each
// handler's file says what it checks. Refusals answer Kafka's
// *_AUTHORIZATION_FAILED codes through errorCode, like every other error.
//
// A request forwarded by another node to the active controller (a
// CreateTopics, CreateAcls, ... that the node already authorized for its
// client, cluster.IsForwarded) is allowed when the forwarding node's own
// principal has CLUSTER_ACTION, as Kafka trusts an Envelope from a
// principal with CLUSTER_ACTION. With an authorizer on, a node's own
// principal must therefore be a super user (super.users), as Kafka
// requires of its brokers. Every broker-to-broker API (InterBrokerAPI)
// needs CLUSTER_ACTION on the cluster (refuseClusterAction, run by guard
// in roles.go), as do the replica forms of Fetch and
// OffsetForLeaderEpoch and AddPartitionsToTxn v4+.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/internal/kafkaerr"
	"github.com/gokafka/gokafka/protocol"
)

var (
	errTopicAuthorization   = kafkaerr.New(kerr.TopicAuthorizationFailed, "topic authorization failed")
	errGroupAuthorization   = kafkaerr.New(kerr.GroupAuthorizationFailed, "group authorization failed")
	errClusterAuthorization = kafkaerr.New(kerr.ClusterAuthorizationFailed, "cluster authorization failed")
	errTxnIDAuthorization   = kafkaerr.New(kerr.TransactionalIDAuthorizationFailed, "transactional id authorization failed")
	errSecurityDisabled     = kafkaerr.New(kerr.SecurityDisabled, "no authorizer is configured on the broker")
)

// authzOff is the KIP-430 authorized-operations value that says "not
// requested" (INT32_MIN).
const authzOff = int32(-2147483648)

// aclRequest is who a request acts as, for the authorizer.
func aclRequest(req *protocol.Request) acl.Request {
	return acl.Request{Principal: req.Conn.Principal().String(), Host: req.Conn.ClientHost()}
}

// authorize reports whether req's principal may perform op on the named
// resource, logging the decision at debug.
func (h *Handlers) authorize(req *protocol.Request, op acl.Operation, rt acl.ResourceType, name string) bool {
	if h.authz == nil {
		return true
	}
	r := aclRequest(req)
	ok := h.authz.Authorize(r, op, rt, name)
	if !ok && cluster.IsForwarded(req.ClientID) && h.authz.Authorize(r, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName) {
		ok = true
	}
	req.Logger().Debug().Str("principal", r.Principal).Str("host", r.Host).Str("operation", op.String()).
		Str("resource_type", rt.String()).Str("resource", name).Bool("allowed", ok).Msg("authorization")
	return ok
}

// authorizeCluster checks op on the cluster resource.
func (h *Handlers) authorizeCluster(req *protocol.Request, op acl.Operation) bool {
	return h.authorize(req, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizeByType reports whether req's principal may perform op on some
// resource of type rt (acl.Authorizer.AuthorizeByResourceType).
func (h *Handlers) authorizeByType(req *protocol.Request, op acl.Operation, rt acl.ResourceType) bool {
	if h.authz == nil {
		return true
	}
	r := aclRequest(req)
	ok := h.authz.AuthorizeByResourceType(r, op, rt)
	req.Logger().Debug().Str("principal", r.Principal).Str("host", r.Host).Str("operation", op.String()).
		Str("resource_type", rt.String()).Str("resource", "*any*").Bool("allowed", ok).Msg("authorization")
	return ok
}

// topicAuthorizer returns a check of op on topics that asks the
// authorizer once per distinct name of the request.
func (h *Handlers) topicAuthorizer(req *protocol.Request, op acl.Operation) func(topic string) bool {
	if h.authz == nil {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(topic string) bool {
		ok, done := seen[topic]
		if !done {
			ok = h.authorize(req, op, acl.ResourceTopic, topic)
			seen[topic] = ok
		}
		return ok
	}
}

// authorizedOperations is KIP-430's bit field of the operations req's
// principal may perform on the named resource (bit n for the operation
// with code n). Without an authorizer it lists every operation the
// resource type supports, as Kafka does.
func (h *Handlers) authorizedOperations(req *protocol.Request, rt acl.ResourceType, name string) int32 {
	var ops []acl.Operation
	if h.authz == nil {
		ops = acl.SupportedOperations(rt)
	} else {
		ops = h.authz.AuthorizedOperations(aclRequest(req), rt, name)
	}
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

// authorizeMember checks a KIP-848 or share group heartbeat as Kafka
// does: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on
// every subscribed topic (TOPIC_AUTHORIZATION_FAILED if any is refused).
func (h *Handlers) authorizeMember(req *protocol.Request, groupID string, subscribed []string) error {
	if !h.authorize(req, acl.OpRead, acl.ResourceGroup, groupID) {
		return errGroupAuthorization
	}
	describe := h.topicAuthorizer(req, acl.OpDescribe)
	var refused []string
	for _, t := range subscribed {
		if !describe(t) {
			refused = append(refused, t)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: the member is not authorized to describe topics %v", errTopicAuthorization, refused)
	}
	return nil
}

// shareTopicAuthorizer checks READ on topics named by id (ShareFetch,
// ShareAcknowledge); an id this broker does not know is left to the share
// code to answer.
func (h *Handlers) shareTopicAuthorizer(req *protocol.Request) func(id [16]byte) bool {
	if h.authz == nil {
		return func([16]byte) bool { return true }
	}
	im := h.meta.Image()
	read := h.topicAuthorizer(req, acl.OpRead)
	return func(id [16]byte) bool {
		t := im.TopicByID(cluster.TopicID(id))
		return t == nil || read(t.Name)
	}
}

// authorizeConfigResource checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
// a config resource as Kafka's ConfigHelper does: a topic on the topic,
// a group on the group, brokers, broker loggers and anything else on the
// cluster; the error is the resource's own authorization failure.
func (h *Handlers) authorizeConfigResource(req *protocol.Request, op acl.Operation, typ int8, name string) error {
	switch typ {
	case resourceTopic:
		if !h.authorize(req, op, acl.ResourceTopic, name) {
			return errTopicAuthorization
		}
	case resourceGroup:
		if !h.authorize(req, op, acl.ResourceGroup, name) {
			return errGroupAuthorization
		}
	default:
		if !h.authorizeCluster(req, op) {
			return errClusterAuthorization
		}
	}
	return nil
}

// refuseClusterAction checks CLUSTER_ACTION on the cluster for a
// broker-to-broker request (InterBrokerAPI), as Kafka checks every one of
// them. A refused request with a top-level error code is answered
// CLUSTER_AUTHORIZATION_FAILED; one without (resp nil) has its connection
// closed. WriteTxnMarkers answers per partition in its own handler.
func (h *Handlers) refuseClusterAction(req *protocol.Request) (resp kmsg.Response, refused bool) {
	if req.Key == int16(kmsg.WriteTxnMarkers) || h.authorizeCluster(req, acl.OpClusterAction) {
		return nil, false
	}
	req.Logger().Warn().Str("api", kmsg.NameForKey(req.Key)).Str("principal", req.Conn.Principal().String()).
		Msg("broker-to-broker request without CLUSTER_ACTION refused")
	code := errorCode(errClusterAuthorization)
	switch r := req.Body.ResponseKind().(type) {
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
		return r, true
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
		return r, true
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
		return r, true
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
		return r, true
	case *kmsg.AssignReplicasToDirsResponse:
		r.ErrorCode = code
		return r, true
	}
	return nil, true
}
