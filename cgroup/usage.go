package cgroup

import (
	"cmp"
	"errors"
	"math"
)

var errNoRssAnon = errors.New("no RssAnon line")

// Avail is what a level with limit bytes leaves the process when the others
// hold others bytes there: limit − others, or limit when others are within
// max(limit/32, 8 MiB), taken as the process's own kernel memory and shared
// memory (see Memory.Headroom).
func Avail(limit, others int64) int64 {
	if others > max(limit/32, 8<<20) {
		return limit - others
	}
	return limit
}

// headroomEval collects the levels of one evaluation.
type headroomEval struct {
	h       Headroom
	own     int64
	ownRead bool // own has been read (or failed, in h.Err)
	ownOK   bool
}

// level adds the level dir whose own limits are max and high (-1: none);
// leaf, the process's own cgroup, counts without a limit too.
func (e *headroomEval) level(w files, v Version, dir string, lmax, high int64, leaf bool) {
	limit, from := lmax, "memory.max"
	if v == V1 {
		from = "memory.limit_in_bytes"
	}
	if high >= 0 && (limit < 0 || high < limit) {
		limit, from = high, "memory.high"
	}
	if limit < 0 && !leaf {
		return
	} else if limit < 0 {
		limit, from = math.MaxInt64, ""
	}
	if !e.ownRead {
		e.ownRead = true
		e.own, e.ownOK = e.read(w, "/proc/self", "status", parseProcStatusOwn)
	}
	if !e.ownOK {
		return
	}
	usageFile, _ := usageFiles(v)
	usage, ok := e.read(w, dir, usageFile, parseUsage)
	if !ok {
		return
	}
	file, ok := e.read(w, dir, "memory.stat", func(b []byte) (int64, error) { return parseFilePages(b, v) })
	if !ok {
		return
	}
	held := max(usage-file, 0)
	others := max(held-e.own, 0)
	avail := Avail(limit, others)
	if e.h.Source == "" || avail < e.h.Avail {
		e.h = Headroom{Source: dir, From: from, Limit: limit, Usage: held, Own: e.own, Others: others, Avail: avail, Err: e.h.Err}
	}
}

// read reads dir/name with parse; false when it is missing or bad (the
// first error kept in h.Err).
func (e *headroomEval) read(w files, dir, name string, parse func([]byte) (int64, error)) (v int64, ok bool) {
	found, err := parseFile(w, dir, name, func(b []byte) (err error) {
		v, err = parse(b)
		return err
	})
	e.h.Err = cmp.Or(e.h.Err, err)
	return v, found && err == nil
}

// usageFiles are the file of the usage and the memory.stat key of the
// inactive page cache, which the working set leaves out.
func usageFiles(v Version) (usage, inactiveKey string) {
	if v == V1 {
		return "memory.usage_in_bytes", "total_inactive_file"
	}
	return "memory.current", "inactive_file"
}

// workingSet is usage less the inactive page cache, never below zero, as the
// kubelet and cAdvisor count it (container_memory_working_set_bytes).
func workingSet(usage, inactive int64) int64 { return max(usage-inactive, 0) }

// parseUsage parses memory.current (v2) or memory.usage_in_bytes (v1): bytes.
func parseUsage(data []byte) (int64, error) {
	return parseCount(data, "memory usage", unlimitedMemory-1)
}

// parseFilePages returns the file pages of a memory.stat, active and
// inactive: what the kernel reclaims (writing back the dirty ones) before
// it OOM-kills anyone. A level's usage less them is what it cannot reclaim:
// anonymous memory and swap cache, shmem (tmpfs, shared memory) and the
// kernel memory charged to the cgroup. Shmem is not among them: it is
// swap-backed ("shmem pages are on anon memory management lists",
// cgroup-v2.rst, memory.stat); v1 counts it in cache but not in
// active_file/inactive_file, "file-backed memory and MADV_FREE anonymous
// memory (LazyFree pages)" on the LRU lists (cgroup-v1/memory.rst, 5.2).
// The kernel memory is charged to the usage on both (memory.current; on v1
// memory.usage_in_bytes is rss + cache + memory.kmem.usage_in_bytes, as
// measured on Linux 6.18), so the usage less the file pages counts it with
// no file or key of its own; the reclaimable slab (dentries, inodes) counts
// too, an error on the safe side. The v1 keys are total_*, the cgroup and
// its descendants, as memory.usage_in_bytes is.
func parseFilePages(data []byte, v Version) (int64, error) {
	active, inactive := "active_file", "inactive_file"
	if v == V1 {
		active, inactive = "total_active_file", "total_inactive_file"
	}
	a, _, err := statValue(data, active, unlimitedMemory-1)
	if err != nil {
		return 0, err
	}
	i, _, err := statValue(data, inactive, unlimitedMemory-1)
	return int64(a + i), err
}

// parseProcStatusOwn returns RssAnon of /proc/self/status, a line such as
// "RssAnon:\t    1234 kB", in bytes (Linux 4.5 and later): the heap, stacks
// and the rest of the runtime's memory, which GOMEMLIMIT governs. RssShmem
// is left out: a mapping of shared memory may be charged to another cgroup
// (the one that first touched its pages), and counted as the process's own
// it would cancel a co-process's memory at the level. Capping it by the
// level's shmem would still cancel a co-process's own shmem. Left to the
// others, the process's shmem lowers GOMEMLIMIT, which is right: GOMEMLIMIT
// does not bound it, so the heap can only have what it leaves.
func parseProcStatusOwn(data []byte) (int64, error) {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, v := nextField(line)
		if string(k) != "RssAnon:" {
			continue
		}
		num, unit := nextField(v)
		u, ok := parseUint(num)
		if !ok || string(unit) != "kB" || u >= unlimitedMemory>>10 {
			return 0, invalid(n, "RssAnon", line)
		}
		return int64(u) << 10, nil
	}
	return 0, &parseError{Err: errNoRssAnon}
}
