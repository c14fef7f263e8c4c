package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Store is one listener's TLS material with its settings. It is safe for
// concurrent use; every handshake reads the current material.
type Store struct {
	cfg    Config
	logger zerolog.Logger

	mu struct {
		sync.Mutex
		m *material
		// keyStamp and trustStamp identify the files m was read from.
		keyStamp, trustStamp fileStamp
	}
}

// material is what one reading of the stores produced; it is never
// changed, only replaced.
type material struct {
	cert   *tls.Certificate // nil without a keystore
	pool   *x509.CertPool   // nil: the system's roots
	server *tls.Config      // nil without a keystore
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) (fileStamp, error) {
	if path == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// New reads the stores cfg names and returns a Store; an unreadable or
// invalid store fails it, as it fails Kafka's startup.
func New(cfg Config, logger zerolog.Logger) (*Store, error) {
	s := &Store{cfg: cfg, logger: logger}
	ks, err := stamp(cfg.KeystoreLocation)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	ts, err := stamp(cfg.TruststoreLocation)
	if err != nil {
		return nil, fmt.Errorf("ssl.truststore.location: %w", err)
	}
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	s.mu.m, s.mu.keyStamp, s.mu.trustStamp = m, ks, ts
	return s, nil
}

// Config returns the parsed settings.
func (s *Store) Config() Config { return s.cfg }

// current returns the material, first reading the files again if either
// changed since they were read. A store that cannot be read now (a file
// being replaced) keeps the previous material and logs why.
func (s *Store) current() *material {
	ks, kerr := stamp(s.cfg.KeystoreLocation)
	ts, terr := stamp(s.cfg.TruststoreLocation)
	s.mu.Lock()
	defer s.mu.Unlock()
	if kerr != nil || terr != nil || (ks == s.mu.keyStamp && ts == s.mu.trustStamp) {
		return s.mu.m
	}
	m, err := s.load()
	if err != nil {
		s.logger.Warn().Err(err).Msg("TLS stores changed but cannot be read; keeping the previous certificates")
		// Try again only once the files change again.
		s.mu.keyStamp, s.mu.trustStamp = ks, ts
		return s.mu.m
	}
	s.logger.Info().Str("keystore", s.cfg.KeystoreLocation).Str("truststore", s.cfg.TruststoreLocation).Msg("TLS stores reloaded")
	s.mu.m, s.mu.keyStamp, s.mu.trustStamp = m, ks, ts
	return m
}

// load reads the stores. It holds no lock of s and may run under mu.
func (s *Store) load() (*material, error) {
	m := &material{}
	if s.cfg.HasKeystore() {
		chain, key := []byte(s.cfg.KeystoreChain), []byte(s.cfg.KeystoreKey)
		if p := s.cfg.KeystoreLocation; p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("ssl.keystore.location: %w", err)
			}
			chain, key = b, b
		}
		cert, err := keyPair(chain, key, s.cfg.KeyPassword)
		if err != nil {
			return nil, fmt.Errorf("keystore: %w", err)
		}
		m.cert = cert
	}
	trust := []byte(s.cfg.TruststoreCertificates)
	if p := s.cfg.TruststoreLocation; p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		trust = b
	}
	if len(bytes.TrimSpace(trust)) > 0 {
		m.pool = x509.NewCertPool()
		if !m.pool.AppendCertsFromPEM(trust) {
			return nil, errors.New("truststore: no PEM certificate found")
		}
	}
	if m.cert != nil {
		m.server = s.base()
		m.server.Certificates = []tls.Certificate{*m.cert}
		m.server.ClientCAs = m.pool
		switch s.cfg.ClientAuth {
		case ClientAuthRequested:
			m.server.ClientAuth = tls.VerifyClientCertIfGiven
		case ClientAuthRequired:
			m.server.ClientAuth = tls.RequireAndVerifyClientCert
		default:
			m.server.ClientAuth = tls.NoClientCert
		}
	}
	return m, nil
}

func (s *Store) base() *tls.Config {
	return &tls.Config{MinVersion: s.cfg.MinVersion, MaxVersion: s.cfg.MaxVersion, CipherSuites: s.cfg.CipherSuites}
}

// keyPair builds a certificate from PEM blocks: every CERTIFICATE block of
// chain, leaf first, and the first private key block of key, decrypted
// with password when it is encrypted.
func keyPair(chain, key []byte, password string) (*tls.Certificate, error) {
	var certPEM []byte
	var keyDER []byte
	var keyErr error
	for rest := chain; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		}
	}
	for rest := key; keyDER == nil; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch b.Type {
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			keyDER = b.Bytes
			if x509.IsEncryptedPEMBlock(b) { //nolint:staticcheck // legacy PEM encryption, still produced by openssl genrsa -aes256
				if password == "" {
					return nil, errors.New("the private key is encrypted and ssl.key.password is not set")
				}
				keyDER, keyErr = x509.DecryptPEMBlock(b, []byte(password)) //nolint:staticcheck
			}
			keyDER = pemKey(b.Type, keyDER)
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the private key is encrypted and ssl.key.password is not set")
			}
			var der []byte
			der, keyErr = decryptPKCS8(b.Bytes, []byte(password))
			keyDER = pemKey("PRIVATE KEY", der)
		}
	}
	if keyErr != nil {
		return nil, fmt.Errorf("decrypt the private key: %w", keyErr)
	}
	if certPEM == nil {
		return nil, errors.New("no CERTIFICATE block")
	}
	if keyDER == nil {
		return nil, errors.New("no private key block")
	}
	cert, err := tls.X509KeyPair(certPEM, keyDER)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

func pemKey(typ string, der []byte) []byte {
	if der == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ServerConfig returns the tls.Config of a listener: each handshake gets
// the current key pair and trust anchors. It fails without a keystore.
func (s *Store) ServerConfig() (*tls.Config, error) {
	if !s.cfg.HasKeystore() {
		return nil, errors.New("an SSL listener needs ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	c := s.base()
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.current().server, nil }
	return c, nil
}

// ClientConfig returns the tls.Config for a connection the broker opens to
// addr (host:port): its certificate is the keystore's (mTLS), the server
// is verified against the truststore, and its name against the host of
// addr when ssl.endpoint.identification.algorithm is https.
func (s *Store) ClientConfig(addr string) *tls.Config {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := s.base()
	c.ServerName = host
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if m := s.current(); m.cert != nil {
			return m.cert, nil
		}
		return &tls.Certificate{}, nil
	}
	// Verification against the current truststore is done here rather
	// than by crypto/tls, whose RootCAs are fixed per Config.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return s.verifyServer(cs, host)
	}
	return c
}

func (s *Store) verifyServer(cs tls.ConnectionState, host string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: s.current().pool, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if s.cfg.VerifyHostname {
		opts.DNSName = host
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

// Principal maps a verified peer certificate to the principal name by
// ssl.principal.mapping.rules; ok is false when the peer sent none (the
// connection is then User:ANONYMOUS, as in Kafka).
func (s *Store) Principal(cs *tls.ConnectionState) (name string, ok bool, err error) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return "", false, nil
	}
	name, err = MapPrincipal(s.cfg.Rules, SubjectDN(cs.PeerCertificates[0]))
	return name, err == nil, err
}
