package cgroup

import (
	"math"
	"time"
)

// parseCPUStat parses cpu.stat into s.CPU, which an error leaves as it was;
// its times are in nanoseconds on v1 and in microseconds (_usec) on v2.
func parseCPUStat(data []byte, s *Stats) error {
	c := s.CPU
	if err := statCounts(data, []string{"nr_periods", "nr_throttled", "nr_bursts"}, &c.Periods, &c.ThrottledPeriods, &c.Bursts); err != nil {
		return err
	}
	for _, f := range [...]struct {
		key  string
		unit time.Duration
		v    *time.Duration
	}{
		{"throttled_time", 1, &c.ThrottledTime}, {"burst_time", 1, &c.BurstTime},
		{"throttled_usec", time.Microsecond, &c.ThrottledTime}, {"burst_usec", time.Microsecond, &c.BurstTime},
		{"usage_usec", time.Microsecond, &c.Usage},
	} {
		v, found, err := statValue(data, f.key, uint64(math.MaxInt64/f.unit), "")
		if err != nil {
			return err
		} else if found {
			*f.v = time.Duration(v) * f.unit
			c.HasUsage = c.HasUsage || f.key == "usage_usec"
		}
	}
	s.CPU = c
	return nil
}
