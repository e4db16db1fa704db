// Package rootfs is the real root file system as an fs.FS for reading
// small proc and cgroup files cheaply. It is the one place where fitgo reads
// the real root: cgroup.Read, cgroup.ReadCPUStat, the refresh loop's
// cgroup.Watcher and memlimit's /proc/meminfo all read through FS.
//
// os.DirFS("/") opens files through package os, which on Linux registers
// every file that supports poll (sysfs and cgroupfs files do) with the
// runtime's network poller and unregisters it on close: eight system calls to
// read a one-line cgroup file. FS uses plain openat, read, pread and close:
// three system calls to read a file whole with ReadFileInto (which does not
// allocate unless the path is longer than 255 bytes or the file outgrows the
// caller's buffer), and a single pread to read a file kept
// open again (its files implement io.ReaderAt, which cgroup.Watcher uses).
// On the machines fitgo targets (VMs where a system call costs one to two
// microseconds) that halves the cost of reading the limits.
package rootfs

import (
	"errors"
	"io/fs"
)

// FS returns the root file system, rooted at "/": names are slash-separated
// paths without the leading slash, as io/fs requires. On Linux it implements
// ReadFileIntoFS and its files implement io.ReaderAt; elsewhere it is
// os.DirFS("/").
func FS() fs.FS { return root }

// ReadFileIntoFS is a file system that reads a small file whole into the
// caller's buffer, in the spirit of fs.ReadFileFS but without allocating a
// new one: cgroup's readers use it, when their fs.FS has it, instead of Open,
// Read and Close, and reuse one buffer for every file.
type ReadFileIntoFS interface {
	fs.FS

	// ReadFileInto reads the named file (a name that fs.ValidPath accepts)
	// into buf from buf[:0], growing it when the file does not fit, and
	// returns the bytes read; the result may share buf's array, and buf's
	// content is overwritten either way.
	//
	// When shortReadEnds is true, a read that does not fill the room left is
	// taken as the end of the file, which saves the read that would return
	// nothing. That is right for the files the kernel prints in one go (one
	// seq_file record: cgroup limit files, cpu.stat, memory.stat,
	// /proc/self/cgroup) and for regular files on local disks, and wrong for
	// files served in pieces: /proc/self/mountinfo comes a page at a time.
	//
	// Errors are *fs.PathError values naming name. The error wraps
	// fs.ErrNotExist when the file does not exist, and ErrTooLarge when it
	// holds more than MaxFileSize bytes.
	ReadFileInto(name string, buf []byte, shortReadEnds bool) ([]byte, error)
}

// ReadLinkFS is a file system that reads symbolic links: the method of Go
// 1.25's fs.ReadLinkFS, declared here so that fitgo builds with older Go
// (os.DirFS has it from Go 1.25 on, and so has FS on Linux).
type ReadLinkFS interface {
	fs.FS

	// ReadLink returns the destination of the named symbolic link. Errors
	// are *fs.PathError values naming name.
	ReadLink(name string) (string, error)
}

// MagicFS is a file system that also tells which kind of file system holds
// a file: cgroup's readers use it, when their fs.FS has it, to prove where a
// cgroup hierarchy is mounted without reading /proc/self/mountinfo.
type MagicFS interface {
	fs.FS

	// ReadFileIntoMagic is ReadFileInto that also returns the magic number
	// of the file system holding the file (statfs(2)'s f_type, such as
	// 0x63677270 for cgroup2).
	ReadFileIntoMagic(name string, buf []byte, shortReadEnds bool) (data []byte, magic int64, err error)
}

// MaxFileSize bounds what ReadFileInto reads of one file: far more than any
// proc or cgroup file holds, and a guard against an endless one.
const MaxFileSize = 64 << 20

// ErrTooLarge is the error of reading a file of more than MaxFileSize bytes.
var ErrTooLarge = errors.New("file too large")
