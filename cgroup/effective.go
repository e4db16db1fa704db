package cgroup

import (
	"io/fs"
	"math/bits"
	"time"
)

// fileSource gives the content of the limit files. level counts directories
// from the process's cgroup directory (0) up towards the mount point, and dir
// is that directory's absolute path. found is false when the file does not
// exist, which means no limit at that level. The returned bytes are valid
// until the next call.
type fileSource interface {
	file(level int, dir, name string) (data []byte, found bool, err error)
}

// evalCPU sets c's Quota, Period and Source to the tightest CPU bandwidth
// limit between c.Dir and c.Mount, reading the files from src. On failure it
// sets c.Err and leaves no limit: a level that cannot be read might have been
// the tightest.
func evalCPU(src fileSource, c *CPU) {
	c.Quota, c.Period, c.Source = 0, 0, ""
	if c.Err != nil || c.Version == 0 {
		return
	}
	var (
		bestQ, bestP int64
		bestDir      string
	)
	for level, dir := 0, c.Dir; ; level, dir = level+1, parentDir(dir) {
		q, p, limited, err := readCPULevel(src, c.Version, level, dir)
		if err != nil {
			c.Err = err
			return
		}
		if limited && (bestDir == "" || lessRatio(q, p, bestQ, bestP)) {
			bestQ, bestP, bestDir = q, p, dir
		}
		if isTop(dir, c.Mount) {
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
// between m.Dir and m.Mount, reading the files from src. On failure it sets
// m.Err and leaves no limit.
func evalMemory(src fileSource, m *Memory) {
	m.Max, m.MaxSource, m.High, m.HighSource = 0, "", 0, ""
	if m.Err != nil || m.Version == 0 {
		return
	}
	var max, high memLimit
	maxFile := fileMemoryMax
	if m.Version == V1 {
		maxFile = fileMemoryLimit
	}
	for level, dir := 0, m.Dir; ; level, dir = level+1, parentDir(dir) {
		if m.Err = max.read(src, level, dir, maxFile); m.Err != nil {
			return
		}
		if m.Version == V2 {
			if m.Err = high.read(src, level, dir, fileMemoryHigh); m.Err != nil {
				return
			}
		}
		if isTop(dir, m.Mount) {
			break
		}
	}
	if m.Version == V1 && m.MountRoot != "/" {
		// hierarchical_memory_limit covers the ancestors above the mount root.
		// When it is tighter than every visible level, the limit was set on one
		// of those invisible ancestors, and Dir is the best place to point to.
		// With the whole hierarchy mounted, the walk has seen every ancestor:
		// memory.stat could not lower the result and is not read.
		data, found, err := src.file(0, m.Dir, fileMemoryStat)
		if found {
			var v int64
			var limited bool
			v, limited, err = parseMemoryStatLimit(data)
			err = withFile(err, m.Dir, fileMemoryStat)
			max.add(v, limited, m.Dir)
		}
		if m.Err = err; err != nil {
			return
		}
	}
	m.Max, m.MaxSource, m.High, m.HighSource = max.bytes, max.dir, high.bytes, high.dir
}

// memLimit is the tightest memory limit found so far; dir, the directory
// that imposed it, is empty while there is none.
type memLimit struct {
	bytes int64
	dir   string
}

func (l *memLimit) add(v int64, limited bool, dir string) {
	if limited && (l.dir == "" || v < l.bytes) {
		l.bytes, l.dir = v, dir
	}
}

// read adds the limit in the file dir/name.
func (l *memLimit) read(src fileSource, level int, dir, name string) error {
	data, found, err := src.file(level, dir, name)
	if err != nil || !found {
		return err
	}
	v, limited, err := parseMemoryValue(data)
	l.add(v, limited, dir)
	return withFile(err, dir, name)
}
