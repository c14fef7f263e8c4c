package partition

// Log directory failure, as Kafka's LogDirFailureChannel handles it.
//
// Every log dir reaches the disk through its own dirFS, a wrapper of the
// Manager's FS. The first I/O error it sees (open, write, fsync, rename,
// remove, mkdir, directory sync, read, truncate, size) takes the whole
// directory offline: from then on every operation on it fails at once with
// ErrStorage, without reaching the disk. So a failed fsync is never
// retried (after a failed fsync the kernel may have dropped the dirty
// pages and a second fsync would report success for data that is gone),
// nothing is appended there any more, and the partitions of every other
// directory go on as before.
//
// Going offline closes the directory's logs (their handles, without
// flushing), forgets them from the Manager's list while remembering that
// their partitions live in an offline directory (GetOrCreate then answers
// ErrStorage instead of creating an empty log elsewhere), skips the
// directory in checkpoints and at Close (no clean-shutdown marker: the
// next start recovers it), and calls the failure handler once, on a
// goroutine of its own, so the broker can stop its replicas there and tell
// the controller (BrokerHeartbeat OfflineLogDirs).
//
// Errors that are answers rather than failures do not count: a file that
// does not exist or already exists, the end of a file, a handle already
// closed.

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/internal/kafkaerr"
)

// ErrStorage is the error of every operation on a log dir that is
// offline, and wraps the I/O error that took it offline (Kafka's
// KAFKA_STORAGE_ERROR).
var ErrStorage = kafkaerr.New(kerr.KafkaStorageError, "kafka storage error")

// logDir is one entry of log.dirs.
type logDir struct {
	path string
	// id is the directory.id of its meta.properties (KIP-858).
	id      [16]byte
	offline atomic.Bool
	// plainWrites: the dir's file system refused an uncached write
	// (uncached.go).
	plainWrites atomic.Bool
	// cause is the error that took the dir offline; set before offline.
	cause atomic.Pointer[error]
	m     *Manager
	// fs is dirFS{m.fs, the logDir}, made once: every log of the dir
	// keeps it.
	fs FS
	// syncer syncs the dir for the first flush of its new logs (lazy.go).
	syncer *dirSyncer
	// env is what the dir's logs share.
	env logEnv
}

// LogDirInfo describes one log dir.
type LogDirInfo struct {
	Path string
	// ID is the directory.id of the dir's meta.properties.
	ID      [16]byte
	Offline bool
	// Err is the I/O error that took the dir offline.
	Err error
}

// UUIDString renders a directory or topic id as Kafka prints Uuids.
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// isFailure reports whether err from a filesystem operation means the
// disk failed rather than answering a question.
func isFailure(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, ErrStorage),
		errors.Is(err, fs.ErrNotExist),
		errors.Is(err, fs.ErrExist),
		errors.Is(err, io.EOF),
		errors.Is(err, fs.ErrClosed),
		errors.Is(err, errClosedFile),
		errors.Is(err, os.ErrDeadlineExceeded):
		return false
	}
	return true
}

// offlineErr is what an operation on an offline dir returns.
func (d *logDir) offlineErr() error {
	if c := d.cause.Load(); c != nil {
		return fmt.Errorf("%w: log dir %s is offline: %w", ErrStorage, d.path, *c)
	}
	return fmt.Errorf("%w: log dir %s is offline", ErrStorage, d.path)
}

// check wraps the result of an operation: a failure takes the dir offline.
func (d *logDir) check(op, name string, err error) error {
	if !isFailure(err) {
		return err
	}
	var pe *fs.PathError
	var le *os.LinkError
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		err = fmt.Errorf("%s %s: %w", op, name, err)
	}
	d.fail(err)
	return fmt.Errorf("%w: %w", ErrStorage, err)
}

// fail takes the dir offline (once).
func (d *logDir) fail(cause error) {
	d.cause.CompareAndSwap(nil, &cause)
	if !d.offline.CompareAndSwap(false, true) {
		return
	}
	d.m.dirFailed(d, cause)
}

// dirFS is the FS of one log dir; see the top of this file.
type dirFS struct {
	fs FS
	d  *logDir
}

func (f dirFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if f.d.offline.Load() {
		return nil, f.d.offlineErr()
	}
	h, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, f.d.check("open", name, err)
	}
	df := dirFile{File: h, d: f.d, name: name}
	if _, ok := h.(dupFile); ok {
		return dirDupFile{df}, nil
	}
	return df, nil
}

