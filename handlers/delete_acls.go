package handlers

// DeleteAcls (key 31), v0-v3. v0 filters carry no pattern type: they are
// LITERAL.
//
// It needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
// filter); with no authorizer configured every filter answers
// SECURITY_DISABLED. A filter with an unknown resource type, pattern
// type, operation or permission answers INVALID_REQUEST; the others
// delete, through the active controller, the bindings they match (MATCH
// and ANY included), each reported under the first filter that matched
// it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) deleteACLs(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	errs := make([]error, len(r.Filters))
	matched := make([][]acl.Binding, len(r.Filters))
	switch {
	case h.authz == nil:
		fillErrs(errs, errSecurityDisabled)
	case !h.authorizeCluster(req, acl.OpAlter):
		fillErrs(errs, errClusterAuthorization)
	case h.ctrl == nil:
		fillErrs(errs, kerr.UnsupportedVersion)
	default:
		filters := make([]acl.Filter, len(r.Filters))
		for i, f := range r.Filters {
			filters[i] = acl.Filter{
				ResourceType: acl.ResourceType(f.ResourceType), ResourceName: f.ResourceName,
				PatternType: acl.PatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
				Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType),
			}
			if req.Version == 0 {
				filters[i].PatternType = acl.PatternLiteral
			}
		}
		matched, errs = h.ctrl.DeleteACLs(ctx, filters)
		if anyNil(errs) {
			h.awaitPropagation(ctx, req, defaultPropagationTimeout)
		}
	}
	for i, err := range errs {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		for _, b := range matched[i] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType = kmsg.ACLResourceType(b.ResourceType)
			m.ResourceName = b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation = kmsg.ACLOperation(b.Operation)
			m.PermissionType = kmsg.ACLPermissionType(b.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
