package sasl

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
)

// OAuthConfig configures OAUTHBEARER validation. Without JWKS it is
// Kafka's unsecured validator (OAuthBearerUnsecuredValidatorCallbackHandler,
// for development): tokens are unsecured JWS ({"alg":"none"}, empty
// signature). With JWKS set (sasl.oauthbearer.jwks.endpoint.url) tokens
// must be JWTs signed with RS256 or ES256 by one of its keys.
type OAuthConfig struct {
	// PrincipalClaim names the claim holding the principal
	// (unsecuredValidatorPrincipalClaimName, sasl.oauthbearer.sub.claim.name);
	// "" is "sub".
	PrincipalClaim string
	// ScopeClaim names the scope claim (unsecuredValidatorScopeClaimName,
	// sasl.oauthbearer.scope.claim.name); "" is "scope".
	ScopeClaim string
	// RequiredScopes must all be in the token's scope
	// (unsecuredValidatorRequiredScope).
	RequiredScopes []string
	// ClockSkew is allowed between the token's times and the broker's
	// clock (unsecuredValidatorAllowableClockSkewMs,
	// sasl.oauthbearer.clock.skew.seconds).
	ClockSkew time.Duration

	// JWKS, when set, is the key set signed tokens are checked against.
	JWKS *JWKS
	// ExpectedAudience, when set, must intersect the token's aud
	// (sasl.oauthbearer.expected.audience).
	ExpectedAudience []string
	// ExpectedIssuer, when set, must be the token's iss
	// (sasl.oauthbearer.expected.issuer).
	ExpectedIssuer string
}

// OAuthConfigFromJAAS reads the unsecured validator's options of an
// OAUTHBEARER login module.
func OAuthConfigFromJAAS(j JAAS) (*OAuthConfig, error) {
	c := &OAuthConfig{
		PrincipalClaim: j.Options["unsecuredValidatorPrincipalClaimName"],
		ScopeClaim:     j.Options["unsecuredValidatorScopeClaimName"],
	}
	if s := strings.TrimSpace(j.Options["unsecuredValidatorRequiredScope"]); s != "" {
		for _, sc := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			c.RequiredScopes = append(c.RequiredScopes, sc)
		}
	}
	if s := j.Options["unsecuredValidatorAllowableClockSkewMs"]; s != "" {
		var ms int64
		if _, err := fmt.Sscan(s, &ms); err != nil || ms < 0 {
			return nil, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs: invalid value %q", s)
		}
		c.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

type oauthSession struct {
	cfg *OAuthConfig
	now func() time.Time

	step     int
	failure  *Error
	user     string
	expiry   time.Time
	finished bool
}

func (s *oauthSession) Principal() string { return s.user }
func (s *oauthSession) Expiry() time.Time { return s.expiry }

// Step: the client's initial response (RFC 7628 section 3.1) carries the
// token. A token that fails validation is answered with an error
// challenge, {"status":"invalid_token"}; the client acknowledges it with
// a single %x01 and the exchange then fails with that message, as in
// Kafka's OAuthBearerSaslServer.
func (s *oauthSession) Step(msg []byte) ([]byte, bool, error) {
	s.step++
	if s.failure != nil {
		f := s.failure
		if len(msg) != 1 || msg[0] != 0x01 {
			f = &Error{Msg: f.Msg, Reason: f.Reason + "; the client did not acknowledge the error challenge"}
		}
		return nil, false, f
	}
	if s.step != 1 {
		return nil, false, invalidCredentials(OAuthBearer, "unexpected message after the exchange ended")
	}
	authzid, token, err := parseOAuthInitial(msg)
	if err != nil {
		return nil, false, invalidCredentials(OAuthBearer, err.Error())
	}
	user, exp, status, scope, reason := s.validate(token)
	if status != "" {
		js := `{"status":"` + status + `"`
		if scope != "" {
			js += `, "scope":"` + scope + `"`
		}
		js += "}"
		s.failure = &Error{Msg: js, Reason: reason}
		return []byte(js), false, nil
	}
	if authzid != "" && authzid != user {
		return nil, false, &Error{Msg: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, user)}
	}
	s.user, s.expiry = user, exp
	return []byte{}, true, nil
}

// parseOAuthInitial parses gs2-header %x01 *(key=value %x01) %x01 and
// returns the authzid and the bearer token.
func parseOAuthInitial(msg []byte) (authzid, token string, err error) {
	m := string(msg)
	if !strings.HasPrefix(m, "n,") && !strings.HasPrefix(m, "y,") {
		return "", "", fmt.Errorf("invalid OAUTHBEARER client first message: channel binding is not supported")
	}
	m = m[2:]
	authz, rest, ok := strings.Cut(m, ",")
	if !ok {
		return "", "", fmt.Errorf("invalid OAUTHBEARER client first message")
	}
	if authz != "" {
		if authzid, ok = strings.CutPrefix(authz, "a="); !ok {
			return "", "", fmt.Errorf("invalid OAUTHBEARER client first message: bad authzid")
		}
	}
	if !strings.HasPrefix(rest, "\x01") || !strings.HasSuffix(rest, "\x01\x01") {
		return "", "", fmt.Errorf("invalid OAUTHBEARER client first message: bad key-value separators")
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest[1:], "\x01\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return "", "", fmt.Errorf("invalid OAUTHBEARER client first message: auth is not a Bearer token")
			}
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		return "", "", fmt.Errorf("invalid OAUTHBEARER client first message: no token")
	}
	return authzid, token, nil
}

