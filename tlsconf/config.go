package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/gokafka/gokafka/internal/kconfig"
)

// Properties are the ssl.* properties this package reads, with Kafka's
// defaults except ssl.keystore.type and ssl.truststore.type: gokafka reads
// PEM stores only, where Kafka defaults to JKS.
var Properties = []struct{ Name, Default, Doc string }{
	{"ssl.keystore.type", "PEM", "Keystore format; gokafka reads PEM only (Kafka's default is JKS)."},
	{"ssl.keystore.location", "", "PEM file holding the private key and its certificate chain (leaf first)."},
	{"ssl.keystore.certificate.chain", "", "The certificate chain in PEM, inline, instead of ssl.keystore.location."},
	{"ssl.keystore.key", "", "The private key in PEM (PKCS#8, PKCS#1 or SEC 1), inline, instead of ssl.keystore.location."},
	{"ssl.key.password", "", "Password of an encrypted private key (PKCS#8 PBES2, or legacy PEM encryption)."},
	{"ssl.keystore.password", "", "Kafka's keystore password; PEM keystores use ssl.key.password, so gokafka reads it only as a fallback for that."},
	{"ssl.truststore.type", "PEM", "Truststore format; gokafka reads PEM only (Kafka's default is JKS)."},
	{"ssl.truststore.location", "", "PEM file of the CA certificates peers are verified against; empty uses the system's roots."},
	{"ssl.truststore.certificates", "", "The trusted CA certificates in PEM, inline, instead of ssl.truststore.location."},
	{"ssl.truststore.password", "", "Unused for PEM truststores (accepted for Kafka compatibility)."},
	{"ssl.client.auth", "none", "Client certificates on SSL listeners: none, requested (verified if sent) or required."},
	{"ssl.enabled.protocols", "TLSv1.2,TLSv1.3", "TLS versions enabled (TLSv1.2, TLSv1.3; TLSv1 and TLSv1.1 are also recognised)."},
	{"ssl.protocol", "TLSv1.3", "Kafka's SSLContext protocol; gokafka negotiates among ssl.enabled.protocols and ignores it."},
	{"ssl.cipher.suites", "", "TLS 1.2 cipher suites by their IANA/Java names; empty is Go's secure defaults. TLS 1.3 suites are not configurable and are accepted and ignored."},
	{"ssl.endpoint.identification.algorithm", "https", "Host name verification of the server certificate on connections the broker opens (https) or none (empty)."},
	{"ssl.principal.mapping.rules", "DEFAULT", "Rules mapping a client certificate's subject DN to the principal name: RULE:pattern/replacement/[LU], ..., DEFAULT."},
}

// ClientAuth is ssl.client.auth.
type ClientAuth string

const (
	ClientAuthNone      ClientAuth = "none"
	ClientAuthRequested ClientAuth = "requested"
	ClientAuthRequired  ClientAuth = "required"
)

// Config is one listener's parsed TLS settings.
type Config struct {
	KeystoreLocation string
	KeystoreChain    string // inline PEM
	KeystoreKey      string // inline PEM
	KeyPassword      string

	TruststoreLocation     string
	TruststoreCertificates string // inline PEM

	ClientAuth ClientAuth
	MinVersion uint16
	MaxVersion uint16
	// CipherSuites are the TLS 1.2 suites; nil is Go's defaults.
	CipherSuites []uint16
	// VerifyHostname is ssl.endpoint.identification.algorithm=https.
	VerifyHostname bool
	Rules          []Rule
}

// Overlay returns the ssl.* properties of a listener: the broker-wide
// value of each, replaced by the listener's own
// (listener.name.<name>.ssl.*) where it has one, as Kafka resolves them.
func Overlay(global, listener map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range global {
		if strings.HasPrefix(k, "ssl.") {
			out[k] = v
		}
	}
	for k, v := range listener {
		if strings.HasPrefix(k, "ssl.") {
			out[k] = v
		}
	}
	return out
}

