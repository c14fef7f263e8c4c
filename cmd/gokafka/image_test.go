package main

// The container image (Dockerfile at the repository root) is the static
// binary alone FROM scratch. Docker is not needed to test what matters
// about it: the binary built as the Dockerfile builds it runs in a root
// holding nothing else, as the image's user, with the image's environment,
// serves clients, and its healthcheck subcommand works without a shell or
// curl.

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/gokafka/gokafka/cluster"
)

// dockerfile returns the image's ENV settings and USER uid:gid.
func dockerfile(t *testing.T) (env map[string]string, uid, gid uint32) {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env = map[string]string{}
	final := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FROM scratch"):
			final = true
		case final && strings.HasPrefix(line, "ENV "):
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "ENV "), "=")
			if !ok {
				t.Fatalf("Dockerfile: %q: want one ENV KEY=VALUE per line", line)
			}
			env[k] = v
		case final && strings.HasPrefix(line, "USER "):
			u, g, _ := strings.Cut(strings.TrimPrefix(line, "USER "), ":")
			un, err1 := strconv.Atoi(u)
			gn, err2 := strconv.Atoi(g)
			if err1 != nil || err2 != nil {
				t.Fatalf("Dockerfile: %q: want a numeric uid:gid (scratch has no /etc/passwd)", line)
			}
			uid, gid = uint32(un), uint32(gn)
		}
	}
	if !final || len(env) == 0 || uid == 0 {
		t.Fatalf("Dockerfile: no FROM scratch stage with ENV and a non-root USER (uid %d)", uid)
	}
	return env, uid, gid
}

// freeTCPPorts returns n distinct free ports: each is held open until
// all are picked, so two calls cannot hand out the same one.
func freeTCPPorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, port)
	}
	return ports
}

func TestImageRunsInAnEmptyRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root; run as root to check the image's contents without docker")
	}
	env, uid, gid := dockerfile(t)

	root := t.TempDir()
	bin := filepath.Join(root, "gokafka")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked; scratch has no loader")
		}
	}
	ef.Close()
	dataDir := filepath.Join(root, "var/lib/gokafka")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dataDir, int(uid), int(gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}

	// The image's ports, moved to free ones; the root shares this
	// process's network, as -p publishes the container's.
	ports := freeTCPPorts(t, 2)
	kafkaPort, httpPort := ports[0], ports[1]
	var environ []string
	for k, v := range env {
		v = strings.ReplaceAll(v, ":9092", ":"+kafkaPort)
		v = strings.ReplaceAll(v, ":9644", ":"+httpPort)
		environ = append(environ, k+"="+v)
	}
	run := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "/gokafka", args...)
		cmd.Path = "/gokafka"
		cmd.Env = environ
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		return cmd
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	srv := run(ctx)
	srv.Stdout, srv.Stderr = &logs, &logs
	srv.Cancel = func() error { return srv.Process.Signal(syscall.SIGTERM) }
	srv.WaitDelay = 20 * time.Second
	if err := srv.Start(); err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("chroot refused here: %v", err)
		}
		t.Fatal(err)
	}
	// exited is closed once the broker's process is gone, waitErr then
	// holding Wait's answer: both the check below and the deferred stop
	// may wait for it.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = srv.Wait(); close(exited) }()
	defer func() {
		cancel()
		<-exited // with ctx cancelled, Wait reports ctx.Err(); the exit status tells
		if code := srv.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the broker did not stop cleanly on SIGTERM: exit %d\n%s", code, logs.String())
		}
	}()

	// A client on the "host" reaches it at the advertised address.
	cl, err := kgo.NewClient(kgo.SeedBrokers("localhost:"+kafkaPort), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "image", Value: []byte("v")}).FirstErr(); err != nil {
		select {
		case <-exited:
			t.Fatalf("the broker exited: %v\n%s", waitErr, logs.String())
		default:
		}
		cancel() // the logs are read once the process is gone
		<-exited
		t.Fatalf("produce: %v\n%s", err, logs.String())
	}
	entries, _ := os.ReadDir(dataDir)
	if len(entries) == 0 {
		t.Fatalf("nothing written to the volume /var/lib/gokafka\n%s", logs.String())
	}

	// The HEALTHCHECK, inside the root, against the broker's own /readyz
	// on the image's HTTP listener.
	url := ""
	deadline := time.Now().Add(30 * time.Second)
	for {
		args := []string{"healthcheck"}
		if url != "" {
			args = append(args, "--url", url)
		}
		out, err := run(ctx, args...).CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthcheck in the root: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The compose file's nodes get valid configurations that agree on the
// quorum.
func TestComposeFileConfiguresAThreeNodeCluster(t *testing.T) {
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Hostname    string            `yaml:"hostname"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &compose); err != nil {
		t.Fatal(err)
	}
	if len(compose.Services) != 3 {
		t.Fatalf("%d services, want 3", len(compose.Services))
	}
	ids := map[int32]bool{}
	for name, svc := range compose.Services {
		t.Run(name, func(t *testing.T) {
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GOKAFKA_") {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			for k, v := range svc.Environment {
				t.Setenv(k, v)
			}
			cfg := envConfig(t)
			ids[cfg.NodeID] = true
			want := fmt.Sprintf("CONTROLLER://%s:9093", svc.Hostname)
			if !strings.Contains(strings.Join(cfg.Listeners, ","), want) {
				t.Errorf("listeners %v lack %s", cfg.Listeners, want)
			}
			found := false
			for _, v := range cfg.Quorum.Voters {
				found = found || v == cluster.Voter{ID: cfg.NodeID, Addr: svc.Hostname + ":9093"}
			}
			if !found || len(cfg.Quorum.Voters) != 3 {
				t.Errorf("voters %v do not name node %d at %s:9093", cfg.Quorum.Voters, cfg.NodeID, svc.Hostname)
			}
		})
	}
	if len(ids) != 3 {
		t.Errorf("node ids %v, want three distinct", ids)
	}
}
