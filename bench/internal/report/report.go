// Package report writes a benchmark's results: results.json (one Summary per
// variant and scenario setting), runs.json (every run), report.md (tables and
// the context of the run), chart.png (latency percentiles and throttling per
// variant) and bench.txt (Go benchmark format, for benchstat). Both runners,
// local and kind, use it.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// Files written by Write, in the output directory.
const (
	ResultsFile = "results.json"
	RunsFile    = "runs.json"
	ReportFile  = "report.md"
	ChartFile   = "chart.png"
	SweepFile   = "sweep.png"
	BenchFile   = "bench.txt"
)

// Meta is the context of a benchmark, printed in report.md.
type Meta struct {
	// Runner is "local" or "kind"; it also names the benchmarks in bench.txt
	// (BenchmarkLocal, BenchmarkKind).
	Runner string
	// Command is the command line that produced the results.
	Command string
	// Started and Elapsed time the whole benchmark.
	Started time.Time
	Elapsed time.Duration
	// Machine, Kernel and CPUModel describe where the workload ran (for kind:
	// the node). HostMeta fills them for the local machine.
	Machine  string
	CPUModel string
	Kernel   string
	// CPUs is the number of CPUs the workload could run on (for the rounding
	// rules' table).
	CPUs int
	// Cgroup describes the cgroup setup, e.g. "v1 (cpu: /sys/fs/cgroup/cpu, memory: /sys/fs/cgroup/memory)".
	Cgroup string
	// GoVersion is the Go version the variants were built with.
	GoVersion string
	// Workload describes the workload's parameters.
	Workload string
	// Notes are extra paragraphs for report.md.
	Notes []string
	// Emulated says what emulates the machine (e.g. "qemu TCG"); empty for
	// real hardware. report.md's header then says its timings mean nothing.
	Emulated string
}

// EmulatedHeader is the line under report.md's title when the machine is
// emulated.
func EmulatedHeader(what string) string {
	return "**The node is emulated (" + what + ")**: the workload ran on an emulated CPU, many times slower than hardware, " +
		"so the timings below (latencies, delays, throughputs, GC and CPU figures) mean nothing for a real node. " +
		"GOMAXPROCS, GOMEMLIMIT, OOM kills and which variants follow a resize are what this run shows."
}

