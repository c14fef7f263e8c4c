package broker

// SASL listeners: each SASL_PLAINTEXT (and, over TLS, SASL_SSL) listener
// authenticates its connections against a sasl.ServerConfig built here
// from Kafka's properties, a listener's own listener.name.<name>.
// value first (listener.name.<name>.<mechanism>.<property> where Kafka
// allows a mechanism prefix), then the broker-wide one. When the
// inter-broker listener is SASL_*, the clients this broker opens to its
// peers authenticate with sasl.mechanism.inter.broker.protocol and the
// username/password options of that listener's JAAS config for the
// mechanism, as Kafka's brokers do.
//
// The CONTROLLER listener carries the raft transport, which is not
// Kafka-protocol and cannot run a SASL exchange: a SASL controller
// listener is refused at start; SSL with mTLS secures it.

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gokafka/gokafka/internal/kconfig"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/sasl"
)

// SASLConfig holds the broker-wide SASL properties.
type SASLConfig struct {
	// EnabledMechanisms is sasl.enabled.mechanisms.
	EnabledMechanisms []string
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol.
	InterBrokerMechanism string
	// MaxReauth is connections.max.reauth.ms (zero: sessions do not
	// expire unless their credential does).
	MaxReauth time.Duration
	// JWKSURL is sasl.oauthbearer.jwks.endpoint.url: when set, OAUTHBEARER
	// tokens must be JWTs signed by one of its keys.
	JWKSURL string
	// ExpectedAudience and ExpectedIssuer are
	// sasl.oauthbearer.expected.audience and .expected.issuer.
	ExpectedAudience []string
	ExpectedIssuer   string
	// SubClaim and ScopeClaim are sasl.oauthbearer.sub.claim.name and
	// sasl.oauthbearer.scope.claim.name, for signed tokens.
	SubClaim, ScopeClaim string
	// ClockSkew is sasl.oauthbearer.clock.skew.seconds, for signed tokens.
	ClockSkew time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
	// FailedAuthDelay is connection.failed.authentication.delay.ms.
	FailedAuthDelay time.Duration
	// BootstrapScram are the credentials a new cluster starts with
	// (gokafka.scram.bootstrap.users).
	BootstrapScram []cluster.ScramChange
}

