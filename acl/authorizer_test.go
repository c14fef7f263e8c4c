package acl

import (
	"errors"
	"slices"
	"testing"
)

var alice = Request{Principal: "User:alice", Host: "10.0.0.1"}

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: Allow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.Permission = Deny
	return b
}

func authorizer(cfg Config, bs ...Binding) *Authorizer {
	a := New(cfg)
	a.Update(bs)
	return a
}

func TestLiteralACLMatchesItsNameOnly(t *testing.T) {
	a := authorizer(Config{}, allow(ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead))
	if !a.Authorize(alice, OpRead, ResourceTopic, "orders") {
		t.Fatal("READ on orders denied with an ALLOW for it")
	}
	for _, name := range []string{"orders2", "order", "payments"} {
		if a.Authorize(alice, OpRead, ResourceTopic, name) {
			t.Fatalf("READ on %s allowed by a literal ACL on orders", name)
		}
	}
	if a.Authorize(alice, OpWrite, ResourceTopic, "orders") {
		t.Fatal("WRITE allowed by a READ ACL")
	}
	if a.Authorize(alice, OpRead, ResourceGroup, "orders") {
		t.Fatal("a topic ACL allowed a group of the same name")
	}
	if a.Authorize(Request{Principal: "User:bob", Host: "10.0.0.1"}, OpRead, ResourceTopic, "orders") {
		t.Fatal("alice's ACL allowed bob")
	}
}

func TestPrefixedACLMatchesNamesStartingWithIt(t *testing.T) {
	a := authorizer(Config{},
		allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite),
		allow(ResourceTopic, "app-internal-x", PatternPrefixed, "User:alice", "*", OpRead))
	for _, name := range []string{"app-", "app-orders", "app-internal-x1"} {
		if !a.Authorize(alice, OpWrite, ResourceTopic, name) {
			t.Fatalf("WRITE on %s denied with a PREFIXED app- ALLOW", name)
		}
	}
	if a.Authorize(alice, OpWrite, ResourceTopic, "ap") || a.Authorize(alice, OpWrite, ResourceTopic, "other-app-x") {
		t.Fatal("a PREFIXED ACL matched a name it is not a prefix of")
	}
	if !a.Authorize(alice, OpRead, ResourceTopic, "app-internal-x1") || a.Authorize(alice, OpRead, ResourceTopic, "app-internal") {
		t.Fatal("the longer prefix decides only the names it prefixes")
	}
}

func TestWildcardResourceAndPrincipal(t *testing.T) {
	a := authorizer(Config{},
		allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead),
		allow(ResourceGroup, "g", PatternLiteral, "User:*", "*", OpRead))
	if !a.Authorize(alice, OpRead, ResourceTopic, "anything") {
		t.Fatal("a literal * ACL did not match every topic")
	}
	if !a.Authorize(Request{Principal: "User:bob", Host: "1.2.3.4"}, OpRead, ResourceGroup, "g") {
		t.Fatal("User:* did not match bob")
	}
	// A prefixed "*" is a prefix like any other, not a wildcard.
	b := authorizer(Config{}, allow(ResourceTopic, "*", PatternPrefixed, "User:alice", "*", OpRead))
	if b.Authorize(alice, OpRead, ResourceTopic, "anything") || !b.Authorize(alice, OpRead, ResourceTopic, "*x") {
		t.Fatal("a PREFIXED * must match only names starting with *")
	}
}

