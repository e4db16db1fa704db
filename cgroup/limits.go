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
	Version                     Version
	Path, Mount, MountRoot, Dir string
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
	Version                     Version
	Path, Mount, MountRoot, Dir string
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
	// Levels are the levels whose memory the process shares, from Dir up:
	// those with a limit of their own, and Dir. RssAnon (/proc/self/status)
	// is the process's anonymous memory, what the heap and stacks are made
	// of, not RssShmem (maybe charged elsewhere); LazyFree (smaps_rollup,
	// read where a level has such pages) its MADV_FREE pages not written
	// since. UsageErr is why a level (or, without RssAnon, every one) is
	// left out, or its Hits are 0; the limits are unaffected. A Watcher's
	// Read reuses Levels.
	Levels            []Level
	RssAnon, LazyFree int64
	UsageErr          error
}

// Level is one level of Memory.Levels: its own limits and what is charged
// to it. Usage less File is what the kernel cannot reclaim there: anonymous
// memory (MADV_FREE pages too, Lazy), shmem and kernel memory.
type Level struct {
	Dir       string
	Max, High int64 // memory.max (v1 memory.limit_in_bytes) and memory.high; -1: none
	Usage     int64 // memory.current (v1 memory.usage_in_bytes)
	File      int64 // the page cache on the file lists of memory.stat (v1 total_*)
	Lazy      int64 // the rest of the file lists: MADV_FREE anonymous memory
	// Hits counts the times the level's own limits were reached, reclaim
	// run: high plus max of memory.events.local (Linux 5.2 and later), v1
	// memory.failcnt; 0 without the file.
	Hits uint64
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
