package fitgoprom

import (
	"io/fs"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// Option configures NewCollector.
type Option func(*collector)

// WithFits makes fitgo_cgroup_info show the policies of the two
// managements, such as fitgo.Startup().MaxProcs and fitgo.Startup().MemLimit
// for the blank import, or what maxprocs.Apply and memlimit.Apply returned.
// Either may be nil; its label is then empty. A Fit's policy is fixed, so
// it is taken once, here. When ml has the OOM capture on (OOMProfile),
// fitgo_oom_captures_total counts its captures, from its Status at each
// scrape.
func WithFits(mp *maxprocs.Fit, ml *memlimit.Fit) Option {
	return func(c *collector) {
		c.mpPolicy, c.mlPolicy, c.oom = "", "", nil
		if mp != nil {
			c.mpPolicy = mp.Status().Policy.String()
		}
		if ml != nil {
			st := ml.Status()
			if c.mlPolicy = st.Policy.String(); st.OOMCapture.Dir != "" && st.OOMCapture.Err == nil {
				c.oom = ml
			}
		}
	}
}

// WithFS reads the cgroup files from fsys, rooted at "/", instead of the
// real root: for tests and tools that look at a copy of a container's files.
func WithFS(fsys fs.FS) Option {
	return func(c *collector) { c.fsys = fsys }
}

// NewCollector returns a collector of the process's cgroup limits and
// statistics, read on each scrape. It opens the files at the first scrape,
// as cgroup.Read does; where there is no cgroup (not Linux, no /proc) it
// collects nothing.
func NewCollector(opts ...Option) prometheus.Collector {
	c := &collector{}
	for _, o := range opts {
		o(c)
	}
	return c
}

type collector struct {
	fsys               fs.FS         // nil: the real root
	mpPolicy, mlPolicy string        // the policies of WithFits' Fits
	oom                *memlimit.Fit // WithFits' memlimit Fit with the OOM capture on

	mu     sync.Mutex // a Watcher is used by one goroutine at a time
	w      *cgroup.Watcher
	errors float64 // scrapes with a failed read
}

var (
	descCPULimit        = newDesc("cpu_limit_cores", "Effective CPU limit of the cgroup hierarchy in cores (quota/period).")
	descPeriods         = newDesc("cpu_cfs_periods_total", "Number of CFS enforcement periods with runnable tasks (cpu.stat nr_periods).")
	descThrottled       = newDesc("cpu_cfs_throttled_periods_total", "Number of CFS periods that ended throttled (cpu.stat nr_throttled).")
	descThrottledTime   = newDesc("cpu_cfs_throttled_seconds_total", "Total time the cgroup was throttled (cpu.stat throttled_usec, v1 throttled_time).")
	descBursts          = newDesc("cpu_cfs_bursts_total", "Number of CFS periods in which burst capacity was used (cpu.stat nr_bursts).")
	descBurstTime       = newDesc("cpu_cfs_burst_seconds_total", "Total burst time used (cpu.stat burst_usec, v1 burst_time).")
	descUsage           = newDesc("cpu_usage_seconds_total", "CPU time used by the cgroup (cpu.stat usage_usec, v1 cpuacct.usage).")
	descMemLimit        = newDesc("memory_limit_bytes", "Effective hard memory limit of the cgroup hierarchy (memory.max, v1 memory.limit_in_bytes).")
	descMemHigh         = newDesc("memory_high_bytes", "Effective memory.high of the cgroup hierarchy.")
	descMemUsage        = newDesc("memory_usage_bytes", "Memory usage, page cache included (memory.current, v1 memory.usage_in_bytes).")
	descWorkingSet      = newDesc("memory_working_set_bytes", "Memory usage less the inactive page cache, as the kubelet counts it.")
	descMaxUsage        = newDesc("memory_max_usage_bytes", "Peak memory usage (memory.peak, v1 memory.max_usage_in_bytes).")
	descMemEvents       = newDesc("memory_events_total", "Memory events of the cgroup and its descendants (memory.events; v1 memory.failcnt as max, oom_kill).", "event")
	descPressureStalled = newDesc("pressure_stalled_seconds_total", "Total time tasks of the cgroup stalled on a resource (pressure stall information): kind some is at least one task, full all at once.", "resource", "kind")
	descInfo            = newDesc("cgroup_info", "The process's cgroups, the directories whose files impose the effective limits, and the policies applied; always 1.",
		"cpu_version", "cpu_dir", "cpu_source", "memory_version", "memory_dir", "memory_source", "memory_high_source", "gomaxprocs_policy", "gomemlimit_policy")
	descOOMCaptures = newDesc("oom_captures_total", "Number of OOM captures (a heap profile and a memory breakdown) written by the memlimit Fit given with WithFits.")
	descErrors      = newDesc("read_errors_total", "Number of scrapes in which a cgroup file could not be read or parsed.")

	allDescs = []*prometheus.Desc{descCPULimit, descPeriods, descThrottled, descThrottledTime, descBursts, descBurstTime, descUsage,
		descMemLimit, descMemHigh, descMemUsage, descWorkingSet, descMaxUsage, descMemEvents, descPressureStalled, descInfo, descOOMCaptures, descErrors}
)

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("fitgo_"+name, help, labels, nil)
}

