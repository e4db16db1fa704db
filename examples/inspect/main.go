// Command inspect prints what fitgo sees in the current process: the cgroup
// version and path, each effective limit and the directory that imposed it,
// the CPU throttling counters, the memory usage, working set and events where
// the memory limit is imposed, the pressure (cgroup v2), and the GOMAXPROCS and
// GOMEMLIMIT in force.
//
//	go run ./examples/inspect         # aligned text
//	go run ./examples/inspect -json   # one JSON object
//	go run ./examples/inspect -watch  # one line per second until Ctrl-C, for kubectl exec
//
// It also shows what fitgo's policies would set here (maxprocs.Plan and
// memlimit.Plan). It changes nothing. Outside a container (or outside Linux) it says that
// there are no cgroup limits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// report is everything inspect prints; its JSON form is the -json output.
type report struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	NumCPU    int    `json:"num_cpu"` // the CPU affinity count at start-up
	// GOMAXPROCS and GOMEMLIMIT in force, and the environment variables, if set.
	GOMAXPROCS    int     `json:"gomaxprocs"`
	GOMAXPROCSEnv *string `json:"gomaxprocs_env,omitempty"`
	GOMEMLIMIT    int64   `json:"gomemlimit"`
	GOMEMLIMITEnv *string `json:"gomemlimit_env,omitempty"`

	Cgroup   *cgroupReport `json:"cgroup,omitempty"`
	Error    string        `json:"error,omitempty"`
	Summary  string        `json:"summary"`
	Policies []policy      `json:"policies,omitempty"`
}

type cgroupReport struct {
	CPU    controller `json:"cpu"`
	Memory controller `json:"memory"`

	CPUQuotaCores   *float64 `json:"cpu_quota_cores,omitempty"`
	CPUPeriodUS     int64    `json:"cpu_period_us,omitempty"`
	CPUSource       string   `json:"cpu_source,omitempty"`
	MemoryMaxBytes  *int64   `json:"memory_max_bytes,omitempty"`
	MemoryMaxSource string   `json:"memory_max_source,omitempty"`
	MemoryHighBytes *int64   `json:"memory_high_bytes,omitempty"`
	MemoryHighSrc   string   `json:"memory_high_source,omitempty"`

	Throttling *throttling `json:"throttling,omitempty"`
	// MemoryUse and Pressure are the memory and pressure parts of
	// cgroup.Stats.
	MemoryUse *memoryUse      `json:"memory_use,omitempty"`
	Pressure  *pressureReport `json:"pressure,omitempty"`
	// MemoryLevels are the levels whose memory the process shares, with
	// what is charged there, and RssAnonBytes the process's anonymous memory
	// (cgroup.Memory.Levels): memlimit's plan says what they leave it.
	MemoryLevels []memoryLevel `json:"memory_levels,omitempty"`
	RssAnonBytes int64         `json:"rss_anon_bytes,omitempty"`
	UsageError   string        `json:"memory_usage_error,omitempty"`
}

// memoryLevel is a cgroup.Level; a limit of -1 is none.
type memoryLevel struct {
	Dir   string `json:"dir"`
	Max   int64  `json:"max_bytes"`
	High  int64  `json:"high_bytes"`
	Usage int64  `json:"usage_bytes"`
	File  int64  `json:"page_cache_bytes"`
	Lazy  int64  `json:"lazily_freed_bytes"`
	Hits  uint64 `json:"limit_hits,omitempty"`
}