func isSASL(protocol string) bool { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" }

// checkSecurityProtocol refuses the listeners gokafka cannot secure: SASL
// on the controller listener, whose raft traffic is not Kafka's protocol.
func checkSecurityProtocol(cfg *Config, l Listener) error {
	if slices.Contains(cfg.ControllerListenerNames, l.Name) && isSASL(l.SecurityProtocol) {
		return fmt.Errorf("controller listener %s: %s is not supported on the controller listener, whose metadata quorum (raft) traffic cannot authenticate with SASL; secure it with SSL and ssl.client.auth=required (mTLS)", l.Name, l.SecurityProtocol)
	}
	switch l.SecurityProtocol {
	case "PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL":
		return nil
	}
	return fmt.Errorf("listener %s: security protocol %s is not supported", l.Name, l.SecurityProtocol)
}

// setting is a SASL property of listener: its value with the mechanism
// prefix when mech is set, else (or failing that) without it.
func (cfg *Config) setting(listener, mech, prop string) (string, bool) {
	if mech != "" {
		if v, ok := cfg.mechSetting(listener, mech, prop); ok {
			return v, true
		}
	}
	v, ok := cfg.ListenerSettings[strings.ToUpper(listener)][prop]
	return v, ok
}

// mechSetting is listener.name.<listener>.<mechanism>.<prop>. The
// mechanism may also be written with dots for dashes
// (scram.sha.512.sasl.jaas.config), which is what an environment variable
// GOKAFKA_LISTENER_NAME_<NAME>_SCRAM_SHA_512_SASL_JAAS_CONFIG becomes.
func (cfg *Config) mechSetting(listener, mech, prop string) (string, bool) {
	ls := cfg.ListenerSettings[strings.ToUpper(listener)]
	m := strings.ToLower(mech)
	if v, ok := ls[m+"."+prop]; ok {
		return v, true
	}
	v, ok := ls[strings.ReplaceAll(m, "-", ".")+"."+prop]
	return v, ok
}

// enabledMechanisms is listener's sasl.enabled.mechanisms: its own
// setting, else the broker-wide one.
func (cfg *Config) enabledMechanisms(listener string) []string {
	if v, ok := cfg.setting(listener, "", "sasl.enabled.mechanisms"); ok {
		return kconfig.List(strings.ToUpper(v))
	}
	return cfg.SASL.EnabledMechanisms
}

// jaasFor parses listener.name.<listener>.<mechanism>.sasl.jaas.config;
// ok is false when it is not set.
func (cfg *Config) jaasFor(listener, mech string) (j sasl.JAAS, ok bool, err error) {
	v, set := cfg.mechSetting(listener, mech, "sasl.jaas.config")
	if !set {
		return sasl.JAAS{}, false, nil
	}
	j, err = sasl.ParseJAAS(v)
	if err != nil {
		return sasl.JAAS{}, false, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config: %w", strings.ToLower(listener), strings.ToLower(mech), err)
	}
	return j, true, nil
}

// saslServerConfig builds a SASL listener's configuration.
func saslServerConfig(ctx context.Context, cfg *Config, listener string, store sasl.CredentialStore) (*sasl.ServerConfig, error) {
	sc := &sasl.ServerConfig{Mechanisms: cfg.enabledMechanisms(listener), Scram: store, MaxReauth: map[string]time.Duration{"": cfg.SASL.MaxReauth},
		MaxReceiveSize: cfg.SASL.MaxReceiveSize, FailedAuthenticationDelay: cfg.SASL.FailedAuthDelay}
	if err := sasl.Validate(sc.Mechanisms); err != nil {
		return nil, fmt.Errorf("listener %s: %w", listener, err)
	}
	parseMs := func(prop, v string) (time.Duration, error) {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 0 {
			return 0, fmt.Errorf("listener %s: %s: invalid value %q", listener, prop, v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	if v, ok := cfg.setting(listener, "", "connections.max.reauth.ms"); ok {
		d, err := parseMs("connections.max.reauth.ms", v)
		if err != nil {
			return nil, err
		}
		sc.MaxReauth[""] = d
	}
	for _, mech := range sc.Mechanisms {
		if v, ok := cfg.mechSetting(listener, mech, "connections.max.reauth.ms"); ok {
			d, err := parseMs(strings.ToLower(mech)+".connections.max.reauth.ms", v)
			if err != nil {
				return nil, err
			}
			sc.MaxReauth[mech] = d
		}
		j, ok, err := cfg.jaasFor(listener, mech)
		if err != nil {
			return nil, err
		}
		switch mech {
		case sasl.Plain:
			if !ok {
				return nil, fmt.Errorf("listener %s enables PLAIN but listener.name.%s.plain.sasl.jaas.config (its users, user_<name>=\"<password>\") is not set", listener, strings.ToLower(listener))
			}
			sc.PlainUsers = j.PlainUsers()
		case sasl.OAuthBearer:
			oc := &sasl.OAuthConfig{}
			if ok {
				if oc, err = sasl.OAuthConfigFromJAAS(j); err != nil {
					return nil, fmt.Errorf("listener %s: %w", listener, err)
				}
			}
			url := cfg.SASL.JWKSURL
			if v, ok := cfg.setting(listener, mech, "sasl.oauthbearer.jwks.endpoint.url"); ok {
				url = v
			}
			if url != "" {
				jwks, err := sasl.LoadJWKS(ctx, url)
				if err != nil {
					return nil, fmt.Errorf("listener %s: sasl.oauthbearer.jwks.endpoint.url: %w", listener, err)
				}
				oc = &sasl.OAuthConfig{JWKS: jwks, PrincipalClaim: cfg.SASL.SubClaim, ScopeClaim: cfg.SASL.ScopeClaim,
					ClockSkew: cfg.SASL.ClockSkew, ExpectedAudience: cfg.SASL.ExpectedAudience, ExpectedIssuer: cfg.SASL.ExpectedIssuer}
				if v, ok := cfg.setting(listener, mech, "sasl.oauthbearer.expected.audience"); ok {
					oc.ExpectedAudience = kconfig.List(v)
				}
				if v, ok := cfg.setting(listener, mech, "sasl.oauthbearer.expected.issuer"); ok {
					oc.ExpectedIssuer = v
				}
			}
			sc.OAuth = oc
		}
	}
	return sc, nil
}

// peerSASL returns how this broker authenticates to its peers'
// inter-broker listener.
func peerSASL(cfg *Config, listener string) (kgosasl.Mechanism, error) {
	mech := strings.ToUpper(cfg.SASL.InterBrokerMechanism)
	enabled := cfg.enabledMechanisms(listener)
	if mech == sasl.GSSAPI {
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol is GSSAPI (Kafka's default), which gokafka does not support: set it to a mechanism of the inter-broker listener %s", listener)
	}
	if !slices.Contains(enabled, mech) {
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s must be one of the sasl.enabled.mechanisms of the inter-broker listener %s (%s)", mech, listener, strings.Join(enabled, ","))
	}
	j, ok, err := cfg.jaasFor(listener, mech)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("inter-broker SASL: listener.name.%s.%s.sasl.jaas.config must hold this broker's own credentials", strings.ToLower(listener), strings.ToLower(mech))
	}
	user, pass := j.Options["username"], j.Options["password"]
	needUser := func() error {
		if user == "" || pass == "" {
			return fmt.Errorf("inter-broker SASL: listener.name.%s.%s.sasl.jaas.config has no username and password options for this broker", strings.ToLower(listener), strings.ToLower(mech))
		}
		return nil
	}
	switch mech {
	case sasl.Plain:
		if err := needUser(); err != nil {
			return nil, err
		}
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case sasl.ScramSHA256, sasl.ScramSHA512:
		if err := needUser(); err != nil {
			return nil, err
		}
		a := scram.Auth{User: user, Pass: pass}
		if mech == sasl.ScramSHA512 {
			return a.AsSha512Mechanism(), nil
		}
		return a.AsSha256Mechanism(), nil
	case sasl.OAuthBearer:
		// Kafka's unsecured login module: a token for the configured
		// subject, made afresh for each connection.
		sub := j.Options["unsecuredLoginStringClaim_sub"]
		if sub == "" {
			return nil, fmt.Errorf("inter-broker SASL: listener.name.%s.oauthbearer.sasl.jaas.config has no unsecuredLoginStringClaim_sub option", strings.ToLower(listener))
		}
		life := time.Hour
		if v := j.Options["unsecuredLoginLifetimeSeconds"]; v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				life = time.Duration(n) * time.Second
			}
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: UnsecuredToken(sub, time.Now(), life)}, nil
		}), nil
	}
	return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %s is not supported", mech)
}

// UnsecuredToken is an unsecured JWS ({"alg":"none"}) for sub, issued at
// now and valid for life, as Kafka's unsecured OAUTHBEARER login module
// makes them.
func UnsecuredToken(sub string, now time.Time, life time.Duration) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"sub":%s,"iat":%d,"exp":%d}`, strconv.Quote(sub), now.Unix(), now.Add(life).Unix())
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// scramStore reads SCRAM credentials from the latest metadata image; meta
// is set once the metadata is open, before any connection is served.
type scramStore struct {
	meta *atomic.Pointer[cluster.Controller]
}

func (st scramStore) ScramCredential(mech, user string) (sasl.ScramCredential, bool) {
	m := st.meta.Load()
	if m == nil {
		return sasl.ScramCredential{}, false
	}
	return m.Image().ScramCredential(mech, user)
}
