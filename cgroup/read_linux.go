//go:build linux

package cgroup

import "github.com/fitgo/fitgo/internal/rootfs"

// Read returns the effective limits of the calling process: ReadFS of the
// real file system, the same as ReadFS(os.DirFS("/")), only cheaper. It
// reads each file with open, read and close system calls and no other (plus
// one fstatfs per cgroup.procs that proves a conventional mount, and one
// readlink of /proc/self/ns/cgroup), into one reused buffer: os.Open would
// register every file with the runtime's poller (an epoll_ctl call, which
// fails for these files), and reading to the end would take one read more
// than these files need. Where the cgroups are mounted at the conventional
// place, it does not read /proc/self/mountinfo at all (see the package
// documentation). On a machine where a system call costs a microsecond or
// two, that is most of the cost of ReadFS. See ReadFS for the errors.
func Read() (Limits, error) {
	return ReadFS(rootfs.FS())
}

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup:
// ReadCPUStatFS of the real file system, read as cheaply as Read does.
func ReadCPUStat() (CPUStat, error) {
	return ReadCPUStatFS(rootfs.FS())
}
