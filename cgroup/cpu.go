package cgroup

import (
	"io/fs"
	"math/bits"
	"time"
)

// parseCPUMax parses cgroup v2 cpu.max, "$MAX $PERIOD" in microseconds with
// $MAX "max" for no limit (limited false); a lone "max" is accepted too.
func parseCPUMax(data []byte) (quota, period int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, 0, false, err
	}
	q, rest := nextField(line)
	p, rest := nextField(rest)
	switch {
	case len(rest) > 0 || len(p) == 0 && string(q) != "max":
		return 0, 0, false, invalid(1, "cpu.max", line)
	case len(p) == 0:
		return 0, 0, false, nil
	}
	period, ok := parseMicros(p)
	if !ok {
		return 0, 0, false, invalid(1, "cpu.max period", p)
	}
	if string(q) == "max" {
		return 0, period, false, nil
	}
	if quota, ok = parseMicros(q); !ok {
		return 0, 0, false, invalid(1, "cpu.max quota", q)
	}
	return quota, period, true, nil
}

// parseCFSQuota parses v1 cpu.cfs_quota_us: microseconds, or -1 for none.
func parseCFSQuota(data []byte) (quota int64, limited bool, err error) {
	if line, err := singleLine(data); err == nil && string(line) == "-1" {
		return 0, false, nil
	}
	quota, err = parseMicrosFile(data, "cpu.cfs_quota_us")
	return quota, err == nil, err
}

// parseCFSPeriod parses cgroup v1 cpu.cfs_period_us, in microseconds.
func parseCFSPeriod(data []byte) (int64, error) { return parseMicrosFile(data, "cpu.cfs_period_us") }

func parseMicrosFile(data []byte, what string) (int64, error) {
	line, err := singleLine(data)
	if err != nil {
		return 0, err
	}
	v, ok := parseMicros(line)
	if !ok {
		return 0, invalid(1, what, line)
	}
	return v, nil
}

// parseMicros parses a positive microsecond count that fits a time.Duration.
func parseMicros(b []byte) (int64, bool) {
	v, ok := parseUint(b)
	return int64(v), ok && v > 0 && v <= maxMicros
}

// evalCPU sets c's Quota, Period and Source, or c.Err and no limit: a level
// that cannot be read might have been the tightest.
func evalCPU(src fileSource, c *CPU) {
	c.Quota, c.Period, c.Source = 0, 0, ""
	if c.Err != nil || c.Version == 0 {
		return
	}
	var best tightest
	for dir := range c.dirs {
		q, p, limited, err := readCPULevel(src, c.Version, dir)
		if c.Err = err; err != nil {
			return
		}
		best.add(q, p, limited, dir)
	}
	c.Quota, c.Period, c.Source = time.Duration(best.q)*time.Microsecond, time.Duration(best.p)*time.Microsecond, best.dir
}

// tightest is the lowest limit q/p so far (memory: bytes/1), and the
// directory that imposed it, empty while there is none.
type tightest struct {
	q, p int64
	dir  string
}

func (t *tightest) add(q, p int64, limited bool, dir string) {
	if limited && (t.dir == "" || lessRatio(q, p, t.q, t.p)) {
		*t = tightest{q, p, dir}
	}
}

// read adds the memory limit in dir/name, which it returns (-1: none); a
// missing file is none.
func (t *tightest) read(src fileSource, dir, name string, parse func([]byte) (int64, bool, error)) (int64, error) {
	data, found, err := src.file(dir, name)
	if err != nil || !found {
		return -1, err
	}
	v, limited, err := parse(data)
	t.add(v, 1, limited && err == nil, dir)
	if !limited || err != nil {
		v = -1
	}
	return v, withFile(err, dir, name)
}

// readCPULevel reads the CPU bandwidth limit of one cgroup directory.
func readCPULevel(src fileSource, v Version, dir string) (quota, period int64, limited bool, err error) {
	if v == V2 {
		data, found, err := src.file(dir, "cpu.max")
		if err != nil || !found {
			return 0, 0, false, err
		}
		quota, period, limited, err = parseCPUMax(data)
		return quota, period, limited, withFile(err, dir, "cpu.max")
	}
	data, found, err := src.file(dir, "cpu.cfs_quota_us")
	if err != nil || !found {
		return 0, 0, false, err
	}
	if quota, limited, err = parseCFSQuota(data); err != nil || !limited {
		return 0, 0, false, withFile(err, dir, "cpu.cfs_quota_us")
	}
	data, found, err = src.file(dir, "cpu.cfs_period_us")
	if err == nil && !found {
		err = &fs.PathError{Op: "open", Path: joinPath(dir, "cpu.cfs_period_us"), Err: fs.ErrNotExist}
	}
	if err != nil {
		return 0, 0, false, err
	}
	period, err = parseCFSPeriod(data)
	return quota, period, err == nil, withFile(err, dir, "cpu.cfs_period_us")
}

// lessRatio reports whether q1/p1 < q2/p2 for positive values, exactly.
func lessRatio(q1, p1, q2, p2 int64) bool {
	hi1, lo1 := bits.Mul64(uint64(q1), uint64(p2))
	hi2, lo2 := bits.Mul64(uint64(q2), uint64(p1))
	return hi1 < hi2 || (hi1 == hi2 && lo1 < lo2)
}