// validate checks a token; a non-empty status is the RFC 7628 error
// status, with reason for the log.
func (s *oauthSession) validate(token string) (user string, exp time.Time, status, scope, reason string) {
	invalid := func(format string, args ...any) (string, time.Time, string, string, string) {
		return "", time.Time{}, "invalid_token", "", fmt.Sprintf(format, args...)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return invalid("the token is not a compact JWS (%d parts)", len(parts))
	}
	var header map[string]any
	if err := decodeJSONPart(parts[0], &header); err != nil {
		return invalid("the token's header: %v", err)
	}
	var claims map[string]any
	if err := decodeJSONPart(parts[1], &claims); err != nil {
		return invalid("the token's claims: %v", err)
	}
	alg, _ := header["alg"].(string)
	cfg := s.cfg
	if cfg.JWKS == nil {
		if alg != "none" {
			return invalid("an unsecured token must have alg none, not %q", alg)
		}
		if parts[2] != "" {
			return invalid("an unsecured token must have an empty signature")
		}
	} else {
		kid, _ := header["kid"].(string)
		if err := cfg.JWKS.Verify(alg, kid, parts[0]+"."+parts[1], parts[2]); err != nil {
			return invalid("signature: %v", err)
		}
	}
	now := s.now()
	skew := cfg.ClockSkew
	expV, ok := claims["exp"].(float64)
	if !ok {
		return invalid("the token has no numeric exp claim")
	}
	exp = unixTime(expV)
	if !now.Before(exp.Add(skew)) {
		return invalid("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if iat, present := claims["iat"]; present {
		v, ok := iat.(float64)
		if !ok {
			return invalid("the token's iat claim is not a number")
		}
		if unixTime(v).After(now.Add(skew)) {
			return invalid("the token was issued in the future (iat %s)", unixTime(v).UTC().Format(time.RFC3339))
		}
	}
	if nbf, ok := claims["nbf"].(float64); ok && unixTime(nbf).After(now.Add(skew)) {
		return invalid("the token is not valid before %s", unixTime(nbf).UTC().Format(time.RFC3339))
	}
	pc := cfg.PrincipalClaim
	if pc == "" {
		pc = "sub"
	}
	user, _ = claims[pc].(string)
	if strings.TrimSpace(user) == "" {
		return invalid("the token has no %s claim", pc)
	}
	if cfg.ExpectedIssuer != "" {
		if iss, _ := claims["iss"].(string); iss != cfg.ExpectedIssuer {
			return invalid("the token's issuer %q is not the expected %q", iss, cfg.ExpectedIssuer)
		}
	}
	if len(cfg.ExpectedAudience) > 0 {
		var auds []string
		switch a := claims["aud"].(type) {
		case string:
			auds = []string{a}
		case []any:
			for _, x := range a {
				if s, ok := x.(string); ok {
					auds = append(auds, s)
				}
			}
		}
		if !slices.ContainsFunc(auds, func(a string) bool { return slices.Contains(cfg.ExpectedAudience, a) }) {
			return invalid("the token's audience %v is not one of the expected %v", auds, cfg.ExpectedAudience)
		}
	}
	if len(cfg.RequiredScopes) > 0 {
		sc := cfg.ScopeClaim
		if sc == "" {
			sc = "scope"
		}
		var have []string
		switch v := claims[sc].(type) {
		case string:
			have = strings.Fields(v)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					have = append(have, s)
				}
			}
		}
		for _, need := range cfg.RequiredScopes {
			if !slices.Contains(have, need) {
				return "", time.Time{}, "insufficient_scope", strings.Join(cfg.RequiredScopes, " "), fmt.Sprintf("the token's scope %v lacks %q", have, need)
			}
		}
	}
	return user, exp, "", "", ""
}

// unixTime is a NumericDate claim as a time, clamped to what time.Time
// keeps exactly (a huge exp is far future, a huge negative one far past).
func unixTime(sec float64) time.Time {
	const limit = float64(math.MaxInt64 / int64(time.Second))
	switch {
	case sec > limit:
		return time.Unix(int64(limit), 0)
	case sec < -limit:
		return time.Unix(-int64(limit), 0)
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9))
}

func decodeJSONPart(p string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	return d.Decode(v)
}

// verifySignature checks a JWS signature with key.
func verifySignature(alg string, key crypto.PublicKey, signed, sigB64 string) error {
	sig, err := base64.RawURLEncoding.DecodeString(sigB64)
	if err != nil {
		return fmt.Errorf("signature is not base64url: %v", err)
	}
	sum := sha256.Sum256([]byte(signed))
	switch alg {
	case "RS256":
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("alg RS256 with a key that is not RSA")
		}
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig)
	case "ES256":
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || len(sig) != 64 {
			return fmt.Errorf("alg ES256 with a key that is not P-256 or a signature that is not 64 bytes")
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(k, sum[:], r, s) {
			return fmt.Errorf("ES256 signature does not verify")
		}
		return nil
	}
	return fmt.Errorf("unsupported alg %q (RS256 and ES256 are)", alg)
}
