package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"time"
)

// Stats are the usage statistics of the cgroups that bound the process,
// cumulative since each cgroup was created (counters) or as of the reading
// (gauges). A part whose files do not exist, because the kernel is older, the
// controller is not enabled there, or the hierarchy is v1 where a v2 file is
// asked for, is not available: its Dir is empty, or its Has field false, and
// its values are zero.
//
// [Watcher.Stats] reads them through open files, without allocating, and
// [ReadStatsDir] from one directory.
type Stats struct {
	// CPU is cpu.stat: CFS bandwidth (throttling) statistics, with the times
	// of v1 (nanoseconds) and v2 (microseconds) as time.Duration.
	CPU struct {
		// Dir is the directory whose cpu.stat was read; empty when none was.
		Dir string
		// Periods is nr_periods: the enforcement periods in which the cgroup
		// had runnable tasks; zero in a cgroup without a quota of its own.
		Periods uint64
		// ThrottledPeriods is nr_throttled: how many of those periods ended
		// with the cgroup throttled because it had used up its quota.
		ThrottledPeriods uint64
		// ThrottledTime is throttled_time (v1) or throttled_usec (v2).
		ThrottledTime time.Duration
		// Bursts is nr_bursts: periods in which the cgroup used burst capacity
		// (cpu.cfs_burst_us, cpu.max.burst; Linux 5.14 and later).
		Bursts uint64
		// BurstTime is burst_time (v1) or burst_usec (v2).
		BurstTime time.Duration
		// Usage is the CPU time used: usage_usec (v2) or, on v1,
		// cpuacct.usage when the cpuacct controller is mounted together with
		// cpu (the same directory). Valid only when HasUsage is true.
		Usage    time.Duration
		HasUsage bool
	}
	// Memory is the usage and the events of the memory controller.
	Memory struct {
		// Dir is the directory whose usage was read; empty when none was.
		Dir string
		// Usage is memory.current (v2) or memory.usage_in_bytes (v1), in
		// bytes: page cache included.
		Usage int64
		// WorkingSet is Usage less the inactive page cache (inactive_file in
		// memory.stat; total_inactive_file on v1), as the kubelet and
		// cAdvisor count it: the number that the kubelet compares with the
		// limit to evict a pod. Usage when memory.stat does not have it.
		WorkingSet int64
		// Peak is the highest Usage seen: memory.peak (v2, Linux 5.19 and
		// later) or memory.max_usage_in_bytes (v1).
		Peak    int64
		HasPeak bool
		// Events count memory events of the cgroup and its descendants:
		// memory.events on v2. On v1 only Max (memory.failcnt: times the
		// usage hit the limit) and OOMKill (oom_kill of memory.oom_control)
		// are counted. Valid only when HasEvents is true.
		Events struct {
			// Low: reclaimed while under memory.low; High: throttled above
			// memory.high; Max: about to exceed memory.max; OOM: the limit
			// was reached and reclaim failed; OOMKill: processes killed by
			// the OOM killer; OOMGroupKill: whole-cgroup kills.
			Low, High, Max, OOM, OOMKill, OOMGroupKill uint64
		}
		HasEvents bool
	}
	// Pressure is the pressure stall information of cgroup v2: how much
	// wall time the process's tasks lost waiting for each resource.
	Pressure struct {
		// Dir is the directory whose pressure files were read; empty when
		// none of them exists (cgroup v1, a kernel without PSI).
		Dir             string
		CPU, Memory, IO Pressure
	}
}

// Pressure is one pressure file: cpu.pressure, memory.pressure or
// io.pressure.
type Pressure struct {
	// Some is the time in which at least one task stalled; Full, the time in
	// which all non-idle tasks stalled at once (the cgroup made no progress).
	// Avg10, Avg60 and Avg300 are the share of wall time, in percent, over
	// the last 10, 60 and 300 seconds; Total is the sum since the cgroup was
	// created.
	Some, Full struct {
		Avg10, Avg60, Avg300 float64
		Total                time.Duration
	}
	// HasSome and HasFull report whether the file has each line (cpu.pressure
	// has no full line before Linux 5.13).
	HasSome, HasFull bool
}

// Stats reads the statistics of the cgroups that bound the process now:
// CPU and memory where the effective limit is imposed (CPU.Source,
// Memory.MaxSource), which is where throttling and OOM kills happen, or in
// the process's own cgroup (Dir) when there is no limit; the pressure in the
// process's own cgroup. Like Read, it keeps the files open and re-reads them
// without allocating; it follows the process to another cgroup at the next
// Read.
//
// The error joins those of the files that could not be read or parsed; the
// other parts are filled all the same. A file that does not exist is not an
// error. Stats never changes what Read returns.
func (w *Watcher) Stats() (Stats, error) {
	if w.closed {
		return Stats{}, errWatcherClosed
	}
	lim, _ := w.eval(w.lim)
	return readStats(w, statDirsOf(&lim))
}

