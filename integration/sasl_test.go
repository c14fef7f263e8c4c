package integration

// SASL on a SASL_PLAINTEXT listener, driven by franz-go's own mechanisms
// (pkg/sasl/plain, scram, oauth), kafka-python 2.0.2 (SaslHandshake v0
// and raw tokens) and kcat (librdkafka): each mechanism authenticates and
// produces and consumes; bad credentials are refused with Kafka's error
// and message, logged, and the broker keeps serving everyone else.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";`

// saslBroker is a broker with a PLAINTEXT listener (the harness's, and
// the admin's) and a SASL_PLAINTEXT one offering every mechanism, seeded
// with the SCRAM-SHA-512 user admin/admin-secret.
type saslBroker struct {
	*broker
	saslPort int
}

func (b *saslBroker) SASLAddr() string { return "127.0.0.1:" + strconv.Itoa(b.saslPort) }

func startSASLBroker(t *testing.T, env map[string]string) *saslBroker {
	t.Helper()
	port, saslPort := freePort(t), freePort(t)
	settings := map[string]string{
		"GOKAFKA_LISTENERS":                                           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", port, saslPort),
		"GOKAFKA_SASL_ENABLED_MECHANISMS":                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"GOKAFKA_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG": plainJAAS,
		"GOKAFKA_GOKAFKA_SCRAM_BOOTSTRAP_USERS":                       "SCRAM-SHA-512=[name=admin,password=admin-secret]",
	}
	for k, v := range env {
		settings[k] = v
	}
	return &saslBroker{broker: startBroker(t, brokerOpts{Port: port, Env: settings}), saslPort: saslPort}
}

func saslClient(t *testing.T, addr string, m kgosasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.ClientID("sasl-test"),
		kgo.RequestRetries(0), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func unsecuredToken(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":%q,"exp":%d}`, sub, exp.Unix()))) + "."
}

// produceConsume writes one record through cl and reads it back.
func produceConsume(t *testing.T, addr string, m kgosasl.Mechanism, topic string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	p := saslClient(t, addr, m, kgo.DefaultProduceTopic(topic))
	if err := p.ProduceSync(ctx, kgo.StringRecord("hello "+m.Name())).FirstErr(); err != nil {
		t.Fatalf("%s: produce: %v", m.Name(), err)
	}
	c := saslClient(t, addr, m, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := c.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("%s: consume: %v", m.Name(), err)
	}
	if recs := fs.Records(); len(recs) == 0 || string(recs[len(recs)-1].Value) != "hello "+m.Name() {
		t.Fatalf("%s: consumed %v", m.Name(), recs)
	}
}

func alterSCRAM(t *testing.T, adm *kadm.Client, user, pass string, mech kadm.ScramMechanism) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(testCtx(t, 15*time.Second), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 4096, Password: pass}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatalf("AlterUserSCRAMs %s: %v", user, err)
	}
}

func TestSASLMechanismsAuthenticateFranzGoClients(t *testing.T) {
	b := startSASLBroker(t, nil)
	adm := b.admin(t)
	alterSCRAM(t, adm, "sam", "sam-256", kadm.ScramSha256)
	alterSCRAM(t, adm, "sam", "sam-512", kadm.ScramSha512)
	createTopic(t, adm, "sasl-mechs", 1, nil)
	for _, m := range []kgosasl.Mechanism{
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		scram.Auth{User: "sam", Pass: "sam-256"}.AsSha256Mechanism(),
		scram.Auth{User: "sam", Pass: "sam-512"}.AsSha512Mechanism(),
		scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism(), // seeded at first start
		oauth.Auth{Token: unsecuredToken("olga", time.Now().Add(time.Hour))}.AsMechanism(),
	} {
		produceConsume(t, b.SASLAddr(), m, "sasl-mechs")
	}
}