func TestImpliedOperations(t *testing.T) {
	for _, granted := range []Operation{OpRead, OpWrite, OpDelete, OpAlter} {
		a := authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", granted))
		if !a.Authorize(alice, OpDescribe, ResourceTopic, "t") {
			t.Fatalf("%s does not imply DESCRIBE", granted)
		}
	}
	a := authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAlterConfigs))
	if !a.Authorize(alice, OpDescribeConfigs, ResourceTopic, "t") || a.Authorize(alice, OpAlter, ResourceTopic, "t") {
		t.Fatal("ALTER_CONFIGS must imply DESCRIBE_CONFIGS and nothing else")
	}
	a = authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpDescribe))
	if a.Authorize(alice, OpRead, ResourceTopic, "t") {
		t.Fatal("DESCRIBE implies READ")
	}
	a = authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll))
	for _, op := range SupportedOperations(ResourceTopic) {
		if !a.Authorize(alice, op, ResourceTopic, "t") {
			t.Fatalf("ALL does not allow %s", op)
		}
	}
	// A DENY of READ does not deny the DESCRIBE that READ implies.
	a = authorizer(Config{},
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpDescribe),
		deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead))
	if !a.Authorize(alice, OpDescribe, ResourceTopic, "t") {
		t.Fatal("a DENY of READ denied DESCRIBE")
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	cases := map[string][]Binding{
		"same literal":                 {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)},
		"deny ALL":                     {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll)},
		"deny by wildcard":             {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead), deny(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)},
		"deny by prefix":               {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll), deny(ResourceTopic, "", PatternPrefixed, "User:*", "*", OpRead)},
		"deny for every host":          {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.1", OpRead), deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)},
		"deny for User:*, allow alice": {allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead), deny(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpRead)},
	}
	for name, bs := range cases {
		if authorizer(Config{}, bs...).Authorize(alice, OpRead, ResourceTopic, "t") {
			t.Errorf("%s: allowed despite a matching DENY", name)
		}
	}
}

func TestHostMatching(t *testing.T) {
	a := authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.1", OpRead))
	if !a.Authorize(alice, OpRead, ResourceTopic, "t") {
		t.Fatal("the ACL's own host denied")
	}
	if a.Authorize(Request{Principal: "User:alice", Host: "10.0.0.2"}, OpRead, ResourceTopic, "t") {
		t.Fatal("another host allowed")
	}
	a = authorizer(Config{}, deny(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.2", OpRead),
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead))
	if !a.Authorize(alice, OpRead, ResourceTopic, "t") || a.Authorize(Request{Principal: "User:alice", Host: "10.0.0.2"}, OpRead, ResourceTopic, "t") {
		t.Fatal("a DENY for one host must deny that host only")
	}
}

func TestSuperUserIsAllowedEverything(t *testing.T) {
	a := authorizer(Config{SuperUsers: ParseSuperUsers(" User:admin ; User:broker;")},
		deny(ResourceTopic, "*", PatternLiteral, "User:*", "*", OpAll))
	for _, p := range []string{"User:admin", "User:broker"} {
		r := Request{Principal: p, Host: "1.1.1.1"}
		if !a.Authorize(r, OpWrite, ResourceTopic, "t") || !a.Authorize(r, OpClusterAction, ResourceCluster, ClusterName) {
			t.Fatalf("super user %s denied", p)
		}
		if !a.AuthorizeByResourceType(r, OpWrite, ResourceTopic) {
			t.Fatalf("super user %s denied by resource type", p)
		}
	}
	if a.Authorize(alice, OpWrite, ResourceTopic, "t") {
		t.Fatal("a user outside super.users allowed despite a DENY")
	}
}

func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	bs := []Binding{allow(ResourceTopic, "guarded", PatternLiteral, "User:bob", "*", OpRead)}
	strict := authorizer(Config{}, bs...)
	open := authorizer(Config{AllowIfNoACL: true}, bs...)
	if strict.Authorize(alice, OpRead, ResourceTopic, "free") {
		t.Fatal("a resource without ACLs allowed by default")
	}
	if !open.Authorize(alice, OpRead, ResourceTopic, "free") || !open.Authorize(alice, OpRead, ResourceGroup, "g") {
		t.Fatal("allow.everyone.if.no.acl.found did not allow a resource without ACLs")
	}
	// An ACL for someone else on the resource means it has ACLs.
	if open.Authorize(alice, OpRead, ResourceTopic, "guarded") {
		t.Fatal("allow.everyone.if.no.acl.found allowed a resource that has ACLs")
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := authorizer(Config{},
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead),
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAlterConfigs))
	got := a.AuthorizedOperations(alice, ResourceTopic, "t")
	want := []Operation{OpRead, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("authorized operations %v, want %v", got, want)
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	cases := []struct {
		name string
		bs   []Binding
		want bool
	}{
		{"no acl", nil, false},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite)}, true},
		{"allow denied by same literal", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite), deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite)}, false},
		{"prefix allow", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:*", "*", OpWrite)}, true},
		{"prefix allow under a shorter deny", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:*", "*", OpWrite), deny(ResourceTopic, "ap", PatternPrefixed, "User:alice", "*", OpWrite)}, false},
		{"wildcard deny", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite), deny(ResourceTopic, "*", PatternLiteral, "User:*", "*", OpAll)}, false},
		{"read only", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, false},
	}
	for _, c := range cases {
		if got := authorizer(Config{}, c.bs...).AuthorizeByResourceType(alice, OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !New(Config{AllowIfNoACL: true}).AuthorizeByResourceType(alice, OpWrite, ResourceTopic) {
		t.Error("allow.everyone.if.no.acl.found with no ACLs must allow")
	}
}

func TestUpdateReplacesTheACLs(t *testing.T) {
	a := authorizer(Config{}, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead))
	a.Update(nil)
	if a.Authorize(alice, OpRead, ResourceTopic, "t") {
		t.Fatal("a removed ACL still allows")
	}
}

