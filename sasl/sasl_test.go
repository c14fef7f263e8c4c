package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestParseJAASAsKafkaWritesIt(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="a \"quoted\" pass;word" user_bob=bob-secret;`)
	if err != nil {
		t.Fatal(err)
	}
	if j.LoginModule != "org.apache.kafka.common.security.plain.PlainLoginModule" || j.Flag != "required" {
		t.Fatalf("module %q flag %q", j.LoginModule, j.Flag)
	}
	users := j.PlainUsers()
	want := map[string]string{"admin": "admin-secret", "alice": `a "quoted" pass;word`, "bob": "bob-secret"}
	if len(users) != len(want) {
		t.Fatalf("users %v", users)
	}
	for u, p := range want {
		if users[u] != p {
			t.Fatalf("user %s: %q, want %q", u, users[u], p)
		}
	}
	if j.Options["username"] != "admin" || j.Options["password"] != "admin-secret" {
		t.Fatalf("options %v", j.Options)
	}
}

func TestParseJAASRefusesMalformedConfigs(t *testing.T) {
	for _, s := range []string{
		``,
		`org.Module`,
		`org.Module required user_a="x"`,           // no ';'
		`org.Module sometimes user_a="x";`,         // bad flag
		`org.Module required user_a;`,              // no value
		`org.Module required user_a="x;`,           // unterminated quote
		`org.Module required; org.Other required;`, // two modules
		`org.Module required user_a="x"; trailing`, // junk after
	} {
		if _, err := ParseJAAS(s); err == nil {
			t.Errorf("ParseJAAS(%q) accepted", s)
		}
	}
}

func plainCfg() *ServerConfig {
	return &ServerConfig{Mechanisms: []string{Plain}, PlainUsers: map[string]string{"alice": "alice-secret"}}
}

