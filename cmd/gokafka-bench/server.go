package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The systems a scenario compares.
const (
	sysGokafka = "gokafka"
	sysKfake   = "kfake"
)

// serverSpec says which server to start and how.
type serverSpec struct {
	system     string // sysGokafka or sysKfake
	nodes      int    // 1 or 3
	gokafkaBin string
	// kfakePersist gives kfake a data directory so that it writes its
	// segments to disk like gokafka; without it kfake keeps everything in
	// memory.
	kfakePersist bool
	keepLogs     bool // leave the temp dir (with the server logs) in place
	logLevel     string
	// tls makes every gokafka listener SSL (certificates from gokafka
	// certs in the temp dir) and sets clientTLS.
	tls bool
}

// clientTLS is added to every client the bench makes: kgo.DialTLSConfig
// with the CA of the running server's certificates when it is TLS. The
// servers are started one at a time, before their clients.
var clientTLS []kgo.Opt

// newClient is a client of seeds with clientTLS and opts.
func newClient(seeds []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(slices.Concat([]kgo.Opt{kgo.SeedBrokers(seeds...)}, clientTLS, opts)...)
}

// proc is one server process, stopped only through its own handle.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	exitErr error         // valid once done is closed
	started time.Time     // just before exec
	log     string
	// bin, args, dir and env relaunch it (restart).
	bin  string
	args []string
	dir  string
	env  []string
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// server is one running system under test: the gokafka nodes of a
// cluster, or one kfake process serving every broker of its cluster.
type server struct {
	spec  serverSpec
	dir   string // temp dir holding data and logs, removed by stop
	addrs []string
	procs []*proc
}

// startServer launches the server's processes and returns as soon as they
// run; call waitReady before using it, and stop in every case.
func startServer(spec serverSpec) (*server, error) {
	dir, err := os.MkdirTemp("", "gokafka-bench-"+spec.system+"-")
	if err != nil {
		return nil, err
	}
	s := &server{spec: spec, dir: dir}
	ports, err := freePorts(2 * spec.nodes)
	if err != nil {
		s.stop()
		return nil, err
	}
	for i := range spec.nodes {
		s.addrs = append(s.addrs, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	switch spec.system {
	case sysGokafka:
		err = s.launchGokafka(ports[:spec.nodes], ports[spec.nodes:])
	case sysKfake:
		err = s.launchKfake(ports[:spec.nodes])
	default:
		err = fmt.Errorf("unknown system %q", spec.system)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// gokafkaClusterEnv is what a three-node gokafka cluster gets on top of its
// listeners and voters. Only the shutdown timeout differs from gokafka's
// defaults: the last node of a stopping cluster waits half of it for a
// quorum that is already gone, and nothing is measured then.
var gokafkaClusterEnv = map[string]string{
	"GOKAFKA_MIN_INSYNC_REPLICAS":        "2",
	"GOKAFKA_DEFAULT_REPLICATION_FACTOR": "3",
	"GOKAFKA_SHUTDOWN_TIMEOUT_MS":        "8000",
}

func (s *server) launchGokafka(ports, ctrl []int) error {
	var voters []string
	for i := range ports {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrl[i]))
	}
	// The broker sees only the settings chosen here, never GOKAFKA_*
	// variables of the calling shell.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOKAFKA_") {
			base = append(base, kv)
		}
	}
	clientTLS = nil
	var certs string
	if s.spec.tls {
		certs = filepath.Join(s.dir, "certs")
		names := []string{}
		for i := range ports {
			names = append(names, "node"+strconv.Itoa(i+1))
		}
		if out, err := exec.Command(s.spec.gokafkaBin, append([]string{"certs", "--dir", certs}, names...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("gokafka certs: %v: %s", err, out)
		}
		ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca)
		clientTLS = []kgo.Opt{kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots})}
	}
	for i := range ports {
		nodeDir := filepath.Join(s.dir, "node"+strconv.Itoa(i+1))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		settings := map[string]string{
			"GOKAFKA_NODE_ID":   strconv.Itoa(i + 1),
			"GOKAFKA_LOG_DIRS":  filepath.Join(nodeDir, "data"),
			"GOKAFKA_LOG_LEVEL": s.spec.logLevel,
			"GOKAFKA_LISTENERS": "PLAINTEXT://" + s.addrs[i],
			// No HTTP listener: several nodes (or a developer's own
			// gokafka) would collide on its default port.
			"GOKAFKA_HTTP_LISTENER": "",
		}
		if len(ports) > 1 {
			for k, v := range gokafkaClusterEnv {
				settings[k] = v
			}
			settings["GOKAFKA_LISTENERS"] = fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", s.addrs[i], ctrl[i])
			settings["GOKAFKA_CONTROLLER_QUORUM_VOTERS"] = strings.Join(voters, ",")
		}
		if certs != "" {
			settings["GOKAFKA_LISTENERS"] = strings.ReplaceAll(settings["GOKAFKA_LISTENERS"], "PLAINTEXT://", "SSL://")
			settings["GOKAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "SSL:SSL,CONTROLLER:SSL"
			settings["GOKAFKA_SSL_KEYSTORE_LOCATION"] = filepath.Join(certs, "node"+strconv.Itoa(i+1)+".pem")
			settings["GOKAFKA_SSL_TRUSTSTORE_LOCATION"] = filepath.Join(certs, "ca.pem")
		}
		env := append([]string(nil), base...)
		for k, v := range settings {
			env = append(env, k+"="+v)
		}
		if err := s.launch(s.spec.gokafkaBin, nil, nodeDir, env); err != nil {
			return err
		}
	}
	return nil
}

