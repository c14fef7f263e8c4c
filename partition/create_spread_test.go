package partition

import (
	"os"
	"strings"
	"sync"
	"testing"
)

// holdFS blocks the creation of directories named hold, and the look for
// them that opening a new (lazy) log makes, until release is closed, and
// closes reached when the first arrives.
type holdFS struct {
	FS
	hold    string
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *holdFS) wait(path string) {
	if strings.HasSuffix(path, h.hold) {
		h.once.Do(func() { close(h.reached) })
		<-h.release
	}
}

func (h *holdFS) MkdirAll(path string, perm os.FileMode) error {
	h.wait(path)
	return h.FS.MkdirAll(path, perm)
}

func (h *holdFS) Stat(name string) (bool, bool, error) {
	h.wait(name)
	return h.FS.Stat(name)
}

// Logs created side by side (a broker creating a new topic's partitions
// several at a time) still spread over the log dirs: a log being created
// counts in the dir it goes to.
func TestManagerLogsCreatedConcurrentlySpreadOverDirs(t *testing.T) {
	h := &holdFS{FS: NewMemFS(), hold: "/a-0", reached: make(chan struct{}), release: make(chan struct{})}
	m, err := OpenManager(h, ManagerConfig{Dirs: []string{"/d1", "/d2"}, NodeID: 1, ClusterID: "c1", Defaults: smallConfig()}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	first := make(chan error, 1)
	go func() {
		_, err := m.GetOrCreate(TopicPartition{"a", 0})
		first <- err
	}()
	<-h.reached
	if _, err := m.GetOrCreate(TopicPartition{"a", 1}); err != nil {
		t.Fatal(err)
	}
	close(h.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	d0, _ := m.DirOf(TopicPartition{"a", 0})
	d1, _ := m.DirOf(TopicPartition{"a", 1})
	if d0 == d1 {
		t.Fatalf("both logs created in %s, want one in each log dir", d0)
	}
}
