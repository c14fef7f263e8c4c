package partition

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// File is the subset of *os.File the log needs. Writes always go to the end
// of the file when it was opened with os.O_APPEND.
type File interface {
	io.ReaderAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
}

// FS is the only way this package reaches the disk, so tests can substitute
// an in-memory filesystem that can be "crashed" (see MemFS.CrashClone) or one
// that injects errors (see ErrorFS).
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	Stat(name string) (exists bool, isDir bool, err error)
	// SyncDir makes creations, renames and removals of dir's entries durable.
	SyncDir(dir string) error
}

// OSFS returns the FS backed by the operating system.
func OSFS() FS { return osFS{} }

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Stat(name string) (bool, bool, error) {
	st, err := os.Stat(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, false, nil
		}
		return false, false, err
	}
	return true, st.IsDir(), nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// MemFS is an in-memory FS for tests. It models durability the way a POSIX
// filesystem promises it, and no more:
//
//   - a file's contents are durable up to its last File.Sync;
//   - the existence of a name (create, rename, remove, mkdir) is durable once
//     SyncDir has been called on its parent directory.
//
// CrashClone returns what a machine would find after power loss at that
// moment, which is how the recovery tests check that everything the log
// reported as flushed survives and nothing else is relied upon.
type MemFS struct {
	mu sync.Mutex
	// cur is the namespace as processes see it; durable the namespace a crash
	// would leave. Both map a cleaned path to a node; directories have
	// node.dir set.
	cur     map[string]*memNode
	durable map[string]*memNode
	// open counts handles opened and not yet closed (OpenFiles).
	open atomic.Int64
}

// OpenFiles returns how many handles are open: a process's file
// descriptors, for tests that check what a log keeps open.
func (m *MemFS) OpenFiles() int { return int(m.open.Load()) }

type memNode struct {
	dir    bool
	mu     sync.RWMutex
	data   []byte
	synced []byte
}

// NewMemFS returns an empty in-memory filesystem holding only the root "/".
func NewMemFS() *MemFS {
	root := &memNode{dir: true}
	return &MemFS{
		cur:     map[string]*memNode{"/": root},
		durable: map[string]*memNode{"/": root},
	}
}

func memClean(name string) string {
	p := filepath.Clean("/" + name)
	return p
}

// CrashClone returns a copy holding only durable state: names whose parent
// directory was synced since they were created (or renamed), with the
// contents each file had at its last Sync.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{cur: map[string]*memNode{}, durable: map[string]*memNode{}}
	clones := map[*memNode]*memNode{}
	for p, n := range m.durable {
		// A name survives only if every ancestor directory survives too.
		if !m.durableAncestorsLocked(p) {
			continue
		}
		cn, ok := clones[n]
		if !ok {
			n.mu.RLock()
			cn = &memNode{dir: n.dir, data: append([]byte(nil), n.synced...), synced: append([]byte(nil), n.synced...)}
			n.mu.RUnlock()
			clones[n] = cn
		}
		c.cur[p] = cn
		c.durable[p] = cn
	}
	return c
}

func (m *MemFS) durableAncestorsLocked(p string) bool {
	for p != "/" {
		p = filepath.Dir(p)
		if n, ok := m.durable[p]; !ok || !n.dir {
			return false
		}
	}
	return true
}

