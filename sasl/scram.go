package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// SCRAM iteration bounds: Kafka's minimum for both mechanisms, and the
// maximum AlterUserScramCredentials accepts (KIP-554).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramCredential is what the broker keeps of a SCRAM password (RFC 5802
// section 3): never the password, only the salt and the keys derived
// from the salted password.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// CredentialStore looks a user's credential for a SCRAM mechanism up.
type CredentialStore interface {
	ScramCredential(mechanism, user string) (ScramCredential, bool)
}

// ScramHash returns the hash of a SCRAM mechanism, nil if it is none.
func ScramHash(mech string) func() hash.Hash {
	switch mech {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// SaltPassword is Hi(password, salt, iterations) of RFC 5802.
func SaltPassword(mech, password string, salt []byte, iterations int) ([]byte, error) {
	h := ScramHash(mech)
	if h == nil {
		return nil, fmt.Errorf("not a SCRAM mechanism: %s", mech)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// CredentialFromSalted derives the stored credential from a salted
// password, as AlterUserScramCredentials sends it (KIP-554).
func CredentialFromSalted(mech string, salted, salt []byte, iterations int32) ScramCredential {
	h := ScramHash(mech)
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  hashSum(h, clientKey),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
		Iterations: iterations,
	}
}

// NewCredential salts password with a fresh random salt.
func NewCredential(mech, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	salted, err := SaltPassword(mech, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return CredentialFromSalted(mech, salted, salt, int32(iterations)), nil
}

func hmacSum(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

func hashSum(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// scramServer is the server side of RFC 5802's exchange: client-first,
// server-first, client-final, server-final.
type scramServer struct {
	mech  string
	hash  func() hash.Hash
	store CredentialStore
	// nonce is generated per exchange; tests replace it.
	nonce func() string

	step        int
	user        string
	gs2Header   string
	clientBare  string
	serverFirst string
	clientNonce string
	fullNonce   string
	cred        ScramCredential
}

func newScramServer(mech string, store CredentialStore) *scramServer {
	return &scramServer{mech: mech, hash: ScramHash(mech), store: store, nonce: randomNonce}
}

func randomNonce() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

func (s *scramServer) Principal() string { return s.user }
func (s *scramServer) Expiry() time.Time { return time.Time{} }

func (s *scramServer) Step(msg []byte) ([]byte, bool, error) {
	s.step++
	switch s.step {
	case 1:
		return s.clientFirst(string(msg))
	case 2:
		return s.clientFinal(string(msg))
	}
	return nil, false, invalidCredentials(s.mech, "unexpected message after the exchange ended")
}

// unescapeSaslName undoes RFC 5802's =2C and =3D escapes.
func unescapeSaslName(n string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		if n[i] != '=' {
			b.WriteByte(n[i])
			continue
		}
		switch {
		case strings.HasPrefix(n[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(n[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

func (s *scramServer) clientFirst(msg string) ([]byte, bool, error) {
	bad := func(reason string) ([]byte, bool, error) { return nil, false, invalidCredentials(s.mech, reason) }
	// gs2-header: cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || (flag != "n" && flag != "y") {
		return bad("invalid client first message: channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return bad("invalid client first message")
	}
	authzid := ""
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return bad("invalid client first message: bad authzid")
		}
		if authzid, ok = unescapeSaslName(a); !ok {
			return bad("invalid client first message: bad authzid")
		}
	}
	s.gs2Header = flag + "," + authz + ","
	s.clientBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) == 2 {
		return bad("invalid client first message")
	}
	user, ok := unescapeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return bad("invalid client first message: bad user name")
	}
	s.user = user
	for _, ext := range attrs[2:] {
		if strings.EqualFold(ext, "tokenauth=true") {
			// Delegation tokens (KIP-48) are not supported: never take a
			// token id for a user name.
			return bad("Token Authentication failed: Invalid tokenId : " + user)
		}
	}
	cred, found := s.store.ScramCredential(s.mech, user)
	if !found {
		return bad("unknown user " + user)
	}
	if authzid != "" && authzid != user {
		return nil, false, &Error{Msg: "Authentication failed: Client requested an authorization id that is different from username", Reason: "user " + user}
	}
	if cred.Iterations < ScramMinIterations {
		return bad(fmt.Sprintf("Iterations %d is less than the minimum %d for %s", cred.Iterations, ScramMinIterations, s.mech))
	}
	s.cred = cred
	s.clientNonce = attrs[1][2:]
	s.fullNonce = s.clientNonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, bool, error) {
	bad := func(reason string) ([]byte, bool, error) { return nil, false, invalidCredentials(s.mech, reason) }
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return bad("invalid client final message: no proof")
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return bad("invalid client final message")
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil || string(cb) != s.gs2Header {
		return bad("invalid client final message: channel binding does not match")
	}
	// RFC 5802 wants the server's nonce back. librdkafka before 2.6.1
	// (Debian's 2.0.2 among them) prepends its own nonce to it again;
	// Kafka 3.8.1 to 3.9 accept that (the nonce ends with the server's),
	// and so does gokafka, which keeps Kafka 3.9's client floors.
	if n := attrs[1][2:]; n != s.fullNonce && n != s.clientNonce+s.fullNonce {
		return bad("Invalid client nonce in the final client message.")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return bad("invalid client final message: bad proof")
	}
	authMsg := []byte(s.clientBare + "," + s.serverFirst + "," + withoutProof)
	sig := hmacSum(s.hash, s.cred.StoredKey, authMsg)
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ sig[k]
	}
	if subtle.ConstantTimeCompare(hashSum(s.hash, clientKey), s.cred.StoredKey) != 1 {
		return bad("invalid client credentials for user " + s.user)
	}
	serverSig := hmacSum(s.hash, s.cred.ServerKey, authMsg)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}
