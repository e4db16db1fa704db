package cgroup

import (
	"fmt"
	"math"
	"time"
)

// The CPU accounting files.
const (
	fileCPUStat      = "cpu.stat"      // v1 and v2
	fileCPUAcctUsage = "cpuacct.usage" // v1 cpuacct: total CPU time in ns
)

// parseCPUStat parses cpu.stat, "key value" lines, into s.CPU. It knows the
// keys of v1 (nr_periods nr_throttled throttled_time nr_bursts burst_time,
// times in nanoseconds) and v2 (usage_usec ... nr_periods nr_throttled
// throttled_usec nr_bursts burst_usec, times in microseconds) and ignores any
// other line. A known key with a value that is not a number fitting its field
// is an error on that line, and leaves s.CPU as it was.
func parseCPUStat(data []byte, s *Stats) error {
	c := s.CPU
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		k, v := nextField(line)
		var (
			count *uint64
			dur   *time.Duration
			unit  uint64 = 1
		)
		switch string(k) {
		case "nr_periods":
			count = &c.Periods
		case "nr_throttled":
			count = &c.ThrottledPeriods
		case "nr_bursts":
			count = &c.Bursts
		case "throttled_time":
			dur = &c.ThrottledTime
		case "burst_time":
			dur = &c.BurstTime
		case "throttled_usec":
			dur, unit = &c.ThrottledTime, 1000
		case "burst_usec":
			dur, unit = &c.BurstTime, 1000
		case "usage_usec":
			dur, unit = &c.Usage, 1000
			c.HasUsage = true
		default:
			continue
		}
		u, ok := parseUint(trimSpace(v))
		switch {
		case !ok:
			return invalid(n, string(k), line)
		case count != nil:
			*count = u
		case u > uint64(math.MaxInt64)/unit:
			return &parseError{Line: n, Err: fmt.Errorf("%s: %w", k, errRange)}
		default:
			*dur = time.Duration(u * unit)
		}
	}
	s.CPU = c
	return nil
}

// parseCPUAcctUsage parses cgroup v1 cpuacct.usage: CPU time in nanoseconds.
func parseCPUAcctUsage(data []byte) (time.Duration, error) {
	v, err := parseCount(data, fileCPUAcctUsage, math.MaxInt64)
	return time.Duration(v), err
}
