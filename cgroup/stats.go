package cgroup

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"time"
)

// Stats are the statistics of the cgroups that bound the process: counters
// since each cgroup was created, gauges as of the reading. WorkingSet is what
// the kubelet compares with the limit to evict a pod. A part whose files do
// not exist (an older kernel, a controller not enabled there, a v2 file on
// v1) is not available: its Dir is empty or its Has field false, and its
// values are zero. [Watcher.Stats] reads them through open files, without
// allocating, and [ReadStatsDir] from one directory.
type Stats struct {
	// CPU is cpu.stat (CFS bandwidth), its v1 (ns) and v2 (µs) times as time.Duration.
	CPU struct {
		Dir              string        // the directory read
		Periods          uint64        // nr_periods: enforcement periods with runnable tasks; 0 without a quota of its own
		ThrottledPeriods uint64        // nr_throttled: those that ended throttled, the quota used up
		ThrottledTime    time.Duration // throttled_time (v1), throttled_usec (v2)
		Bursts           uint64        // nr_bursts: periods that used burst capacity (Linux 5.14 and later)
		BurstTime        time.Duration // burst_time (v1), burst_usec (v2)
		Usage            time.Duration // CPU time used: usage_usec; v1 cpuacct.usage where cpuacct is mounted with cpu
		HasUsage         bool
	}
	// Memory is the usage and the events of the memory controller.
	Memory struct {
		Dir        string // the directory read
		Usage      int64  // memory.current (v1: memory.usage_in_bytes) in bytes, page cache included
		WorkingSet int64  // Usage less inactive_file (v1: total_inactive_file) of memory.stat, if it has it
		Peak       int64  // memory.peak (Linux 5.19 and later; v1: memory.max_usage_in_bytes)
		HasPeak    bool
		// Events count the events of the cgroup and its descendants in
		// memory.events: reclaimed under memory.low, throttled above
		// memory.high, about to exceed memory.max, the limit reached and
		// reclaim failed, OOM kills of a process, of a whole cgroup. On v1
		// only Max (memory.failcnt) and OOMKill (memory.oom_control) count.
		Events    struct{ Low, High, Max, OOM, OOMKill, OOMGroupKill uint64 }
		HasEvents bool
	}
	// Pressure is the pressure stall information of Dir (v2, a kernel with PSI).
	Pressure struct {
		Dir             string
		CPU, Memory, IO Pressure
	}
}

// Pressure is one pressure file, cpu.pressure, memory.pressure or
// io.pressure: the wall time lost by tasks waiting for the resource.
type Pressure struct {
	// Some is when at least one task stalled; Full, when all non-idle tasks
	// did at once. Avg10, Avg60 and Avg300 are shares of wall time in percent
	// over the last 10, 60 and 300 seconds; Total is the sum since the cgroup
	// was created. HasSome and HasFull report whether the file has each line
	// (cpu.pressure has no full line before Linux 5.13).
	Some, Full struct {
		Avg10, Avg60, Avg300 float64
		Total                time.Duration
	}
	HasSome, HasFull bool
}

// Stats reads the statistics of the cgroups that bound the process now: CPU
// and memory where the effective limit is imposed (CPU.Source,
// Memory.MaxSource: where throttling and OOM kills happen), else, as the
// pressure, in the process's own cgroup (Dir). Right after a Read it takes
// that Read's limits and files instead of reading them again; else it reads
// the limits too. It follows the process to another cgroup at the next Read.
//
// The error joins those of the files that could not be read or parsed (a
// missing file is none); the other parts are filled all the same. Stats
// never changes what Read returns.
func (w *Watcher) Stats() (Stats, error) {
	if w.files == nil {
		return Stats{}, errWatcherClosed
	}
	lim := w.last
	if !w.fresh {
		w.gen++
		lim, _ = eval(w, w.lim)
	}
	w.fresh = false
	return readStats(w, &lim)
}

// ReadStatsDir reads the statistics in the absolute directory dir of fsys,
// rooted at "/" (nil: the real root, opened as Read opens it), such as
// ReadStatsDir(nil, "/sys/fs/cgroup/cpu/mygroup"). A v2 directory (one with
// cgroup.controllers) gives CPU, memory and pressure; a v1 directory, what
// its hierarchy's controllers have (CPU in the cpu one, memory in memory's).
func ReadStatsDir(fsys fs.FS, dir string) (Stats, error) { return readDir(fsys, dir, readStats) }

// ReadEventsDir is ReadStatsDir of the memory events alone: Memory.Events
// and HasEvents, with no other file read.
func ReadEventsDir(fsys fs.FS, dir string) (Stats, error) {
	return readDir(fsys, dir, func(w files, lim *Limits) (s Stats, err error) {
		r := &statReader{w: w}
		readEvents(&s, lim.Memory.Version, lim.Memory.Dir, r)
		return s, r.errs
	})
}