func TestPlainChecksUserAndPasswordWithKafkasMessages(t *testing.T) {
	for _, tc := range []struct {
		msg, wantErr, wantUser string
	}{
		{"\x00alice\x00alice-secret", "", "alice"},
		{"alice\x00alice\x00alice-secret", "", "alice"},
		{"\x00alice\x00wrong", "Authentication failed: Invalid username or password", ""},
		{"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password", ""},
		{"\x00\x00alice-secret", "Authentication failed: username not specified", ""},
		{"\x00alice\x00", "Authentication failed: password not specified", ""},
		{"bob\x00alice\x00alice-secret", "Authentication failed: Client requested an authorization id that is different from username", ""},
		{"alice-secret", "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN", ""},
	} {
		s, _ := plainCfg().Start(Plain)
		_, done, err := s.Step([]byte(tc.msg))
		if tc.wantErr == "" {
			if err != nil || !done || s.Principal() != tc.wantUser {
				t.Errorf("%q: done %v err %v principal %q", tc.msg, done, err, s.Principal())
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || se.Msg != tc.wantErr {
			t.Errorf("%q: err %v, want %q", tc.msg, err, tc.wantErr)
		}
	}
}

type memStore map[string]ScramCredential

func (m memStore) ScramCredential(mech, user string) (ScramCredential, bool) {
	c, ok := m[mech+"/"+user]
	return c, ok
}

// RFC 7677 section 3's example exchange for SCRAM-SHA-256.
func TestScramSHA256RFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, err := SaltPassword(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	store := memStore{"SCRAM-SHA-256/user": CredentialFromSalted(ScramSHA256, salted, salt, 4096)}
	s := newScramServer(ScramSHA256, store)
	s.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	first, done, err := s.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatal(err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, done, err := s.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatal(err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	if s.Principal() != "user" {
		t.Fatalf("principal %q", s.Principal())
	}
}

// runScram drives a server session with franz-go's SCRAM client.
func runScram(t *testing.T, cfg *ServerConfig, mech kgosasl.Mechanism) (Session, error) {
	t.Helper()
	srv, err := cfg.Start(mech.Name())
	if err != nil {
		t.Fatal(err)
	}
	cs, msg, err := mech.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		reply, done, err := srv.Step(msg)
		if err != nil {
			return srv, err
		}
		cdone, next, cerr := cs.Challenge(reply)
		if cerr != nil {
			t.Fatalf("client refused the server: %v", cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			return srv, nil
		}
		msg = next
	}
}

func TestScramAuthenticatesFranzGoClientsWithBothHashes(t *testing.T) {
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		cred, err := NewCredential(mech, "alice-secret", 8192)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &ServerConfig{Mechanisms: []string{mech}, Scram: memStore{mech + "/al=i,ce": cred}}
		auth := scram.Auth{User: "al=i,ce", Pass: "alice-secret"}
		client := auth.AsSha256Mechanism()
		wrong := scram.Auth{User: "al=i,ce", Pass: "nope"}.AsSha256Mechanism()
		unknown := scram.Auth{User: "bob", Pass: "alice-secret"}.AsSha256Mechanism()
		if mech == ScramSHA512 {
			client = auth.AsSha512Mechanism()
			wrong = scram.Auth{User: "al=i,ce", Pass: "nope"}.AsSha512Mechanism()
			unknown = scram.Auth{User: "bob", Pass: "alice-secret"}.AsSha512Mechanism()
		}
		s, err := runScram(t, cfg, client)
		if err != nil || s.Principal() != "al=i,ce" {
			t.Fatalf("%s: err %v principal %q", mech, err, s.Principal())
		}
		wantMsg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
		for name, m := range map[string]kgosasl.Mechanism{"wrong password": wrong, "unknown user": unknown} {
			_, err := runScram(t, cfg, m)
			var se *Error
			if !errors.As(err, &se) || se.Msg != wantMsg {
				t.Fatalf("%s %s: err %v", mech, name, err)
			}
		}
	}
}

func TestScramRefusesCredentialBelowMinimumIterations(t *testing.T) {
	cred, _ := NewCredential(ScramSHA256, "pw", 1000)
	cfg := &ServerConfig{Mechanisms: []string{ScramSHA256}, Scram: memStore{"SCRAM-SHA-256/u": cred}}
	if _, err := runScram(t, cfg, scram.Auth{User: "u", Pass: "pw"}.AsSha256Mechanism()); err == nil {
		t.Fatal("a credential with 1000 iterations authenticated")
	}
}

// oauthStep runs an OAUTHBEARER exchange with token; it returns the
// principal or the failure after the client acknowledged the error.
func oauthStep(t *testing.T, cfg *ServerConfig, token string) (string, time.Time, error) {
	t.Helper()
	s, err := cfg.Start(OAuthBearer)
	if err != nil {
		t.Fatal(err)
	}
	reply, done, err := s.Step([]byte("n,,\x01auth=Bearer " + token + "\x01\x01"))
	if err != nil {
		return "", time.Time{}, err
	}
	if done {
		return s.Principal(), s.Expiry(), nil
	}
	if !json.Valid(reply) {
		t.Fatalf("error challenge is not JSON: %q", reply)
	}
	_, _, err = s.Step([]byte{1})
	if err == nil {
		t.Fatal("exchange went on after the error challenge")
	}
	return "", time.Time{}, err
}

func unsecured(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

var now0 = time.Unix(1_700_000_000, 0)

func oauthCfg(oc *OAuthConfig) *ServerConfig {
	return &ServerConfig{Mechanisms: []string{OAuthBearer}, OAuth: oc, Now: func() time.Time { return now0 }}
}

func errMsg(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.Msg
	}
	return ""
}

func TestOAuthUnsecuredValidatorAsKafkas(t *testing.T) {
	exp := now0.Add(time.Hour).Unix()
	cfg := oauthCfg(&OAuthConfig{})
	user, expiry, err := oauthStep(t, cfg, unsecured(fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)))
	if err != nil || user != "admin" || expiry.Unix() != exp {
		t.Fatalf("valid token: user %q expiry %v err %v", user, expiry, err)
	}
	for name, tok := range map[string]string{
		"expired":        unsecured(fmt.Sprintf(`{"sub":"admin","exp":%d}`, now0.Add(-time.Minute).Unix())),
		"no exp":         unsecured(`{"sub":"admin"}`),
		"no sub":         unsecured(fmt.Sprintf(`{"exp":%d}`, exp)),
		"issued later":   unsecured(fmt.Sprintf(`{"sub":"admin","exp":%d,"iat":%d}`, exp, now0.Add(time.Minute).Unix())),
		"signed":         strings.TrimSuffix(unsecured(fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)), ".") + ".c2ln",
		"alg not none":   base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"a","exp":9999999999}`)) + ".",
		"not a JWS":      "abc",
		"claims garbage": base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + ".!!!.",
	} {
		_, _, err := oauthStep(t, cfg, tok)
		if errMsg(err) != `{"status":"invalid_token"}` {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestOAuthClockSkewAndRequiredScope(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
		unsecuredValidatorRequiredScope="write" unsecuredValidatorAllowableClockSkewMs="120000"
		unsecuredValidatorPrincipalClaimName="client_id";`)
	if err != nil {
		t.Fatal(err)
	}
	oc, err := OAuthConfigFromJAAS(j)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauthCfg(oc)
	justExpired := now0.Add(-time.Minute).Unix()
	user, _, err := oauthStep(t, cfg, unsecured(fmt.Sprintf(`{"client_id":"svc","exp":%d,"scope":"read write"}`, justExpired)))
	if err != nil || user != "svc" {
		t.Fatalf("within the clock skew: user %q err %v", user, err)
	}
	_, _, err = oauthStep(t, cfg, unsecured(fmt.Sprintf(`{"client_id":"svc","exp":%d,"scope":"read"}`, now0.Add(time.Hour).Unix())))
	if m := errMsg(err); !strings.Contains(m, `"status":"insufficient_scope"`) || !strings.Contains(m, `"scope":"write"`) {
		t.Fatalf("missing scope: %v", err)
	}
}