func TestSASLBadCredentialsRefusedWithKafkasErrorsAndLogged(t *testing.T) {
	b := startSASLBroker(t, nil)
	alterSCRAM(t, b.admin(t), "sam", "sam-256", kadm.ScramSha256)
	good := saslClient(t, b.SASLAddr(), plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())
	if err := good.Ping(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    kgosasl.Mechanism
		msg  string
	}{
		{"PLAIN wrong password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), "Invalid username or password"},
		{"PLAIN unknown user", plain.Auth{User: "mallory", Pass: "x"}.AsMechanism(), "Invalid username or password"},
		{"SCRAM wrong password", scram.Auth{User: "sam", Pass: "nope"}.AsSha256Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{"SCRAM unknown user", scram.Auth{User: "nobody", Pass: "x"}.AsSha512Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{"expired token", oauth.Auth{Token: unsecuredToken("olga", time.Now().Add(-time.Minute))}.AsMechanism(), "invalid_token"},
	} {
		cl := saslClient(t, b.SASLAddr(), tc.m)
		err := cl.Ping(testCtx(t, 10*time.Second))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with %q", tc.name, err, tc.msg)
		}
		cl.Close()
		// The broker keeps serving the others.
		if err := good.Ping(testCtx(t, 10*time.Second)); err != nil {
			t.Fatalf("after %s: %v", tc.name, err)
		}
	}
	eventually(t, 10*time.Second, func() error {
		log := b.logTail(400)
		for _, want := range []string{"wrong password for user alice", "unknown user mallory", "invalid client credentials for user sam", "unknown user nobody", "the token expired"} {
			if !strings.Contains(log, want) {
				return fmt.Errorf("no failed-authentication log line with %q", want)
			}
		}
		if strings.Count(log, "failed authentication with 127.0.0.1") < 5 {
			return errors.New("fewer than 5 failed-authentication lines naming the client")
		}
		return nil
	})
}

func TestSASLListenerServesNothingBeforeAuthentication(t *testing.T) {
	b := startSASLBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.SASLAddr()), kgo.RequestRetries(0), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).ListTopics(testCtx(t, 10*time.Second)); err == nil {
		t.Fatal("Metadata served on a SASL listener without authentication")
	}
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(b.logTail(200), "during SASL handshake") {
			return errors.New("no log line for the unauthenticated request")
		}
		return nil
	})
}

func TestSASLReauthenticatesWithinSessionLifetime(t *testing.T) {
	// At debug the broker logs each authentication, re-authentications
	// included.
	b := startSASLBroker(t, map[string]string{"GOKAFKA_CONNECTIONS_MAX_REAUTH_MS": "1500", "GOKAFKA_LOG_LEVEL": "debug"})
	createTopic(t, b.admin(t), "sasl-reauth", 1, nil)
	cl := saslClient(t, b.SASLAddr(), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), kgo.DefaultProduceTopic("sasl-reauth"))
	// Producing across several lifetimes keeps working: the client
	// re-authenticates on its connections before the broker would close
	// them.
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(testCtx(t, 10*time.Second), kgo.StringRecord("r")).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	log := b.logTail(5000)
	if strings.Contains(log, "session_expired") {
		t.Fatal("a connection outlived its session")
	}
	if !strings.Contains(log, "reauthentication=true") {
		t.Fatal("no connection re-authenticated")
	}
}

// kafka-python 2.0.2 authenticates with SaslHandshake v0 and raw tokens.
func TestSASLKafkaPythonPlainAndScram(t *testing.T) {
	if _, err := os.Stat(ccPython); err != nil {
		t.Skip("python3 not installed")
	}
	if _, _, err := ccRun(t, 30*time.Second, "", nil, ccPython, "-c", "import kafka"); err != nil {
		t.Skip("python3-kafka not installed")
	}
	b := startSASLBroker(t, nil)
	alterSCRAM(t, b.admin(t), "sam", "sam-256", kadm.ScramSha256)
	createTopic(t, b.admin(t), "sasl-python", 1, nil)
	script := filepath.Join(t.TempDir(), "sasl.py")
	os.WriteFile(script, []byte(`
import sys
from kafka import KafkaProducer, KafkaConsumer
addr, mech, user, pw, topic = sys.argv[1:6]
kw = dict(bootstrap_servers=addr, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech,
          sasl_plain_username=user, sasl_plain_password=pw, api_version_auto_timeout_ms=10000)
p = KafkaProducer(**kw)
p.send(topic, b"py-" + mech.encode()).get(timeout=20)
p.close()
c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **kw)
vals = [m.value for m in c]
c.close()
assert b"py-" + mech.encode() in vals, vals
print("ok")
`), 0o644)
	for _, tc := range [][3]string{{"PLAIN", "alice", "alice-secret"}, {"SCRAM-SHA-256", "sam", "sam-256"}, {"SCRAM-SHA-512", "admin", "admin-secret"}} {
		out, stderr, err := ccRun(t, 90*time.Second, "", nil, ccPython, script, b.SASLAddr(), tc[0], tc[1], tc[2], "sasl-python")
		if err != nil || !strings.Contains(string(out), "ok") {
			t.Fatalf("kafka-python %s: %v\n%s\n%s", tc[0], err, out, ccTail(stderr, 3000))
		}
	}
	// And a wrong password is refused.
	_, _, err := ccRun(t, 60*time.Second, "", nil, ccPython, script, b.SASLAddr(), "PLAIN", "alice", "nope", "sasl-python")
	if err == nil {
		t.Fatal("kafka-python authenticated with a wrong password")
	}
}

