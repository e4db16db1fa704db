package cgroup

// The memory usage files.
const (
	fileMemoryCurrent  = "memory.current"            // v2 usage
	fileMemoryPeak     = "memory.peak"               // v2 peak usage (Linux 5.19 and later)
	fileMemoryUsage    = "memory.usage_in_bytes"     // v1 usage
	fileMemoryMaxUsage = "memory.max_usage_in_bytes" // v1 peak usage
	fileMemoryStat     = "memory.stat"               // inactive_file
)

// usageFiles are the files of the usage and of the inactive page cache,
// which the working set leaves out: memory.current and inactive_file on v2,
// memory.usage_in_bytes and the hierarchical total_inactive_file on v1, as
// the kubelet reads them.
func usageFiles(v Version) (usage, inactiveKey string) {
	if v == V1 {
		return fileMemoryUsage, "total_inactive_file"
	}
	return fileMemoryCurrent, "inactive_file"
}

// workingSet is usage less the inactive page cache, never below zero: the
// kubelet's and cAdvisor's container_memory_working_set_bytes, which the
// kubelet compares with the limit to evict a pod.
func workingSet(usage, inactive int64) int64 { return max(usage-inactive, 0) }
