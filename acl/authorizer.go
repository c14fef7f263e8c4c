package acl

import (
	"slices"
	"strings"
	"sync/atomic"
)

// Authorizer class names that turn authorization on (authorizer.class.name):
// Kafka's KRaft authorizer, and its older ZooKeeper-era one, accepted as
// the same.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	AclAuthorizerClass      = "kafka.security.authorizer.AclAuthorizer"
)

// Config configures an Authorizer.
type Config struct {
	// SuperUsers are the principals allowed everything (super.users).
	SuperUsers []string
	// AllowIfNoACL allows an operation on a resource that no binding
	// matches (allow.everyone.if.no.acl.found).
	AllowIfNoACL bool
}

// Authorizer decides operations from an immutable snapshot of the ACLs.
// It is safe for concurrent use; decisions take no lock.
type Authorizer struct {
	super        map[string]bool
	allowIfNoACL bool
	idx          atomic.Pointer[index]
}

// New returns an Authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		a.super[p] = true
	}
	a.idx.Store(buildIndex(nil))
	return a
}

// Update replaces the ACLs the authorizer decides from. bindings is not
// retained.
func (a *Authorizer) Update(bindings []Binding) { a.idx.Store(buildIndex(bindings)) }

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// index holds the bindings of each resource type.
type index struct {
	types map[ResourceType]*typeIndex
}

type typeIndex struct {
	// literal holds LITERAL bindings by name, "*" included.
	literal map[string][]Binding
	// prefixed holds PREFIXED bindings by prefix; prefixLens are the
	// distinct prefix lengths, ascending, so that a name is probed once
	// per length.
	prefixed   map[string][]Binding
	prefixLens []int
	// all holds every binding of the type, for AuthorizeByResourceType.
	all []Binding
}

func buildIndex(bindings []Binding) *index {
	ix := &index{types: map[ResourceType]*typeIndex{}}
	for _, b := range bindings {
		t := ix.types[b.ResourceType]
		if t == nil {
			t = &typeIndex{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
			ix.types[b.ResourceType] = t
		}
		t.all = append(t.all, b)
		switch b.PatternType {
		case PatternLiteral:
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], b)
		case PatternPrefixed:
			if _, ok := t.prefixed[b.ResourceName]; !ok {
				t.prefixLens = append(t.prefixLens, len(b.ResourceName))
			}
			t.prefixed[b.ResourceName] = append(t.prefixed[b.ResourceName], b)
		}
	}
	for _, t := range ix.types {
		slices.Sort(t.prefixLens)
		t.prefixLens = slices.Compact(t.prefixLens)
	}
	return ix
}

// Request is who asks, from where.
type Request struct {
	Principal string
	Host      string
}

// Authorize reports whether r may perform op on the resource of type rt
// named name.
func (a *Authorizer) Authorize(r Request, op Operation, rt ResourceType, name string) bool {
	if a.super[r.Principal] {
		return true
	}
	t := a.idx.Load().types[rt]
	if t == nil {
		return a.allowIfNoACL
	}
	var d decision
	d.check(t.literal[name], r, op)
	if name != Wildcard {
		d.check(t.literal[Wildcard], r, op)
	}
	for _, l := range t.prefixLens {
		if l > len(name) {
			break
		}
		d.check(t.prefixed[name[:l]], r, op)
	}
	switch {
	case d.denied:
		return false
	case d.allowed:
		return true
	case !d.found:
		return a.allowIfNoACL
	}
	return false
}

// decision accumulates the bindings that apply to one resource.
type decision struct {
	found, allowed, denied bool
}

func (d *decision) check(bs []Binding, r Request, op Operation) {
	for _, b := range bs {
		d.found = true
		if !b.appliesTo(r) {
			continue
		}
		switch b.Permission {
		case Deny:
			if b.Operation == op || b.Operation == OpAll {
				d.denied = true
			}
		case Allow:
			if implies(b.Operation, op) {
				d.allowed = true
			}
		}
	}
}

// appliesTo reports whether b's principal and host match r.
func (b Binding) appliesTo(r Request) bool {
	return (b.Principal == r.Principal || b.Principal == WildcardPrincipal) &&
		(b.Host == r.Host || b.Host == Wildcard)
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op Operation) bool {
	switch {
	case granted == op || granted == OpAll:
		return true
	case op == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case op == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AuthorizedOperations returns the operations of rt's supported set that r
// may perform on the named resource (KIP-430).
func (a *Authorizer) AuthorizedOperations(r Request, rt ResourceType, name string) []Operation {
	var out []Operation
	for _, op := range supportedOps[rt] {
		if a.Authorize(r, op, rt, name) {
			out = append(out, op)
		}
	}
	return out
}

// AuthorizeByResourceType reports whether r may perform op on at least one
// resource of type rt, as Kafka's Authorizer.authorizeByResourceType
// decides it (used where a client needs some, unnamed, resource: an
// idempotent producer needs WRITE on any topic, KIP-679): a super user,
// or no ACLs and allow.everyone.if.no.acl.found, or an ALLOW binding for r
// that no DENY binding for r covers: a DENY on the literal "*" or on a
// prefix of the ALLOW's name covers it, and a literal ALLOW is also
// covered by a literal DENY of the same name.
func (a *Authorizer) AuthorizeByResourceType(r Request, op Operation, rt ResourceType) bool {
	// Kafka probes a made-up name first: that grants super users, and
	// allow.everyone.if.no.acl.found when no binding matches it.
	if a.Authorize(r, op, rt, "hardcode") {
		return true
	}
	t := a.idx.Load().types[rt]
	if t == nil {
		return false
	}
	denyLiteral := map[string]bool{}
	var denyPrefix []string
	for _, b := range t.all {
		if b.Permission != Deny || !b.appliesTo(r) || (b.Operation != op && b.Operation != OpAll) {
			continue
		}
		if b.PatternType == PatternLiteral {
			if b.ResourceName == Wildcard {
				return false
			}
			denyLiteral[b.ResourceName] = true
		} else {
			if b.ResourceName == "" {
				return false
			}
			denyPrefix = append(denyPrefix, b.ResourceName)
		}
	}
	covered := func(name string) bool {
		for _, p := range denyPrefix {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, b := range t.all {
		if b.Permission != Allow || !b.appliesTo(r) || !implies(b.Operation, op) {
			continue
		}
		if b.PatternType == PatternLiteral && (b.ResourceName == Wildcard || !denyLiteral[b.ResourceName]) && !covered(b.ResourceName) {
			return true
		}
		if b.PatternType == PatternPrefixed && !covered(b.ResourceName) {
			return true
		}
	}
	return false
}
