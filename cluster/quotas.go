package cluster

// Client quotas (KIP-546): quota values per user, client-id or ip entity,
// set with AlterClientQuotas and read with DescribeClientQuotas. They live
// in the metadata like topics, so that every broker enforces the same
// ones (package quota); a non-controller forwards a change to the active
// controller as an AlterClientQuotas request. Validation follows Kafka's
// ClientQuotaControlManager: INVALID_REQUEST for an empty or duplicate
// entity part, an unknown entity type or quota key, an ip combined with a
// user or client id, and a value that is not positive or not whole for
// an integer quota.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/quota"
)

// QuotaEntityPart is one part of a client quota entity. A nil Name is the
// type's <default> entity.
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

// QuotaEntity is a client quota entity: at most one part per type, sorted
// by type once normalized.
type QuotaEntity []QuotaEntityPart

// Key is the entity's canonical form, its key in Image.ClientQuotas.
func (e QuotaEntity) Key() string {
	parts := make([]string, 0, len(e))
	for _, p := range e.sorted() {
		if p.Name == nil {
			parts = append(parts, p.Type+"=<default>")
		} else {
			parts = append(parts, p.Type+"="+strconv.Quote(*p.Name))
		}
	}
	return strings.Join(parts, ",")
}

func (e QuotaEntity) sorted() QuotaEntity {
	s := append(QuotaEntity(nil), e...)
	sort.Slice(s, func(i, j int) bool { return s[i].Type < s[j].Type })
	return s
}

func (e QuotaEntity) part(typ string) (QuotaEntityPart, bool) {
	for _, p := range e {
		if p.Type == typ {
			return p, true
		}
	}
	return QuotaEntityPart{}, false
}