// readDir gives the hierarchies of the directory dir of fsys to read.
func readDir(fsys fs.FS, dir string, read func(files, *Limits) (Stats, error)) (Stats, error) {
	if !path.IsAbs(dir) {
		return Stats{}, fmt.Errorf("cgroup: ReadStatsDir: %q is not an absolute path", dir)
	}
	dir, fsys = path.Clean(dir), cmp.Or(fsys, fs.FS(dirFS("")))
	if _, err := fs.Stat(fsys, fsName(dir)); err != nil {
		return Stats{}, pathError("stat", dir, err)
	}
	v := V1
	if _, err := fs.Stat(fsys, fsName(joinPath(dir, "cgroup.controllers"))); err == nil {
		v = V2
	}
	return read(&snapshot{fsys: fsys}, &Limits{CPU: CPU{Version: v, Dir: dir}, Memory: Memory{Version: v, Dir: dir}})
}

// statReader reads statistics files and keeps their errors.
type statReader struct {
	w    files
	errs error
}

// read gives dir/name to parse and reports whether it exists and parsed;
// an error, of the file or of parse, is kept.
func (r *statReader) read(dir, name string, parse func([]byte) error) bool {
	found, err := parseFile(r.w, dir, name, parse)
	r.errs = errors.Join(r.errs, err)
	return found && err == nil
}

// count reads the one-line count of at most limit in dir/name into n.
func (r *statReader) count(dir, name string, limit uint64, n *int64) bool {
	return r.read(dir, name, func(b []byte) (err error) { *n, err = parseCount(b, name, limit); return err })
}

// stat reads the value of key in the "key value" file dir/name.
func (r *statReader) stat(dir, name, key string) (v uint64, found bool) {
	r.read(dir, name, func(b []byte) (err error) { v, found, err = statValue(b, key, math.MaxInt64, ""); return err })
	return v, found
}

// readStats reads the statistics of lim's hierarchies, as Watcher.Stats
// says; the pressure files are v2's, so a v2 memory Dir wins over a v1 CPU one.
func readStats(w files, lim *Limits) (Stats, error) {
	var s Stats
	r := &statReader{w: w}
	c, m := &lim.CPU, &lim.Memory
	psi, dir := c.Dir, cmp.Or(c.Source, c.Dir)
	if c.Version != 0 && r.read(dir, "cpu.stat", func(b []byte) error { return parseCPUStat(b, &s) }) {
		s.CPU.Dir = dir
		if !s.CPU.HasUsage && c.Version == V1 {
			s.CPU.HasUsage = r.count(dir, "cpuacct.usage", math.MaxInt64, (*int64)(&s.CPU.Usage)) // in nanoseconds
		}
	}
	if m.Version != 0 {
		dir, sm := cmp.Or(m.MaxSource, m.Dir), &s.Memory
		_, usage, peak, inactiveKey, _ := memoryFiles(m.Version)
		if r.count(dir, usage, math.MaxInt64, &sm.Usage) {
			sm.Dir, sm.WorkingSet = dir, sm.Usage
			if inactive, found := r.stat(dir, "memory.stat", inactiveKey); found {
				sm.WorkingSet = max(sm.Usage-int64(inactive), 0) // as the kubelet and cAdvisor count it
			}
		}
		sm.HasPeak = r.count(dir, peak, math.MaxInt64, &sm.Peak)
		readEvents(&s, m.Version, dir, r)
		if psi == "" || c.Version == V1 && m.Version == V2 {
			psi = m.Dir
		}
	}
	into := [3]*Pressure{&s.Pressure.CPU, &s.Pressure.Memory, &s.Pressure.IO}
	for i, name := range [3]string{"cpu.pressure", "memory.pressure", "io.pressure"} {
		if psi != "" && r.read(psi, name, func(b []byte) (err error) { *into[i], err = parsePressure(b); return err }) {
			s.Pressure.Dir = psi
		}
	}
	return s, r.errs
}

// readEvents fills s.Memory's Events from the files of dir.
func readEvents(s *Stats, v Version, dir string, r *statReader) {
	m := &s.Memory
	if v == V2 {
		m.HasEvents = r.read(dir, "memory.events", func(b []byte) error { return parseMemoryEvents(b, s) })
		return
	}
	var failures int64
	ok := r.count(dir, "memory.failcnt", math.MaxInt64, &failures)
	kills, found := r.stat(dir, "memory.oom_control", "oom_kill")
	m.Events.Max, m.Events.OOMKill, m.HasEvents = uint64(failures), kills, ok || found
}
