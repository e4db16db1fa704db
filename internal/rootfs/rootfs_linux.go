//go:build linux

package rootfs

import (
	"io"
	"io/fs"
	"syscall"
	"time"
)

var root fs.FS = linuxFS{}

type linuxFS struct{}

// Open opens "/"+name read-only.
func (linuxFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	path := "/" + name
	if name == "." {
		path = "/"
	}
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &file{fd: fd, name: name}, nil
	}
}

// file is an open file. It is not safe for concurrent use, like the readers
// that use it (cgroup.ReadFS and cgroup.Watcher use one goroutine at a time).
type file struct {
	fd   int
	name string
}

func (f *file) Read(b []byte) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(b) bytes at off, or fewer with io.EOF at the end of the
// file.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	total := 0
	for total < len(b) {
		n, err := syscall.Pread(f.fd, b[total:], off+int64(total))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return total, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n == 0 {
			return total, io.EOF
		}
		total += n
	}
	return total, nil
}

func (f *file) Stat() (fs.FileInfo, error) {
	if f.fd < 0 {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return &info{name: baseName(f.name), st: st}, nil
}

func (f *file) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	fd := f.fd
	f.fd = -1
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

func baseName(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[i+1:]
		}
	}
	if name == "." {
		return "/"
	}
	return name
}

type info struct {
	name string
	st   syscall.Stat_t
}

func (i *info) Name() string { return i.name }
func (i *info) Size() int64  { return i.st.Size }
func (i *info) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
func (i *info) ModTime() time.Time { return time.Unix(i.st.Mtim.Sec, i.st.Mtim.Nsec) }
func (i *info) IsDir() bool        { return i.Mode().IsDir() }
func (i *info) Sys() any           { return &i.st }