func TestValidateBinding(t *testing.T) {
	ok := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Binding){
		"any resource":          func(b *Binding) { b.ResourceType = ResourceAny },
		"match pattern":         func(b *Binding) { b.PatternType = PatternMatch },
		"any pattern":           func(b *Binding) { b.PatternType = PatternAny },
		"any operation":         func(b *Binding) { b.Operation = OpAny },
		"any permission":        func(b *Binding) { b.Permission = PermissionAny },
		"empty name":            func(b *Binding) { b.ResourceName = "" },
		"bad principal":         func(b *Binding) { b.Principal = "alice" },
		"cluster name":          func(b *Binding) { b.ResourceType, b.Operation = ResourceCluster, OpCreate },
		"op unsupported":        func(b *Binding) { b.Operation = OpClusterAction },
		"group write":           func(b *Binding) { b.ResourceType, b.Operation = ResourceGroup, OpWrite },
		"txn id read":           func(b *Binding) { b.ResourceType = ResourceTransactionalID },
		"unknown resource type": func(b *Binding) { b.ResourceType = 42 },
	}
	for name, mut := range bad {
		b := ok
		mut(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
		}
	}
}

func TestFilterMatching(t *testing.T) {
	lit := allow(ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)
	pre := deny(ResourceTopic, "ord", PatternPrefixed, "User:bob", "*", OpWrite)
	other := allow(ResourceGroup, "orders", PatternLiteral, "User:alice", "*", OpRead)
	name := "orders"
	bob := "User:bob"
	cases := []struct {
		f    Filter
		want []Binding
	}{
		{Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, []Binding{lit, wild, pre, other}},
		{Filter{ResourceType: ResourceTopic, ResourceName: &name, PatternType: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, []Binding{lit}},
		{Filter{ResourceType: ResourceTopic, ResourceName: &name, PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []Binding{lit, wild, pre}},
		{Filter{ResourceType: ResourceTopic, PatternType: PatternPrefixed, Operation: OpAny, Permission: PermissionAny}, []Binding{pre}},
		{Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: &bob, Operation: OpAny, Permission: PermissionAny}, []Binding{pre}},
		{Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpRead, Permission: Allow}, []Binding{lit, wild, other}},
	}
	for i, c := range cases {
		var got []Binding
		for _, b := range []Binding{lit, wild, pre, other} {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("case %d: matched %v, want %v", i, got, c.want)
		}
	}
	if err := (Filter{ResourceType: ResourceTopic, PatternType: PatternUnknown, Operation: OpAny, Permission: PermissionAny}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown pattern filter validated: %v", err)
	}
}

func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := range 10000 {
		bs = append(bs, allow(ResourceTopic, "topic-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), PatternLiteral, "User:alice", "*", OpRead))
	}
	bs = append(bs, allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite))
	a := authorizer(Config{}, bs...)
	b.ReportAllocs()
	for b.Loop() {
		a.Authorize(alice, OpWrite, ResourceTopic, "app-orders")
	}
}
