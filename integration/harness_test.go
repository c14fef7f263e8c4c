// Package integration holds black-box tests: each test builds nothing itself,
// starts real gokafka processes from the binary built once in TestMain, and
// talks to them only over TCP with stock Kafka clients or hand-encoded frames.
//
// Run with `go test ./integration/`. Knobs, all optional:
//
//	GOKAFKA_TEST_BINARY=/path/gokafka  test that binary instead of building ./cmd/gokafka
//	GOKAFKA_TEST_SHOW_LOGS=1           print the broker log tail for passing tests too
//	GOKAFKA_TEST_LOG_LEVEL=debug       the brokers' log.level (default info)
//	GOKAFKA_TEST_CLIENT_LOGS=debug     franz-go client logs on stderr (debug, info, warn)
//	GOKAFKA_TEST_REPORT=/path/file     append the kgo suite's counts and the client table there
//	GOKAFKA_TEST_KEEP_LOGS=/path/dir   network-fault tests: copy each node's log there, with goroutine dumps on a stall
//
// TestSoak takes -soak=5m (how long it injects faults; 60 s by default) and
// -soak.seed=N (replay a schedule whose seed a run printed).
//
// GOKAFKA_* variables of the calling shell are not passed to the brokers.
package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/internal/testkit"
)

// gokafkaBin is the broker binary built by TestMain.
var gokafkaBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// GOKAFKA_TEST_BINARY runs the suite against an already built binary
	// (a release artifact, say) instead of building the working tree.
	if bin := os.Getenv("GOKAFKA_TEST_BINARY"); bin != "" {
		gokafkaBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gokafka-integration-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating temp dir for the broker binary: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)

	// `go test` runs with the package directory as working directory, so the
	// module root is its parent.
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintf(os.Stderr, "locating module root: %v\n", err)
		return 1
	}
	bin := filepath.Join(dir, "gokafka")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gokafka")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ./cmd/gokafka failed: %v\n%s\n", err, out)
		return 1
	}
	gokafkaBin = bin
	return m.Run()
}

// ---------------------------------------------------------------------------
// Waiting.

// eventually calls fn until it returns nil or timeout passes, then fails the
// test with fn's last error. Only call it from the test's own goroutine.
func eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	testkit.Eventually(t, timeout, fn)
}

// poll is eventually without the test: it returns fn's last error if the
// deadline passed first.
func poll(timeout time.Duration, fn func() error) error { return testkit.Poll(timeout, fn) }

// ---------------------------------------------------------------------------
// Ports.

var usedPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// freePort picks a port in [20000, 32000): below the usual ephemeral range
// (32768+) so that an outgoing connection cannot grab it while a broker is
// down between a stop and a restart on the same port.
func freePort(t testing.TB) int {
	t.Helper()
	usedPorts.Lock()
	defer usedPorts.Unlock()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		if usedPorts.m[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		usedPorts.m[p] = true
		return p
	}
	t.Fatal("no free port found in [20000, 32000)")
	return 0
}

// ---------------------------------------------------------------------------
// Broker process.

// brokerOpts configures startBroker. Env holds extra GOKAFKA_* settings; they
// override the harness defaults.
type brokerOpts struct {
	Env map[string]string
	// Port is the PLAINTEXT port; 0 picks a free one. Choose it up front
	// (with freePort) when other settings must name it before the broker
	// exists: a cluster's listeners, advertised listeners.
	Port int
	// Args are the command's arguments (--config <file>).
	Args []string
}

type broker struct {
	t       testing.TB
	port    int
	root    string // the process's working directory
	dataDir string
	logPath string
	env     []string
	args    []string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has exited
	exitErr  error
	expected bool // the current process was asked to exit (Stop/Kill)
	logFile  *os.File
	starts   int
}

// startBroker starts a gokafka process on a fresh port with its own data
// directory, waits until it accepts connections, and registers its shutdown.
func startBroker(t testing.TB, opts brokerOpts) *broker {
	t.Helper()
	b := newBroker(t, opts)
	b.start()
	return b
}