func (f dirFS) Remove(name string) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("remove", name, f.fs.Remove(name))
}

func (f dirFS) RemoveAll(path string) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("remove", path, f.fs.RemoveAll(path))
}

func (f dirFS) Rename(oldpath, newpath string) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("rename", oldpath, f.fs.Rename(oldpath, newpath))
}

func (f dirFS) MkdirAll(path string, perm os.FileMode) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("mkdir", path, f.fs.MkdirAll(path, perm))
}

func (f dirFS) ReadDir(dir string) ([]string, error) {
	if f.d.offline.Load() {
		return nil, f.d.offlineErr()
	}
	names, err := f.fs.ReadDir(dir)
	return names, f.d.check("readdir", dir, err)
}

func (f dirFS) Stat(name string) (bool, bool, error) {
	if f.d.offline.Load() {
		return false, false, f.d.offlineErr()
	}
	ok, isDir, err := f.fs.Stat(name)
	return ok, isDir, f.d.check("stat", name, err)
}

func (f dirFS) SyncDir(dir string) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("syncdir", dir, f.fs.SyncDir(dir))
}

// dirFile is a file of a log dir.
type dirFile struct {
	File
	d    *logDir
	name string
}

func (f dirFile) ReadAt(p []byte, off int64) (int, error) {
	if f.d.offline.Load() {
		return 0, f.d.offlineErr()
	}
	n, err := f.File.ReadAt(p, off)
	return n, f.d.check("read", f.name, err)
}

func (f dirFile) Write(p []byte) (int, error) {
	if f.d.offline.Load() {
		return 0, f.d.offlineErr()
	}
	n, err := f.File.Write(p)
	return n, f.d.check("write", f.name, err)
}

// Sync never reaches the disk again once the dir is offline: the first
// failed fsync is final.
func (f dirFile) Sync() error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("fsync", f.name, f.File.Sync())
}

func (f dirFile) Truncate(size int64) error {
	if f.d.offline.Load() {
		return f.d.offlineErr()
	}
	return f.d.check("truncate", f.name, f.File.Truncate(size))
}

func (f dirFile) Size() (int64, error) {
	if f.d.offline.Load() {
		return 0, f.d.offlineErr()
	}
	n, err := f.File.Size()
	return n, f.d.check("stat", f.name, err)
}

// dirDupFile is a dirFile over a real file descriptor, which regions
// (sendfile) duplicate.
type dirDupFile struct{ dirFile }

func (f dirDupFile) dup() (*os.File, error) {
	if f.d.offline.Load() {
		return nil, f.d.offlineErr()
	}
	h, err := f.File.(dupFile).dup()
	return h, f.d.check("dup", f.name, err)
}

// dirFor returns the logDir of path (a log dir), nil if it is none.
func (m *Manager) dirFor(path string) *logDir { return m.ldirs[path] }

// envFor returns what the logs of log dir path share.
func (m *Manager) envFor(path string) *logEnv {
	if d := m.ldirs[path]; d != nil {
		return &d.env
	}
	return &logEnv{fs: m.fs, parent: path, now: nowOr(m.cfg.Now), baseLog: &m.logger, owner: m}
}

// fsFor returns the FS through which everything under log dir path is
// done.
func (m *Manager) fsFor(path string) FS {
	if d := m.ldirs[path]; d != nil {
		return d.fs
	}
	return m.fs
}

// initLogDirs sets up the failure tracking of every log dir.
func (m *Manager) initLogDirs() {
	m.ldirs = make(map[string]*logDir, len(m.cfg.Dirs))
	for _, p := range m.cfg.Dirs {
		d := &logDir{path: p, m: m}
		d.fs = dirFS{fs: m.fs, d: d}
		d.syncer = newDirSyncer(d.fs, p)
		d.env = logEnv{fs: d.fs, parent: p, now: nowOr(m.cfg.Now), baseLog: &m.logger, sync: d.syncer, owner: m}
		m.ldirs[p] = d
	}
}

// dirOffline reports whether log dir path is offline.
func (m *Manager) dirOffline(path string) bool {
	d := m.ldirs[path]
	return d != nil && d.offline.Load()
}

