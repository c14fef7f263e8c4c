package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/acl"
)

func binding(name string, pt acl.PatternType, principal string, op acl.Operation, perm acl.Permission) acl.Binding {
	return acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func anyFilter() acl.Filter {
	return acl.Filter{ResourceType: acl.ResourceAny, PatternType: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
}

func TestACLsAreCreatedOnceAndDeletedByFilter(t *testing.T) {
	ctx := context.Background()
	c, _, err := OpenInMemory(ctx, testConfig(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := binding("orders", acl.PatternLiteral, "User:alice", acl.OpRead, acl.Allow)
	b := binding("app-", acl.PatternPrefixed, "User:bob", acl.OpWrite, acl.Deny)
	bad := binding("", acl.PatternLiteral, "User:bob", acl.OpWrite, acl.Allow)
	errs := c.CreateACLs(ctx, []acl.Binding{a, b, bad, a})
	if errs[0] != nil || errs[1] != nil || errs[3] != nil || !errors.Is(errs[2], acl.ErrInvalid) {
		t.Fatalf("create: %v", errs)
	}
	before := c.Image()
	if got := before.DescribeACLs(anyFilter()); len(got) != 2 {
		t.Fatalf("described %v, want the two valid bindings once each", got)
	}
	bob := "User:bob"
	f := anyFilter()
	f.Principal = &bob
	matched, errs := c.DeleteACLs(ctx, []acl.Filter{f, f, {PatternType: acl.PatternUnknown}})
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], acl.ErrInvalid) {
		t.Fatalf("delete: %v", errs)
	}
	if !slices.Equal(matched[0], []acl.Binding{b}) || len(matched[1]) != 0 {
		t.Fatalf("deleted %v, want bob's binding once", matched)
	}
	if got := c.Image().DescribeACLs(anyFilter()); !slices.Equal(got, []acl.Binding{a}) {
		t.Fatalf("left %v, want alice's binding", got)
	}
	if len(before.ACLs) != 2 || SameACLs(before, c.Image()) {
		t.Fatal("a delete changed an earlier image, or left the ACL slice the same")
	}
}

func TestACLsSurviveASnapshot(t *testing.T) {
	s := NewState()
	want := []acl.Binding{
		binding("a", acl.PatternLiteral, "User:x", acl.OpRead, acl.Allow),
		binding("b", acl.PatternPrefixed, "User:*", acl.OpAll, acl.Deny),
	}
	mustApply(t, s, &Command{Type: CmdCreateACLs, ACLs: want})
	raw, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewState()
	if err := r.RestoreSnapshot(raw); err != nil {
		t.Fatal(err)
	}
	if got := r.Image(-1).ACLs; !slices.Equal(got, want) {
		t.Fatalf("restored %v, want %v", got, want)
	}
}