var protocolVersions = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// Parse validates the ssl.* properties in props (missing ones take their
// defaults).
func Parse(props map[string]string) (Config, error) {
	get := func(name string) string {
		if v, ok := props[name]; ok {
			return strings.TrimSpace(v)
		}
		for _, p := range Properties {
			if p.Name == name {
				return p.Default
			}
		}
		return ""
	}
	var errs []error
	c := Config{
		KeystoreLocation: get("ssl.keystore.location"), KeystoreChain: get("ssl.keystore.certificate.chain"),
		KeystoreKey: get("ssl.keystore.key"), KeyPassword: get("ssl.key.password"),
		TruststoreLocation: get("ssl.truststore.location"), TruststoreCertificates: get("ssl.truststore.certificates"),
	}
	if c.KeyPassword == "" {
		c.KeyPassword = get("ssl.keystore.password")
	}
	for _, name := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		if t := get(name); !strings.EqualFold(t, "PEM") {
			errs = append(errs, fmt.Errorf("%s=%s: only PEM is supported", name, t))
		}
	}
	if c.KeystoreLocation != "" && (c.KeystoreChain != "" || c.KeystoreKey != "") {
		errs = append(errs, errors.New("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are exclusive"))
	}
	if (c.KeystoreChain == "") != (c.KeystoreKey == "") {
		errs = append(errs, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key go together"))
	}
	if c.TruststoreLocation != "" && c.TruststoreCertificates != "" {
		errs = append(errs, errors.New("ssl.truststore.location and ssl.truststore.certificates are exclusive"))
	}
	switch ca := ClientAuth(strings.ToLower(get("ssl.client.auth"))); ca {
	case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
		c.ClientAuth = ca
	default:
		errs = append(errs, fmt.Errorf("ssl.client.auth=%s: want none, requested or required", ca))
	}
	for _, p := range kconfig.List(get("ssl.enabled.protocols")) {
		v, ok := protocolVersions[p]
		if !ok {
			errs = append(errs, fmt.Errorf("ssl.enabled.protocols: unknown protocol %q", p))
			continue
		}
		if c.MinVersion == 0 || v < c.MinVersion {
			c.MinVersion = v
		}
		c.MaxVersion = max(c.MaxVersion, v)
	}
	if c.MinVersion == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("ssl.enabled.protocols is empty"))
	}
	suites, err := cipherSuites(kconfig.List(get("ssl.cipher.suites")))
	if err != nil {
		errs = append(errs, err)
	}
	c.CipherSuites = suites
	switch alg := get("ssl.endpoint.identification.algorithm"); strings.ToLower(alg) {
	case "https":
		c.VerifyHostname = true
	case "":
	default:
		errs = append(errs, fmt.Errorf("ssl.endpoint.identification.algorithm=%s: want https or empty", alg))
	}
	if c.Rules, err = ParseRules(get("ssl.principal.mapping.rules")); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// HasKeystore reports whether a key pair is configured.
func (c *Config) HasKeystore() bool { return c.KeystoreLocation != "" || c.KeystoreChain != "" }

// cipherSuites maps IANA names (which Java uses too) to Go's ids. The
// TLS 1.3 suites are always on in Go, so naming them changes nothing.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		byName[s.Name] = s.ID
	}
	var ids []uint16
	var errs []error
	for _, n := range names {
		id, ok := byName[n]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("ssl.cipher.suites: unknown cipher suite %q", n))
		case id == tls.TLS_AES_128_GCM_SHA256 || id == tls.TLS_AES_256_GCM_SHA384 || id == tls.TLS_CHACHA20_POLY1305_SHA256:
		default:
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && len(errs) == 0 {
		// Only TLS 1.3 suites named: TLS 1.2 keeps Go's defaults.
		return nil, nil
	}
	return ids, errors.Join(errs...)
}
