package cgroup

import (
	"errors"
	"fmt"
	"time"
)

// Version is the version of a cgroup hierarchy.
type Version int

// Cgroup versions. The zero Version means that the controller was not found.
const (
	V1 Version = 1
	V2 Version = 2
)

// String returns "v1", "v2" or "none".
func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "none"
}

// Hierarchy locates the process's cgroup for one controller.
//
// All paths are absolute slash-separated paths in the file system given to
// ReadFS (for Read, the real root), such as "/sys/fs/cgroup/cpu/kubepods/pod1/c1".
type Hierarchy struct {
	// Version is V1 when a cgroup v1 hierarchy carries the controller, V2 when the
	// unified hierarchy does, and 0 when the controller was not found or no
	// mount shows the process's cgroup. With Version 0 there is no limit,
	// Mount, MountRoot and Dir are empty, and Path still shows what
	// /proc/self/cgroup said, if anything.
	Version Version
	// Path is the process's cgroup path as /proc/self/cgroup shows it, relative to
	// the process's cgroup namespace, e.g. "/kubepods/pod1/c1" or "/" (or
	// "/../x" outside the namespace).
	Path string
	// Mount is the mount point of the hierarchy, e.g. "/sys/fs/cgroup/cpu". Of
	// several visible mounts that show Path, the one with the longest MountRoot
	// is used.
	Mount string
	// MountRoot is the root of the mount within the hierarchy (field 4 of
	// mountinfo): "/" when the whole hierarchy (or cgroup namespace) is mounted,
	// the container's own cgroup path for a v1 Docker container.
	MountRoot string
	// Dir is the process's cgroup directory: Mount joined with Path less
	// MountRoot. Limits are read from Dir up to Mount.
	Dir string
}

// CPU is the effective CPU bandwidth limit of the process.
type CPU struct {
	Hierarchy
	// Quota is the CPU time allowed per Period in the cgroup with the tightest
	// Quota/Period ratio between Dir and Mount, as that cgroup sets them (a
	// non-default period is kept). Both are zero when there is no limit.
	// Kubernetes sets Period to 100ms and Quota to 100µs per millicore.
	Quota  time.Duration
	Period time.Duration
	// Source is the directory whose cpu.max (v2) or cpu.cfs_quota_us (v1) imposed
	// Quota and Period; empty when there is no limit. Of equal limits, the one
	// nearest Dir is named.
	Source string
	// Err is why the CPU limit could not be read, or nil: a *ParseError for a
	// malformed file, or an I/O error. There is no limit when Err is set. It is
	// also part of the error returned by ReadFS.
	Err error
}

// Memory is the effective memory limit of the process.
type Memory struct {
	Hierarchy
	// Max is the tightest hard limit in bytes between Dir and Mount: memory.max on
	// v2; on v1 the lower of memory.limit_in_bytes over the levels and
	// hierarchical_memory_limit in Dir's memory.stat (read when MountRoot is not
	// "/", that is when ancestors are hidden). Zero with MaxSource empty when
	// there is no limit.
	Max int64
	// MaxSource is the directory that imposed Max; empty when there is no limit.
	// When only hierarchical_memory_limit shows the limit (it was set on an
	// ancestor above the mount root, which cannot be seen), MaxSource is Dir,
	// whose memory.stat reported it.
	MaxSource string
	// High is the tightest memory.high (v2 only) in bytes; zero with HighSource empty
	// when there is none.
	High int64
	// HighSource is the directory that imposed High; empty when there is none.
	HighSource string
	// Err is why the memory limit could not be read, or nil: a *ParseError for
	// a malformed file, or an I/O error. There is no limit when Err is set. It
	// is also part of the error returned by ReadFS.
	Err error
}

// Limits are the effective CPU and memory limits of a process: the tightest
// limit over its cgroup and every ancestor visible under the mount.
type Limits struct {
	CPU    CPU
	Memory Memory
}

// CPUQuota returns the effective CPU limit in cores (Quota/Period). ok is false
// when there is no CPU limit.
func (l Limits) CPUQuota() (cores float64, ok bool) {
	if l.CPU.Source == "" || l.CPU.Period <= 0 {
		return 0, false
	}
	return float64(l.CPU.Quota) / float64(l.CPU.Period), true
}

// MemoryMax returns the effective hard memory limit in bytes. ok is false when
// there is no memory limit.
func (l Limits) MemoryMax() (bytes int64, ok bool) {
	if l.Memory.MaxSource == "" {
		return 0, false
	}
	return l.Memory.Max, true
}

// MemoryHigh returns the effective memory.high in bytes. ok is false when there
// is none, and always on cgroup v1.
func (l Limits) MemoryHigh() (bytes int64, ok bool) {
	if l.Memory.HighSource == "" {
		return 0, false
	}
	return l.Memory.High, true
}

// ErrNoCgroup reports that the process has no cgroup information at all: the
// operating system is not Linux, or /proc/self/cgroup cannot be read. Errors
// from ReadFS wrap it (test with errors.Is); it is not a failure, only the
// absence of limits.
var ErrNoCgroup = errors.New("cgroup: no cgroup information (not Linux or no /proc)")

// ParseError is a malformed cgroup or proc file. Test for it with errors.As.
type ParseError struct {
	File string // absolute path of the file
	Line int    // 1-based line number; 0 when the whole file is at fault
	Err  error  // what is wrong
}

// Error returns "cgroup: FILE:LINE: what is wrong", without ":LINE" when
// Line is 0.
func (e *ParseError) Error() string {
	file := e.File
	if file == "" {
		file = "(unknown file)"
	}
	if e.Line > 0 {
		return fmt.Sprintf("cgroup: %s:%d: %v", file, e.Line, e.Err)
	}
	return fmt.Sprintf("cgroup: %s: %v", file, e.Err)
}

// Unwrap returns Err.
func (e *ParseError) Unwrap() error { return e.Err }
