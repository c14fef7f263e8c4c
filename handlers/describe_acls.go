package handlers

// DescribeAcls (key 29), v0-v3, as Kafka 3.9 serves it (kafka-python
// 2.0.2 takes DescribeAcls v2 for a 2.5 broker). v0 filters carry no
// pattern type: they are LITERAL.
//
// It needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); with no
// authorizer configured it answers SECURITY_DISABLED, as Kafka does. A
// filter with an unknown resource type, pattern type, operation or
// permission answers INVALID_REQUEST. The bindings come from this
// broker's metadata, grouped by resource pattern.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerACLs(reg *protocol.Registry) {
	reg.Register(29, 0, 3, h.describeACLs)
	reg.Register(30, 0, 3, h.createACLs)
	reg.Register(31, 0, 3, h.deleteACLs)
}

func (h *Handlers) describeACLs(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if h.authz == nil {
		return fail(errSecurityDisabled)
	}
	if !h.authorizeCluster(req, acl.OpDescribe) {
		return fail(errClusterAuthorization)
	}
	f := acl.Filter{
		ResourceType: acl.ResourceType(r.ResourceType), ResourceName: r.ResourceName,
		PatternType: acl.PatternType(r.ResourcePatternType), Principal: r.Principal, Host: r.Host,
		Operation: acl.Operation(r.Operation), Permission: acl.Permission(r.PermissionType),
	}
	if req.Version == 0 {
		f.PatternType = acl.PatternLiteral
	}
	if err := f.Validate(); err != nil {
		return fail(err)
	}
	for _, b := range h.meta.Image().DescribeACLs(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(b.ResourceType) ||
			resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(b.PatternType) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(b.ResourceType)
			res.ResourceName = b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal, b.Host
		a.Operation = kmsg.ACLOperation(b.Operation)
		a.PermissionType = kmsg.ACLPermissionType(b.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp, nil
}
