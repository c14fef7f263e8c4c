package handlers

// AlterClientQuotas (key 49) and DescribeClientQuotas (key 48), v0-v1
// (KIP-546).
//
// AlterClientQuotas sets or removes quota values of user, client-id and
// ip entities (a null name is the type's <default>); each entry is
// validated on its own as Kafka's controller does (INVALID_REQUEST for an
// unknown key or entity type, an empty or repeated entity part, a value
// that is not positive, a fractional byte rate), and the valid ones are
// applied through the metadata quorum, so that every broker enforces them
// (quotas.go). ValidateOnly checks without applying.
//
// DescribeClientQuotas answers from this broker's metadata: components
// match an entity type exactly (a name, or the default with a null
// match), its default, or any name; strict leaves out entities with
// other parts. A bad filter is answered with the request-level error
// (INVALID_REQUEST; UNSUPPORTED_VERSION for an unknown entity type).
//
// Authorization (authz.go), as Kafka's: DescribeClientQuotas needs
// DESCRIBE_CONFIGS and AlterClientQuotas ALTER_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) registerClientQuotas(reg *protocol.Registry) {
	reg.Register(48, 0, 1, h.describeClientQuotas)
	reg.Register(49, 0, 1, h.alterClientQuotas)
}

func (h *Handlers) alterClientQuotas(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	changes := alterClientQuotasChanges(r)
	errs := make([]error, len(changes))
	if !h.authorizeCluster(req, acl.OpAlterConfigs) {
		fillErrs(errs, errClusterAuthorization)
	} else if a := h.ctrl; a != nil {
		errs = a.AlterClientQuotas(ctx, changes, r.ValidateOnly)
		if !r.ValidateOnly && anyNil(errs) {
			h.awaitPropagation(ctx, req, defaultPropagationTimeout)
		}
	} else {
		for i := range errs {
			errs[i] = kerr.UnsupportedVersion
		}
	}
	for i, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = p.Type, p.Name
			re.Entity = append(re.Entity, rp)
		}
		re.ErrorCode = errorCode(errs[i])
		re.ErrorMessage = errorMessage(errs[i])
		if errs[i] != nil {
			req.Logger().Debug().Err(errs[i]).Msg("client quota change refused")
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

func (h *Handlers) describeClientQuotas(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !h.authorizeCluster(req, acl.OpDescribeConfigs) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuthorization), errorMessage(errClusterAuthorization)
		return resp, nil
	}
	filters := make([]cluster.QuotaFilter, 0, len(r.Components))
	for _, c := range r.Components {
		filters = append(filters, cluster.QuotaFilter{Type: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match})
	}
	cqs, err := h.meta.Image().DescribeClientQuotas(filters, r.Strict)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return resp, nil
	}
	for _, cq := range cqs {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range cq.Entity {
			ep := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ep.Type, ep.Name = p.Type, p.Name
			e.Entity = append(e.Entity, ep)
		}
		keys := make([]string, 0, len(cq.Values))
		for k := range cq.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, cq.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// alterClientQuotasChanges turns a request's entries into changes.
func alterClientQuotasChanges(r *kmsg.AlterClientQuotasRequest) []cluster.QuotaChange {
	out := make([]cluster.QuotaChange, 0, len(r.Entries))
	for _, e := range r.Entries {
		ch := cluster.QuotaChange{Set: map[string]float64{}}
		for _, p := range e.Entity {
			ch.Entity = append(ch.Entity, cluster.QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			if op.Remove {
				delete(ch.Set, op.Key)
				ch.Remove = append(ch.Remove, op.Key)
			} else {
				ch.Set[op.Key] = op.Value
			}
		}
		out = append(out, ch)
	}
	return out
}