// HostMeta returns a Meta describing this machine: CPU model and count, memory,
// kernel release and the Go version of the running program.
func HostMeta() Meta {
	m := Meta{GoVersion: runtime.Version(), Started: time.Now()}
	m.CPUModel = cpuModel()
	mem := ""
	if kb := memTotalKiB(); kb > 0 {
		mem = fmt.Sprintf(", %.1f GiB RAM", float64(kb)/(1<<20))
	}
	m.CPUs = runtime.NumCPU()
	m.Machine = fmt.Sprintf("%s/%s, %d CPUs%s", runtime.GOOS, runtime.GOARCH, m.CPUs, mem)
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotalKiB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// Write writes results.json, runs.json, report.md, chart.png, sweep.png
// (where a scenario has several CPU quotas) and bench.txt for runs into dir,
// creating dir if needed, and returns the paths it wrote.
func Write(dir string, meta Meta, runs []results.Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	path := func(name string) string {
		p := filepath.Join(dir, name)
		files = append(files, p)
		return p
	}
	sums := results.Summarize(runs)
	if err := writeJSON(path(ResultsFile), sums); err != nil {
		return files, err
	}
	if err := writeJSON(path(RunsFile), runs); err != nil {
		return files, err
	}
	charts := []string{ChartFile}
	if len(sweeps(sums)) > 0 {
		charts = append(charts, SweepFile)
	}
	var md bytes.Buffer
	if err := Markdown(&md, meta, sums); err != nil {
		return files, err
	}
	fmt.Fprintf(&md, "\nFiles: `%s` (medians), `%s` (every run), `%s`, `%s` (compare runs with `benchstat`).\n",
		ResultsFile, RunsFile, strings.Join(charts, "`, `"), BenchFile)
	if err := os.WriteFile(path(ReportFile), md.Bytes(), 0o644); err != nil {
		return files, err
	}
	if err := WriteChart(path(ChartFile), sums); err != nil {
		return files, fmt.Errorf("chart: %w", err)
	}
	if len(charts) > 1 {
		if err := WriteSweepChart(path(SweepFile), sums); err != nil {
			return files, fmt.Errorf("sweep chart: %w", err)
		}
	}
	var bt bytes.Buffer
	if err := BenchText(&bt, meta, runs); err != nil {
		return files, err
	}
	return files, os.WriteFile(path(BenchFile), bt.Bytes(), 0o644)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// column of the summary tables.
type column struct {
	head string
	cell func(s results.Summary, base *results.Summary) string
}

func ms(v results.Float) string {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return "–"
	case f >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case f >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

func pct(v results.Float) string {
	if math.IsNaN(float64(v)) {
		return "–"
	}
	return strconv.FormatFloat(float64(v)*100, 'f', 1, 64) + "%"
}

func withRange(s results.Summary, key string, v results.Float, f func(results.Float) string) string {
	r, ok := s.Range[key]
	if !ok || r[0] == r[1] {
		return f(v)
	}
	return fmt.Sprintf("%s (%s–%s)", f(v), f(r[0]), f(r[1]))
}

// MiB formats a byte count in MiB; "–" for NaN, "none" for 0.
func MiB(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "none"
	}
	return strconv.FormatFloat(v/(1<<20), 'f', 0, 64) + " MiB"
}

func intOrDash(v results.Float) string {
	if math.IsNaN(float64(v)) {
		return "–"
	}
	return strconv.FormatFloat(float64(v), 'f', 0, 64)
}

var columns = []column{
	{"variant", func(s results.Summary, _ *results.Summary) string { return s.Variant }},
	{"GOMAXPROCS", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gomaxprocs", s.GOMAXPROCS, intOrDash)
	}},
	{"GOMEMLIMIT", func(s results.Summary, _ *results.Summary) string {
		if s.GOMEMLIMITRuns == 0 {
			return "–"
		}
		if math.IsNaN(float64(s.GOMEMLIMITBytes)) {
			return "off"
		}
		return MiB(float64(s.GOMEMLIMITBytes))
	}},
	{"p50 ms", func(s results.Summary, _ *results.Summary) string { return ms(s.LatencyP50MS) }},
	{"p99 ms", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "latency_p99_ms", s.LatencyP99MS, ms)
	}},
	{"p99 vs runtime", func(s results.Summary, base *results.Summary) string {
		if base == nil || !(base.LatencyP99MS > 0) || math.IsNaN(float64(s.LatencyP99MS)) {
			return "–"
		}
		return strconv.FormatFloat(float64(s.LatencyP99MS/base.LatencyP99MS), 'f', 2, 64) + "x"
	}},
	{"p99.9 ms", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "latency_p999_ms", s.LatencyP999MS, ms)
	}},
	{"max ms", func(s results.Summary, _ *results.Summary) string { return ms(s.LatencyMaxMS) }},
	{"GC pause p99 ms", func(s results.Summary, _ *results.Summary) string { return ms(s.GCPauseP99MS) }},
	{"GC cycles", func(s results.Summary, _ *results.Summary) string { return intOrDash(s.GCCycles) }},
	{"GC CPU", func(s results.Summary, _ *results.Summary) string { return pct(s.GCCPUFraction) }},
	{"throttled periods", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "throttled_periods_ratio", s.ThrottledPeriodsRatio, pct)
	}},
	{"CPU s", func(s results.Summary, _ *results.Summary) string {
		if math.IsNaN(float64(s.CPUSeconds)) {
			return "–"
		}
		return strconv.FormatFloat(float64(s.CPUSeconds), 'f', 1, 64)
	}},
	{"requests done", func(s results.Summary, _ *results.Summary) string { return intOrDash(s.Requests) }},
	{"peak RSS", func(s results.Summary, _ *results.Summary) string { return MiB(float64(s.PeakRSSBytes)) }},
	{"OOM kills", func(s results.Summary, _ *results.Summary) string {
		return fmt.Sprintf("%d/%d", s.OOMKills, s.Runs)
	}},
	{"OOM captures", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "oom_captures", s.OOMCaptures, intOrDash)
	}},
}

