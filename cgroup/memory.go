package cgroup

import "math"

// unlimitedMemory is the smallest memory value that means no limit: v1 shows
// none as the largest page-aligned int64, and no machine has 4 EiB.
const unlimitedMemory = 1 << 62

// parseMemoryValue parses v2 memory.max or memory.high, or v1
// memory.limit_in_bytes: bytes, or "max" for none (limited false).
func parseMemoryValue(data []byte) (bytes int64, limited bool, err error) {
	line, err := singleLine(data)
	if err != nil || string(line) == "max" {
		return 0, false, err
	}
	v, ok := parseUint(line)
	if !ok {
		return 0, false, invalid(1, "memory limit", line)
	}
	return memBytes(v)
}

func memBytes(v uint64) (int64, bool, error) {
	if v >= unlimitedMemory {
		return 0, false, nil
	}
	return int64(v), true, nil
}

// parseMemoryStatLimit finds hierarchical_memory_limit in a v1 memory.stat:
// the tightest limit of the cgroup and all its ancestors, seen or not.
// limited is false when the key is missing or means no limit.
func parseMemoryStatLimit(data []byte) (bytes int64, limited bool, err error) {
	v, found, err := statValue(data, "hierarchical_memory_limit", math.MaxUint64, "")
	if err != nil || !found {
		return 0, false, err
	}
	return memBytes(v)
}

// evalMemory sets m's Max, High, sources and Levels (zero before but
// Levels' array, which it reuses), or m.Err and no limit. A level counts
// with a limit of its own, and Dir without; one whose files are missing or
// bad is left out, as all are without RssAnon.
func evalMemory(w files, m *Memory) {
	if m.Err != nil || m.Version == 0 {
		return
	}
	var max, high tightest
	r, levels, rss, lazy, ownOK := statReader{w: w}, m.Levels[:0], int64(0), int64(0), false
	limit, usage, _, _, hits := memoryFiles(m.Version)
	for dir, more := m.Dir, true; more; dir, more = up(dir, m.Mount) {
		lhigh := int64(-1)
		lmax, err := max.read(w, dir, limit, parseMemoryValue)
		if err == nil && m.Version == V2 {
			lhigh, err = high.read(w, dir, "memory.high", parseMemoryValue)
		}
		if m.Err = err; err != nil {
			return
		}
		l := Level{Dir: dir, Max: lmax, High: lhigh}
		if dir == m.Dir {
			ownOK = r.read("/proc/self", "status", func(b []byte) (err error) { rss, err = parseProcKB(b, "RssAnon:"); return err })
		}
		if lmax < 0 && lhigh < 0 && dir != m.Dir || !ownOK || !r.count(dir, usage, unlimitedMemory-1, &l.Usage) ||
			!r.read(dir, "memory.stat", func(b []byte) (err error) { l.File, l.Lazy, err = parseFilePages(b, m.Version); return err }) {
			continue
		}
		r.read(dir, hits, func(b []byte) (err error) { l.Hits, err = parseHits(b, m.Version); return err })
		if l.Lazy > 0 && lazy == 0 { // the process's, not written since: the others are held
			r.read("/proc/self", "smaps_rollup", func(b []byte) (err error) { lazy, err = parseProcKB(b, "LazyFree:"); return err })
		}
		levels = append(levels, l)
	}
	if m.Version == V1 && m.MountRoot != "/" {
		if _, m.Err = max.read(w, m.Dir, "memory.stat", parseMemoryStatLimit); m.Err != nil {
			return
		}
	}
	m.Max, m.MaxSource, m.High, m.HighSource = max.q, max.dir, high.q, high.dir
	m.Levels, m.RssAnon, m.LazyFree, m.UsageErr = levels, rss, lazy, r.errs
}

// read adds the memory limit in dir/name, which it returns (-1: none); a
// missing file is none.
func (t *tightest) read(w files, dir, name string, parse func([]byte) (int64, bool, error)) (v int64, err error) {
	var limited bool
	if _, err = parseFile(w, dir, name, func(b []byte) (err error) { v, limited, err = parse(b); return err }); !limited {
		return -1, err
	}
	t.add(v, 1, dir)
	return v, nil
}
