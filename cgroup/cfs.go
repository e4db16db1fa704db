package cgroup

// The cgroup v1 CFS bandwidth files of the cpu controller.
const (
	fileCFSQuota  = "cpu.cfs_quota_us"
	fileCFSPeriod = "cpu.cfs_period_us"
)

// parseCFSQuota parses cgroup v1 cpu.cfs_quota_us: the CPU time in
// microseconds allowed per period, or -1 for no limit (limited false). Other
// values must be positive and fit a time.Duration.
func parseCFSQuota(data []byte) (quota int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, false, err
	}
	if string(line) == "-1" {
		return 0, false, nil
	}
	quota, ok := parseMicros(line)
	if !ok {
		return 0, false, invalid(1, "cpu.cfs_quota_us", line)
	}
	return quota, true, nil
}

// parseCFSPeriod parses cgroup v1 cpu.cfs_period_us: a positive number of
// microseconds (the kernel allows 1000 to 1000000; 100000 by default).
func parseCFSPeriod(data []byte) (period int64, err error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, err
	}
	period, ok := parseMicros(line)
	if !ok {
		return 0, invalid(1, "cpu.cfs_period_us", line)
	}
	return period, nil
}
