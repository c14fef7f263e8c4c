package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// JWKS is a JSON Web Key Set (RFC 7517) read from a file:// or
// http(s):// URL, sasl.oauthbearer.jwks.endpoint.url. A token naming a
// key id the set does not hold makes it read the URL again, at most once
// per refetch interval.
type JWKS struct {
	url string

	mu struct {
		sync.Mutex
		keys      map[string]crypto.PublicKey
		lastFetch time.Time
	}
	// fetchMu serialises fetches, which are done without mu held.
	fetchMu sync.Mutex
}

// jwksRefetchInterval bounds how often an unknown key id reads the URL.
const jwksRefetchInterval = 10 * time.Second

// LoadJWKS reads the key set at rawURL.
func LoadJWKS(ctx context.Context, rawURL string) (*JWKS, error) {
	j := &JWKS{url: rawURL}
	keys, err := fetchJWKS(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	j.mu.keys, j.mu.lastFetch = keys, time.Now()
	return j, nil
}

func fetchJWKS(ctx context.Context, rawURL string) (map[string]crypto.PublicKey, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	var body []byte
	switch u.Scheme {
	case "file":
		body, err = os.ReadFile(u.Path)
	case "http", "https":
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil); err != nil {
			break
		}
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err != nil {
			break
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", rawURL, resp.Status)
			break
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	default:
		err = fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: want file://, http:// or https://", rawURL)
	}
	if err != nil {
		return nil, err
	}
	return ParseJWKS(body)
}

// ParseJWKS reads the RSA and P-256 keys of a JWKS document by key id;
// keys of other types are skipped.
func ParseJWKS(b []byte) (map[string]crypto.PublicKey, error) {
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	dec := base64.RawURLEncoding.DecodeString
	keys := map[string]crypto.PublicKey{}
	for _, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := dec(k.N)
			e, err2 := dec(k.E)
			if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("JWKS: RSA key %q is malformed", k.Kid)
			}
			keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			if k.Crv != "P-256" {
				continue
			}
			x, err1 := dec(k.X)
			y, err2 := dec(k.Y)
			if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
				return nil, fmt.Errorf("JWKS: EC key %q is malformed", k.Kid)
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				return nil, fmt.Errorf("JWKS: EC key %q: %w", k.Kid, err)
			}
			keys[k.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS holds no RSA or P-256 signing key")
	}
	return keys, nil
}

// Verify checks the signature of a token signed by key kid (any key of
// the set when the token names none).
func (j *JWKS) Verify(alg, kid, signed, sig string) error {
	keys := j.snapshot()
	if kid != "" {
		if _, ok := keys[kid]; !ok {
			keys = j.refetch()
		}
		k, ok := keys[kid]
		if !ok {
			return fmt.Errorf("no key with id %q in the JWKS", kid)
		}
		return verifySignature(alg, k, signed, sig)
	}
	var last error = fmt.Errorf("the JWKS holds no key")
	for _, k := range keys {
		if last = verifySignature(alg, k, signed, sig); last == nil {
			return nil
		}
	}
	return last
}

func (j *JWKS) snapshot() map[string]crypto.PublicKey {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.keys
}

func (j *JWKS) refetch() map[string]crypto.PublicKey {
	j.fetchMu.Lock()
	defer j.fetchMu.Unlock()
	j.mu.Lock()
	recent := time.Since(j.mu.lastFetch) < jwksRefetchInterval
	keys := j.mu.keys
	j.mu.Unlock()
	if recent {
		return keys
	}
	fresh, err := fetchJWKS(context.Background(), j.url)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.lastFetch = time.Now()
	if err == nil {
		j.mu.keys = fresh
	}
	return j.mu.keys
}