// Describe sends the descriptions of every metric the collector may send.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// read reads the limits and the statistics; ok is false when there is no
// cgroup. It allocates nothing once the files are open.
func (c *collector) read() (lim cgroup.Limits, st cgroup.Stats, errors float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		w, err := cgroup.NewWatcher(c.fsys)
		if err != nil {
			return lim, st, c.errors, false
		}
		c.w = w
	}
	lim, err := c.w.Read()
	st, serr := c.w.Stats()
	if err != nil || serr != nil {
		c.errors++
	}
	return lim, st, c.errors, true
}

// Collect reads the files and sends the metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	lim, st, errors, ok := c.read()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		for i, l := range labels {
			labels[i] = label(l)
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	counter(descErrors, errors)
	if c.oom != nil {
		counter(descOOMCaptures, float64(c.oom.Status().OOMCapture.Written))
	}
	gauge(descInfo, 1, lim.CPU.Version.String(), lim.CPU.Dir, lim.CPU.Source,
		lim.Memory.Version.String(), lim.Memory.Dir, lim.Memory.MaxSource, lim.Memory.HighSource,
		c.mpPolicy, c.mlPolicy)
	if cores, ok := lim.CPUQuota(); ok {
		gauge(descCPULimit, cores)
	}
	if b, ok := lim.MemoryMax(); ok {
		gauge(descMemLimit, float64(b))
	}
	if b, ok := lim.MemoryHigh(); ok {
		gauge(descMemHigh, float64(b))
	}
	if cpu := &st.CPU; cpu.Dir != "" {
		counter(descPeriods, float64(cpu.Periods))
		counter(descThrottled, float64(cpu.ThrottledPeriods))
		counter(descThrottledTime, cpu.ThrottledTime.Seconds())
		counter(descBursts, float64(cpu.Bursts))
		counter(descBurstTime, cpu.BurstTime.Seconds())
		if cpu.HasUsage {
			counter(descUsage, cpu.Usage.Seconds())
		}
	}
	if m := &st.Memory; m.Dir != "" {
		gauge(descMemUsage, float64(m.Usage))
		gauge(descWorkingSet, float64(m.WorkingSet))
		if m.HasPeak {
			gauge(descMaxUsage, float64(m.Peak))
		}
	}
	if m := &st.Memory; m.HasEvents {
		e := &m.Events
		if lim.Memory.Version == cgroup.V2 {
			counter(descMemEvents, float64(e.Low), "low")
			counter(descMemEvents, float64(e.High), "high")
			counter(descMemEvents, float64(e.OOM), "oom")
			counter(descMemEvents, float64(e.OOMGroupKill), "oom_group_kill")
		}
		counter(descMemEvents, float64(e.Max), "max")
		counter(descMemEvents, float64(e.OOMKill), "oom_kill")
	}
	for _, r := range []struct {
		name string
		p    *cgroup.Pressure
	}{{"cpu", &st.Pressure.CPU}, {"memory", &st.Pressure.Memory}, {"io", &st.Pressure.IO}} {
		if r.p.HasSome {
			counter(descPressureStalled, r.p.Some.Total.Seconds(), r.name, "some")
		}
		if r.p.HasFull {
			counter(descPressureStalled, r.p.Full.Total.Seconds(), r.name, "full")
		}
	}
}

// label is s as a label value, which must be UTF-8: a directory name that is
// not has its bytes escaped as strconv.Quote does (a\xffb).
func label(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
