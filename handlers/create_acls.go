package handlers

// CreateAcls (key 30), v0-v3. v0 creations carry no pattern type: they
// are LITERAL.
//
// It needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
// creation); with no authorizer configured every creation answers
// SECURITY_DISABLED. Each binding is validated on its own as Kafka does
// (INVALID_REQUEST: an ANY or unknown type, pattern, operation or
// permission, an empty name, a cluster not named kafka-cluster, a
// principal without "Type:", an operation its resource type does not
// support), and the valid ones are stored in the metadata quorum through
// the active controller, so every broker sees them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) createACLs(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(r.Creations))
	switch {
	case h.authz == nil:
		fillErrs(errs, errSecurityDisabled)
	case !h.authorizeCluster(req, acl.OpAlter):
		fillErrs(errs, errClusterAuthorization)
	case h.ctrl == nil:
		fillErrs(errs, kerr.UnsupportedVersion)
	default:
		bindings := make([]acl.Binding, len(r.Creations))
		for i, c := range r.Creations {
			bindings[i] = acl.Binding{
				ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
				PatternType: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
				Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType),
			}
			if req.Version == 0 {
				bindings[i].PatternType = acl.PatternLiteral
			}
		}
		errs = h.ctrl.CreateACLs(ctx, bindings)
		if anyNil(errs) {
			h.awaitPropagation(ctx, req, defaultPropagationTimeout)
		}
	}
	for _, err := range errs {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		if err != nil {
			req.Logger().Debug().Err(err).Msg("acl creation refused")
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// fillErrs sets every element of errs to err.
func fillErrs(errs []error, err error) {
	for i := range errs {
		errs[i] = err
	}
}
