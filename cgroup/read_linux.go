//go:build linux

package cgroup

import (
	"io/fs"
	"os"
	"syscall"
)

// Read returns the effective limits of the calling process: ReadFS of the
// real file system, the same as ReadFS(os.DirFS("/")), only cheaper (see
// rootFS). See ReadFS for the errors.
func Read() (Limits, error) {
	return ReadFS(rootFS{})
}

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup:
// ReadCPUStatFS of the real file system.
func ReadCPUStat() (CPUStat, error) {
	return ReadCPUStatFS(rootFS{})
}

// rootFS is the real file system, like os.DirFS("/"). fsReader reads its
// files with plain system calls instead of Open: os.Open registers every file
// with the runtime's poller (an epoll_ctl call, which fails for these
// files), and reading to the end takes one read more than these files need.
// On a machine where a system call costs a microsecond or two, that is a
// good part of the cost of ReadFS.
type rootFS struct{}

func (rootFS) Open(name string) (fs.File, error) {
	return os.DirFS("/").Open(name)
}

// readFast reads the file at the absolute path abs when r reads rootFS, with
// open, read and close system calls and no other; ok is false for other file
// systems. See fsReader.read for whole.
func (r *fsReader) readFast(abs string, whole bool) (data []byte, ok bool, err error) {
	if _, ok := r.fsys.(rootFS); !ok {
		return nil, false, nil
	}
	fd, err := ignoringEINTR(func() (int, error) {
		return syscall.Open(abs, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, true, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	defer syscall.Close(fd)
	b := r.buf[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	for {
		if len(b) == cap(b) {
			if len(b) >= maxFileSize {
				return nil, true, &fs.PathError{Op: "read", Path: abs, Err: errTooLarge}
			}
			b = append(b, 0)[:len(b)]
		}
		free := cap(b) - len(b)
		n, err := ignoringEINTR(func() (int, error) { return syscall.Read(fd, b[len(b):cap(b)]) })
		if err != nil {
			return nil, true, &fs.PathError{Op: "read", Path: abs, Err: err}
		}
		b = b[:len(b)+n]
		// The limit files, memory.stat, cpu.stat and /proc/self/cgroup are
		// each printed by the kernel in one go (one seq_file record): a read
		// that leaves room has read everything. mountinfo comes a page at a
		// time, so it is read until the end.
		if n == 0 || (whole && n < free) {
			r.buf = b[:0]
			return b, true, nil
		}
	}
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}
