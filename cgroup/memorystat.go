package cgroup

// The memory usage files.
const (
	fileMemoryCurrent  = "memory.current"            // v2 usage
	fileMemoryPeak     = "memory.peak"               // v2 peak usage (Linux 5.19 and later)
	fileMemoryUsage    = "memory.usage_in_bytes"     // v1 usage
	fileMemoryMaxUsage = "memory.max_usage_in_bytes" // v1 peak usage
	fileMemoryStat     = "memory.stat"               // inactive_file
)

// parseStatValue finds key in a "key value" file such as memory.stat and
// returns its value, which must be a number that fits an int64. found is
// false when no line has the key; other lines are not looked at.
func parseStatValue(data []byte, key string) (v int64, found bool, err error) {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, val := nextField(line)
		if string(k) != key {
			continue
		}
		u, ok := parseUint(trimSpace(val))
		if !ok || u > 1<<63-1 {
			return 0, false, invalid(n, key, line)
		}
		return int64(u), true, nil
	}
	return 0, false, nil
}

// inactiveFileKey is the memory.stat key of the inactive page cache, which
// the working set leaves out: on v1 the hierarchical total, as the kubelet
// reads it.
func inactiveFileKey(v Version) string {
	if v == V1 {
		return "total_inactive_file"
	}
	return "inactive_file"
}

// workingSet is usage less the inactive page cache, never below zero: the
// kubelet's and cAdvisor's container_memory_working_set_bytes, which the
// kubelet compares with the limit to evict a pod.
func workingSet(usage, inactive int64) int64 {
	if inactive > usage {
		return 0
	}
	return usage - inactive
}
