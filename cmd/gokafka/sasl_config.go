package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/sasl"
)

// secretProperty reports whether a property holds credentials, which
// DescribeConfigs must not return (Kafka's PASSWORD configs).
func secretProperty(name string) bool {
	return strings.HasSuffix(name, "sasl.jaas.config") || name == "gokafka.scram.bootstrap.users"
}

// saslConfig reads the broker-wide SASL properties.
func (s *settings) saslConfig() broker.SASLConfig {
	c := broker.SASLConfig{
		EnabledMechanisms:    upper(s.list("sasl.enabled.mechanisms")),
		InterBrokerMechanism: strings.ToUpper(s.str("sasl.mechanism.inter.broker.protocol")),
		MaxReauth:            ms(s.nonNegative("connections.max.reauth.ms")),
		JWKSURL:              s.str("sasl.oauthbearer.jwks.endpoint.url"),
		ExpectedAudience:     s.list("sasl.oauthbearer.expected.audience"),
		ExpectedIssuer:       s.str("sasl.oauthbearer.expected.issuer"),
		SubClaim:             s.str("sasl.oauthbearer.sub.claim.name"),
		ScopeClaim:           s.str("sasl.oauthbearer.scope.claim.name"),
		ClockSkew:            time.Duration(s.i64("sasl.oauthbearer.clock.skew.seconds")) * time.Second,
		MaxReceiveSize:       int32(min(s.positive("sasl.server.max.receive.size"), math.MaxInt32)),
		FailedAuthDelay:      ms(s.nonNegative("connection.failed.authentication.delay.ms")),
	}
	users, err := parseBootstrapScram(s.str("gokafka.scram.bootstrap.users"))
	if err != nil {
		s.errs = append(s.errs, "gokafka.scram.bootstrap.users: "+err.Error())
	}
	c.BootstrapScram = users
	return c
}

// parseBootstrapScram parses credentials as kafka-storage format
// --add-scram takes them: MECHANISM=[name=<user>,password=<password>]
// with an optional iterations=<n> (default 4096) and a fresh random salt,
// entries separated by whitespace or ';'. Values may be double-quoted.
func parseBootstrapScram(v string) ([]cluster.ScramChange, error) {
	var out []cluster.ScramChange
	rest := strings.TrimSpace(v)
	for rest != "" {
		eq := strings.Index(rest, "=[")
		if eq < 0 {
			return nil, fmt.Errorf("%q is not MECHANISM=[name=...,password=...]", rest)
		}
		mech := strings.ToUpper(strings.TrimSpace(rest[:eq]))
		end := strings.Index(rest[eq:], "]")
		if end < 0 {
			return nil, fmt.Errorf("%q: missing ]", rest)
		}
		body := rest[eq+2 : eq+end]
		rest = strings.TrimLeft(rest[eq+end+1:], " \t\n;,")
		if sasl.ScramHash(mech) == nil {
			return nil, fmt.Errorf("unknown SCRAM mechanism %q", mech)
		}
		kv := map[string]string{}
		for _, p := range strings.Split(body, ",") {
			k, val, ok := strings.Cut(p, "=")
			if !ok {
				return nil, fmt.Errorf("%q is not key=value", p)
			}
			kv[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(val), `"`)
		}
		name, pass := kv["name"], kv["password"]
		if name == "" || pass == "" {
			return nil, fmt.Errorf("%s entry needs name and password", mech)
		}
		iters := sasl.ScramMinIterations
		if it, ok := kv["iterations"]; ok {
			n, err := strconv.Atoi(it)
			if err != nil || n < sasl.ScramMinIterations || n > sasl.ScramMaxIterations {
				return nil, fmt.Errorf("iterations %q must be between %d and %d", it, sasl.ScramMinIterations, sasl.ScramMaxIterations)
			}
			iters = n
		}
		cred, err := sasl.NewCredential(mech, pass, iters)
		if err != nil {
			return nil, err
		}
		out = append(out, cluster.ScramChange{User: name, Mechanism: mech, Cred: &cred})
	}
	return out, nil
}