func (m *MemFS) parentDirLocked(p string) error {
	parent := filepath.Dir(p)
	n, ok := m.cur[parent]
	if !ok {
		return &os.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
	}
	if !n.dir {
		return &os.PathError{Op: "open", Path: p, Err: errors.New("not a directory")}
	}
	return nil
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	p := memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[p]
	if ok && n.dir {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	if !ok {
		if flag&os.O_CREATE == 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		if err := m.parentDirLocked(p); err != nil {
			return nil, err
		}
		n = &memNode{}
		m.cur[p] = n
	} else if flag&os.O_EXCL != 0 && flag&os.O_CREATE != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	}
	if flag&os.O_TRUNC != 0 {
		n.mu.Lock()
		n.data = n.data[:0:0]
		n.mu.Unlock()
	}
	m.open.Add(1)
	return &memFile{fs: m, node: n, name: p, appendMode: flag&os.O_APPEND != 0, readOnly: flag&(os.O_WRONLY|os.O_RDWR) == 0}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	p := memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[p]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	if n.dir {
		for q := range m.cur {
			if q != p && strings.HasPrefix(q, p+"/") {
				return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
	}
	delete(m.cur, p)
	return nil
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(path string) error {
	p := memClean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	for q := range m.cur {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(m.cur, q)
		}
	}
	return nil
}

// Rename implements FS. Renaming a directory moves everything under it.
func (m *MemFS) Rename(oldpath, newpath string) error {
	op, np := memClean(oldpath), memClean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[op]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: os.ErrNotExist}
	}
	if err := m.parentDirLocked(np); err != nil {
		return err
	}
	if n.dir {
		for q, c := range m.cur {
			if strings.HasPrefix(q, op+"/") {
				delete(m.cur, q)
				m.cur[np+q[len(op):]] = c
			}
		}
	}
	delete(m.cur, op)
	m.cur[np] = n
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(path string, perm os.FileMode) error {
	p := memClean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	var todo []string
	for q := p; ; q = filepath.Dir(q) {
		n, ok := m.cur[q]
		if ok {
			if !n.dir {
				return &os.PathError{Op: "mkdir", Path: q, Err: errors.New("not a directory")}
			}
			break
		}
		todo = append(todo, q)
		if q == "/" {
			break
		}
	}
	for _, q := range todo {
		m.cur[q] = &memNode{dir: true}
	}
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	p := memClean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[p]
	if !ok || !n.dir {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: os.ErrNotExist}
	}
	var names []string
	for q := range m.cur {
		if q != "/" && filepath.Dir(q) == p {
			names = append(names, filepath.Base(q))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (bool, bool, error) {
	p := memClean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[p]
	if !ok {
		return false, false, nil
	}
	return true, n.dir, nil
}

// SyncDir implements FS: the current set of dir's entries becomes durable.
func (m *MemFS) SyncDir(dir string) error {
	p := memClean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.cur[p]
	if !ok || !n.dir {
		return &os.PathError{Op: "sync", Path: dir, Err: os.ErrNotExist}
	}
	for q := range m.durable {
		if q != "/" && filepath.Dir(q) == p {
			delete(m.durable, q)
		}
	}
	for q, c := range m.cur {
		if q != "/" && filepath.Dir(q) == p {
			m.durable[q] = c
		}
	}
	// Entries of subdirectories that were renamed in under this directory
	// keep their own durability; a renamed directory's children are moved
	// along with it when the rename becomes durable.
	for q, c := range m.cur {
		if strings.HasPrefix(q, p+"/") && filepath.Dir(q) != p {
			if _, ok := m.durable[q]; !ok {
				if d, ok := m.durable[filepath.Dir(q)]; ok && d == m.cur[filepath.Dir(q)] && m.wasMovedLocked(c) {
					m.durable[q] = c
				}
			}
		}
	}
	return nil
}

// wasMovedLocked reports whether node is durable under some other name,
// which is how a directory rename carries its durable children along.
func (m *MemFS) wasMovedLocked(n *memNode) bool {
	for _, d := range m.durable {
		if d == n {
			return true
		}
	}
	return false
}

type memFile struct {
	fs         *MemFS
	node       *memNode
	name       string
	appendMode bool
	readOnly   bool
	mu         sync.Mutex
	off        int64
	closed     bool
}

var errClosedFile = errors.New("file already closed")

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return 0, errClosedFile
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, errClosedFile
	}
	if f.readOnly {
		return 0, errors.New("file opened read-only")
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.appendMode {
		f.off = int64(len(f.node.data))
	}
	end := f.off + int64(len(p))
	if end > int64(len(f.node.data)) {
		if end <= int64(cap(f.node.data)) {
			f.node.data = f.node.data[:end]
		} else {
			nd := make([]byte, end, max(end, 2*int64(cap(f.node.data))))
			copy(nd, f.node.data)
			f.node.data = nd
		}
	}
	copy(f.node.data[f.off:], p)
	f.off = end
	return len(p), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errClosedFile
	}
	f.closed = true
	f.fs.open.Add(-1)
	return nil
}

func (f *memFile) Sync() error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return errClosedFile
	}
	f.node.mu.Lock()
	f.node.synced = append(f.node.synced[:0:0], f.node.data...)
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errClosedFile
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size <= int64(len(f.node.data)) {
		// Copy so that slices handed out earlier by ReadAt callers never
		// see later writes land in memory they were reading.
		f.node.data = append([]byte(nil), f.node.data[:size]...)
	} else {
		nd := make([]byte, size)
		copy(nd, f.node.data)
		f.node.data = nd
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return 0, errClosedFile
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.data)), nil
}

// ErrorFS wraps an FS and lets a test fail chosen operations. Inject is
// called with the operation name ("open", "write", "sync", "truncate",
// "rename", "remove", "mkdir", "syncdir", "read", "stat") and the path; a non-nil
// result is returned instead of performing the operation.
type ErrorFS struct {
	FS
	Inject func(op, name string) error
}

func (e *ErrorFS) check(op, name string) error {
	if e.Inject == nil {
		return nil
	}
	return e.Inject(op, name)
}

// OpenFile implements FS.
func (e *ErrorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := e.check("open", name); err != nil {
		return nil, err
	}
	f, err := e.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e, name: name}, nil
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err := e.check("remove", name); err != nil {
		return err
	}
	return e.FS.Remove(name)
}

// Rename implements FS.
func (e *ErrorFS) Rename(oldpath, newpath string) error {
	if err := e.check("rename", oldpath); err != nil {
		return err
	}
	return e.FS.Rename(oldpath, newpath)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(path string, perm os.FileMode) error {
	if err := e.check("mkdir", path); err != nil {
		return err
	}
	return e.FS.MkdirAll(path, perm)
}

// Stat implements FS.
func (e *ErrorFS) Stat(name string) (bool, bool, error) {
	if err := e.check("stat", name); err != nil {
		return false, false, err
	}
	return e.FS.Stat(name)
}

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(dir string) error {
	if err := e.check("syncdir", dir); err != nil {
		return err
	}
	return e.FS.SyncDir(dir)
}

type errorFile struct {
	File
	fs   *ErrorFS
	name string
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("read", f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *errorFile) Sync() error {
	if err := f.fs.check("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.check("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