// kcat (librdkafka 2.0.2) with SCRAM-SHA-512 over SASL_PLAINTEXT.
func TestSASLKcatScramSha512(t *testing.T) {
	if _, err := os.Stat("/usr/bin/kcat"); err != nil {
		t.Skip("kcat not installed")
	}
	b := startSASLBroker(t, nil)
	createTopic(t, b.admin(t), "sasl-kcat", 1, nil)
	args := func(pw string, more ...string) []string {
		return append([]string{"-b", b.SASLAddr(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=admin", "-X", "sasl.password=" + pw, "-t", "sasl-kcat"}, more...)
	}
	if _, stderr, err := ccRun(t, 60*time.Second, "", []byte("from-kcat\n"), "kcat", args("admin-secret", "-P")...); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, ccTail(stderr, 3000))
	}
	out, stderr, err := ccRun(t, 60*time.Second, "", nil, "kcat", args("admin-secret", "-C", "-o", "beginning", "-c", "1", "-e")...)
	if err != nil || strings.TrimSpace(string(out)) != "from-kcat" {
		t.Fatalf("kcat consume: %v %q\n%s", err, out, ccTail(stderr, 3000))
	}
	_, stderr, err = ccRun(t, 30*time.Second, "", nil, "kcat", args("wrong", "-L", "-m", "10")...)
	if err == nil || !strings.Contains(string(stderr), "Authentication failed") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, ccTail(stderr, 3000))
	}
}

// User quotas apply to the user a connection authenticated as.
func TestSASLUserQuotaAppliesToTheAuthenticatedUser(t *testing.T) {
	b := startSASLBroker(t, nil)
	adm := b.admin(t)
	createTopic(t, adm, "sasl-quota", 1, nil)
	mustAlterQuotas(t, adm, setQuota(quotaEntity("user", "alice"), "producer_byte_rate", 1024))
	produce := func(user, pass string) int64 {
		hook := &throttleHook{}
		cl := saslClient(t, b.SASLAddr(), plain.Auth{User: user, Pass: pass}.AsMechanism(),
			kgo.DefaultProduceTopic("sasl-quota"), kgo.WithHooks(hook), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		value := make([]byte, 4096)
		for range 5 {
			if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatalf("%s: %v", user, err)
			}
		}
		return hook.n.Load()
	}
	if n := produce("alice", "alice-secret"); n == 0 {
		t.Fatal("alice, over her producer_byte_rate, was not throttled")
	}
	if n := produce("bob", "bob-secret"); n != 0 {
		t.Fatalf("bob, without a quota, was throttled %d times", n)
	}
}

// confluent-kafka-python (librdkafka 2.0.2) with SCRAM-SHA-512.
func TestSASLConfluentKafkaPythonScramSha512(t *testing.T) {
	if _, _, err := ccRun(t, 30*time.Second, "", nil, ccPython, "-c", "import confluent_kafka"); err != nil {
		t.Skip("python3-confluent-kafka not installed")
	}
	b := startSASLBroker(t, nil)
	createTopic(t, b.admin(t), "sasl-ck", 1, nil)
	script := filepath.Join(t.TempDir(), "ck.py")
	os.WriteFile(script, []byte(`
import sys
from confluent_kafka import Producer, Consumer
addr, pw = sys.argv[1:3]
conf = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "admin", "sasl.password": pw}
errs = []
p = Producer(dict(conf, **{"error_cb": lambda e: errs.append(e), "message.timeout.ms": 15000}))
p.produce("sasl-ck", b"from-confluent-kafka", callback=lambda err, msg: errs.append(err) if err else None)
p.flush(20)
if errs:
    print("errors:", errs); sys.exit(1)
c = Consumer(dict(conf, **{"group.id": "ck", "auto.offset.reset": "earliest"}))
c.subscribe(["sasl-ck"])
for _ in range(40):
    m = c.poll(0.5)
    if m is not None and not m.error() and m.value() == b"from-confluent-kafka":
        print("ok"); break
c.close()
`), 0o644)
	out, stderr, err := ccRun(t, 90*time.Second, "", nil, ccPython, script, b.SASLAddr(), "admin-secret")
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("confluent-kafka: %v\n%s\n%s", err, out, ccTail(stderr, 3000))
	}
	out, _, err = ccRun(t, 60*time.Second, "", nil, ccPython, script, b.SASLAddr(), "wrong")
	if err == nil || !strings.Contains(string(out), "Authentication failed") {
		t.Fatalf("confluent-kafka with a wrong password: %v\n%s", err, out)
	}
}
