package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/cgroup"
)

// sysfs performs the runner's cgroup file operations under root ("/" for the
// real system, a temporary directory in tests). Paths are absolute and
// slash-separated, as in fitgo's cgroup package.
type sysfs struct {
	root string
	// fake is true for a plain directory standing in for cgroupfs: removing a
	// cgroup then removes its files too, which cgroupfs does by itself.
	fake bool
	// Tests simulate the kernel with these hooks. onWrite is called before a
	// write: it may fail it, or handle it (the file is then left alone).
	// onMkdir is called after a directory is made (to populate it); an error
	// undoes the mkdir and is returned.
	onWrite func(p, v string) (handled bool, err error)
	onMkdir func(p string) error
}

func (s sysfs) real(p string) string { return filepath.Join(s.root, filepath.FromSlash(p)) }

func (s sysfs) write(p, v string) error {
	if s.onWrite != nil {
		handled, err := s.onWrite(p, v)
		if err != nil {
			return &fs.PathError{Op: "write", Path: p, Err: err}
		}
		if handled {
			return nil
		}
	}
	f, err := os.OpenFile(s.real(p), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(v); err != nil {
		f.Close()
		return fmt.Errorf("write %q to %s: %w", v, p, err)
	}
	return f.Close()
}

func (s sysfs) read(p string) (string, error) {
	b, err := os.ReadFile(s.real(p))
	return string(b), err
}

func (s sysfs) exists(p string) bool {
	_, err := os.Stat(s.real(p))
	return err == nil
}

func (s sysfs) mkdir(p string) error {
	if err := os.Mkdir(s.real(p), 0o755); err != nil {
		return err
	}
	if s.onMkdir != nil {
		if err := s.onMkdir(p); err != nil {
			os.RemoveAll(s.real(p))
			return &fs.PathError{Op: "mkdir", Path: p, Err: err}
		}
	}
	return nil
}

// rmdir removes a cgroup, retrying briefly: right after its last process was
// reaped the kernel may still report it busy.
func (s sysfs) rmdir(p string) error {
	if s.fake {
		return os.RemoveAll(s.real(p))
	}
	var err error
	for i := range 50 {
		if err = os.Remove(s.real(p)); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(time.Duration(i+1) * 2 * time.Millisecond)
	}
	return err
}

// Host is where the runner creates its cgroups: a parent directory per
// controller (the same directory on cgroup v2).
type Host struct {
	fs      sysfs
	Version cgroup.Version
	// CPUParent and MemoryParent are the directories under which run cgroups
	// are created for the cpu and memory controllers.
	CPUParent, MemoryParent string
	// delegated is set on v2 when the runner moved itself into a leaf of its own
	// cgroup to enable controllers there (see DelegatedV2).
	delegated *delegation
}

type delegation struct {
	parent, leaf string
	enabled      []string // controllers the runner enabled in parent's subtree_control
}

// Describe returns e.g. "v1 (cpu: /sys/fs/cgroup/cpu, memory: /sys/fs/cgroup/memory)".
func (h *Host) Describe() string {
	if h.Version == cgroup.V2 {
		return fmt.Sprintf("v2 (runs under %s)", h.CPUParent)
	}
	return fmt.Sprintf("v1 (cpu: %s, memory: %s)", h.CPUParent, h.MemoryParent)
}

// HostFromLimits chooses where to create run cgroups from the hierarchy the
// cgroup package found for this process: on v1, the process's own cgroup of
// each controller (the run cgroups nest inside whatever limits the runner
// itself is under); on v2, parent if set, else the root of the unified
// hierarchy (which, unlike other cgroups, may hold processes and have
// controllers enabled for its children).
func HostFromLimits(root string, lim cgroup.Limits, parent string) (*Host, error) {
	return hostFromLimits(sysfs{root: root}, lim, parent)
}

func hostFromLimits(sfs sysfs, lim cgroup.Limits, parent string) (*Host, error) {
	c, m := lim.CPU, lim.Memory
	h := &Host{fs: sfs}
	switch {
	case c.Version == cgroup.V2 || (c.Version == 0 && m.Version == cgroup.V2):
		h.Version = cgroup.V2
		dir := parent
		if dir == "" {
			dir = c.Mount
			if dir == "" {
				dir = m.Mount
			}
		}
		h.CPUParent, h.MemoryParent = dir, dir
	case c.Version == cgroup.V1 && m.Version == cgroup.V1:
		h.Version = cgroup.V1
		h.CPUParent, h.MemoryParent = c.Dir, m.Dir
		if parent != "" {
			return nil, fmt.Errorf("-cgroup-parent is for cgroup v2; this host uses v1 for cpu and memory")
		}
	case c.Version == cgroup.V1:
		return nil, fmt.Errorf("the cpu controller is on cgroup v1 but the memory controller was not found")
	default:
		return nil, fmt.Errorf("the cpu controller was not found in any mounted cgroup hierarchy")
	}
	return h, nil
}

// Spec is what a run cgroup limits.
type Spec struct {
	// CPUs is the CPU quota in cores (0: none); Period the CFS period.
	CPUs   float64
	Period time.Duration
	// Memory is the memory limit in bytes (0: none). Swap is limited to 0.
	Memory int64
	// Nested puts the limits on a parent cgroup and the process in an
	// unlimited child.
	Nested bool
	// Sibling adds a second unlimited child next to the process's, named
	// "sidecar", for another process under the same limits (implies Nested).
	Sibling bool
}

// Group is a run's cgroup(s).
type Group struct {
	fs sysfs
	v  cgroup.Version
	// CPUDir and MemoryDir are where the limits are set; Procs are the
	// cgroup.procs files the process must join (the leaves).
	CPUDir, MemoryDir string
	Procs             []string
	// MemoryLeaf is the memory cgroup the process joins (MemoryDir unless
	// nested). SidecarProcs are the cgroup.procs files of a Sibling's child,
	// SidecarMemoryLeaf its memory cgroup.
	MemoryLeaf        string
	SidecarProcs      []string
	SidecarMemoryLeaf string
	// created lists the directories to remove, deepest first.
	created []string
}

// NamePrefix starts the name of every cgroup the runner creates.
const NamePrefix = "fitgo-bench-"

// NewGroup creates the cgroups of one run named name under the host's parents
// and applies spec. On error it removes what it created.
func (h *Host) NewGroup(name string, spec Spec) (g *Group, err error) {
	g = &Group{fs: h.fs, v: h.Version}
	defer func() {
		if err != nil {
			g.Remove()
		}
	}()
	nested := spec.Nested || spec.Sibling
	child := func(dir string) error {
		if err := h.fs.mkdir(dir); err != nil {
			return err
		}
		g.created = append([]string{dir}, g.created...)
		return nil
	}
	// mk makes the run's cgroup under parent and its children; before is
	// called on the new top cgroup before the children exist.
	mk := func(parent string, before func(top string) error) (top, leaf, side string, err error) {
		top = path.Join(parent, name)
		if err := child(top); err != nil {
			return "", "", "", err
		}
		if !nested {
			return top, top, "", nil
		}
		if err := before(top); err != nil {
			return "", "", "", err
		}
		leaf = path.Join(top, "workload")
		if err := child(leaf); err != nil {
			return "", "", "", err
		}
		if spec.Sibling {
			side = path.Join(top, "sidecar")
			if err := child(side); err != nil {
				return "", "", "", err
			}
		}
		return top, leaf, side, nil
	}
	none := func(string) error { return nil }
	if h.Version == cgroup.V2 {
		top, leaf, side, err := mk(h.CPUParent, func(top string) error {
			// The children need the controllers too, for their (unlimited)
			// files to exist; v2 accounts hierarchically.
			return h.fs.write(path.Join(top, "cgroup.subtree_control"), "+cpu +memory")
		})
		if err != nil {
			return g, err
		}
		g.CPUDir, g.MemoryDir, g.Procs = top, top, []string{path.Join(leaf, "cgroup.procs")}
		g.MemoryLeaf = leaf
		if side != "" {
			g.SidecarProcs, g.SidecarMemoryLeaf = []string{path.Join(side, "cgroup.procs")}, side
		}
		if spec.CPUs > 0 {
			period := spec.period()
			quota := quotaMicros(spec.CPUs, period)
			if err := h.fs.write(path.Join(top, "cpu.max"), fmt.Sprintf("%d %d", quota, period.Microseconds())); err != nil {
				return g, err
			}
		}
		if spec.Memory > 0 {
			if err := h.fs.write(path.Join(top, "memory.max"), strconv.FormatInt(spec.Memory, 10)); err != nil {
				return g, err
			}
			if p := path.Join(top, "memory.swap.max"); h.fs.exists(p) {
				if err := h.fs.write(p, "0"); err != nil {
					return g, err
				}
			}
		}
		return g, nil
	}

	cpuTop, cpuLeaf, cpuSide, err := mk(h.CPUParent, none)
	if err != nil {
		return g, err
	}
	hier := none
	if spec.Sibling {
		hier = h.hierarchical
	}
	memTop, memLeaf, memSide, err := mk(h.MemoryParent, hier)
	if err != nil {
		return g, err
	}
	g.CPUDir, g.MemoryDir, g.MemoryLeaf = cpuTop, memTop, memLeaf
	g.Procs = []string{path.Join(cpuLeaf, "cgroup.procs"), path.Join(memLeaf, "cgroup.procs")}
	if spec.Sibling {
		g.SidecarProcs = []string{path.Join(cpuSide, "cgroup.procs"), path.Join(memSide, "cgroup.procs")}
		g.SidecarMemoryLeaf = memSide
	}
	if spec.CPUs > 0 {
		period := spec.period()
		if err := h.fs.write(path.Join(cpuTop, "cpu.cfs_period_us"), strconv.FormatInt(period.Microseconds(), 10)); err != nil {
			return g, err
		}
		if err := h.fs.write(path.Join(cpuTop, "cpu.cfs_quota_us"), strconv.FormatInt(quotaMicros(spec.CPUs, period), 10)); err != nil {
			return g, err
		}
	}
	if spec.Memory > 0 {
		v := strconv.FormatInt(spec.Memory, 10)
		if err := h.fs.write(path.Join(memTop, "memory.limit_in_bytes"), v); err != nil {
			return g, err
		}
		// memsw (memory+swap) must be at least the memory limit: written second.
		if p := path.Join(memTop, "memory.memsw.limit_in_bytes"); h.fs.exists(p) {
			if err := h.fs.write(p, v); err != nil {
				return g, err
			}
		}
	}
	return g, nil
}

// hierarchical makes a v1 memory cgroup account its children's memory to its
// own limit: memory.use_hierarchy 1, which must be set before it has
// children. Kernels since 5.16 always account hierarchically (the file reads
// 1 and refuses 0); older ones inherit the parent's setting.
func (h *Host) hierarchical(dir string) error {
	p := path.Join(dir, "memory.use_hierarchy")
	v, err := h.fs.read(p)
	if err != nil {
		return fmt.Errorf("hierarchical memory accounting: %w", err)
	}
	if strings.TrimSpace(v) == "1" {
		return nil
	}
	if err := h.fs.write(p, "1"); err != nil {
		return fmt.Errorf("hierarchical memory accounting: %w", err)
	}
	return nil
}

func (s Spec) period() time.Duration {
	if s.Period <= 0 {
		return 100 * time.Millisecond
	}
	return s.Period
}

// quotaMicros is the CFS quota for cpus cores per period, at least the
// kernel's minimum of 1ms.
func quotaMicros(cpus float64, period time.Duration) int64 {
	return max(int64(cpus*float64(period.Microseconds())+0.5), 1000)
}

// Stats reads the statistics where the quota is set: cpu.stat, and on v2
// the memory and pressure files of the same directory.
func (g *Group) Stats() (cgroup.Stats, error) {
	return cgroup.ReadStatsDir(os.DirFS(g.fs.real("/")), g.CPUDir)
}

// OOMKills returns the number of processes the kernel's OOM killer killed in
// the process's memory cgroup (MemoryLeaf): oom_kill in memory.events (v2) or
// memory.oom_control (v1). On v1 a kill counts only in the victim's own
// cgroup, so the leaf is where the process's kill shows in every layout. It
// reads the file itself rather than through cgroup.Stats, which reads a
// kernel without the counter (before 4.13) as no kills: here that is an
// error.
func (g *Group) OOMKills() (uint64, error) {
	return g.oomKillsIn(g.leaf())
}

// SidecarOOMKills is OOMKills for the Sibling's child.
func (g *Group) SidecarOOMKills() (uint64, error) { return g.oomKillsIn(g.SidecarMemoryLeaf) }

func (g *Group) leaf() string {
	if g.MemoryLeaf != "" {
		return g.MemoryLeaf
	}
	return g.MemoryDir
}

func (g *Group) oomKillsIn(dir string) (uint64, error) {
	file := "memory.oom_control"
	if g.v == cgroup.V2 {
		file = "memory.events"
	}
	s, err := g.fs.read(path.Join(dir, file))
	if err != nil {
		return 0, err
	}
	n, err := parseCounter(s, "oom_kill")
	if err != nil {
		return 0, fmt.Errorf("%s: %w (kernel older than 4.13?)", file, err)
	}
	return n, nil
}

// MemoryUsage returns the current usage of the limited cgroup (MemoryDir):
// memory.current (v2) or memory.usage_in_bytes (v1).
func (g *Group) MemoryUsage() (int64, error) {
	file := "memory.usage_in_bytes"
	if g.v == cgroup.V2 {
		file = "memory.current"
	}
	s, err := g.fs.read(path.Join(g.MemoryDir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
}

// MemoryEvents returns the event counters of the limited cgroup (see
// results.Run.MemoryEvents) and its peak usage (0 where the kernel has no
// such file), as fitgo's cgroup package reads them (cgroup.ReadStatsDir):
// on v2 the counters of memory.events it knows; on v1 failcnt
// (memory.failcnt) and oom_kill. The v1 counters that cgroup.Stats does not
// have, memsw_failcnt (memory.memsw.failcnt, where swap is accounted) and
// under_oom (a state of memory.oom_control rather than an event), are read
// here.
func (g *Group) MemoryEvents() (map[string]uint64, int64, error) {
	st, err := cgroup.ReadStatsDir(os.DirFS(g.fs.real("/")), g.MemoryDir)
	if err == nil && !st.Memory.HasEvents {
		err = fmt.Errorf("%s: no memory event files", g.MemoryDir)
	}
	if err != nil {
		return nil, 0, err
	}
	e := st.Memory.Events
	var peak int64
	if st.Memory.HasPeak {
		peak = st.Memory.Peak
	}
	if g.v == cgroup.V2 {
		return map[string]uint64{"low": e.Low, "high": e.High, "max": e.Max, "oom": e.OOM,
			"oom_kill": e.OOMKill, "oom_group_kill": e.OOMGroupKill}, peak, nil
	}
	ev := map[string]uint64{"failcnt": e.Max, "oom_kill": e.OOMKill}
	read := func(file string) (string, error) { return g.fs.read(path.Join(g.MemoryDir, file)) }
	s, err := read("memory.oom_control")
	if err != nil {
		return nil, 0, err
	}
	if ev["under_oom"], err = parseCounter(s, "under_oom"); err != nil {
		return nil, 0, fmt.Errorf("memory.oom_control: %w", err)
	}
	// With swap accounting the memory+swap counter, whose limit the runner
	// sets equal, is charged first and fails first: its failcnt is the one
	// that counts then.
	if f, err := read("memory.memsw.failcnt"); err == nil {
		if ev["memsw_failcnt"], err = strconv.ParseUint(strings.TrimSpace(f), 10, 64); err != nil {
			return nil, 0, fmt.Errorf("memory.memsw.failcnt: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err
	}
	return ev, peak, nil
}

// parseCounter returns the counter key of a flat-keyed file ("key value"
// lines) such as memory.events or memory.oom_control; a file without it is
// an error.
func parseCounter(s, key string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			return strconv.ParseUint(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s counter", key)
}

// Remove removes the group's cgroups, deepest first. It is safe to call more
// than once.
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.created {
		if err := g.fs.rmdir(d); err != nil {
			errs = append(errs, err)
		}
	}
	g.created = nil
	return errors.Join(errs...)
}

// toResults converts the cpu.stat change from prev to cur; nil when cur has
// no cpu.stat.
func toResults(cur, prev cgroup.Stats) *results.CPUStat {
	if cur.CPU.Dir == "" {
		return nil
	}
	return &results.CPUStat{
		Periods:          cur.CPU.Periods - prev.CPU.Periods,
		ThrottledPeriods: cur.CPU.ThrottledPeriods - prev.CPU.ThrottledPeriods,
		ThrottledMS:      float64(cur.CPU.ThrottledTime-prev.CPU.ThrottledTime) / float64(time.Millisecond),
	}
}

// Probe checks that the runner can create a cgroup with a CPU quota and a
// memory limit and start a process in it, by creating and removing one.
func (h *Host) Probe(name string) error {
	g, err := h.NewGroup(name, Spec{CPUs: 1, Memory: 1 << 30})
	if err != nil {
		return err
	}
	return g.Remove()
}

// RemoveStale removes empty run cgroups left by runners that are no longer
// running (killed with SIGKILL, say): directories named
// fitgo-bench-<pid>-... whose pid is gone. It returns the directories removed.
func (h *Host) RemoveStale() []string {
	var removed []string
	for _, parent := range uniq(h.CPUParent, h.MemoryParent) {
		entries, err := os.ReadDir(h.fs.real(parent))
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, ok := stalePID(e.Name())
			if !ok || !e.IsDir() || processAlive(pid) {
				continue
			}
			dir := path.Join(parent, e.Name())
			for _, c := range []string{"workload", "sidecar"} {
				if sub := path.Join(dir, c); h.fs.exists(sub) {
					h.fs.rmdir(sub)
				}
			}
			if h.fs.rmdir(dir) == nil {
				removed = append(removed, dir)
			}
		}
	}
	return removed
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// stalePID extracts the runner pid from a run cgroup name.
func stalePID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return 0, false
	}
	p, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
