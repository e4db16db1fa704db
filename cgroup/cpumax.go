package cgroup

// fileCPUMax is the cgroup v2 CPU bandwidth limit file.
const fileCPUMax = "cpu.max"

// parseCPUMax parses cgroup v2 cpu.max: "$MAX $PERIOD" in microseconds, where
// $MAX is "max" for no limit, e.g. "50000 100000" (half a CPU) or
// "max 100000". A lone "max" is accepted too. limited is false for "max". The
// quota and period must be positive and fit a time.Duration.
func parseCPUMax(data []byte) (quota, period int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, 0, false, err
	}
	q, rest := nextField(line)
	p, rest := nextField(rest)
	if len(rest) > 0 {
		return 0, 0, false, invalid(1, "cpu.max", line)
	}
	if len(p) == 0 {
		if string(q) == "max" {
			return 0, 0, false, nil
		}
		return 0, 0, false, invalid(1, "cpu.max", line)
	}
	period, ok := parseMicros(p)
	if !ok {
		return 0, 0, false, invalid(1, "cpu.max period", p)
	}
	if string(q) == "max" {
		return 0, period, false, nil
	}
	quota, ok = parseMicros(q)
	if !ok {
		return 0, 0, false, invalid(1, "cpu.max quota", q)
	}
	return quota, period, true, nil
}

// parseMicros parses a positive count of microseconds that fits a
// time.Duration.
func parseMicros(b []byte) (int64, bool) {
	v, ok := parseUint(b)
	if !ok || v == 0 || v > maxMicros {
		return 0, false
	}
	return int64(v), true
}
