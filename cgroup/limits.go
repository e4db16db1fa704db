package cgroup

import (
	"errors"
	"time"
)

// Version is the version of a cgroup hierarchy; 0 means none was found.
type Version int

// Cgroup versions.
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

// hierarchy locates the process's cgroup for one controller; CPU and Memory
// promote its fields. Paths are absolute, in the file system given to ReadFS.
type hierarchy struct {
	// Version is V1 when a cgroup v1 hierarchy carries the controller, V2 when
	// the unified one does, and 0 when there is none or no mount shows the
	// process's cgroup: then there is no limit and only Path may be set.
	Version Version
	// Path is the cgroup path from /proc/self/cgroup, relative to the cgroup
	// namespace: "/kubepods/pod1/c1", "/", or "/../x" outside it.
	Path string
	// Mount is the hierarchy's mount point, such as "/sys/fs/cgroup/cpu", and
	// MountRoot the mount's root in the hierarchy: "/", or a v1 container's
	// own cgroup path.
	Mount, MountRoot string
	// Dir is the process's cgroup directory; limits count from Dir up to Mount.
	Dir string
}

// CPU is the effective CPU bandwidth limit. Its hierarchy fields are
// Version, Path, Mount, MountRoot and Dir.
type CPU struct {
	hierarchy
	// Quota is the CPU time allowed per Period in the cgroup with the tightest
	// Quota/Period, as that cgroup sets them; both are zero without a limit.
	Quota, Period time.Duration
	// Source is the directory that imposed them (the one nearest Dir of
	// equal limits); empty without a limit.
	Source string
	// Err is why the limit could not be read; there is no limit then.
	Err error
}

// Memory is the effective memory limit. Its hierarchy fields are Version,
// Path, Mount, MountRoot and Dir.
type Memory struct {
	hierarchy
	// Max is the tightest hard limit in bytes (v2 memory.max; v1
	// memory.limit_in_bytes, and hierarchical_memory_limit when MountRoot is
	// not "/"), and MaxSource the directory that imposed it: Dir when only
	// hierarchical_memory_limit shows it. MaxSource is empty without a limit.
	Max       int64
	MaxSource string
	// High is the tightest memory.high (v2) in bytes, and HighSource the
	// directory that imposed it, empty without one.
	High       int64
	HighSource string
	// Err is why the limits could not be read; there is none then.
	Err error
}

// Limits are the effective CPU and memory limits of a process.
type Limits struct {
	CPU    CPU
	Memory Memory
}

// CPUQuota returns the CPU limit in cores (Quota/Period); ok is false
// without one.
func (l Limits) CPUQuota() (cores float64, ok bool) {
	if l.CPU.Source == "" || l.CPU.Period <= 0 {
		return 0, false
	}
	return float64(l.CPU.Quota) / float64(l.CPU.Period), true
}

// MemoryMax returns the hard memory limit in bytes; ok is false without one.
func (l Limits) MemoryMax() (bytes int64, ok bool) {
	if l.Memory.MaxSource == "" {
		return 0, false
	}
	return l.Memory.Max, true
}

// MemoryHigh returns memory.high in bytes; ok is false without one, and
// always on cgroup v1.
func (l Limits) MemoryHigh() (bytes int64, ok bool) {
	if l.Memory.HighSource == "" {
		return 0, false
	}
	return l.Memory.High, true
}

// ErrNoCgroup reports that there is no cgroup information at all: not Linux,
// or no /proc/self/cgroup. It is the absence of limits, not a failure.
var ErrNoCgroup = errors.New("cgroup: no cgroup information (not Linux or no /proc)")
