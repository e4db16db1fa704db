package cgroup

import (
	"errors"
	"time"
)

// Version is the version of a cgroup hierarchy; 0 means none was found.
type Version int

// The cgroup versions.
const (
	V1 Version = 1
	V2 Version = 2
)

// String returns "v1", "v2" or "none".
func (v Version) String() string {
	if v != V1 && v != V2 {
		return "none"
	}
	return [...]string{V1: "v1", V2: "v2"}[v]
}

// CPU is the effective CPU bandwidth limit, and where the process's cgroup
// of the cpu controller is (see Limits).
type CPU struct {
	Version          Version
	Path             string
	Mount, MountRoot string
	Dir              string
	// Quota per Period is the tightest limit, as its cgroup sets them, and
	// Source that cgroup's directory (the nearest Dir of equal ones); all
	// are zero without a limit. Err is why it could not be read, if so.
	Quota, Period time.Duration
	Source        string
	Err           error
}

// Memory is the effective memory limit, and where the process's cgroup of
// the memory controller is (see Limits).
type Memory struct {
	Version          Version
	Path             string
	Mount, MountRoot string
	Dir              string
	// Max is the tightest hard limit in bytes and MaxSource the directory
	// that imposed it: Dir when only v1 hierarchical_memory_limit (read when
	// MountRoot is not "/") shows it; High and HighSource, the same for
	// memory.high (v2). A source is empty without a limit. Err is why the
	// limits could not be read, if so.
	Max        int64
	MaxSource  string
	High       int64
	HighSource string
	Err        error
	Headroom   Headroom
}

// Headroom is the memory the process can count on at the level of its
// hierarchy that leaves it the least: that level's limit minus what the
// others (the rest of its cgroup and of every cgroup below the level) hold
// there, Usage − Own. Usage is what the kernel cannot reclaim there:
// memory.current (v1: memory.usage_in_bytes) minus the page cache on the
// file lists of memory.stat (active_file + inactive_file, v1 total_*):
// anonymous memory (MADV_FREE pages on those lists too), shmem and kernel
// memory, not the kubelet's working set. Own is RssAnon of
// /proc/self/status, what the heap and stacks are made of, not RssShmem
// (maybe charged elsewhere); the process's MADV_FREE pages not written
// since (LazyFree of /proc/self/smaps_rollup) are left out of both. Others
// up to max(Limit/32, 8 MiB) are taken as the process's own kernel memory and
// shared memory: Avail is then Limit, so that a process alone sees no
// change.
//
// Only levels with a limit of their own and a visible usage count, not a
// v1 limit seen only through hierarchical_memory_limit, and the process's
// own cgroup without one, as Limit and Avail math.MaxInt64 (From ""): its
// others count against a limit known from outside (memlimit's upper
// bound). Source is "" when none does. Err is why a level's usage or Own
// could not be read: that level is left out, the limits are unaffected.
type Headroom struct {
	Source string // the level's directory
	From   string // its limit's file: memory.max, memory.high or memory.limit_in_bytes
	Limit  int64  // the level's limit in bytes
	Usage  int64  // what the level cannot reclaim, in bytes
	Own    int64  // the process's share in bytes
	Others int64  // Usage − Own, at least 0
	Avail  int64  // Limit − Others (Limit when Others is within the margin); may be <= 0
	Err    error
}

// Limits are the effective CPU and memory limits of a process. CPU and
// Memory also locate the process's cgroup for their controller, in absolute
// paths in the file system given to ReadFS:
//   - Version: V1 or V2; 0 when no hierarchy has the controller or no
//     mount shows the process's cgroup (no limit; only Path may be set).
//   - Path: the cgroup path in /proc/self/cgroup, relative to the cgroup
//     namespace: "/kubepods/pod1/c1", "/", or "/../x" outside it.
//   - Mount: the mount point, such as "/sys/fs/cgroup/cpu"; MountRoot: the
//     mount's root in the hierarchy, "/" or a v1 container's own cgroup.
//   - Dir: the process's cgroup directory; limits count from Dir up to Mount.
type Limits struct {
	CPU    CPU
	Memory Memory
}

// CPUQuota returns the CPU limit in cores, Quota/Period; ok is false if none.
func (l Limits) CPUQuota() (cores float64, ok bool) {
	if l.CPU.Source == "" || l.CPU.Period <= 0 {
		return 0, false
	}
	return float64(l.CPU.Quota) / float64(l.CPU.Period), true
}

// MemoryMax returns the hard memory limit in bytes; ok is false if none.
func (l Limits) MemoryMax() (bytes int64, ok bool) {
	if l.Memory.MaxSource == "" {
		return 0, false
	}
	return l.Memory.Max, true
}

// MemoryHigh returns memory.high in bytes; ok is false if none, as on v1.
func (l Limits) MemoryHigh() (bytes int64, ok bool) {
	if l.Memory.HighSource == "" {
		return 0, false
	}
	return l.Memory.High, true
}

// ErrNoCgroup reports that there is no cgroup information at all: not Linux,
// or no /proc/self/cgroup. It is the absence of limits, not a failure.
var ErrNoCgroup = errors.New("cgroup: no cgroup information (not Linux or no /proc)")