// loadDirID reads the directory.id of dir's meta.properties, adding one
// (a random Uuid, as Kafka's storage tool does) if the file has none.
func (m *Manager) loadDirID(dir string) error {
	d := m.ldirs[dir]
	fsys := m.fsFor(dir)
	path := filepath.Join(dir, metaPropertiesFile)
	data, _, err := readWholeFile(fsys, path)
	if err != nil {
		return err
	}
	if enc := parseProperties(data)["directory.id"]; enc != "" {
		raw, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil || len(raw) != 16 {
			return fmt.Errorf("%s: invalid directory.id %q", path, enc)
		}
		copy(d.id[:], raw)
		return nil
	}
	var id [16]byte
	for {
		_, _ = rand.Read(id[:])
		// Kafka reserves the Uuids whose first 8 bytes are all zero.
		if id != [16]byte{} && (id[0]|id[1]|id[2]|id[3]|id[4]|id[5]|id[6]|id[7]) != 0 {
			break
		}
	}
	body := string(data)
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	body += "directory.id=" + UUIDString(id) + "\n"
	if err := WriteFileAtomic(fsys, path, []byte(body)); err != nil {
		return err
	}
	d.id = id
	return nil
}

// OnLogDirFailure sets the function called, once per dir and on a
// goroutine of its own, when a log dir goes offline. Set it before the
// logs are used.
func (m *Manager) OnLogDirFailure(fn func(dir string, err error)) {
	m.failMu.Lock()
	m.onFail = fn
	m.failMu.Unlock()
}

// dirFailed runs once when d goes offline: its logs are closed and
// forgotten (their partitions stay known as offline), and the failure
// handler is told.
func (m *Manager) dirFailed(d *logDir, cause error) {
	m.logger.Error().Err(cause).Str("log_dir", d.path).Msg("log dir failed: taking it offline, its partitions stop here")
	m.failMu.Lock()
	fn := m.onFail
	m.failMu.Unlock()
	// The failing operation may hold a log's locks: close, forget and
	// report on another goroutine.
	go func() {
		var dead []*Log
		m.mu.Lock()
		for tp, h := range m.mu.logs {
			if h.dir == d && h.l != nil {
				dead = append(dead, h.l)
				m.mu.logs[tp] = hostedLog{dir: d}
			}
		}
		m.mu.Unlock()
		for _, l := range dead {
			l.closeUnflushed() // offline: nothing may be written there any more
		}
		if fn != nil {
			fn(d.path, cause)
		}
	}()
}

// closeUnflushed marks the log closed and closes its segments' files
// without flushing them, then wakes anyone waiting on a flush (they see it
// closed).
func (l *Log) closeUnflushed() {
	l.lifeMu.Lock()
	l.mu.Lock()
	if !l.mu.closed {
		l.mu.closed = true
		l.closeFiles()
	}
	l.mu.Unlock()
	l.lifeMu.Unlock()
	l.fl.Lock()
	l.wakeFlushWaitersLocked()
	l.fl.Unlock()
}

// offlineAtOpen is the error of the log dirs that failed while the
// Manager opened: a broker does not start with a dir it could not load
// (it would not know which partitions are there).
func (m *Manager) offlineAtOpen() error {
	var errs []error
	for _, p := range m.cfg.Dirs {
		if d := m.ldirs[p]; d.offline.Load() {
			errs = append(errs, d.offlineErr())
		}
	}
	return errors.Join(errs...)
}

// LogDirs describes every log dir, in log.dirs order.
func (m *Manager) LogDirs() []LogDirInfo {
	out := make([]LogDirInfo, 0, len(m.cfg.Dirs))
	for _, p := range m.cfg.Dirs {
		d := m.ldirs[p]
		info := LogDirInfo{Path: p, ID: d.id, Offline: d.offline.Load()}
		if c := d.cause.Load(); c != nil && info.Offline {
			info.Err = *c
		}
		out = append(out, info)
	}
	return out
}

// OfflineLogDirIDs returns the directory ids of the offline log dirs.
func (m *Manager) OfflineLogDirIDs() [][16]byte {
	var out [][16]byte
	for _, p := range m.cfg.Dirs {
		if d := m.ldirs[p]; d.offline.Load() {
			out = append(out, d.id)
		}
	}
	return out
}

// LiveLogDirs returns how many log dirs are online.
func (m *Manager) LiveLogDirs() int {
	n := 0
	for _, d := range m.ldirs {
		if !d.offline.Load() {
			n++
		}
	}
	return n
}

// DirOf returns the log dir holding tp's log, online or not.
func (m *Manager) DirOf(tp TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.mu.logs[tp]
	return h.path(), ok
}