// launchKfake re-executes this binary with -serve-kfake, so that kfake runs
// in a process of its own whose CPU time and memory can be read apart from
// the load generator's.
func (s *server) launchKfake(ports []int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var ps []string
	for _, p := range ports {
		ps = append(ps, strconv.Itoa(p))
	}
	args := []string{"-serve-kfake", "-kfake-ports", strings.Join(ps, ",")}
	if s.spec.kfakePersist {
		args = append(args, "-kfake-dir", filepath.Join(s.dir, "data"))
	}
	return s.launch(self, args, s.dir, os.Environ())
}

func (s *server) launch(bin string, args []string, dir string, env []string) error {
	logPath := filepath.Join(dir, "server.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	dieWithParent(cmd)
	p := &proc{cmd: cmd, done: make(chan struct{}), log: logPath, started: time.Now(), bin: bin, args: args, dir: dir, env: env}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	s.procs = append(s.procs, p)
	go func() {
		p.exitErr = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return nil
}

// restart stops node i by SIGTERM (a clean shutdown), waits for it to
// exit, and starts it again with the same settings and data; the new
// process takes the old one's place in procs.
func (s *server) restart(i int) error {
	p := s.procs[i]
	if p.exited() {
		return fmt.Errorf("%s process %d had exited before the restart: %v", s.spec.system, p.pid(), p.exitErr)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s process %d did not exit within 30s of SIGTERM; killed", s.spec.system, p.pid())
	}
	if err := s.launch(p.bin, p.args, p.dir, p.env); err != nil {
		return err
	}
	last := len(s.procs) - 1
	s.procs[i] = s.procs[last]
	s.procs = s.procs[:last]
	return nil
}

// checkAlive fails if a server process has exited.
func (s *server) checkAlive() error {
	for _, p := range s.procs {
		if p.exited() {
			return fmt.Errorf("%s process %d exited: %v\n%s", s.spec.system, p.pid(), p.exitErr, logTail(p.log, 20))
		}
	}
	return nil
}

// waitAccept polls every address with a TCP connect, every interval, until
// each has accepted once, and returns how long after the start of the
// first process the last address accepted.
func (s *server) waitAccept(timeout, interval time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for _, addr := range s.addrs {
		for {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if err := s.checkAlive(); err != nil {
				return 0, err
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%s did not accept connections on %s within %v: %v", s.spec.system, addr, timeout, err)
			}
			time.Sleep(interval)
		}
	}
	return time.Since(s.procs[0].started), nil
}

// waitReady waits until every node accepts connections and answers a
// Metadata request listing all the cluster's brokers.
func (s *server) waitReady(timeout time.Duration) error {
	if _, err := s.waitAccept(timeout, 10*time.Millisecond); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, addr := range s.addrs {
		cl, err := newClient([]string{addr})
		if err != nil {
			return err
		}
		for {
			// A direct request: kadm's metadata calls answer from the
			// client's cache, which can keep an early, partial broker
			// list.
			var ids []int32
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err == nil {
				for _, b := range resp.Brokers {
					ids = append(ids, b.NodeID)
				}
				if len(ids) == len(s.addrs) {
					break
				}
			}
			if aerr := s.checkAlive(); aerr != nil {
				cl.Close()
				return aerr
			}
			if ctx.Err() != nil {
				cl.Close()
				if err == nil {
					err = fmt.Errorf("lists brokers %v, want %d", ids, len(s.addrs))
				}
				return fmt.Errorf("%s node %s not ready within %v: %v", s.spec.system, addr, timeout, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return nil
}

// cpu is the CPU time used so far by all of the server's processes.
func (s *server) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, p := range s.procs {
		c, err := processCPU(p.pid())
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// cpuEach is the CPU time used so far by each of the server's processes.
func (s *server) cpuEach() ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range s.procs {
		c, err := processCPU(p.pid())
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// rssEach is the resident memory of each of the server's processes.
func (s *server) rssEach() ([]int64, error) {
	var out []int64
	for _, p := range s.procs {
		r, err := processRSS(p.pid())
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// rss is the resident memory of all of the server's processes.
func (s *server) rss() (int64, error) {
	var sum int64
	for _, p := range s.procs {
		r, err := processRSS(p.pid())
		if err != nil {
			return 0, err
		}
		sum += r
	}
	return sum, nil
}

// stop sends SIGTERM to each of the server's own processes (by PID, all at
// once so that a cluster shuts down together), kills one that has not
// exited after 30 s, and removes the temp dir. It reports a process that
// exited on its own before being asked, or did not exit cleanly.
func (s *server) stop() error {
	var errs []error
	for _, p := range s.procs {
		if p.exited() {
			errs = append(errs, fmt.Errorf("%s process %d had exited before the stop: %v\n%s", s.spec.system, p.pid(), p.exitErr, logTail(p.log, 20)))
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range s.procs {
		wg.Go(func() {
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s process %d did not exit within 30s of SIGTERM; killed", s.spec.system, p.pid()))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if s.spec.keepLogs {
		fmt.Fprintf(os.Stderr, "kept %s\n", s.dir)
	} else if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func logTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

var usedPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// freePorts picks n distinct loopback ports in [20000, 32000), below the
// usual ephemeral range so that an outgoing connection cannot take one
// between the check and the server binding it. A port is never handed out
// twice in one run.
func freePorts(n int) ([]int, error) {
	usedPorts.Lock()
	defer usedPorts.Unlock()
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free loopback port found in [20000, 32000)")
		}
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
		out = append(out, p)
	}
	return out, nil
}
