package cgroup

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Read returns the effective limits of the calling process: ReadFS of the
// real root, whose files it opens without blocking. Outside Linux the error
// wraps ErrNoCgroup.
func Read() (Limits, error) { return ReadOnly(nil, "") }

// ReadFS returns the effective limits of the calling process from fsys,
// rooted at "/", such as an fstest.MapFS or a copied tree; it may be called
// from several goroutines at once, and has one file open at a time. A file is
// read only if it is a regular file: where fsys is an fs.StatFS, such as an
// os.DirFS (whose Open of a FIFO waits for a writer), that is checked before
// Open too. The error wraps ErrNoCgroup when proc/self/cgroup cannot be read,
// with zero Limits; else it joins CPU.Err and Memory.Err: bad files of one
// controller do not hide the other's limit.
func ReadFS(fsys fs.FS) (Limits, error) { return ReadOnly(fsys, "") }

// ReadOnly is ReadFS of one controller, "cpu" or "memory" ("": both), of fsys
// (nil: the real root, as Read reads it): the other's Limits stay zero and
// none of its files is read.
func ReadOnly(fsys fs.FS, controller string) (Limits, error) {
	s := &snapshot{fsys: cmp.Or(fsys, fs.FS(dirFS("")))}
	self, err := s.readAll("/proc/self/cgroup")
	if err != nil {
		return Limits{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	lim := locate(s, self)
	if controller == "cpu" {
		lim.Memory = Memory{}
	} else if controller == "memory" {
		lim.CPU = CPU{}
	}
	return eval(s, lim)
}

// files are the cgroup files of a reading: a Watcher's, which it keeps open,
// or a snapshot's, each opened and closed as it is read. file returns the
// content of dir/name until the next call, found false when it does not
// exist (no limit at that level); readAll, of abs, which it does not keep.
type files interface {
	file(dir, name string) (data []byte, found bool, err error)
	readAll(abs string) ([]byte, error)
}

// snapshot has one file open at a time (a process short of descriptors can
// still read) and one buffer for all.
type snapshot struct {
	fsys fs.FS
	buf  []byte
}

func (s *snapshot) file(dir, name string) ([]byte, bool, error) {
	if data, err := s.readAll(joinPath(dir, name)); !errors.Is(err, fs.ErrNotExist) {
		return data, err == nil, err
	}
	return nil, false, nil
}

func (s *snapshot) readAll(abs string) ([]byte, error) {
	data, err := readAll(s.fsys, s.buf, abs)
	s.buf = data[:cap(data)]
	return data, err
}

// eval reads the limits of the hierarchies in lim.
func eval(f files, lim Limits) (Limits, error) {
	evalCPU(f, &lim.CPU)
	evalMemory(f, &lim.Memory)
	a, b := lim.CPU.Err, lim.Memory.Err
	if a == nil || b == nil || errors.Is(a, b) {
		return lim, cmp.Or(a, b)
	}
	return lim, errors.Join(a, b)
}

// parseFile gives the content of dir/name to parse and reports whether the
// file exists; an error of parse names the file.
func parseFile(f files, dir, name string, parse func([]byte) error) (found bool, err error) {
	data, found, err := f.file(dir, name)
	if err != nil || !found {
		return false, err
	}
	return true, withFile(parse(data), dir, name)
}

// dirFS is os.DirFS opening with O_NONBLOCK: a FIFO cannot block the open.
// On an error the fs.File is a nil *os.File, which no caller looks at.
type dirFS string

func (d dirFS) Open(name string) (fs.File, error) {
	return os.OpenFile(string(d)+"/"+name, os.O_RDONLY|oNonblock, 0)
}

// What is read of a file at most: far more than the kernel writes there.
const (
	maxLimitFile = 4 << 10  // one-line limit files
	maxStatFile  = 64 << 10 // cpu.stat, memory.stat
	maxProcFile  = 4 << 20  // /proc/self/cgroup and /proc/self/mountinfo
)

func sizeLimit(dir, name string) int {
	switch {
	case dir == "/proc/self":
		return maxProcFile
	case strings.HasSuffix(name, ".stat"):
		return maxStatFile
	}
	return maxLimitFile
}

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
	errBadCount   = errors.New("read returned an invalid byte count")
	errNil        = errors.New("the file system returned nil and no error")
)

// readAll reads the file at abs of fsys, of at most sizeLimit bytes, into
// buf, which it grows.
func readAll(fsys fs.FS, buf []byte, abs string) ([]byte, error) {
	f, err := openFile(fsys, abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readFile(f, buf, sizeLimit(path.Dir(abs), path.Base(abs)))
	if err != nil {
		return data, pathError("read", abs, err)
	}
	return data, nil
}

// openFile opens the file at abs and checks that it is a regular file: a
// device such as /dev/zero would never end. Where fsys can Stat, it checks
// before Open too.
func openFile(fsys fs.FS, abs string) (fs.File, error) {
	if sf, ok := fsys.(fs.StatFS); ok {
		if fi, err := sf.Stat(fsName(abs)); err == nil && fi != nil && !fi.Mode().IsRegular() {
			return nil, pathError("open", abs, errNotRegular)
		}
	}
	f, err := fsys.Open(fsName(abs))
	if err == nil && f == nil {
		err = errNil
	}
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	fi, err := f.Stat()
	if err == nil && fi == nil {
		err = errNil
	} else if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, pathError("open", abs, err)
	}
	return f, nil
}

// readFile reads f from its start into b, growing it, with ReadAt if f has
// it; more than limit bytes is errTooLarge, 100 empty reads io.ErrNoProgress.
func readFile(f fs.File, b []byte, limit int) ([]byte, error) {
	ra, _ := f.(io.ReaderAt)
	for b, zeros := b[:0], 0; ; {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(max(4<<10, cap(b)), limit+1-len(b)))
		}
		p := b[len(b):cap(b)]
		var n int
		var err error
		if ra == nil {
			n, err = f.Read(p)
		} else if n, err = ra.ReadAt(p, int64(len(b))); err == nil && n < len(p) {
			err = io.EOF // n < len(p) is the end, whatever the error says
		}
		if n < 0 || n > len(p) {
			err = errBadCount
		} else if b = b[:len(b)+n]; len(b) > limit {
			err = errTooLarge
		} else if n > 0 {
			zeros = 0
		} else if zeros++; zeros >= 100 && err == nil {
			err = io.ErrNoProgress
		}
		if err == io.EOF {
			return b, nil
		} else if err != nil {
			return b, err
		}
	}
}

// fsName is the fs.FS name of the absolute path abs.
func fsName(abs string) string { return cmp.Or(strings.TrimPrefix(abs, "/"), ".") }

// pathError reports err about abs instead of the name in fsys.
func pathError(op, abs string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op, err = pe.Op, pe.Err
	}
	return &fs.PathError{Op: op, Path: abs, Err: err}
}