// ReadStatsDir reads the statistics in the absolute directory dir of fsys,
// which is rooted at "/", such as ReadStatsDir(os.DirFS("/"),
// "/sys/fs/cgroup/cpu/mygroup"); nil is the real root, opened as Read opens
// it (a FIFO cannot block the open). A cgroup v2 directory (one with
// cgroup.controllers) gives CPU, memory and pressure; a v1 directory gives
// what its hierarchy's controllers have: CPU in the cpu hierarchy, memory in
// the memory one.
func ReadStatsDir(fsys fs.FS, dir string) (Stats, error) {
	if !path.IsAbs(dir) {
		return Stats{}, fmt.Errorf("cgroup: ReadStatsDir: %q is not an absolute path", dir)
	}
	dir = path.Clean(dir)
	if fsys == nil {
		fsys = dirFS("")
	}
	if _, err := fs.Stat(fsys, fsName(dir)); err != nil {
		return Stats{}, pathError("stat", dir, err)
	}
	v := V1
	if _, err := fs.Stat(fsys, fsName(joinPath(dir, "cgroup.controllers"))); err == nil {
		v = V2
	}
	w := &Watcher{fsys: fsys}
	defer w.Close()
	return readStats(w, statDirs{cpu: dir, mem: dir, psi: dir, cpuV: v, memV: v})
}

// statDirs are the directories that Stats reads, and their versions; an
// empty directory is not read.
type statDirs struct {
	cpu, mem, psi string
	cpuV, memV    Version
}

// statDirsOf returns the directories of the statistics of lim.
func statDirsOf(lim *Limits) statDirs {
	var d statDirs
	if c := &lim.CPU; c.Version != 0 {
		d.cpu, d.cpuV, d.psi = c.Source, c.Version, c.Dir
		if d.cpu == "" {
			d.cpu = c.Dir
		}
	}
	if m := &lim.Memory; m.Version != 0 {
		d.mem, d.memV = m.MaxSource, m.Version
		if d.mem == "" {
			d.mem = m.Dir
		}
		if d.psi == "" || (d.cpuV == V1 && m.Version == V2) {
			d.psi = m.Dir // pressure files are cgroup v2's
		}
	}
	return d
}

// statReader reads statistics files and keeps their errors.
type statReader struct {
	w    *Watcher
	errs error
}

// read gives dir/name to parse and reports whether it exists and parsed;
// an error, of the file or of parse, is kept.
func (r *statReader) read(dir, name string, parse func([]byte) error) bool {
	found, err := r.w.parse(dir, name, parse)
	r.errs = errors.Join(r.errs, err)
	return found && err == nil
}

// readStats reads the statistics in the directories d.
func readStats(w *Watcher, d statDirs) (Stats, error) {
	var s Stats
	r := &statReader{w: w}
	if dir := d.cpu; dir != "" && r.read(dir, "cpu.stat", func(b []byte) error { return parseCPUStat(b, &s) }) {
		s.CPU.Dir = dir
		if !s.CPU.HasUsage && d.cpuV == V1 {
			r.read(dir, "cpuacct.usage", func(b []byte) (err error) {
				s.CPU.Usage, err = parseCPUAcctUsage(b)
				s.CPU.HasUsage = err == nil
				return err
			})
		}
	}
	if dir := d.mem; dir != "" {
		readMemory(&s, d.memV, dir, r)
	}
	if dir := d.psi; dir != "" {
		into := [3]*Pressure{&s.Pressure.CPU, &s.Pressure.Memory, &s.Pressure.IO}
		for i, name := range [3]string{"cpu.pressure", "memory.pressure", "io.pressure"} {
			parse := func(b []byte) (err error) {
				*into[i], err = parsePressure(b)
				return err
			}
			if r.read(dir, name, parse) {
				s.Pressure.Dir = dir
			}
		}
	}
	return s, r.errs
}

// readMemory fills s.Memory from the files of dir.
func readMemory(s *Stats, v Version, dir string, r *statReader) {
	m := &s.Memory
	usage, inactiveKey := usageFiles(v)
	peak := "memory.peak" // Linux 5.19 and later
	if v == V1 {
		peak = "memory.max_usage_in_bytes"
	}
	var n int64
	count := func(name string) bool {
		return r.read(dir, name, func(b []byte) (err error) {
			n, err = parseCount(b, name, math.MaxInt64)
			return err
		})
	}
	if count(usage) {
		m.Dir, m.Usage, m.WorkingSet = dir, n, n
		r.read(dir, "memory.stat", func(b []byte) error {
			inactive, found, err := statValue(b, inactiveKey, math.MaxInt64)
			if found {
				m.WorkingSet = workingSet(m.Usage, int64(inactive))
			}
			return err
		})
	}
	if count(peak) {
		m.Peak, m.HasPeak = n, true
	}
	if v == V2 {
		m.HasEvents = r.read(dir, "memory.events", func(b []byte) error { return parseMemoryEvents(b, s) })
		return
	}
	if count("memory.failcnt") {
		m.Events.Max, m.HasEvents = uint64(n), true
	}
	r.read(dir, "memory.oom_control", func(b []byte) error {
		kills, found, err := statValue(b, "oom_kill", math.MaxInt64)
		if found {
			m.Events.OOMKill, m.HasEvents = kills, true
		}
		return err
	})
}
