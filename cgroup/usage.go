package cgroup

import (
	"errors"
	"math"
)

// memoryFiles are the files of the hard limit, the usage and its peak, the
// memory.stat key of the inactive page cache, which the working set leaves
// out, and the file of a level's Hits.
func memoryFiles(v Version) (limit, usage, peak, inactiveKey, hits string) {
	if v == V1 {
		return "memory.limit_in_bytes", "memory.usage_in_bytes", "memory.max_usage_in_bytes", "total_inactive_file", "memory.failcnt"
	}
	return "memory.max", "memory.current", "memory.peak", "inactive_file", "memory.events.local" // memory.peak: Linux 5.19 and later
}

// parseHits parses a level's Hits file: high plus max of v2
// memory.events.local, v1 memory.failcnt.
func parseHits(data []byte, v Version) (uint64, error) {
	if v == V1 {
		n, err := parseCount(data, "memory.failcnt", math.MaxInt64)
		return uint64(n), err
	}
	var high, max uint64
	err := statCounts(data, []string{"high", "max"}, &high, &max)
	return high + max, err
}

// parseFilePages returns the page cache on the file lists of memory.stat,
// what the kernel reclaims (writing back the dirty pages) before it
// OOM-kills anyone, and lazy, the rest of the lists: "MADV_FREE anonymous
// memory (LazyFree pages)" (cgroup-v1/memory.rst, 5.2), charged as anon
// (v1 rss), which reclaim drops only if not written since. Shmem is page
// cache (v1 cache, v2 file) but on the anon lists (cgroup-v2.rst), so lazy
// is the lists less the page cache but shmem (0 without the cache's key).
// The kernel memory, with no key, is in the usage on both (v1: rss + cache +
// memory.kmem.usage_in_bytes, measured on Linux 6.18), so a Level's Usage
// less File counts it, and the reclaimable slab, an error on the safe side.
// The v1 keys are total_*, the cgroup and its descendants, as the usage is.
func parseFilePages(data []byte, v Version) (file, lazy int64, err error) {
	keys := [4]string{"active_file", "inactive_file", "file", "shmem"}
	if v == V1 {
		keys = [4]string{"total_active_file", "total_inactive_file", "total_cache", "total_shmem"}
	}
	found, n := false, [4]uint64{}
	for i, k := range keys {
		if n[i], found, err = statValue(data, k, unlimitedMemory-1, ""); err != nil || i == 2 && !found {
			return int64(n[0] + n[1]), 0, err
		}
	}
	lazy = max(int64(n[0]+n[1])-int64(n[2]-min(n[3], n[2])), 0)
	return int64(n[0]+n[1]) - lazy, lazy, nil
}

// parseProcKB returns key's line of /proc/self/status or smaps_rollup,
// such as "RssAnon:\t    1234 kB", in bytes: RssAnon (Linux 4.5), LazyFree
// (4.14). RssShmem is left out (Memory.Levels): charged to the cgroup that
// first touched the pages, counted as the process's own it would cancel a
// co-process's memory at the level; left to the others, it lowers
// GOMEMLIMIT, which does not bound it.
func parseProcKB(data []byte, key string) (int64, error) {
	kb, found, err := statValue(data, key, unlimitedMemory>>10-1, "kB")
	if err == nil && !found {
		err = &parseError{Err: errors.New("no " + key[:len(key)-1] + " line")}
	}
	return int64(kb) << 10, err
}