// InOfflineDir reports whether tp's log is in a log dir that is offline.
func (m *Manager) InOfflineDir(tp TopicPartition) bool {
	m.mu.Lock()
	h, ok := m.mu.logs[tp]
	m.mu.Unlock()
	return ok && h.offline()
}

// LogDir returns the log dir holding the log.
func (l *Log) LogDir() string { return l.parentDir() }

// parentDir is the log dir holding the log's directory.
func (l *Log) parentDir() string { return filepath.Clean(l.env.parent) }

// PartitionsIn lists the partitions whose logs are in log dir path,
// including those of an offline dir.
func (m *Manager) PartitionsIn(path string) []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TopicPartition
	for tp, h := range m.mu.logs {
		if h.path() == path {
			out = append(out, tp)
		}
	}
	return out
}

// FailLogDir takes log dir path offline as if an I/O error had occurred
// there (used by the broker's test hook and by tests).
func (m *Manager) FailLogDir(path string, cause error) {
	if d := m.ldirs[path]; d != nil {
		d.fail(cause)
	}
}

// errEIO is the error of the failing-dir hook.
var errEIO = syscall.EIO

// FailingFS returns fs with every operation under dir failing with EIO
// once the file trigger exists. It is the broker's test hook for taking a
// real log dir offline (see cmd/gokafka: GOKAFKA_TEST_FAIL_LOG_DIR).
func FailingFS(fsys FS, dir, trigger string) FS {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return filepath.Clean(p)
	}
	prefix := abs(dir) + string(filepath.Separator)
	var tripped atomic.Bool
	var mu sync.Mutex
	return &ErrorFS{FS: fsys, Inject: func(op, name string) error {
		if !strings.HasPrefix(abs(name)+string(filepath.Separator), prefix) {
			return nil
		}
		if !tripped.Load() {
			mu.Lock()
			defer mu.Unlock()
			if _, err := os.Stat(trigger); err != nil {
				return nil
			}
			tripped.Store(true)
		}
		return &os.PathError{Op: op, Path: name, Err: errEIO}
	}}
}

// PartitionInDir describes one partition's log in DescribeLogDirs.
type PartitionInDir struct {
	TP               TopicPartition
	Size             int64
	LogEndOffset, HW int64
}

// LogDirDescription is one log dir with its space and partitions.
type LogDirDescription struct {
	LogDirInfo
	// TotalBytes and UsableBytes are the filesystem's size and the space
	// left to this process; -1 when unknown (offline, or not a real
	// filesystem).
	TotalBytes, UsableBytes int64
	Partitions              []PartitionInDir
}

// DescribeLogDirs describes every log dir: an offline one with its error
// and no partitions, as Kafka's LogManager.describeLogDirs does.
func (m *Manager) DescribeLogDirs() []LogDirDescription {
	byDir := map[string][]PartitionInDir{}
	for _, e := range m.snapshot() {
		e.l.mu.Lock()
		closed := e.l.mu.closed
		pd := PartitionInDir{TP: e.tp, LogEndOffset: e.l.mu.leo, HW: e.l.mu.hw}
		for _, s := range e.l.mu.segs {
			pd.Size += s.size
		}
		e.l.mu.Unlock()
		if !closed {
			byDir[e.dir] = append(byDir[e.dir], pd)
		}
	}
	var out []LogDirDescription
	for _, info := range m.LogDirs() {
		d := LogDirDescription{LogDirInfo: info, TotalBytes: -1, UsableBytes: -1}
		if !info.Offline {
			d.TotalBytes, d.UsableBytes = m.dirSpace(info.Path)
			d.Partitions = byDir[info.Path]
			sort.Slice(d.Partitions, func(i, j int) bool {
				a, b := d.Partitions[i].TP, d.Partitions[j].TP
				if a.Topic != b.Topic {
					return a.Topic < b.Topic
				}
				return a.Partition < b.Partition
			})
		}
		out = append(out, d)
	}
	return out
}

// dirSpace returns the size and free space of the filesystem holding dir,
// -1 when the logs are not on the operating system's filesystem.
func (m *Manager) dirSpace(dir string) (total, usable int64) {
	fsys := m.fs
	for {
		e, ok := fsys.(*ErrorFS)
		if !ok {
			break
		}
		fsys = e.FS
	}
	if _, ok := fsys.(osFS); !ok {
		return -1, -1
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
