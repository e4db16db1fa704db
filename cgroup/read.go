package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Read returns the effective limits of the calling process: ReadFS of the
// real root, opening each file without blocking. Outside Linux the error
// wraps ErrNoCgroup.
func Read() (Limits, error) { return ReadFS(dirFS("")) }

// ReadFS returns the effective limits of the calling process, reading
// proc/self/cgroup, proc/self/mountinfo and the cgroup files they lead to
// from fsys, which is rooted at "/", such as an fstest.MapFS or a copied
// tree. Each file is opened with fsys.Open, then read only if it is a
// regular file: an os.DirFS blocks in Open on a FIFO (Read does not).
//
// The error wraps ErrNoCgroup when proc/self/cgroup cannot be read; the
// Limits are then zero. Otherwise it is the errors.Join of CPU.Err and
// Memory.Err: a controller whose files are bad does not hide the other.
// ReadFS may be called from several goroutines at once.
func ReadFS(fsys fs.FS) (Limits, error) {
	r := fsReader{fsys: fsys}
	self, err := r.read("/proc/self/cgroup", maxProcFile)
	if err != nil {
		return Limits{}, noCgroup(err)
	}
	var lim Limits
	discover(&r, self, &lim)
	evalCPU(&r, &lim.CPU)
	evalMemory(&r, &lim.Memory)
	return lim, joinErrs(lim.CPU.Err, lim.Memory.Err)
}

// dirFS is the tree at a directory (no trailing slash), like os.DirFS, but
// opened with O_NONBLOCK so that a FIFO cannot block the open.
type dirFS string

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := os.OpenFile(string(d)+"/"+name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// fileSource gives the content of the limit file dir/name. found is false
// when it does not exist: no limit at that level. The bytes are valid until
// the next call.
type fileSource interface {
	file(dir, name string) (data []byte, found bool, err error)
}

// What is read of one file at most, far above what the kernel writes there.
const (
	maxLimitFile = 4 << 10  // one-line limit files
	maxStatFile  = 64 << 10 // cpu.stat, memory.stat
	maxProcFile  = 4 << 20  // /proc/self/cgroup and /proc/self/mountinfo
)

// sizeLimit returns the bound for a cgroup file of that name.
func sizeLimit(name string) int {
	if strings.HasSuffix(name, ".stat") {
		return maxStatFile
	}
	return maxLimitFile
}

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
	errBadCount   = errors.New("read returned an invalid byte count")
)

// fsReader reads whole files of fsys into one buffer.
type fsReader struct {
	fsys fs.FS
	buf  []byte
}

// read returns the content of the file at abs, at most limit bytes, valid
// until the next read.
func (r *fsReader) read(abs string, limit int) ([]byte, error) {
	f, err := openFile(r.fsys, abs)
	if err != nil {
		return nil, err
	}
	data, err := readFile(f, r.buf, limit)
	r.buf = data[:0]
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, pathError("read", abs, err)
	}
	return data, nil
}

func (r *fsReader) file(dir, name string) ([]byte, bool, error) {
	data, err := r.read(joinPath(dir, name), sizeLimit(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// openFile opens the file at the absolute path abs in fsys and checks that
// it is a regular file: a device such as /dev/zero would never end.
func openFile(fsys fs.FS, abs string) (fs.File, error) {
	f, err := fsys.Open(strings.TrimPrefix(abs, "/"))
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, pathError("open", abs, err)
	}
	return f, nil
}

// readFile reads f from its start into b, growing it as needed, with
// ReadAt when f has it; more than limit bytes is errTooLarge. Reads that
// return nothing 100 times in a row are io.ErrNoProgress, as in bufio.
func readFile(f fs.File, b []byte, limit int) ([]byte, error) {
	ra, _ := f.(io.ReaderAt)
	for b, zeros := b[:0], 0; ; {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(max(512, cap(b)), limit+1-len(b)))
		}
		p := b[len(b):cap(b)]
		var n int
		var err error
		if ra != nil {
			// n < len(p) means the end, whatever the error says.
			if n, err = ra.ReadAt(p, int64(len(b))); err == nil && n < len(p) {
				err = io.EOF
			}
		} else {
			n, err = f.Read(p)
		}
		if n < 0 || n > len(p) {
			return b, errBadCount
		}
		if b = b[:len(b)+n]; len(b) > limit {
			return b, errTooLarge
		}
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case n > 0:
			zeros = 0
		case zeros >= 99:
			return b, io.ErrNoProgress
		default:
			zeros++
		}
	}
}

// pathError reports err about the absolute path abs instead of the name
// in fsys.
func pathError(op, abs string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op, err = pe.Op, pe.Err
	}
	return &fs.PathError{Op: op, Path: abs, Err: err}
}

// noCgroup is the error of a /proc/self/cgroup that cannot be read.
func noCgroup(err error) error { return fmt.Errorf("%w: %w", ErrNoCgroup, err) }

// joinErrs combines two errors, keeping one when both are the same.
func joinErrs(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil || errors.Is(a, b):
		return a
	}
	return errors.Join(a, b)
}
