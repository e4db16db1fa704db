package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"time"
)

// The CPU accounting files.
const (
	fileCPUStat      = "cpu.stat"      // v1 and v2
	fileCPUAcctUsage = "cpuacct.usage" // v1 cpuacct: total CPU time in ns
)

// CPUStat is the normalised content of cpu.stat: CFS bandwidth (throttling)
// statistics of one cgroup, cumulative since the cgroup was created. The same
// fields are filled on cgroup v1 and v2, with times converted to
// time.Duration.
type CPUStat struct {
	// Periods is nr_periods: the number of enforcement periods in which the
	// cgroup had runnable tasks.
	Periods uint64
	// ThrottledPeriods is nr_throttled: how many of those periods ended with
	// the cgroup throttled because it had used up its quota.
	ThrottledPeriods uint64
	// ThrottledTime is the total time the cgroup's tasks were throttled:
	// throttled_time (v1, nanoseconds) or throttled_usec (v2).
	ThrottledTime time.Duration
	// Usage is the total CPU time used by the cgroup: usage_usec (v2) or, on
	// v1, cpuacct.usage when the cpuacct controller is mounted together with
	// cpu (the same directory). Valid only when HasUsage is true.
	Usage    time.Duration
	HasUsage bool
	// Bursts is nr_bursts: periods in which the cgroup used burst capacity
	// (cpu.cfs_burst_us, cpu.max.burst; Linux 5.14 and later, else zero).
	Bursts uint64
	// BurstTime is burst_time (v1, nanoseconds) or burst_usec (v2).
	BurstTime time.Duration
}

// Sub returns s - prev, field by field: the activity between two readings of
// the same cgroup, prev being the earlier one. The counters only grow, so a
// field that went down (the cgroup was removed and created again) gives 0
// rather than a wrapped or negative number. HasUsage is set when both have
// usage.
func (s CPUStat) Sub(prev CPUStat) CPUStat {
	d := CPUStat{
		Periods:          sub(s.Periods, prev.Periods),
		ThrottledPeriods: sub(s.ThrottledPeriods, prev.ThrottledPeriods),
		ThrottledTime:    sub(s.ThrottledTime, prev.ThrottledTime),
		Bursts:           sub(s.Bursts, prev.Bursts),
		BurstTime:        sub(s.BurstTime, prev.BurstTime),
		HasUsage:         s.HasUsage && prev.HasUsage,
	}
	if d.HasUsage {
		d.Usage = sub(s.Usage, prev.Usage)
	}
	return d
}

// sub returns a - b, or 0 when b is larger.
func sub[T uint64 | time.Duration](a, b T) T {
	if a < b {
		return 0
	}
	return a - b
}

// parseCPUStat parses cpu.stat, "key value" lines. It knows the keys of v1
// (nr_periods nr_throttled throttled_time nr_bursts burst_time, times in
// nanoseconds) and v2 (usage_usec ... nr_periods nr_throttled throttled_usec
// nr_bursts burst_usec, times in microseconds) and ignores any other line. A
// known key with a value that is not a number fitting its field is an error on
// that line.
func parseCPUStat(data []byte) (CPUStat, error) {
	var s CPUStat
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
			count = &s.Periods
		case "nr_throttled":
			count = &s.ThrottledPeriods
		case "nr_bursts":
			count = &s.Bursts
		case "throttled_time":
			dur = &s.ThrottledTime
		case "burst_time":
			dur = &s.BurstTime
		case "throttled_usec":
			dur, unit = &s.ThrottledTime, 1000
		case "burst_usec":
			dur, unit = &s.BurstTime, 1000
		case "usage_usec":
			dur, unit = &s.Usage, 1000
			s.HasUsage = true
		default:
			continue
		}
		u, ok := parseUint(trimSpace(v))
		switch {
		case !ok:
			return CPUStat{}, invalid(n, string(k), line)
		case count != nil:
			*count = u
		case u > uint64(1<<63-1)/unit:
			return CPUStat{}, &parseError{Line: n, Err: fmt.Errorf("%s: %w", k, errRange)}
		default:
			*dur = time.Duration(u * unit)
		}
	}
	return s, nil
}

// parseCPUAcctUsage parses cgroup v1 cpuacct.usage: CPU time in nanoseconds.
func parseCPUAcctUsage(data []byte) (time.Duration, error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, err
	}
	v, ok := parseUint(line)
	if !ok || v > math.MaxInt64 {
		return 0, invalid(1, "cpuacct.usage", line)
	}
	return time.Duration(v), nil
}

// ReadCPUStat reads cpu.stat of the calling process's effective CPU cgroup:
// the directory whose quota is the effective limit (CPU.Source), which is
// where throttling happens, or the process's own cgroup (CPU.Dir) when there
// is no limit. The error wraps ErrNoCgroup when there is no cgroup
// information or the CPU controller's cgroup is not visible.
func ReadCPUStat() (CPUStat, error) { return readCPUStatFS(os.DirFS("/")) }

// readCPUStatFS is ReadCPUStat on fsys rooted at "/".
func readCPUStatFS(fsys fs.FS) (CPUStat, error) {
	lim, err := ReadFS(fsys)
	c := lim.CPU
	switch {
	case errors.Is(err, ErrNoCgroup):
		return CPUStat{}, err
	case c.Err != nil:
		return CPUStat{}, c.Err
	case c.Version == 0:
		return CPUStat{}, fmt.Errorf("%w: the cpu controller's cgroup of this process is not visible", ErrNoCgroup)
	}
	dir := c.Source
	if dir == "" {
		dir = c.Dir
	}
	return readCPUStat(&fsReader{fsys: fsys}, dir)
}

// ReadCPUStatDir reads cpu.stat in the absolute directory dir of fsys, which
// is rooted at "/", such as ReadCPUStatDir(os.DirFS("/"),
// "/sys/fs/cgroup/cpu/mygroup"). On v1, Usage comes from cpuacct.usage in
// the same directory when there is one (cpu and cpuacct mounted together).
func ReadCPUStatDir(fsys fs.FS, dir string) (CPUStat, error) {
	if !path.IsAbs(dir) {
		return CPUStat{}, fmt.Errorf("cgroup: ReadCPUStatDir: %q is not an absolute path", dir)
	}
	r := fsReader{fsys: fsys}
	return readCPUStat(&r, path.Clean(dir))
}

func readCPUStat(r *fsReader, dir string) (CPUStat, error) {
	data, err := r.read(joinPath(dir, fileCPUStat), maxStatFile)
	if err != nil {
		return CPUStat{}, err
	}
	s, err := parseCPUStat(data)
	if err != nil {
		return CPUStat{}, withFile(err, dir, fileCPUStat)
	}
	if s.HasUsage {
		return s, nil
	}
	data, err = r.read(joinPath(dir, fileCPUAcctUsage), maxLimitFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return CPUStat{}, err
	}
	if s.Usage, err = parseCPUAcctUsage(data); err != nil {
		return CPUStat{}, withFile(err, dir, fileCPUAcctUsage)
	}
	s.HasUsage = true
	return s, nil
}