type jwk map[string]string

func writeJWKS(t *testing.T, keys ...jwk) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"keys": keys})
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

func signJWT(t *testing.T, alg, kid string, key crypto.Signer, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc([]byte(fmt.Sprintf(`{"alg":%q,"kid":%q,"typ":"JWT"}`, alg, kid))) + "." + enc([]byte(claims))
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	}
	return signed + "." + enc(sig)
}

func TestOAuthSignedTokensCheckedAgainstJWKS(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	enc := base64.RawURLEncoding.EncodeToString
	ecPub, _ := ek.PublicKey.Bytes()
	url := writeJWKS(t,
		jwk{"kty": "RSA", "kid": "r1", "use": "sig", "n": enc(rk.N.Bytes()), "e": enc(big.NewInt(int64(rk.E)).Bytes())},
		jwk{"kty": "EC", "kid": "e1", "crv": "P-256", "x": enc(ecPub[1:33]), "y": enc(ecPub[33:])},
	)
	jwks, err := LoadJWKS(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauthCfg(&OAuthConfig{JWKS: jwks, ExpectedAudience: []string{"kafka"}, ExpectedIssuer: "https://idp", ClockSkew: 30 * time.Second})
	claims := func(aud, iss string, exp time.Duration) string {
		return fmt.Sprintf(`{"sub":"svc","aud":[%q],"iss":%q,"exp":%d,"iat":%d}`, aud, iss, now0.Add(exp).Unix(), now0.Unix())
	}
	good := claims("kafka", "https://idp", time.Hour)
	for _, tc := range []struct {
		name string
		tok  string
	}{
		{"RS256", signJWT(t, "RS256", "r1", rk, good)},
		{"ES256", signJWT(t, "ES256", "e1", ek, good)},
	} {
		if user, _, err := oauthStep(t, cfg, tc.tok); err != nil || user != "svc" {
			t.Errorf("%s: user %q err %v", tc.name, user, err)
		}
	}
	for _, tc := range []struct {
		name string
		tok  string
	}{
		{"unsecured", unsecured(good)},
		{"other key", signJWT(t, "RS256", "r1", other, good)},
		{"unknown kid", signJWT(t, "RS256", "r9", rk, good)},
		{"audience", signJWT(t, "RS256", "r1", rk, claims("other", "https://idp", time.Hour))},
		{"issuer", signJWT(t, "RS256", "r1", rk, claims("kafka", "https://evil", time.Hour))},
		{"expired", signJWT(t, "ES256", "e1", ek, claims("kafka", "https://idp", -time.Minute))},
	} {
		if _, _, err := oauthStep(t, cfg, tc.tok); errMsg(err) != `{"status":"invalid_token"}` {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func TestValidateRefusesGSSAPIAndUnknownMechanisms(t *testing.T) {
	if err := Validate([]string{"GSSAPI"}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("GSSAPI: %v", err)
	}
	if err := Validate([]string{"PLAIN", "CRAM-MD5"}); err == nil {
		t.Fatal("CRAM-MD5 accepted")
	}
	if err := Validate([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}); err != nil {
		t.Fatal(err)
	}
}

// clientFinal builds a client-final message for nonce, as a client that
// knows the password computes it.
func clientFinal(mech, pass string, salt []byte, iters int, clientBare, serverFirst, nonce string) string {
	h := ScramHash(mech)
	salted, _ := SaltPassword(mech, pass, salt, iters)
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	withoutProof := "c=biws,r=" + nonce
	sig := hmacSum(h, hashSum(h, clientKey), []byte(clientBare+","+serverFirst+","+withoutProof))
	for i := range sig {
		sig[i] ^= clientKey[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(sig)
}

func TestScramNonceMustBeTheServersOrLibrdkafkasDoubledOne(t *testing.T) {
	salt := []byte("salt-salt-salt")
	cred, _ := SaltPassword(ScramSHA512, "pw", salt, 4096)
	store := memStore{"SCRAM-SHA-512/u": CredentialFromSalted(ScramSHA512, cred, salt, 4096)}
	for _, tc := range []struct {
		name  string
		nonce func(cnonce, full string) string
		ok    bool
	}{
		{"the server's", func(_, full string) string { return full }, true},
		{"librdkafka < 2.6.1: its own again in front", func(c, full string) string { return c + full }, true},
		{"the client's alone", func(c, _ string) string { return c }, false},
		{"another", func(_, full string) string { return "x" + full }, false},
	} {
		s := newScramServer(ScramSHA512, store)
		first, _, err := s.Step([]byte("n,,n=u,r=cnonce"))
		if err != nil {
			t.Fatal(err)
		}
		full := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
		_, done, err := s.Step([]byte(clientFinal(ScramSHA512, "pw", salt, 4096, "n=u,r=cnonce", string(first), tc.nonce("cnonce", full))))
		if (err == nil && done) != tc.ok {
			t.Errorf("%s: done %v err %v", tc.name, done, err)
		}
	}
}

func TestOAuthHugeNegativeExpIsExpired(t *testing.T) {
	_, _, err := oauthStep(t, oauthCfg(&OAuthConfig{}), unsecured(`{"sub":"admin","exp":-1e300}`))
	if errMsg(err) != `{"status":"invalid_token"}` {
		t.Fatalf("exp -1e300: %v", err)
	}
}

// FuzzSessions feeds arbitrary client messages to every mechanism: a
// session answers or fails, it never panics.
func FuzzSessions(f *testing.F) {
	f.Add("PLAIN", []byte("\x00alice\x00alice-secret"), []byte(nil))
	f.Add("SCRAM-SHA-256", []byte("n,,n=u,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add("SCRAM-SHA-512", []byte("n,a=u,n=u,r="), []byte(",p="))
	f.Add("OAUTHBEARER", []byte("n,,\x01auth=Bearer a.b.\x01\x01"), []byte{1})
	f.Add("OAUTHBEARER", []byte("n,,\x01auth=Bearer "+unsecured(`{"sub":"a","exp":1e400}`)+"\x01\x01"), []byte(nil))
	cred, _ := NewCredential(ScramSHA256, "pw", 4096)
	cred512, _ := NewCredential(ScramSHA512, "pw", 4096)
	cfg := &ServerConfig{
		Mechanisms: Supported,
		PlainUsers: map[string]string{"alice": "alice-secret"},
		Scram:      memStore{"SCRAM-SHA-256/u": cred, "SCRAM-SHA-512/u": cred512},
		OAuth:      &OAuthConfig{RequiredScopes: []string{"x"}},
	}
	f.Fuzz(func(t *testing.T, mech string, first, second []byte) {
		s, err := cfg.Start(mech)
		if err != nil {
			return
		}
		if _, done, err := s.Step(first); err != nil || done {
			return
		}
		s.Step(second)
	})
}

func TestJWKSOverHTTPRereadForAnUnknownKeyID(t *testing.T) {
	k1, _ := rsa.GenerateKey(rand.Reader, 2048)
	k2, _ := rsa.GenerateKey(rand.Reader, 2048)
	enc := base64.RawURLEncoding.EncodeToString
	key := func(kid string, k *rsa.PrivateKey) jwk {
		return jwk{"kty": "RSA", "kid": kid, "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
	}
	var doc atomic.Value
	set := func(keys ...jwk) { b, _ := json.Marshal(map[string]any{"keys": keys}); doc.Store(b) }
	set(key("k1", k1))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(doc.Load().([]byte)) }))
	defer srv.Close()
	jwks, err := LoadJWKS(context.Background(), srv.URL+"/jwks")
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauthCfg(&OAuthConfig{JWKS: jwks})
	claims := fmt.Sprintf(`{"sub":"svc","exp":%d}`, now0.Add(time.Hour).Unix())
	if user, _, err := oauthStep(t, cfg, signJWT(t, "RS256", "k1", k1, claims)); err != nil || user != "svc" {
		t.Fatalf("k1: %q %v", user, err)
	}
	// The issuer rotates to k2. Right after a read the set is not read
	// again (a flood of unknown key ids must not hammer the URL)...
	set(key("k1", k1), key("k2", k2))
	if _, _, err := oauthStep(t, cfg, signJWT(t, "RS256", "k2", k2, claims)); err == nil {
		t.Fatal("k2 accepted before the set was read again")
	}
	// ...later it is.
	jwks.mu.Lock()
	jwks.mu.lastFetch = time.Time{}
	jwks.mu.Unlock()
	if user, _, err := oauthStep(t, cfg, signJWT(t, "RS256", "k2", k2, claims)); err != nil || user != "svc" {
		t.Fatalf("k2 after the set was read again: %q %v", user, err)
	}
}

func TestScramRefusesDelegationTokenAuthentication(t *testing.T) {
	cred, _ := NewCredential(ScramSHA256, "pw", 4096)
	s := newScramServer(ScramSHA256, memStore{"SCRAM-SHA-256/u": cred})
	if _, _, err := s.Step([]byte("n,,n=u,r=abc,tokenauth=true")); err == nil {
		t.Fatal("a delegation-token exchange was taken for user u's")
	}
}
