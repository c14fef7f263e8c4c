package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Generation of a development CA and the certificates signed by it, what
// `gokafka certs` writes. Keys are ECDSA P-256 in unencrypted PKCS#8.

// CA is a certificate authority able to sign certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the certificate
}

// NewCA creates a self-signed CA named cn, valid for validity.
func NewCA(cn string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"gokafka"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// LoadCA reads a CA written by WriteCA.
func LoadCA(certPath, keyPath string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("the CA key is not ECDSA")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

// KeyPEM is the CA's key in PKCS#8 PEM.
func (ca *CA) KeyPEM() ([]byte, error) { return keyPEM(ca.Key) }

// Leaf is a certificate with its key, in PEM.
type Leaf struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Keystore is what ssl.keystore.location reads: the key, then the
// certificate.
func (l Leaf) Keystore() []byte { return append(append([]byte{}, l.KeyPEM...), l.CertPEM...) }

// Issue signs a certificate for cn, usable both as a server (with SANs
// 127.0.0.1, ::1, localhost and hosts) and as a client.
func (ca *CA) Issue(cn string, hosts []string, validity time.Duration) (Leaf, error) {
	return ca.IssueSubject(pkix.Name{CommonName: cn}, hosts, validity)
}

// IssueSubject is Issue with a full subject.
func (ca *CA) IssueSubject(subject pkix.Name, hosts []string, validity time.Duration) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" && h != "localhost" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Leaf{}, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: kp}, nil
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// GenerateDir writes into dir a CA (ca.pem, ca-key.pem; an existing pair
// there is reused) and, for each name, <name>.pem (key and certificate:
// an ssl.keystore.location), <name>-cert.pem and <name>-key.pem. It
// returns the paths written.
func GenerateDir(dir string, names, hosts []string, validity time.Duration) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	caCert, caKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	var written []string
	ca, err := LoadCA(caCert, caKey)
	if errors.Is(err, os.ErrNotExist) {
		if ca, err = NewCA("gokafka development CA", validity); err != nil {
			return nil, err
		}
		kp, err := ca.KeyPEM()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(caKey, kp, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(caCert, ca.PEM, 0o644); err != nil {
			return nil, err
		}
		written = append(written, caCert, caKey)
	} else if err != nil {
		return nil, fmt.Errorf("existing CA in %s: %w", dir, err)
	}
	for _, n := range names {
		leaf, err := ca.Issue(n, hosts, validity)
		if err != nil {
			return nil, err
		}
		files := []struct {
			name string
			b    []byte
			mode os.FileMode
		}{
			{n + ".pem", leaf.Keystore(), 0o600},
			{n + "-cert.pem", leaf.CertPEM, 0o644},
			{n + "-key.pem", leaf.KeyPEM, 0o600},
		}
		for _, f := range files {
			p := filepath.Join(dir, f.name)
			if err := os.WriteFile(p, f.b, f.mode); err != nil {
				return nil, err
			}
			written = append(written, p)
		}
	}
	return written, nil
}
