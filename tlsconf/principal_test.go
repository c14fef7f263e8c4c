package tlsconf

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"testing"
	"time"
)

// Kafka's documentation (Security, "Customizing SSL User Name") and
// SslPrincipalMapperTest give these rules and DNs.
const kafkaDocRules = `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
DEFAULT`

func TestPrincipalMappingKafkaDocumentedExamples(t *testing.T) {
	rules, err := ParseRules(kafkaDocRules)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 4 {
		t.Fatalf("%d rules parsed, want 4: %v", len(rules), rules)
	}
	for dn, want := range map[string]string{
		"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "serviceuser",
		"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown":          "adminuser@admin",
		"CN=kafka1.example.com,O=Unknown":                                         "kafka1.example.com",
		"OU=JavaSoft,O=Sun Microsystems,C=US":                                     "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		got, err := MapPrincipal(rules, dn)
		if err != nil || got != want {
			t.Errorf("MapPrincipal(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestPrincipalMappingUpperCaseAndNoMatch(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=(.*?),OU=(.*?)$/$1@$2/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := MapPrincipal(rules, "CN=alice,OU=eng"); err != nil || got != "ALICE@ENG" {
		t.Fatalf("got %q, %v", got, err)
	}
	// Without DEFAULT a DN no rule matches fails, as Kafka's
	// NoMatchingRule does; a partial match is no match.
	if _, err := MapPrincipal(rules, "CN=alice,OU=eng,O=x"); err != nil {
		t.Fatalf("a lazy pattern anchored by $ still matches the whole DN: %v", err)
	}
	rules, _ = ParseRules(`RULE:CN=([a-z]+)/$1/`)
	if _, err := MapPrincipal(rules, "CN=alice,OU=eng"); !errors.Is(err, ErrNoMatchingRule) {
		t.Fatalf("partial match: err = %v, want ErrNoMatchingRule", err)
	}
}

func TestPrincipalMappingRulesEscapedSlashAndLiteralDollar(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=(.*?)\/(.*?)$/$2\/$1 \$x/, DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MapPrincipal(rules, "CN=a/b")
	if err != nil || got != "b/a $x" {
		t.Fatalf("got %q, %v; want %q", got, err, "b/a $x")
	}
}

func TestParseRulesRejectsMalformed(t *testing.T) {
	for _, s := range []string{"RULE:abc", "RULE:^(.*$/x/", "NOPE", "DEFAULT junk"} {
		if _, err := ParseRules(s); err == nil {
			t.Errorf("ParseRules(%q) accepted", s)
		}
	}
	if r, err := ParseRules(""); err != nil || len(r) != 1 || !r[0].Default {
		t.Fatalf("empty rules = %v, %v; want DEFAULT", r, err)
	}
}

// SubjectDN writes the subject in RFC 2253 order, most specific RDN
// first, as Java's X500Principal.getName() does, whatever order the
// attributes come in.
func TestSubjectDNIsRFC2253Order(t *testing.T) {
	ca, err := NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.IssueSubject(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"example"}, Country: []string{"US"}}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseLeaf(t, leaf)
	if got, want := SubjectDN(cert), "CN=alice,OU=eng,O=example,C=US"; got != want {
		t.Fatalf("SubjectDN = %q, want %q", got, want)
	}
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(seq) != 4 {
		t.Fatalf("subject RDNs: %v %v", seq, err)
	}
}