// newBroker prepares a broker (directories, environment, log file, shutdown
// at the end of the test) without starting it, for callers that must launch
// several processes before any of them can become ready.
func newBroker(t testing.TB, opts brokerOpts) *broker {
	t.Helper()
	if gokafkaBin == "" {
		t.Fatal("broker binary not built (TestMain did not run)")
	}
	root := t.TempDir()
	b := &broker{
		t:       t,
		port:    opts.Port,
		root:    root,
		dataDir: filepath.Join(root, "data"),
		logPath: filepath.Join(root, "broker.log"),
		args:    opts.Args,
	}
	if b.port == 0 {
		b.port = freePort(t)
	}
	settings := map[string]string{
		"GOKAFKA_LISTENERS":  "PLAINTEXT://" + b.Addr(),
		"GOKAFKA_LOG_DIRS":   b.dataDir,
		"GOKAFKA_LOG_LEVEL":  envOr("GOKAFKA_TEST_LOG_LEVEL", "info"),
		"GOKAFKA_LOG_FORMAT": "console",
		// Off unless a test asks for it with a free port: the default,
		// 127.0.0.1:9644, would collide between nodes and tests.
		"GOKAFKA_HTTP_LISTENER": "",
	}
	for k, v := range opts.Env {
		settings[k] = v
	}
	// The broker must see only what the test chose: drop any GOKAFKA_*
	// variable inherited from the developer's shell.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOKAFKA_") {
			b.env = append(b.env, kv)
		}
	}
	for k, v := range settings {
		b.env = append(b.env, k+"="+v)
	}

	lf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("opening broker log: %v", err)
	}
	b.logFile = lf

	t.Cleanup(b.cleanup)
	return b
}

// Addr is host:port of the PLAINTEXT listener.
func (b *broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// DataDir is the broker's log.dirs.
func (b *broker) DataDir() string { return b.dataDir }

// PartitionDir is where the log of one partition lives (Kafka's layout).
func (b *broker) PartitionDir(topic string, partition int32) string {
	return filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, partition))
}

func (b *broker) start() {
	b.t.Helper()
	b.launch()
	b.waitReady()
}

// launch starts the process without waiting for it to accept connections.
func (b *broker) launch() {
	t := b.t
	t.Helper()
	b.mu.Lock()
	b.starts++
	fmt.Fprintf(b.logFile, "\n===== harness: start #%d of gokafka on %s at %s =====\n",
		b.starts, b.Addr(), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(gokafkaBin, b.args...)
	cmd.Dir = b.root
	cmd.Env = b.env
	cmd.Stdout = b.logFile
	cmd.Stderr = b.logFile
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		t.Fatalf("starting gokafka: %v", err)
	}
	done := make(chan struct{})
	b.cmd, b.done, b.exitErr, b.expected = cmd, done, nil, false
	b.mu.Unlock()

	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.exitErr = err
		b.mu.Unlock()
		close(done)
	}()
}

// waitReady waits until the current process accepts connections.
func (b *broker) waitReady() {
	t := b.t
	t.Helper()
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	// Ready means the listener accepts: the broker opens it only after its
	// logs are loaded.
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			t.Fatalf("gokafka exited before accepting connections: %v\n%s", b.exitError(), b.logTail(80))
		default:
		}
		c, err := net.DialTimeout("tcp", b.Addr(), 500*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gokafka did not accept connections on %s within 60s: %v\n%s", b.Addr(), err, b.logTail(80))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (b *broker) exitError() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exitErr
}

// Running reports whether the current process has not exited.
func (b *broker) Running() bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// CheckAlive fails the test if the broker process has exited.
func (b *broker) CheckAlive(t testing.TB) {
	t.Helper()
	if !b.Running() {
		t.Fatalf("gokafka is no longer running (exit: %v)\n%s", b.exitError(), b.logTail(80))
	}
}

// Stop sends SIGTERM, waits for exit and requires exit status 0.
func (b *broker) Stop() {
	b.t.Helper()
	if err := b.terminate(60 * time.Second); err != nil {
		b.t.Fatalf("clean shutdown: %v\n%s", err, b.logTail(80))
	}
}

// terminate is Stop returning its complaint instead of failing, so cleanup
// can use it too.
func (b *broker) terminate(timeout time.Duration) error {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.expected = true
	b.mu.Unlock()
	if cmd == nil {
		return errors.New("broker was never started")
	}
	select {
	case <-done:
		return fmt.Errorf("process had already exited: %v", b.exitError())
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %v", err)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("did not exit within %v of SIGTERM; killed", timeout)
	}
	if err := b.exitError(); err != nil {
		return fmt.Errorf("exit after SIGTERM was not clean: %v", err)
	}
	return nil
}

