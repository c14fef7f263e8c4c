package acl

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// ErrInvalid answers an invalid binding or filter (INVALID_REQUEST).
var ErrInvalid = kafkaerr.New(kerr.InvalidRequest, "invalid acl")

// ResourceType is a resource type, with Kafka's wire codes.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is how a binding's resource name matches, with Kafka's wire
// codes. ANY and MATCH exist in filters only.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is an ACL operation, with Kafka's wire codes.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// Permission is ALLOW or DENY, with Kafka's wire codes; ANY in filters
// only.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

const (
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard is the literal resource name and host matching all.
	Wildcard = "*"
	// WildcardPrincipal matches every principal.
	WildcardPrincipal = "User:*"
)

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER",
}

var patternNames = map[PatternType]string{
	PatternUnknown: "UNKNOWN", PatternAny: "ANY", PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED",
}

var opNames = map[Operation]string{
	OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE",
	OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS",
}

var permNames = map[Permission]string{PermissionUnknown: "UNKNOWN", PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW"}

func name[T comparable](m map[T]string, v T) string {
	if s, ok := m[v]; ok {
		return s
	}
	return "UNKNOWN"
}

func (t ResourceType) String() string { return name(resourceNames, t) }
func (t PatternType) String() string  { return name(patternNames, t) }
func (o Operation) String() string    { return name(opNames, o) }
func (p Permission) String() string   { return name(permNames, p) }

// known reports whether v is one of m's values other than UNKNOWN (0).
func known[T comparable](m map[T]string, v T) bool {
	var zero T
	_, ok := m[v]
	return ok && v != zero
}

// supportedOps are the operations a binding on each resource type may
// name besides ALL (Kafka's AclEntry.supportedOperations); they are also
// the operations KIP-430's authorized operations report.
var supportedOps = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// SupportedOperations returns the operations of resource type t.
func SupportedOperations(t ResourceType) []Operation { return supportedOps[t] }

// Binding is one ACL.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// String is the binding as Kafka's tools print it.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// Compare orders bindings by resource, then principal, host, operation and
// permission: the order the metadata keeps them in.
func (b Binding) Compare(o Binding) int {
	return cmp.Or(
		cmp.Compare(b.ResourceType, o.ResourceType),
		cmp.Compare(b.ResourceName, o.ResourceName),
		cmp.Compare(b.PatternType, o.PatternType),
		cmp.Compare(b.Principal, o.Principal),
		cmp.Compare(b.Host, o.Host),
		cmp.Compare(b.Operation, o.Operation),
		cmp.Compare(b.Permission, o.Permission),
	)
}

// ValidPrincipal reports whether s is a principal in "Type:Name" form.
func ValidPrincipal(s string) bool {
	typ, nm, ok := strings.Cut(s, ":")
	return ok && typ != "" && nm != ""
}

// Validate checks a binding to create as Kafka does (AclControlManager and
// the CreateAcls handler); the error wraps ErrInvalid.
func (b Binding) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case !known(resourceNames, b.ResourceType) || b.ResourceType == ResourceAny:
		return bad("Invalid resourceType %s", b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return bad("Invalid patternType %s", b.PatternType)
	case !known(opNames, b.Operation) || b.Operation == OpAny:
		return bad("Invalid operation %s", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return bad("Invalid permissionType %s", b.Permission)
	case b.ResourceName == "":
		return bad("Resource name should not be empty")
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return bad("The only valid name for the CLUSTER resource is %s", ClusterName)
	case !ValidPrincipal(b.Principal):
		return bad("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", b.Principal)
	case b.Host == "":
		return bad("Invalid host: host should not be empty")
	}
	if b.Operation != OpAll {
		ok := false
		for _, op := range supportedOps[b.ResourceType] {
			ok = ok || op == b.Operation
		}
		if !ok {
			return bad("ResourceType %s only supports operations %v", b.ResourceType, supportedOps[b.ResourceType])
		}
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls). A nil name,
// principal or host matches any; ANY matches any type, pattern type,
// operation or permission; the MATCH pattern type matches the bindings
// that would apply to the named resource: LITERAL with that name or "*",
// and PREFIXED with a prefix of it.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate checks a filter; the error wraps ErrInvalid.
func (f Filter) Validate() error {
	switch {
	case !known(resourceNames, f.ResourceType):
		return fmt.Errorf("%w: Invalid resourceType %s", ErrInvalid, f.ResourceType)
	case !known(patternNames, f.PatternType):
		return fmt.Errorf("%w: Unknown patternFilter", ErrInvalid)
	case !known(opNames, f.Operation):
		return fmt.Errorf("%w: Invalid operation %s", ErrInvalid, f.Operation)
	case !known(permNames, f.Permission):
		return fmt.Errorf("%w: Invalid permissionType %s", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.matchesPattern(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Permission
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.PatternType {
	case PatternAny:
		return f.ResourceName == nil || *f.ResourceName == b.ResourceName
	case PatternMatch:
		if f.ResourceName == nil {
			return true
		}
		n := *f.ResourceName
		switch b.PatternType {
		case PatternLiteral:
			return b.ResourceName == n || b.ResourceName == Wildcard
		case PatternPrefixed:
			return strings.HasPrefix(n, b.ResourceName)
		}
		return false
	default:
		return f.PatternType == b.PatternType && (f.ResourceName == nil || *f.ResourceName == b.ResourceName)
	}
}

// ParseSuperUsers parses super.users: principals separated by semicolons.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
