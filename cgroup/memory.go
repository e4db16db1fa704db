package cgroup

// The memory limit files.
const (
	fileMemoryMax   = "memory.max"            // v2 hard limit
	fileMemoryHigh  = "memory.high"           // v2 throttling limit
	fileMemoryLimit = "memory.limit_in_bytes" // v1 hard limit
	fileMemoryStat  = "memory.stat"           // v1: hierarchical_memory_limit
)

// parseMemoryValue parses a one-line memory limit file: memory.max or
// memory.high (v2: a number of bytes or "max") or memory.limit_in_bytes (v1: a
// number of bytes). limited is false for "max" and for values of 2^62 bytes or
// more, which is how v1 shows "no limit" (the page-aligned MaxInt64,
// 9223372036854771712 with 4 KiB pages).
func parseMemoryValue(data []byte) (bytes int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, false, err
	}
	if string(line) == "max" {
		return 0, false, nil
	}
	v, ok := parseUint(line)
	if !ok {
		return 0, false, invalid(1, "memory limit", line)
	}
	if v >= unlimitedMemory {
		return 0, false, nil
	}
	return int64(v), true, nil
}

// parseMemoryStatLimit finds hierarchical_memory_limit in a cgroup v1
// memory.stat ("key value" lines): the tightest memory.limit_in_bytes of the
// cgroup and all its ancestors, including those above the mount root that the
// process cannot see. limited is false when the key is missing or the value
// means no limit. Other lines are not looked at.
func parseMemoryStatLimit(data []byte) (bytes int64, limited bool, err error) {
	const key = "hierarchical_memory_limit"
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, v := nextField(line)
		if string(k) != key {
			continue
		}
		u, ok := parseUint(trimSpace(v))
		if !ok {
			return 0, false, invalid(n, key, line)
		}
		if u >= unlimitedMemory {
			return 0, false, nil
		}
		return int64(u), true, nil
	}
	return 0, false, nil
}