// Kill crashes the broker with SIGKILL and waits until it is gone.
func (b *broker) Kill() {
	b.t.Helper()
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.expected = true
	b.mu.Unlock()
	if cmd == nil {
		b.t.Fatal("Kill: broker was never started")
	}
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.t.Fatal("process did not exit within 30s of SIGKILL")
	}
}

// Restart starts the broker again on the same port with the same data
// directory and environment; a running broker is stopped cleanly first.
func (b *broker) Restart() {
	b.t.Helper()
	if b.Running() {
		b.Stop()
	}
	b.start()
}

func (b *broker) cleanup() {
	t := b.t
	b.mu.Lock()
	started := b.cmd != nil
	expected := b.expected
	b.mu.Unlock()
	if started {
		if b.Running() {
			if err := b.terminate(30 * time.Second); err != nil {
				t.Errorf("shutting down gokafka at the end of the test: %v", err)
			}
		} else if !expected {
			t.Errorf("gokafka exited on its own during the test: %v", b.exitError())
		}
	}
	// GOKAFKA_TEST_SHOW_LOGS shows the log of passing tests too, to check
	// what the broker said about input a test expects it to reject.
	if t.Failed() || os.Getenv("GOKAFKA_TEST_SHOW_LOGS") != "" {
		t.Logf("broker log (%s), last lines:\n%s", b.logPath, b.logTail(150))
	}
	b.logFile.Close()
}

// ansiEscape matches terminal color codes, which a console-format log may
// carry even when written to a file.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// logTail returns the last n lines of the broker's captured stderr/stdout.
func (b *broker) logTail(n int) string {
	f, err := os.Open(b.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read broker log: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	tail := ansiEscape.ReplaceAllString(strings.Join(lines, "\n"), "")
	return "----- broker log tail -----\n" + tail + "\n----- end of broker log -----"
}

// ---------------------------------------------------------------------------
// Clients.

// client returns a kgo client for b, closed when the test ends.
func (b *broker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return kgoClient(t, append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
}

// kgoClient returns a client with the suite's settings and opts (which
// name the seeds), closed when the test ends.
func kgoClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.ClientID("gokafka-integration"),
		// Topics are created right before use; refresh metadata quickly.
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.FetchMaxWait(500 * time.Millisecond),
		// Clients outlive broker restarts here. A connection that had only
		// done ApiVersions when the broker shut down reads EOF on its next
		// request, which kgo otherwise takes for a TLS/SASL misconfiguration
		// and does not retry, failing every buffered record.
		kgo.AlwaysRetryEOF(),
	}
	// GOKAFKA_TEST_CLIENT_LOGS=debug (or info, warn) shows what the client
	// saw, for failures that the broker's log alone does not explain.
	if lvl := clientLogLevel(); lvl != kgo.LogLevelNone {
		base = append(base, kgo.WithLogger(kgo.BasicLogger(os.Stderr, lvl, nil)))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin returns a kadm client for b.
func (b *broker) admin(t testing.TB) *kadm.Client {
	t.Helper()
	adm := kadm.NewClient(b.client(t))
	adm.SetTimeoutMillis(15000)
	return adm
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic with replication factor 1 and fails the test on
// any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopics %q (partitions %d, configs %v): %v (%s)", topic, partitions, showConfigs(configs), err, resp.ErrMessage)
	}
}

func strp(s string) *string { return &s }

func showConfigs(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v == nil {
			out[k] = "<null>"
		} else {
			out[k] = *v
		}
	}
	return out
}

// testReport appends text to the file GOKAFKA_TEST_REPORT names, if set:
// .ci/run prints that file after the test command, so that CI's log shows
// results that go test keeps to itself for passing tests (the kgo suite's
// counts, the client compatibility table).
func testReport(t testing.TB, text string) {
	path := os.Getenv("GOKAFKA_TEST_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("test report: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "== %s\n%s\n\n", t.Name(), strings.TrimRight(text, "\n")); err != nil {
		t.Errorf("test report: %v", err)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func clientLogLevel() kgo.LogLevel {
	switch os.Getenv("GOKAFKA_TEST_CLIENT_LOGS") {
	case "debug":
		return kgo.LogLevelDebug
	case "info":
		return kgo.LogLevelInfo
	case "warn":
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelNone
}
