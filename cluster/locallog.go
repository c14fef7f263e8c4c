package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/partition"
)

// MetadataDirName is the directory under the first log dir that holds the
// metadata log, named as Kafka names its own.
const MetadataDirName = partition.MetadataTopic + "-0"

const snapshotFile = "snapshot.json"

// localLog is the metadata log of a single-voter cluster: every proposal is
// applied at once and the whole state is written atomically to one file.
// Metadata changes are rare (topic creation, configs), so rewriting the
// state is cheaper than keeping a log with compaction.
type localLog struct {
	dir  string
	ctrl *Controller

	mu     sync.Mutex
	state  *State
	offset int64
}

// Open loads the metadata from dir (creating it if new) and returns the
// controller. The broker registers itself with Register once it listens.
func Open(ctx context.Context, cfg Config, dir string, logger zerolog.Logger) (*Controller, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st := NewState()
	b, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	switch {
	case err == nil:
		if err := st.RestoreSnapshot(b); err != nil {
			return nil, err
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, err
	}
	if st.clusterID == "" {
		st.clusterID = cfg.ClusterID
		if st.clusterID == "" {
			st.clusterID = NewClusterID()
		}
	}
	cfg.ClusterID = st.clusterID
	l := &localLog{dir: dir, state: st, offset: st.offset}
	c := &Controller{cfg: cfg, log: l, logger: logger}
	l.ctrl = c
	c.img = st.Image(cfg.NodeID)
	return c, nil
}

// Propose implements Log.
func (l *localLog) Propose(ctx context.Context, cmds ...*Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Apply to a copy first so that a failed command or a failed write
	// leaves the published state untouched.
	snap, err := l.state.MarshalSnapshot()
	if err != nil {
		return err
	}
	next := NewState()
	if err := next.RestoreSnapshot(snap); err != nil {
		return err
	}
	off := l.offset
	for _, cmd := range cmds {
		off++
		if err := next.Apply(off, cmd); err != nil {
			return err
		}
	}
	out, err := next.MarshalSnapshot()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(l.dir, snapshotFile), out); err != nil {
		return fmt.Errorf("persist metadata: %w", err)
	}
	l.state, l.offset = next, off
	l.ctrl.published(next.Image(l.ctrl.cfg.NodeID))
	return nil
}

// writeFileAtomic writes data to a temp file, fsyncs it, renames it over
// path and fsyncs the directory, so a crash leaves the old or the new file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
