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

// parseCFS parses cgroup v1 cpu.cfs_quota_us or cpu.cfs_period_us, name:
// microseconds, or for the quota -1 for none (limited false).
func parseCFS(data []byte, name string) (us int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil || string(line) == "-1" && name == "cpu.cfs_quota_us" {
		return 0, false, err
	}
	us, ok := parseMicros(line)
	if !ok {
		return 0, false, invalid(1, name, line)
	}
	return us, true, nil
}

// parseMicros parses a positive microsecond count that fits a time.Duration.
func parseMicros(b []byte) (int64, bool) {
	v, ok := parseUint(b)
	return int64(v), ok && v > 0 && v <= maxMicros
}

// evalCPU sets c's Quota, Period and Source (zero before), or c.Err and no
// limit: a level that cannot be read might have been the tightest.
func evalCPU(w files, c *CPU) {
	if c.Err != nil || c.Version == 0 {
		return
	}
	var best tightest
	for dir, more := c.Dir, true; more; dir, more = up(dir, c.Mount) {
		q, p, limited, err := readCPULevel(w, c.Version, dir)
		if c.Err = err; err != nil {
			return
		}
		if limited {
			best.add(q, p, dir)
		}
	}
	c.Quota, c.Period, c.Source = time.Duration(best.q)*time.Microsecond, time.Duration(best.p)*time.Microsecond, best.dir
}

// tightest is the lowest limit q/p so far (memory: bytes/1), and the
// directory that imposed it, empty while there is none.
type tightest struct {
	q, p int64
	dir  string
}

func (t *tightest) add(q, p int64, dir string) {
	if t.dir == "" || lessRatio(q, p, t.q, t.p) {
		*t = tightest{q, p, dir}
	}
}

// readCPULevel reads the CPU bandwidth limit of one cgroup directory.
func readCPULevel(w files, v Version, dir string) (quota, period int64, limited bool, err error) {
	if v == V2 {
		_, err = parseFile(w, dir, "cpu.max", func(b []byte) (err error) { quota, period, limited, err = parseCPUMax(b); return err })
		return quota, period, limited, err
	}
	_, err = parseFile(w, dir, "cpu.cfs_quota_us", func(b []byte) (err error) { quota, limited, err = parseCFS(b, "cpu.cfs_quota_us"); return err })
	if err != nil || !limited {
		return 0, 0, false, err
	}
	found, err := parseFile(w, dir, "cpu.cfs_period_us", func(b []byte) (err error) { period, _, err = parseCFS(b, "cpu.cfs_period_us"); return err })
	if err == nil && !found {
		err = &fs.PathError{Op: "open", Path: joinPath(dir, "cpu.cfs_period_us"), Err: fs.ErrNotExist}
	}
	return quota, period, err == nil, err
}

// lessRatio reports whether q1/p1 < q2/p2 for positive values, exactly.
func lessRatio(q1, p1, q2, p2 int64) bool {
	hi1, lo1 := bits.Mul64(uint64(q1), uint64(p2))
	hi2, lo2 := bits.Mul64(uint64(q2), uint64(p1))
	return hi1 < hi2 || (hi1 == hi2 && lo1 < lo2)
}
