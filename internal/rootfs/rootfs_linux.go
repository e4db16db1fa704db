//go:build linux

package rootfs

import (
	"io"
	"io/fs"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

var root interface {
	ReadFileIntoFS
	ReadLinkFS
	MagicFS
} = linuxFS{}

type linuxFS struct{}

// Open opens "/"+name read-only.
func (linuxFS) Open(name string) (fs.File, error) {
	fd, err := openRoot("open", name)
	if err != nil {
		return nil, err
	}
	return &file{fd: fd, name: name}, nil
}

// ReadFileInto reads "/"+name into buf: open, read and close system calls
// and no other; see ReadFileIntoFS.
func (linuxFS) ReadFileInto(name string, buf []byte, shortReadEnds bool) ([]byte, error) {
	fd, err := openRoot("open", name)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return readInto(fd, name, buf, shortReadEnds)
}

// ReadFileIntoMagic is ReadFileInto with one fstatfs system call more; see
// MagicFS.
func (linuxFS) ReadFileIntoMagic(name string, buf []byte, shortReadEnds bool) ([]byte, int64, error) {
	fd, err := openRoot("open", name)
	if err != nil {
		return nil, 0, err
	}
	defer syscall.Close(fd)
	var st syscall.Statfs_t
	for {
		err := syscall.Fstatfs(fd, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, 0, &fs.PathError{Op: "fstatfs", Path: name, Err: err}
		}
		break
	}
	data, err := readInto(fd, name, buf, shortReadEnds)
	return data, int64(st.Type), err
}

// readInto reads the open file fd (named name, for errors) into buf from
// buf[:0]; see ReadFileIntoFS.
func readInto(fd int, name string, buf []byte, shortReadEnds bool) ([]byte, error) {
	b := buf[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	for {
		if len(b) == cap(b) {
			if len(b) >= MaxFileSize {
				return nil, &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
			}
			b = append(b, 0)[:len(b)]
		}
		free := cap(b) - len(b)
		n, err := readFD(fd, b[len(b):cap(b)])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		b = b[:len(b)+n]
		if n == 0 || (shortReadEnds && n < free) {
			return b, nil
		}
	}
}

// ReadLink returns the destination of the symbolic link "/"+name with one
// readlinkat system call.
func (linuxFS) ReadLink(name string) (string, error) {
	var pathBuf [pathBufSize]byte
	path, err := rootPath(pathBuf[:0], "readlink", name)
	if err != nil {
		return "", err
	}
	var buf [256]byte
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return "", &fs.PathError{Op: "readlink", Path: name, Err: errno}
		case int(n) == len(buf):
			// Possibly cut short; the links read here are far shorter.
			return "", &fs.PathError{Op: "readlink", Path: name, Err: ErrTooLarge}
		}
		return string(buf[:n]), nil
	}
}

// openRoot opens "/"+name read-only with one openat system call. It builds
// the NUL-terminated path on the stack, where syscall.Open("/"+name) would
// allocate twice.
func openRoot(op, name string) (int, error) {
	var pathBuf [pathBufSize]byte
	path, err := rootPath(pathBuf[:0], op, name)
	if err != nil {
		return -1, err
	}
	dirfd := atFDCWD
	for {
		// syscall.Syscall6 keeps path alive during the call
		// (go:uintptrkeepalive).
		fd, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
			uintptr(syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_LARGEFILE), 0, 0, 0)
		switch errno {
		case 0:
			return int(fd), nil
		case syscall.EINTR:
			continue
		}
		return -1, &fs.PathError{Op: op, Path: name, Err: errno}
	}
}

// pathBufSize is the size of the buffer on the stack that holds a path for a
// system call: cgroup paths are rarely longer, and a longer one costs an
// allocation.
const pathBufSize = 256

// rootPath appends "/"+name, NUL-terminated for a system call, to buf (which
// the callers give from an array on their stack, so that a path that fits
// costs no allocation).
func rootPath(buf []byte, op, name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if strings.IndexByte(name, 0) >= 0 {
		// The kernel would read the path only up to the NUL.
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	path := append(buf, '/')
	if name != "." {
		path = append(path, name...)
	}
	return append(path, 0), nil
}

// atFDCWD is AT_FDCWD: openat resolves a relative path from the working
// directory (the paths here are absolute).
var atFDCWD = -100

func readFD(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
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
	n, err := readFD(f.fd, b)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
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
func (i *info) ModTime() time.Time { return time.Unix(int64(i.st.Mtim.Sec), int64(i.st.Mtim.Nsec)) }
func (i *info) IsDir() bool        { return i.Mode().IsDir() }
func (i *info) Sys() any           { return &i.st }
