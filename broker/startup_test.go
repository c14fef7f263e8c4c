package broker

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/partition"
)

// notingFS is the OS filesystem that reports the first read of a
// partition directory and counts the files open.
type notingFS struct {
	partition.FS
	partDir  string
	readOnce sync.Once
	read     chan struct{}
	mu       sync.Mutex
	open     int
}

func (f *notingFS) ReadDir(dir string) ([]string, error) {
	if filepath.Base(dir) == f.partDir {
		f.readOnce.Do(func() { close(f.read) })
	}
	return f.FS.ReadDir(dir)
}

func (f *notingFS) OpenFile(name string, flag int, perm os.FileMode) (partition.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.open++
	f.mu.Unlock()
	return &notedFile{File: file, fs: f}, nil
}

func (f *notingFS) openFiles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

type notedFile struct {
	partition.File
	fs   *notingFS
	once sync.Once
}

func (f *notedFile) Close() error {
	f.once.Do(func() {
		f.fs.mu.Lock()
		f.fs.open--
		f.fs.mu.Unlock()
	})
	return f.File.Close()
}

// freeAddr is a loopback address nothing listens on (once closed).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A restarting broker loads its logs while the metadata quorum opens and
// catches up, as Kafka's does, instead of after it: here the quorum cannot
// open at all (the other voter is not running), yet the logs load; and a
// start given up meanwhile closes the logs it loaded.
func TestRestartingBrokerLoadsLogsWhileTheMetadataQuorumOpens(t *testing.T) {
	dir := t.TempDir()
	// A log dir as a previous run left it: meta.properties naming the
	// cluster, and one partition.
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("version=1\ncluster.id=c1\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := &notingFS{FS: partition.OSFS(), partDir: "t-0", read: make(chan struct{})}
	ctrl := freeAddr(t)
	voters, err := cluster.ParseVoters("1@" + ctrl + ",2@" + freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeID: 1, Listeners: []string{"PLAINTEXT://127.0.0.1:0", "CONTROLLER://" + ctrl}, LogDirs: []string{dir},
		ControllerListenerNames: []string{"CONTROLLER"}, Quorum: cluster.QuorumConfig{Voters: voters}, LogFS: fs,
		SecurityProtocolMap: map[string]string{"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		srv, err := Start(ctx, cfg, zerolog.Nop())
		if err == nil {
			srv.Shutdown(context.Background())
		}
		done <- err
	}()
	select {
	case <-fs.read:
	case err := <-done:
		t.Fatalf("start ended (%v) without loading the logs", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the logs were not loaded while the metadata quorum could not open")
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("start without a quorum: %v", err)
	}
	if n := fs.openFiles(); n != 0 {
		t.Fatalf("%d log files left open by the start given up", n)
	}
}
