package cgroup

import (
	"errors"
	"io"
	"io/fs"
	"strings"
)

// What is read of one file at most: each bound is far above what the kernel
// writes there, and keeps an endless or huge file from costing more.
const (
	maxLimitFile = 4 << 10  // one-line limit files
	maxStatFile  = 64 << 10 // cpu.stat, memory.stat
	maxProcFile  = 4 << 20  // /proc/self/cgroup and /proc/self/mountinfo
)

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
	errBadCount   = errors.New("read returned an invalid byte count")
)

// maxEmptyReads is how many reads in a row may return nothing and no error
// before a reader is taken as broken (as bufio does).
const maxEmptyReads = 100

// openFile opens the file at the absolute path abs in fsys, after checking
// with Stat that it is a regular file: a FIFO would block the open, a device
// such as /dev/zero would never end. The error wraps fs.ErrNotExist when the
// file does not exist.
func openFile(fsys fs.FS, abs string) (fs.File, error) {
	name := fsName(abs)
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: errNotRegular}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	return f, nil
}

// fsReader reads whole files of a file system rooted at "/" into one buffer
// reused for every file.
type fsReader struct {
	fsys fs.FS
	buf  []byte
}

// read returns the content of the file at the absolute path abs, at most
// limit bytes. The bytes are valid until the next read.
func (r *fsReader) read(abs string, limit int) ([]byte, error) {
	f, err := openFile(r.fsys, abs)
	if err != nil {
		return nil, err
	}
	data, err := readAll(f, r.buf[:0], limit)
	r.buf = data[:0]
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, pathError("read", abs, err)
	}
	return data, nil
}

// file implements fileSource: a missing file is no limit.
func (r *fsReader) file(_ int, dir, name string) ([]byte, bool, error) {
	data, err := r.read(joinPath(dir, name), sizeLimit(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// sizeLimit returns the bound for a cgroup file of that name.
func sizeLimit(name string) int {
	if strings.HasSuffix(name, ".stat") {
		return maxStatFile
	}
	return maxLimitFile
}

// readAll appends what rd yields to b until the end, growing b as needed; more
// than limit bytes is errTooLarge.
func readAll(rd io.Reader, b []byte, limit int) ([]byte, error) {
	for zeros := 0; ; {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(max(512, 2*cap(b)), limit+1))
			copy(grown, b)
			b = grown
		}
		n, err := rd.Read(b[len(b):cap(b)])
		if n < 0 || n > cap(b)-len(b) {
			return b, errBadCount
		}
		b = b[:len(b)+n]
		if len(b) > limit {
			return b, errTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if n > 0 {
			zeros = 0
		} else if zeros++; zeros >= maxEmptyReads {
			return b, io.ErrNoProgress
		}
	}
}

// fsName turns an absolute slash-separated path into a name for fs.FS, which
// has no leading slash ("." is the root).
func fsName(abs string) string {
	name := strings.TrimLeft(abs, "/")
	if name == "" {
		return "."
	}
	return name
}

// pathError reports err about the absolute path abs, replacing the relative
// name that an fs.FS puts in its *fs.PathError.
func pathError(op, abs string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: abs, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: abs, Err: err}
}

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
