package cgroup

import (
	"io/fs"
	"math/bits"
	"time"
)

// evalCPU sets c's Quota, Period and Source to the tightest CPU bandwidth
// limit between c.Dir and c.Mount (c.Mount excluded when skipTop is set: see
// showsWholeHierarchy), reading the files from src. On failure it sets c.Err
// and leaves no limit: a level that cannot be read might have been the
// tightest.
func evalCPU(src fileSource, c *CPU, skipTop bool) {
	c.Quota, c.Period, c.Source = 0, 0, ""
	if c.Err != nil || c.Version == 0 {
		return
	}
	var (
		bestQ, bestP int64
		bestDir      string
	)
	for level, dir := 0, c.Dir; ; level, dir = level+1, parentDir(dir) {
		top := isTop(dir, c.Mount)
		if top && skipTop {
			break
		}
		q, p, limited, err := readCPULevel(src, c.Version, level, dir)
		if err != nil {
			c.Err = err
			return
		}
		if limited && (bestDir == "" || lessRatio(q, p, bestQ, bestP)) {
			bestQ, bestP, bestDir = q, p, dir
		}
		if top {
			break
		}
	}
	if bestDir != "" {
		c.Quota = time.Duration(bestQ) * time.Microsecond
		c.Period = time.Duration(bestP) * time.Microsecond
		c.Source = bestDir
	}
}

// isTop reports whether dir is the last directory of a walk up to mount.
func isTop(dir, mount string) bool { return dir == mount || dir == "/" }

// readCPULevel reads the CPU bandwidth limit of one cgroup directory.
func readCPULevel(src fileSource, v Version, level int, dir string) (quota, period int64, limited bool, err error) {
	if v == V2 {
		data, found, err := src.file(level, dir, fileCPUMax)
		if err != nil || !found {
			return 0, 0, false, err
		}
		quota, period, limited, err = parseCPUMax(data)
		return quota, period, limited, withFile(err, dir, fileCPUMax)
	}
	data, found, err := src.file(level, dir, fileCFSQuota)
	if err != nil || !found {
		return 0, 0, false, err
	}
	quota, limited, err = parseCFSQuota(data)
	if err != nil || !limited {
		return 0, 0, false, withFile(err, dir, fileCFSQuota)
	}
	data, found, err = src.file(level, dir, fileCFSPeriod)
	if err != nil {
		return 0, 0, false, err
	}
	if !found {
		return 0, 0, false, &fs.PathError{Op: "open", Path: joinPath(dir, fileCFSPeriod), Err: fs.ErrNotExist}
	}
	period, err = parseCFSPeriod(data)
	if err != nil {
		return 0, 0, false, withFile(err, dir, fileCFSPeriod)
	}
	return quota, period, true, nil
}

// lessRatio reports whether q1/p1 < q2/p2 for positive values, exactly.
func lessRatio(q1, p1, q2, p2 int64) bool {
	hi1, lo1 := bits.Mul64(uint64(q1), uint64(p2))
	hi2, lo2 := bits.Mul64(uint64(q2), uint64(p1))
	return hi1 < hi2 || (hi1 == hi2 && lo1 < lo2)
}

// evalMemory sets m's Max, High and their sources to the tightest limits
// between m.Dir and m.Mount (m.Mount excluded when skipTop is set), reading
// the files from src. On failure it sets m.Err and leaves no limit.
func evalMemory(src fileSource, m *Memory, skipTop bool) {
	m.Max, m.MaxSource, m.High, m.HighSource = 0, "", 0, ""
	if m.Err != nil || m.Version == 0 {
		return
	}
	var (
		max, high       int64
		maxDir, highDir string
	)
	tighten := func(v int64, limited bool, dir string, best *int64, bestDir *string) {
		if limited && (*bestDir == "" || v < *best) {
			*best, *bestDir = v, dir
		}
	}
	for level, dir := 0, m.Dir; ; level, dir = level+1, parentDir(dir) {
		top := isTop(dir, m.Mount)
		if top && skipTop {
			break
		}
		if m.Version == V2 {
			v, limited, err := readMemoryFile(src, level, dir, fileMemoryMax)
			if err != nil {
				m.Err = err
				return
			}
			tighten(v, limited, dir, &max, &maxDir)
			v, limited, err = readMemoryFile(src, level, dir, fileMemoryHigh)
			if err != nil {
				m.Err = err
				return
			}
			tighten(v, limited, dir, &high, &highDir)
		} else {
			v, limited, err := readMemoryFile(src, level, dir, fileMemoryLimit)
			if err != nil {
				m.Err = err
				return
			}
			tighten(v, limited, dir, &max, &maxDir)
		}
		if top {
			break
		}
	}
	if m.Version == V1 && m.MountRoot != "/" {
		// hierarchical_memory_limit covers the ancestors above the mount root.
		// When it is tighter than every visible level, the limit was set on one
		// of those invisible ancestors, and Dir is the best place to point to.
		// With the whole hierarchy mounted, the walk has seen every ancestor
		// and memory.stat could not lower the result: it is not read, which
		// saves the costliest file.
		data, found, err := src.file(0, m.Dir, fileMemoryStat)
		if err != nil {
			m.Err = err
			return
		}
		if found {
			v, limited, err := parseMemoryStatLimit(data)
			if err != nil {
				m.Err = withFile(err, m.Dir, fileMemoryStat)
				return
			}
			tighten(v, limited, m.Dir, &max, &maxDir)
		}
	}
	m.Max, m.MaxSource, m.High, m.HighSource = max, maxDir, high, highDir
}

func readMemoryFile(src fileSource, level int, dir, name string) (int64, bool, error) {
	data, found, err := src.file(level, dir, name)
	if err != nil || !found {
		return 0, false, err
	}
	v, limited, err := parseMemoryValue(data)
	return v, limited, withFile(err, dir, name)
}