type controller struct {
	Version string `json:"version"`
	Path    string `json:"path,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Error   string `json:"error,omitempty"`
}

type throttling struct {
	Periods          uint64  `json:"periods"`
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
	UsageSeconds     float64 `json:"usage_seconds,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// memoryUse is the memory statistics where the memory limit is imposed.
type memoryUse struct {
	Dir             string `json:"dir,omitempty"`
	UsageBytes      int64  `json:"usage_bytes"`
	WorkingSetBytes int64  `json:"working_set_bytes"`
	PeakBytes       *int64 `json:"peak_bytes,omitempty"`
	// Events by their memory.events names; v1 has only max (memory.failcnt)
	// and oom_kill.
	Events map[string]uint64 `json:"events,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// pressureReport is the pressure stall information of the process's cgroup.
type pressureReport struct {
	Dir       string     `json:"dir"`
	Resources []pressure `json:"resources"`
}

type pressure struct {
	Resource string `json:"resource"`
	Some     *stall `json:"some,omitempty"`
	Full     *stall `json:"full,omitempty"`
}

// stall is one line of a pressure file: the averages in percent.
type stall struct {
	Avg10        float64 `json:"avg10"`
	Avg60        float64 `json:"avg60"`
	Avg300       float64 `json:"avg300"`
	TotalSeconds float64 `json:"total_seconds"`
}

// eventOrder is the order of the memory events in the text: those that tell
// how hard the limit was hit first.
var eventOrder = []string{"high", "max", "oom", "oom_kill", "oom_group_kill", "low"}

// policy is what one fitgo policy would set in this process.
type policy struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Reason string `json:"reason,omitempty"`
}

func main() {
	asJSON := flag.Bool("json", false, "print one JSON object instead of text")
	watchFlag := flag.Bool("watch", false, "print one line per second (throttling, working set, memory events, pressure) until interrupted")
	flag.Parse()
	if *watchFlag {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runWatch(ctx)
		stop()
		os.Exit(code)
	}
	r := inspect()
	var err error
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = printText(os.Stdout, r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inspect:", err)
		os.Exit(1)
	}
}

func inspect() report {
	r := report{
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOMEMLIMIT: debug.SetMemoryLimit(-1),
	}
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		r.GOMAXPROCSEnv = &v
	}
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		r.GOMEMLIMITEnv = &v
	}

	lim, err := cgroup.Read()
	if errors.Is(err, cgroup.ErrNoCgroup) {
		r.Summary = "no cgroup limits: " + err.Error()
		r.Policies = policies()
		return r
	}
	if err != nil {
		r.Error = err.Error()
	}
	c := &cgroupReport{
		CPU:    describe(lim.CPU.Version, lim.CPU.Path, lim.CPU.Dir, lim.CPU.Err),
		Memory: describe(lim.Memory.Version, lim.Memory.Path, lim.Memory.Dir, lim.Memory.Err),
	}
	if cores, ok := lim.CPUQuota(); ok {
		c.CPUQuotaCores = &cores
		c.CPUPeriodUS = lim.CPU.Period.Microseconds()
		c.CPUSource = lim.CPU.Source
	}
	if b, ok := lim.MemoryMax(); ok {
		c.MemoryMaxBytes = &b
		c.MemoryMaxSource = lim.Memory.MaxSource
	}
	if b, ok := lim.MemoryHigh(); ok {
		c.MemoryHighBytes = &b
		c.MemoryHighSrc = lim.Memory.HighSource
	}
	for _, l := range lim.Memory.Levels {
		c.MemoryLevels = append(c.MemoryLevels, memoryLevel(l))
	}
	c.RssAnonBytes = lim.Memory.RssAnon
	if err := lim.Memory.UsageErr; err != nil {
		c.UsageError = err.Error()
	}
	if lim.CPU.Version != 0 || lim.Memory.Version != 0 {
		st, err := readStats()
		addStats(c, lim, st, err)
	}
	r.Cgroup = c
	r.Summary = summary(c, err)
	r.Policies = policies()
	return r
}

// addStats adds to c the statistics st, read with the error err, of the
// cgroups whose limits are lim.
func addStats(c *cgroupReport, lim cgroup.Limits, st cgroup.Stats, err error) {
	if lim.CPU.Version != 0 {
		t := &throttling{}
		if err != nil {
			t.Error = err.Error()
		} else {
			t.Periods = st.CPU.Periods
			t.ThrottledPeriods = st.CPU.ThrottledPeriods
			t.ThrottledSeconds = st.CPU.ThrottledTime.Seconds()
			if st.CPU.HasUsage {
				t.UsageSeconds = st.CPU.Usage.Seconds()
			}
		}
		c.Throttling = t
	}
	if m := st.Memory; lim.Memory.Version != 0 && (m.Dir != "" || err != nil) {
		u := &memoryUse{Dir: m.Dir, UsageBytes: m.Usage, WorkingSetBytes: m.WorkingSet}
		if m.HasPeak {
			u.PeakBytes = &m.Peak
		}
		if e := m.Events; m.HasEvents {
			u.Events = map[string]uint64{"max": e.Max, "oom_kill": e.OOMKill}
			if lim.Memory.Version == cgroup.V2 {
				u.Events["low"], u.Events["high"], u.Events["oom"], u.Events["oom_group_kill"] = e.Low, e.High, e.OOM, e.OOMGroupKill
			}
		}
		if m.Dir == "" {
			u.Error = err.Error() // nothing read: say why
		}
		c.MemoryUse = u
	}
	if ps := st.Pressure; ps.Dir != "" {
		p := &pressureReport{Dir: ps.Dir}
		line := func(has bool, l struct {
			Avg10, Avg60, Avg300 float64
			Total                time.Duration
		}) *stall {
			if !has {
				return nil
			}
			return &stall{Avg10: l.Avg10, Avg60: l.Avg60, Avg300: l.Avg300, TotalSeconds: l.Total.Seconds()}
		}
		for _, r := range []struct {
			name string
			p    cgroup.Pressure
		}{{"cpu", ps.CPU}, {"memory", ps.Memory}, {"io", ps.IO}} {
			if r.p.HasSome || r.p.HasFull {
				p.Resources = append(p.Resources, pressure{Resource: r.name,
					Some: line(r.p.HasSome, r.p.Some), Full: line(r.p.HasFull, r.p.Full)})
			}
		}
		c.Pressure = p
	}
}

// readStats reads the statistics of the process's cgroups once.
func readStats() (cgroup.Stats, error) {
	w, err := cgroup.NewWatcher(nil)
	if err != nil {
		return cgroup.Stats{}, err
	}
	defer w.Close()
	return w.Stats()
}

func describe(v cgroup.Version, path, dir string, err error) controller {
	c := controller{Version: v.String(), Path: path, Dir: dir}
	if err != nil {
		c.Error = err.Error()
	}
	return c
}

func summary(c *cgroupReport, err error) string {
	switch {
	case err != nil && c.CPUQuotaCores == nil && c.MemoryMaxBytes == nil && c.MemoryHighBytes == nil:
		return "cgroup limits could not be read (see error)"
	case c.CPUQuotaCores == nil && c.MemoryMaxBytes == nil && c.MemoryHighBytes == nil:
		return "no cgroup limits"
	case c.CPUQuotaCores == nil:
		return "memory limited, no CPU limit"
	case c.MemoryMaxBytes == nil && c.MemoryHighBytes == nil:
		return "CPU limited, no memory limit"
	}
	return "CPU and memory limited"
}

func printText(w io.Writer, r report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("go", r.GoVersion+" "+r.OS)
	row("summary", r.Summary)
	if r.Error != "" {
		row("error", r.Error)
	}
	row("CPUs (affinity)", fmt.Sprint(r.NumCPU))
	row("GOMAXPROCS", fmt.Sprint(r.GOMAXPROCS)+envNote(r.GOMAXPROCSEnv))
	row("GOMEMLIMIT", bytesString(r.GOMEMLIMIT)+envNote(r.GOMEMLIMITEnv))
	if c := r.Cgroup; c != nil {
		row("cpu controller", controllerString(c.CPU))
		row("memory controller", controllerString(c.Memory))
		if c.CPUQuotaCores != nil {
			row("cpu quota", fmt.Sprintf("%.3g cores (period %d µs) from %s", *c.CPUQuotaCores, c.CPUPeriodUS, c.CPUSource))
		} else {
			row("cpu quota", "none")
		}
		if c.MemoryMaxBytes != nil {
			row("memory max", bytesString(*c.MemoryMaxBytes)+" from "+c.MemoryMaxSource)
		} else {
			row("memory max", "none")
		}
		if c.MemoryHighBytes != nil {
			row("memory high", bytesString(*c.MemoryHighBytes)+" from "+c.MemoryHighSrc)
		}
		for _, l := range c.MemoryLevels {
			lim := "no limit"
			if l.Max >= 0 || l.High >= 0 {
				lim = "max " + limitString(l.Max) + ", high " + limitString(l.High)
			}
			row("memory level", fmt.Sprintf("%s: %s; usage %s (page cache %s, lazily freed %s)", l.Dir, lim,
				bytesString(l.Usage), bytesString(l.File), bytesString(l.Lazy)))
		}
		if c.RssAnonBytes > 0 {
			row("memory own (RssAnon)", bytesString(c.RssAnonBytes))
		}
		if c.UsageError != "" {
			row("memory usage error", c.UsageError)
		}
		if t := c.Throttling; t != nil {
			if t.Error != "" {
				row("throttling", "error: "+t.Error)
			} else {
				row("throttling", fmt.Sprintf("%d of %d periods throttled, %.3f s throttled", t.ThrottledPeriods, t.Periods, t.ThrottledSeconds))
			}
		}
		printStats(row, c)
	}
	for _, p := range r.Policies {
		v := p.Value
		if p.Reason != "" {
			v += " (" + p.Reason + ")"
		}
		row(p.Name, v)
	}
	return tw.Flush()
}

// printStats writes the rows of the memory and pressure statistics.
func printStats(row func(k, v string), c *cgroupReport) {
	if u := c.MemoryUse; u != nil && u.Dir == "" {
		row("memory usage", "error: "+u.Error)
	} else if u != nil {
		v := bytesString(u.UsageBytes) + ", working set " + bytesString(u.WorkingSetBytes)
		if u.PeakBytes != nil {
			v += ", peak " + bytesString(*u.PeakBytes)
		}
		row("memory usage", v+" at "+u.Dir)
		if len(u.Events) > 0 {
			var ev []string
			for _, k := range eventOrder {
				if n, ok := u.Events[k]; ok {
					ev = append(ev, fmt.Sprintf("%s %d", k, n))
				}
			}
			row("memory events", strings.Join(ev, ", "))
		}
	}
	if p := c.Pressure; p != nil {
		var parts []string
		for _, r := range p.Resources {
			s := r.Resource
			for _, l := range []struct {
				kind string
				s    *stall
			}{{"some", r.Some}, {"full", r.Full}} {
				if l.s != nil {
					s += fmt.Sprintf(" %s %.2f/%.2f/%.2f%%", l.kind, l.s.Avg10, l.s.Avg60, l.s.Avg300)
				}
			}
			parts = append(parts, s)
		}
		row("pressure avg10/60/300", strings.Join(parts, "; ")+" at "+p.Dir)
	}
}

func controllerString(c controller) string {
	s := c.Version
	if c.Dir != "" {
		s += " " + c.Dir
	}
	if c.Path != "" && c.Path != c.Dir {
		s += " (cgroup " + c.Path + ")"
	}
	if c.Error != "" {
		s += " error: " + c.Error
	}
	return s
}

func envNote(v *string) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf(" (env %q)", *v)
}

// bytesString prints n in GiB or MiB where one divides it evenly, else in
// MiB with one decimal and the exact count (KiB only below 1 MiB, so that
// every figure reads in the unit the rest of fitgo uses), or "off" for the
// runtime's "no limit" value.
// limitString is a limit of a memoryLevel: bytes, or "none" for -1.
func limitString(n int64) string {
	if n < 0 {
		return "none"
	}
	return bytesString(n)
}

func bytesString(n int64) string {
	if n == 1<<63-1 {
		return "off"
	}
	for _, u := range []struct {
		s string
		v int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 && (u.s != "KiB" || n < 1<<20) {
			return fmt.Sprintf("%d %s", n/u.v, u.s)
		}
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// policies reports what fitgo's policies would set in this process: its
// default GOMAXPROCS rounding (ceil, at least 1), floor, and the Go runtime's
// rule (ceil, at least 2) applied to the same effective limit, and its
// default GOMEMLIMIT ratio. It uses maxprocs.Plan and memlimit.Plan, which
// read the same limits and environment as Apply and change nothing.
func policies() []policy {
	var out []policy
	add := func(name, value string, changed bool, reason string, err error) {
		p := policy{Name: name, Value: value}
		switch {
		case err != nil:
			p.Reason = "error: " + err.Error()
		case !changed:
			p.Reason = "left alone: " + reason
		}
		out = append(out, p)
	}
	for _, mp := range []struct {
		name   string
		policy maxprocs.Policy
	}{
		{"fitgo GOMAXPROCS (ceil, the default)", maxprocs.Policy{}},
		{"fitgo GOMAXPROCS (floor)", maxprocs.Policy{Rounding: maxprocs.Floor}},
		{"the runtime's rule on the effective limit (ceil, min 2)", maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 2}},
	} {
		r, err := maxprocs.Plan(maxprocs.Options{Policy: mp.policy})
		v := fmt.Sprint(r.After)
		if r.Source != "" {
			v += fmt.Sprintf(" from %.3g cores", r.Limit)
		}
		add(mp.name, v, r.Changed, r.Reason, err)
	}
	r, err := memlimit.Plan(memlimit.Options{})
	v := bytesString(r.After)
	if r.Source != "" {
		v += fmt.Sprintf(" from %s %s", r.From, bytesString(r.Limit))
	}
	if r.Others > 0 {
		v = bytesString(r.After) + fmt.Sprintf(" from %s available at %s (%s %s − others %s)", bytesString(r.Limit), r.Source,
			r.From, bytesString(r.LevelLimit), bytesString(r.Others))
	}
	if r.NonGo > 0 {
		v += ", the others counting this process's own memory outside Go " + bytesString(r.NonGo)
	}
	if r.Floor > 0 {
		v += ", held at the floor " + bytesString(r.Floor)
	}
	add(fmt.Sprintf("fitgo GOMEMLIMIT (%.2g)", r.Policy.Ratio), v, r.Changed, r.Reason, err)
	return out
}
