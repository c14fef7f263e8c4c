package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// aclEnv turns ACLs on. The nodes reach each other over PLAINTEXT as
// User:ANONYMOUS, which must therefore be a super user (as a Kafka
// broker's own principal must be): this cluster authorizes every
// anonymous request, and the test is about the ACLs' storage, not their
// enforcement (handlers/authz_test.go covers that).
var aclEnv = map[string]string{
	"GOKAFKA_AUTHORIZER_CLASS_NAME": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"GOKAFKA_SUPER_USERS":           "User:ANONYMOUS",
}

// allACLs describes every ACL through adm, one line per binding, sorted.
func allACLs(adm *kadm.Client) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, r := range res {
		if r.Err != nil {
			return "", fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			lines = append(lines, fmt.Sprintf("%s %s %s %s %s %s %s", d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

func TestACLsAreCreatedDescribedAndDeletedOnEveryNode(t *testing.T) {
	c := startCluster(t, aclEnv)
	ctx := testCtx(t, 60*time.Second)
	adm := make([]*kadm.Client, len(c.probes))
	for i, p := range c.probes {
		adm[i] = kadm.NewClient(p)
	}

	// Created through node 2, which forwards to the controller unless it
	// is the controller itself.
	create := kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead, kadm.OpDescribe)
	res, err := adm[1].CreateACLs(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	prefixed := kadm.NewACLs().Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Deny("User:bob").DenyHosts("10.0.0.7").Operations(kadm.OpWrite)
	more, err := adm[1].CreateACLs(ctx, prefixed)
	if err != nil {
		t.Fatal(err)
	}
	group := kadm.NewACLs().Groups("g").Allow("User:alice").Operations(kadm.OpRead)
	gres, err := adm[1].CreateACLs(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(append(res, more...), gres...) {
		if r.Err != nil {
			t.Fatalf("create %s %s %s: %v %s", r.Name, r.Principal, r.Operation, r.Err, r.ErrMessage)
		}
	}
	// An operation the resource type does not have: INVALID_REQUEST.
	bad, err := adm[0].CreateACLs(ctx, kadm.NewACLs().Groups("g").Allow("User:alice").Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || !errors.Is(bad[0].Err, kerr.InvalidRequest) {
		t.Fatalf("WRITE on a group: %+v, want INVALID_REQUEST", bad)
	}

	want := strings.Join([]string{
		"GROUP g LITERAL User:alice * READ ALLOW",
		"TOPIC app- PREFIXED User:bob 10.0.0.7 WRITE DENY",
		"TOPIC orders LITERAL User:alice * DESCRIBE ALLOW",
		"TOPIC orders LITERAL User:alice * READ ALLOW",
	}, "\n")
	everyNodeDescribes(t, adm, want, "")

	// Deleted through node 3 with a MATCH filter: every binding that
	// applies to topic app-orders.
	del := kadm.NewACLs().Topics("app-orders").ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Deny().DenyHosts().Operations()
	dres, err := adm[2].DeleteACLs(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, r := range dres {
		if r.Err != nil {
			t.Fatalf("delete: %v %s", r.Err, r.ErrMessage)
		}
		deleted += len(r.Deleted)
	}
	if deleted != 1 {
		t.Fatalf("MATCH app-orders deleted %d bindings, want the prefixed one", deleted)
	}
	want = strings.Join([]string{
		"GROUP g LITERAL User:alice * READ ALLOW",
		"TOPIC orders LITERAL User:alice * DESCRIBE ALLOW",
		"TOPIC orders LITERAL User:alice * READ ALLOW",
	}, "\n")
	everyNodeDescribes(t, adm, want, " after the delete")
}

func TestACLAPIsAnswerSecurityDisabledWithoutAnAuthorizer(t *testing.T) {
	b := startBroker(t, brokerOpts{})
	adm := b.admin(t)
	ctx := testCtx(t, 30*time.Second)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateAcls: %+v, want SECURITY_DISABLED", res)
	}
	if _, err := allACLs(adm); !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls: %v, want SECURITY_DISABLED", err)
	}
}

// With ACLs on and no ACL for it, the anonymous principal of a PLAINTEXT
// client may do nothing: its topic creation, listing and produce are
// refused with Kafka's codes. allow.everyone.if.no.acl.found lets it
// through again.
func TestAnonymousClientWithoutACLsIsRefused(t *testing.T) {
	b := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_AUTHORIZER_CLASS_NAME":     "kafka.security.authorizer.AclAuthorizer",
		"GOKAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
		"GOKAFKA_LOG_LEVEL":                 "debug",
	}})
	adm := b.admin(t)
	ctx := testCtx(t, 30*time.Second)
	res, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("CreateTopics without CREATE: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:ANONYMOUS").Operations(kadm.OpAll))
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || !errors.Is(created[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("CreateAcls without ALTER on the cluster: %+v, want CLUSTER_AUTHORIZATION_FAILED", created)
	}
	if _, err := allACLs(adm); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("DescribeAcls without DESCRIBE on the cluster: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	// Each decision is logged at debug with who, what and the answer.
	eventually(t, 10*time.Second, func() error {
		log, err := os.ReadFile(b.logPath)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "authorization") && strings.Contains(line, "principal=User:ANONYMOUS") &&
				strings.Contains(line, "operation=CREATE") && strings.Contains(line, "resource=orders") &&
				strings.Contains(line, "allowed=false") {
				return nil
			}
		}
		return fmt.Errorf("no debug line for the refused CREATE on topic orders")
	})

	open := startBroker(t, brokerOpts{Env: map[string]string{
		"GOKAFKA_AUTHORIZER_CLASS_NAME":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"GOKAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true",
	}})
	cl := open.client(t, kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with allow.everyone.if.no.acl.found: %v", err)
	}
}

// everyNodeDescribes fails the test unless every node, asked once, describes
// exactly want. Asking once is enough: CreateAcls and DeleteAcls answer
// after every live broker has applied them (read your own admin writes).
func everyNodeDescribes(t *testing.T, adm []*kadm.Client, want, when string) {
	t.Helper()
	for i := range adm {
		got, err := allACLs(adm[i])
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("node %d describes%s:\n%s\nwant:\n%s", i+1, when, got, want)
		}
	}
}