// ClientQuota is the quota values of one entity.
type ClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// QuotaChange sets and removes quota values of one entity.
type QuotaChange struct {
	Entity QuotaEntity        `json:"entity"`
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

// quotaKeyKind is the config type Kafka gives a quota key.
type quotaKeyKind int

const (
	quotaLong quotaKeyKind = iota
	quotaInt
	quotaDouble
)

var clientQuotaKeys = map[string]quotaKeyKind{
	quota.ProducerByteRate:       quotaLong,
	quota.ConsumerByteRate:       quotaLong,
	quota.RequestPercentage:      quotaDouble,
	quota.ControllerMutationRate: quotaDouble,
}

var ipQuotaKeys = map[string]quotaKeyKind{
	quota.ConnectionCreationRate: quotaInt,
}

// ValidateQuotaChange checks a change as Kafka's controller does; the
// error wraps ErrInvalidRequest.
func ValidateQuotaChange(ch QuotaChange) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	if len(ch.Entity) == 0 {
		return bad("Invalid empty client quota entity")
	}
	seen := map[string]bool{}
	for _, p := range ch.Entity {
		if seen[p.Type] {
			return bad("Invalid empty client quota entity, duplicate entity entry %s", p.Type)
		}
		seen[p.Type] = true
		switch p.Type {
		case quota.TypeUser, quota.TypeClientID:
		case quota.TypeIP:
			if p.Name != nil {
				if _, err := netip.ParseAddr(*p.Name); err != nil {
					return bad("Invalid IP address: %s", *p.Name)
				}
			}
		default:
			return bad("Unhandled client quota entity type: %s", p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return bad("Empty %s not supported", p.Type)
		}
	}
	keys := clientQuotaKeys
	if seen[quota.TypeIP] {
		if seen[quota.TypeUser] || seen[quota.TypeClientID] {
			return bad("Invalid quota entity combination, IP entity should not be combined with User or ClientId")
		}
		keys = ipQuotaKeys
	}
	for _, k := range ch.Remove {
		if _, ok := keys[k]; !ok {
			return bad("Invalid configuration key %s", k)
		}
	}
	for k, v := range ch.Set {
		kind, ok := keys[k]
		if !ok {
			return bad("Invalid configuration key %s", k)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return bad("Quota %s must be greater than 0", k)
		}
		switch kind {
		case quotaInt:
			if v > math.MaxInt32 {
				return bad("Proposed value for %s is too large for a INT.", k)
			}
			if math.Abs(math.Trunc(v+1e-6)-v) > 1e-6 {
				return bad("Configuration %s must be a Integer value", k)
			}
		case quotaLong:
			if v > math.MaxInt64 {
				return bad("Proposed value for %s is too large for a LONG.", k)
			}
			if math.Abs(math.Trunc(v+1e-6)-v) > 1e-6 {
				return bad("Configuration %s must be a Long value", k)
			}
		}
	}
	return nil
}

// applyQuotas applies validated changes. Entities left without values are
// removed. ClientQuota values are replaced, never mutated, as images share
// them.
func (s *State) applyQuotas(changes []QuotaChange) {
	for _, ch := range changes {
		key := ch.Entity.Key()
		values := map[string]float64{}
		if cur := s.clientQuotas[key]; cur != nil {
			values = maps.Clone(cur.Values)
		}
		for _, k := range ch.Remove {
			delete(values, k)
		}
		maps.Copy(values, ch.Set)
		if len(values) == 0 {
			delete(s.clientQuotas, key)
			continue
		}
		s.clientQuotas[key] = &ClientQuota{Entity: ch.Entity.sorted(), Values: values}
	}
}

// QuotaFilter is one component of a DescribeClientQuotas filter.
type QuotaFilter struct {
	Type string
	// MatchType is 0 (exact: Match, or the default entity when Match is
	// nil), 1 (the default entity) or 2 (any entity of the type).
	MatchType int8
	Match     *string
}

// DescribeClientQuotas returns the entities matching filters, as Kafka's
// ClientQuotasImage.describe matches them; strict keeps only entities
// with no other parts.
func (im *Image) DescribeClientQuotas(filters []QuotaFilter, strict bool) ([]*ClientQuota, error) {
	exact := map[string]*string{}
	anyOf := map[string]bool{}
	for _, f := range filters {
		if f.Type == "" {
			return nil, fmt.Errorf("%w: Invalid empty entity type.", ErrInvalidRequest)
		}
		if _, ok := exact[f.Type]; ok || anyOf[f.Type] {
			return nil, fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", ErrInvalidRequest, f.Type)
		}
		switch f.Type {
		case quota.TypeUser, quota.TypeClientID, quota.TypeIP:
		default:
			return nil, fmt.Errorf("%w: Unsupported entity type %s", kerr.UnsupportedVersion, f.Type)
		}
		switch f.MatchType {
		case 0:
			exact[f.Type] = f.Match
		case 1:
			exact[f.Type] = nil
		case 2:
			anyOf[f.Type] = true
		default:
			return nil, fmt.Errorf("%w: Unexpected match type: %d", ErrInvalidRequest, f.MatchType)
		}
	}
	_, ipExact := exact[quota.TypeIP]
	_, userExact := exact[quota.TypeUser]
	_, clientExact := exact[quota.TypeClientID]
	if (ipExact || anyOf[quota.TypeIP]) && (userExact || anyOf[quota.TypeUser] || clientExact || anyOf[quota.TypeClientID]) {
		return nil, fmt.Errorf("%w: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.", ErrInvalidRequest)
	}
	var out []*ClientQuota
	for _, cq := range im.ClientQuotas {
		if strict && len(cq.Entity) != len(exact)+len(anyOf) {
			continue
		}
		ok := true
		for typ, name := range exact {
			p, has := cq.Entity.part(typ)
			if !has || (p.Name == nil) != (name == nil) || (name != nil && *p.Name != *name) {
				ok = false
				break
			}
		}
		for typ := range anyOf {
			if _, has := cq.Entity.part(typ); !has {
				ok = false
			}
		}
		if ok {
			out = append(out, cq)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.Key() < out[j].Entity.Key() })
	return out, nil
}

// QuotaLimits returns the user and client-id quotas in the form package
// quota enforces them.
func (im *Image) QuotaLimits() quota.Limits {
	limits := quota.Limits{}
	for _, cq := range im.ClientQuotas {
		var e quota.Entity
		ok := true
		for _, p := range cq.Entity {
			n := quota.DefaultName
			if p.Name != nil {
				n = quota.Of(*p.Name)
			}
			switch p.Type {
			case quota.TypeUser:
				e.User = n
			case quota.TypeClientID:
				e.ClientID = n
			default:
				ok = false
			}
		}
		if ok {
			limits[e] = cq.Values
		}
	}
	return limits
}

// AlterClientQuotas validates and applies quota changes, returning one
// error per change. Invalid changes are refused on their own; the valid
// ones are applied together. validateOnly checks without applying.
func (c *Controller) AlterClientQuotas(ctx context.Context, changes []QuotaChange, validateOnly bool) []error {
	errs := make([]error, len(changes))
	var valid []QuotaChange
	var idx []int
	for i, ch := range changes {
		if errs[i] = ValidateQuotaChange(ch); errs[i] == nil {
			valid = append(valid, ch)
			idx = append(idx, i)
		}
	}
	if len(valid) == 0 {
		return errs
	}
	var res []error
	if c.IsLeader() {
		res = make([]error, len(valid))
		if !validateOnly {
			res = allErrs(len(valid), c.log.Propose(ctx, &Command{Type: CmdClientQuotas, Quotas: valid}))
		}
	} else {
		res = c.forwardAlterClientQuotas(ctx, valid, validateOnly)
	}
	for i, j := range idx {
		errs[j] = res[i]
	}
	return errs
}

func (c *Controller) forwardAlterClientQuotas(ctx context.Context, changes []QuotaChange, validateOnly bool) []error {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(1)
	req.ValidateOnly = validateOnly
	for _, ch := range changes {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, p := range ch.Entity {
			ep := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ep.Type, ep.Name = p.Type, p.Name
			e.Entity = append(e.Entity, ep)
		}
		for _, k := range ch.Remove {
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Remove = k, true
			e.Ops = append(e.Ops, op)
		}
		for k, v := range ch.Set {
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = k, v
			e.Ops = append(e.Ops, op)
		}
		req.Entries = append(req.Entries, e)
	}
	errs := make([]error, len(changes))
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, e := range r.(*kmsg.AlterClientQuotasResponse).Entries {
			if e.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.AlterClientQuotas(ctx, changes, validateOnly)
	}
	if err != nil {
		return allErrs(len(errs), err)
	}
	byKey := map[string]error{}
	for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
		var ent QuotaEntity
		for _, p := range e.Entity {
			ent = append(ent, QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		byKey[ent.Key()] = codeErr(e.ErrorCode, e.ErrorMessage)
	}
	var applied []QuotaChange
	for i, ch := range changes {
		e, ok := byKey[ch.Entity.Key()]
		if !ok {
			e = fmt.Errorf("controller did not answer for entity %s", ch.Entity.Key())
		}
		errs[i] = e
		if e == nil {
			applied = append(applied, ch)
		}
	}
	if len(applied) > 0 && !validateOnly {
		// Wait for the changes themselves, so that the client reads them
		// back from this broker.
		if err := c.awaitLocal(ctx, func(im *Image) bool { return im.hasQuotaChanges(applied) }); err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return errs
}

// hasQuotaChanges reports whether the image shows every change applied.
func (im *Image) hasQuotaChanges(changes []QuotaChange) bool {
	for _, ch := range changes {
		cq := im.ClientQuotas[ch.Entity.Key()]
		for k, v := range ch.Set {
			if cq == nil || cq.Values[k] != v {
				return false
			}
		}
		for _, k := range ch.Remove {
			if _, ok := ch.Set[k]; ok {
				continue
			}
			if cq != nil {
				if _, ok := cq.Values[k]; ok {
					return false
				}
			}
		}
	}
	return true
}