// pressureColumns are shown after the others in the table of a setting
// with pressure figures: the kernel has them only for cgroup v2.
var pressureColumns = []column{
	{"CPU pressure", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "cpu_pressure", s.CPUPressure, pct)
	}},
	{"memory pressure", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "memory_pressure", s.MemoryPressure, pct)
	}},
}

// pressureColumnsOf returns pressureColumns when a summary of setting st has
// pressure figures.
func pressureColumnsOf(sums []results.Summary, st results.Setting) []column {
	for _, s := range sums {
		if s.Setting() == st && (!math.IsNaN(float64(s.CPUPressure)) || !math.IsNaN(float64(s.MemoryPressure))) {
			return pressureColumns
		}
	}
	return nil
}

// SettingTitle describes a scenario setting, e.g. "cpu: quota 1 CPU, no memory limit".
func SettingTitle(st results.Setting) string {
	q := "no CPU quota"
	if st.CPUs > 0 {
		q = "CPU quota " + strconv.FormatFloat(st.CPUs, 'f', -1, 64) + " CPU"
		if st.Scenario == "nested" {
			q += " on the parent cgroup only"
		}
	}
	m := "no memory limit"
	if st.MemoryBytes > 0 {
		m = "memory limit " + MiB(float64(st.MemoryBytes))
	}
	switch {
	case st.SidecarBytes > 0 && st.Layout == "pod-level":
		m = "pod-level memory limit " + MiB(float64(st.MemoryBytes)) + " shared with a " + MiB(float64(st.SidecarBytes)) + " sidecar in another container (pod-level)"
	case st.SidecarBytes > 0 && strings.HasPrefix(st.Layout, "inprocess-"):
		m += ", " + MiB(float64(st.SidecarBytes)) + " of it held by the workload outside the Go runtime (" + st.Layout + ")"
	case st.SidecarBytes > 0 && st.Layout == "sibling":
		m += " on the parent, shared with a " + MiB(float64(st.SidecarBytes)) + " sidecar in a sibling cgroup"
	case st.SidecarBytes > 0:
		m += " shared with a " + MiB(float64(st.SidecarBytes)) + " sidecar in the same cgroup (" + st.Layout + ")"
	}
	if st.BurstBytes > 0 {
		m += ", burst: a co-process grows by " + MiB(float64(st.BurstBytes))
		if st.MemoryBytes > 0 {
			m += " (" + strconv.FormatFloat(math.Round(100*float64(st.BurstBytes)/float64(st.MemoryBytes)), 'f', -1, 64) + " %)"
		}
	}
	name := st.Scenario
	if st.WorkloadName != "" {
		name += ", " + st.WorkloadName
	}
	if st.Load > 0 {
		return fmt.Sprintf("%s: %s, load %s, %s", name, q, strconv.FormatFloat(st.Load, 'f', -1, 64), m)
	}
	return fmt.Sprintf("%s: %s, %s", name, q, m)
}

// memoryEventsColumn shows the limited cgroup's memory events, where a
// setting's runs read them.
var memoryEventsColumn = column{"memory events", func(s results.Summary, _ *results.Summary) string { return Events(s.MemoryEvents) }}

