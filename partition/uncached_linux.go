package partition

import (
	"errors"

	"golang.org/x/sys/unix"
)

// WriteUncached writes p at the file's offset with RWF_DONTCACHE (see
// uncached.go).
func (f osFile) WriteUncached(p []byte) (n int, ok bool, err error) {
	rc, err := f.File.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	ok = true
	cerr := rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, werr := unix.Pwritev2(int(fd), [][]byte{p[n:]}, -1, unix.RWF_DONTCACHE)
			if m > 0 {
				n += m
			}
			switch {
			case errors.Is(werr, unix.EINTR):
				continue
			case n == 0 && (errors.Is(werr, unix.EOPNOTSUPP) || errors.Is(werr, unix.EINVAL)):
				ok = false
				return true
			case werr != nil:
				err = werr
				return true
			case m == 0:
				err = unix.EIO
				return true
			}
		}
		return true
	})
	if err == nil {
		err = cerr
	}
	return n, ok, err
}
