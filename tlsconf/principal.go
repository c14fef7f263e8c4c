package tlsconf

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Rule is one ssl.principal.mapping.rules entry: DEFAULT (the DN
// unchanged) or RULE:pattern/replacement/[LU], applied when pattern
// matches the whole DN.
type Rule struct {
	Default bool
	whole   *regexp.Regexp // pattern anchored at both ends
	pattern *regexp.Regexp
	// replacement is in Go's syntax (${1}), converted from Java's ($1).
	replacement string
	lower       bool
	upper       bool
	text        string
}

func (r Rule) String() string { return r.text }

// ParseRules parses ssl.principal.mapping.rules as Kafka's
// SslPrincipalMapper does: comma-separated rules, where a rule's pattern
// and replacement may themselves hold commas, and a '/' inside them is
// escaped as "\/". Empty is DEFAULT.
func ParseRules(s string) ([]Rule, error) {
	var rules []Rule
	rest := strings.TrimSpace(s)
	if rest == "" {
		return []Rule{{Default: true, text: "DEFAULT"}}, nil
	}
	for rest != "" {
		var r Rule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r = Rule{Default: true, text: "DEFAULT"}
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			start := rest
			body := rest[len("RULE:"):]
			var pat, repl string
			if pat, body, err = untilSlash(body); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %q: %w", start, err)
			}
			if repl, body, err = untilSlash(body); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %q: %w", start, err)
			}
			if body != "" && (body[0] == 'L' || body[0] == 'U') {
				r.lower, r.upper = body[0] == 'L', body[0] == 'U'
				body = body[1:]
			}
			if r.pattern, err = regexp.Compile(pat); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", pat, err)
			}
			r.whole = regexp.MustCompile(`^(?:` + pat + `)$`)
			r.replacement = javaReplacement(repl)
			r.text = strings.TrimSpace(start[:len(start)-len(body)])
			rest = body
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule at %q", rest)
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			rules = append(rules, r)
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule at %q", rest)
		}
		rest = strings.TrimLeft(rest[1:], " \t\r\n")
		rules = append(rules, r)
	}
	return rules, nil
}

// untilSlash returns s up to its first unescaped '/', and what follows
// that slash.
func untilSlash(s string) (string, string, error) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], nil
		}
	}
	return "", "", errors.New("missing '/'")
}

// javaReplacement converts a java.util.regex replacement ($1, \x for a
// literal x) into regexp.Expand's syntax (${1}, $$ for a literal $).
func javaReplacement(j string) string {
	var b strings.Builder
	for i := 0; i < len(j); i++ {
		c := j[i]
		switch {
		case c == '\\' && i+1 < len(j):
			i++
			if j[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(j[i])
			}
		case c == '$' && i+1 < len(j) && j[i+1] >= '0' && j[i+1] <= '9':
			k := i + 1
			for k < len(j) && j[k] >= '0' && j[k] <= '9' {
				k++
			}
			b.WriteString("${" + j[i+1:k] + "}")
			i = k - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ErrNoMatchingRule is returned when no rule matches a DN; Kafka fails the
// connection's authentication then.
var ErrNoMatchingRule = errors.New("no ssl.principal.mapping.rules rule matches the certificate's subject")

// MapPrincipal applies rules in order to a subject DN and returns the
// principal name the first matching rule gives.
func MapPrincipal(rules []Rule, dn string) (string, error) {
	for _, r := range rules {
		if r.Default {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.pattern.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoMatchingRule, dn)
}

// SubjectDN is a certificate's subject as Kafka's X500Principal.getName()
// writes it (RFC 2253): the RDNs in reverse order of the encoding, most
// specific first, "CN=alice,OU=eng,O=example".
func SubjectDN(cert *x509.Certificate) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	return seq.String()
}