// Events formats memory event counters as "key n, ..." in a fixed order
// (the ones that tell how hard the limit was hit first), "–" for none.
func Events(ev map[string]uint64) string {
	if len(ev) == 0 {
		return "–"
	}
	order := []string{"failcnt", "memsw_failcnt", "high", "max", "oom", "oom_kill", "oom_group_kill", "under_oom", "low"}
	var parts []string
	for _, k := range order {
		if v, ok := ev[k]; ok {
			parts = append(parts, k+" "+strconv.FormatUint(v, 10))
		}
	}
	var rest []string
	for k := range ev {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, k+" "+strconv.FormatUint(ev[k], 10))
	}
	return strings.Join(parts, ", ")
}

// columnsOf returns the columns of setting st's table: the leak scenario's
// own, or the common ones with the memory events where runs read them.
func columnsOf(sums []results.Summary, st results.Setting) []column {
	switch st.Scenario {
	case "leak":
		return leakColumns
	case "gc":
		return gcColumns
	}
	cols := columns
	for _, s := range sums {
		if s.Setting() == st && len(s.MemoryEvents) > 0 {
			cols = append(slices.Clone(columns), memoryEventsColumn)
			break
		}
	}
	return append(cols[:len(cols):len(cols)], pressureColumnsOf(sums, st)...)
}

// mainHeads are the heads of the columns of a setting's main table, at most
// eight, in order: the ones that answer its question. The others go to the
// report's appendix (and every figure to results.json).
func mainHeads(st results.Setting) []string {
	switch {
	case st.Scenario == "leak":
		return []string{"variant", "GOMEMLIMIT", "GOMEMLIMIT bound at", "GOMEMLIMIT raised at", "then lasted", "ended by", "GC CPU in window", "brown-out"}
	case st.Scenario == "gc":
		return []string{"variant", "p99 ms", "p99 vs " + gcBase, "GC CPU s", "GC CPU vs " + gcBase, "peak memory", "GOGC at end", "OOM kills"}
	case st.CPUs > 0 && st.MemoryBytes > 0:
		return []string{"variant", "GOMAXPROCS", "GOMEMLIMIT", "p99 ms", "p99 vs runtime", "GC CPU", "throttled periods", "OOM kills"}
	case st.CPUs > 0:
		return []string{"variant", "GOMAXPROCS", "p99 ms", "p99 vs runtime", "p99.9 ms", "GC CPU", "throttled periods", "CPU s"}
	case st.MemoryBytes > 0:
		return []string{"variant", "GOMEMLIMIT", "p99 ms", "p99 vs runtime", "GC CPU", "peak RSS", "requests done", "OOM kills"}
	}
	return []string{"variant", "GOMAXPROCS", "GOMEMLIMIT", "p99 ms", "p99 vs runtime", "p99.9 ms", "GC CPU", "CPU s"}
}

// split returns the columns of setting st's main table and of its appendix
// table (the variant and the columns the main table leaves out).
func split(sums []results.Summary, st results.Setting) (main, rest []column) {
	all := columnsOf(sums, st)
	heads := mainHeads(st)
	for _, h := range heads {
		for _, c := range all {
			if c.head == h {
				main = append(main, c)
			}
		}
	}
	for _, c := range all {
		if c.head == "variant" || !slices.Contains(heads, c.head) {
			rest = append(rest, c)
		}
	}
	return present(sums, st, main), present(sums, st, rest)
}

// present drops the columns (but the first, the variant) that have no
// figure in any row: what did not run has no column.
func present(sums []results.Summary, st results.Setting, cols []column) []column {
	rs := rows(sums, st, cols)
	var out []column
	for i, c := range cols {
		if i == 0 || slices.ContainsFunc(rs, func(r []string) bool { return r[i] != "–" && r[i] != "" }) {
			out = append(out, c)
		}
	}
	return out
}

// rows returns the table rows of one setting in columns cols; base is the
// runtime variant's summary (fitgo's in the gc scenario), if present, for
// the ratio columns.
func rows(sums []results.Summary, st results.Setting, cols []column) (out [][]string) {
	var base *results.Summary
	name := "runtime"
	if st.Scenario == "gc" {
		name = gcBase
	}
	for i := range sums {
		if sums[i].Setting() == st && sums[i].Variant == name {
			base = &sums[i]
		}
	}
	for _, s := range sums {
		if s.Setting() != st {
			continue
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = c.cell(s, base)
		}
		out = append(out, row)
	}
	return out
}

