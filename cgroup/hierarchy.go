package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// discover fills the Hierarchy of lim.CPU and lim.Memory from
// /proc/self/cgroup and /proc/self/mountinfo, and their Err when that fails
// for a controller. It returns an error wrapping ErrNoCgroup when
// /proc/self/cgroup cannot be read.
func discover(r *fsReader, lim *Limits) error {
	data, err := r.read(procSelfCgroup)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	cpu := parseProcCgroup(data, "cpu")
	mem := parseProcCgroup(data, "memory")
	cpu.err = withFile(cpu.err, "/proc/self", "cgroup")
	mem.err = withFile(mem.err, "/proc/self", "cgroup")

	var mountinfo []byte
	needCPU, needMem := cpu.version != 0 && cpu.err == nil, mem.version != 0 && mem.err == nil
	if needCPU || needMem {
		if mountinfo, err = r.read(procSelfMountInfo); err != nil {
			// One error value for both, so that ReadFS reports it once.
			if needCPU {
				cpu.err = err
			}
			if needMem {
				mem.err = err
			}
		}
	}
	lim.CPU.Hierarchy, lim.CPU.Err = locate(mountinfo, cpu, "cpu")
	lim.Memory.Hierarchy, lim.Memory.Err = locate(mountinfo, mem, "memory")
	return nil
}

// locate finds the directory of the process's cgroup e for controller ctrl
// in the mount table. A cgroup that cannot be seen (outside the cgroup
// namespace, or outside the root of every mount of its hierarchy, or not
// mounted at all) gives a Hierarchy with Version 0 and only Path set: there
// is no limit that the process could read.
func locate(mountinfo []byte, e procEntry, ctrl string) (Hierarchy, error) {
	h := Hierarchy{Path: e.path}
	if e.err != nil || e.version == 0 || outsideNamespace(e.path) {
		return h, e.err
	}
	p := path.Clean(e.path)
	point, root, ok := findMount(mountinfo, e.version, ctrl, p)
	if !ok {
		return h, nil
	}
	h.Version, h.Mount, h.MountRoot, h.Dir = e.version, point, root, cgroupDir(point, root, p)
	return h, nil
}

// parentDir returns the parent of the clean absolute directory dir; the
// parent of "/" is "/".
func parentDir(dir string) string {
	i := strings.LastIndexByte(dir, '/')
	if i <= 0 {
		return "/"
	}
	return dir[:i]
}

// fileSource gives the content of the limit files. level counts directories
// from the process's cgroup directory (0) up towards the mount point, and dir
// is that directory's absolute path. found is false when the file does not
// exist, which means no limit at that level. The returned bytes are valid
// until the next call.
type fileSource interface {
	file(level int, dir, name string) (data []byte, found bool, err error)
}

// fsReader reads whole files of a file system rooted at "/" into one buffer
// reused for every file.
type fsReader struct {
	fsys fs.FS
	buf  []byte
}

// maxFileSize bounds what is read of one file: far more than any proc or
// cgroup file holds, and a guard against an endless one.
const maxFileSize = 64 << 20

// read returns the content of the file at the absolute path abs. The error
// wraps fs.ErrNotExist when the file does not exist.
func (r *fsReader) read(abs string) ([]byte, error) {
	f, err := r.fsys.Open(fsName(abs))
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	data, err := readAll(f, r.buf[:0])
	r.buf = data[:0]
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, pathError("read", abs, err)
	}
	return data, nil
}

func (r *fsReader) file(_ int, dir, name string) ([]byte, bool, error) {
	data, err := r.read(joinPath(dir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// readAll appends everything rd yields to b, growing it as needed.
func readAll(rd io.Reader, b []byte) ([]byte, error) {
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	for {
		if len(b) == cap(b) {
			if len(b) >= maxFileSize {
				return b, errors.New("file too large")
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
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