func runsLine(sums []results.Summary, st results.Setting) string {
	n, busy, load := 0, 0, 0.0
	for _, s := range sums {
		if s.Setting() == st {
			n = max(n, s.Runs)
			busy += s.BusyRuns
			load = max(load, s.MaxHostLoad)
		}
	}
	line := fmt.Sprintf("medians of %d runs per variant, (min–max) where they differ", n)
	if busy > 0 {
		line += fmt.Sprintf("; %d runs on a busy host (load average up to %.1f): noisy", busy, load)
	}
	return line
}

// Table writes the summaries as aligned text tables, one per scenario setting.
func Table(w io.Writer, sums []results.Summary) error {
	bw := bufio.NewWriter(w)
	for i, st := range results.SortSettings(sums) {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		bw.WriteString(wrap(SettingTitle(st)+" ("+runsLine(sums, st)+")", "", "  ", 100))
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		columns, _ := split(sums, st)
		heads := make([]string, len(columns))
		for i, c := range columns {
			heads[i] = c.head
		}
		fmt.Fprintln(tw, strings.Join(heads, "\t"))
		for _, r := range rows(sums, st, columns) {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Markdown writes report.md's content: the context from meta and one table per
// scenario setting.
func Markdown(w io.Writer, meta Meta, sums []results.Summary) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# fitgo benchmark (%s runner)\n\n", meta.Runner)
	if meta.Emulated != "" {
		fmt.Fprintf(bw, "%s\n\n", EmulatedHeader(meta.Emulated))
	}
	if v := Verdict(sums, meta.CPUs); len(v) > 0 {
		fmt.Fprintf(bw, "## Verdict\n\n")
		for _, l := range v {
			fmt.Fprintf(bw, "- %s\n", l)
		}
		fmt.Fprintf(bw, "\n## Context\n\n")
	}
	kv := [][2]string{
		{"Command", "`" + meta.Command + "`"},
		{"Started", meta.Started.UTC().Format(time.RFC3339)},
		{"Elapsed", meta.Elapsed.Round(time.Second).String()},
		{"Machine", meta.Machine},
		{"CPU", meta.CPUModel},
		{"Kernel", meta.Kernel},
		{"Cgroups", meta.Cgroup},
		{"Go", meta.GoVersion},
		{"Workload", meta.Workload},
	}
	for _, p := range kv {
		if p[1] != "" && p[1] != "``" {
			fmt.Fprintf(bw, "- **%s**: %s\n", p[0], p[1])
		}
	}
	for _, n := range meta.Notes {
		fmt.Fprintf(bw, "\n%s\n", n)
	}
	if err := sweepMarkdown(bw, meta, sums); err != nil {
		return err
	}
	var shown []string // the heads of the columns written
	table := func(st results.Setting, columns []column) {
		heads := make([]string, len(columns))
		seps := make([]string, len(columns))
		for i, c := range columns {
			heads[i] = c.head
			seps[i] = "---"
			if i > 0 {
				seps[i] = "--:"
			}
		}
		shown = append(shown, heads...)
		fmt.Fprintf(bw, "| %s |\n| %s |\n", strings.Join(heads, " | "), strings.Join(seps, " | "))
		for _, r := range rows(sums, st, columns) {
			fmt.Fprintf(bw, "| %s |\n", strings.Join(r, " | "))
		}
	}
	settings := results.SortSettings(sums)
	for _, st := range settings {
		fmt.Fprintf(bw, "\n## %s\n\n%s.\n\n", SettingTitle(st), strings.ToUpper(runsLine(sums, st)[:1])+runsLine(sums, st)[1:])
		main, _ := split(sums, st)
		table(st, main)
	}
	appendix := false
	for _, st := range settings {
		_, rest := split(sums, st)
		if len(rest) < 2 {
			continue
		}
		if !appendix {
			fmt.Fprintf(bw, "\n## Appendix: the other columns\n")
			appendix = true
		}
		fmt.Fprintf(bw, "\n### %s\n\n", SettingTitle(st))
		table(st, rest)
	}
	fmt.Fprintln(bw)
	for _, n := range columnNotes {
		if slices.ContainsFunc(n.heads, func(h string) bool { return slices.Contains(shown, h) }) {
			fmt.Fprintln(bw, n.text)
		}
	}
	if slices.ContainsFunc(settings, func(st results.Setting) bool { return st.Load > 0 }) {
		fmt.Fprintln(bw, loadNote)
	}
	return bw.Flush()
}

const loadNote = "A load is the request work as a fraction of the CPU quota (0.7: requests take 0.7 × quota CPU-seconds per second); without one, each request does the fixed work of the workload line."

// columnNotes explain columns; report.md prints a note when a table has one
// of its heads.
var columnNotes = []struct {
	heads []string
	text  string
}{
	{[]string{"p50 ms", "p99 ms", "p99.9 ms", "max ms", "p99 ms in window"}, "Latency is measured from each request's scheduled time (open loop, no coordinated omission)."},
	{[]string{"p99 vs runtime"}, `"p99 vs runtime" is the variant's median p99 over the runtime variant's, in the same run.`},
	{[]string{"GC pause p99 ms"}, "GC pause percentiles come from `/sched/pauses/total/gc:seconds` (upper bounds of the histogram buckets)."},
	{[]string{"GC CPU"}, "GC CPU is `/cpu/classes/gc/total` over `/cpu/classes/total` (GOMAXPROCS × wall time)."},
	{[]string{"throttled periods"}, "Throttled periods are nr_throttled / nr_periods of the quota cgroup's cpu.stat over the measured window."},
	{[]string{"CPU s"}, "CPU s is the process's user+system CPU time, setup included."},
	{[]string{"memory events"}, "Memory events are the counters of the cgroup that carries the memory limit, summed over the runs (v1: memory.failcnt and memory.memsw.failcnt, and oom_kill and under_oom of memory.oom_control, where oom_kill counts only kills in that very cgroup; v2: memory.events)."},
	{[]string{"GC CPU s"}, "In the gc scenario, the ratios are to fitgo's default; GC cycles and GC CPU cover the measured window; GC CPU s is `/cpu/classes/gc/total`, \"w/o idle mark\" less `/cpu/classes/gc/mark/idle` (idle marking burns the quota too); the GC share of CPU is over the CPU the process used (`/cpu/classes/total` less `/cpu/classes/idle`); peak memory is the limited cgroup's (v1 memory.max_usage_in_bytes, v2 memory.peak), the co-process's included; GOGC at end is `/gc/gogc:percent` at the end of the window, heap goal max the largest `/gc/heap/goal:bytes` in it (sampled every 10 ms); the policy's ceiling, GOGC and reason are fitgo's `memlimit` Status (`Result.GC`) read by the workload at the end of the window, where the policy is on; \"burst at\" is the window age when the co-process was told to grow, the GOGC and heap goal then, and the runs where it held its growth; the chart plots p99 against GC CPU s and against peak memory."},
	{[]string{"GOMEMLIMIT bound at"}, "In the leak scenario, \"GOMEMLIMIT bound at\" is the process's age when GOMEMLIMIT first set the heap goal (below GOGC's), \"GOMEMLIMIT raised at\" when it first rose above its value at the start (fitgo's leak guard), \"then lasted\" the time from there to the kill or the end of the run; GC CPU, p99 and requests \"in the window\" cover that time up to the last progress line (at most 1 s before the end); \"brown-out\" is the time in it with the GC above half of the CPU."},
	{[]string{"OOM captures"}, "OOM captures are the heap profiles and breakdowns the variant with FITGO=oomprofile wrote in a run (at most one per 10 minutes, once the memory held passes 90 % of the limit)."},
	{[]string{"CPU pressure", "memory pressure"}, "CPU and memory pressure, where the kernel has pressure stall information for the cgroup (cgroup v2), are the share of the window in which some task waited for the CPU or for memory (the some totals of `cpu.pressure` and `memory.pressure`)."},
}

// BenchText writes the runs in the Go benchmark format, one line per run, named
// Benchmark<Runner>/scenario=…/cpus=…/mem=…/variant=…, so that runs can be
// compared with benchstat (e.g. benchstat -col /variant bench.txt).
func BenchText(w io.Writer, meta Meta, runs []results.Run) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "goos: %s\ngoarch: %s\npkg: github.com/fitgo/fitgo/bench\n", runtime.GOOS, runtime.GOARCH)
	if meta.CPUModel != "" {
		fmt.Fprintf(bw, "cpu: %s\n", meta.CPUModel)
	}
	if meta.Emulated != "" {
		fmt.Fprintf(bw, "emulated: %s\n", meta.Emulated)
	}
	runner := meta.Runner
	if runner == "" {
		runner = "bench"
	}
	name := "Benchmark" + strings.ToUpper(runner[:1]) + runner[1:]
	for _, r := range runs {
		mem := "none"
		if r.MemoryBytes > 0 {
			mem = strconv.FormatInt(r.MemoryBytes>>20, 10) + "Mi"
		}
		layout := ""
		if r.Layout != "" {
			layout = fmt.Sprintf("/layout=%s/sidecar=%dMi", r.Layout, r.SidecarBytes>>20)
		}
		if f := strings.Fields(r.WorkloadName); len(f) > 0 {
			layout += "/workload=" + f[0] // heavy, light: a name has no spaces
		}
		if r.BurstBytes > 0 {
			layout += fmt.Sprintf("/burst=%dMi", (r.BurstBytes+1<<19)>>20) // rounded, as MiB
		}
		fmt.Fprintf(bw, "%s/scenario=%s/cpus=%s/mem=%s%s/variant=%s", name, r.Scenario,
			strconv.FormatFloat(r.CPUs, 'f', -1, 64), mem, layout, r.Variant)
		done := 0.0
		if r.Workload != nil {
			done = float64(r.Workload.Requests)
		} else if r.LastProgress != nil {
			done = float64(r.LastProgress.Requests)
		}
		fmt.Fprintf(bw, "\t%d", int64(done))
		unit := func(v float64, u string) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				fmt.Fprintf(bw, "\t%s %s", strconv.FormatFloat(v, 'g', 6, 64), u)
			}
		}
		if wl := r.Workload; wl != nil {
			unit(float64(wl.Latency.P50), "p50-ms")
			unit(float64(wl.Latency.P99), "p99-ms")
			unit(float64(wl.Latency.P999), "p99.9-ms")
			unit(float64(wl.Latency.Max), "max-ms")
			unit(float64(wl.GCPause.P99), "gc-pause-p99-ms")
			unit(float64(wl.GCCPUFraction), "gc-cpu-fraction")
			unit(float64(wl.GOMAXPROCS), "gomaxprocs")
		}
		if t := r.Throttling(); t != nil {
			unit(t.ThrottledRatio(), "throttled-ratio")
		}
		if l := r.Leak; l != nil && l.ReachedMS > 0 {
			unit((l.EndMS-l.ReachedMS)/1000, "limit-window-s")
			if w := l.Window; w != nil {
				unit(float64(w.GCCPUFraction), "window-gc-cpu-fraction")
				unit(float64(w.LatencyP99MS), "window-p99-ms")
			}
		}
		if p := r.Stalls(); p != nil {
			unit(p.CPUShare(), "cpu-pressure")
			unit(p.MemoryShare(), "memory-pressure")
		}
		unit(float64(r.OOMKills), "oom-kills")
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}
