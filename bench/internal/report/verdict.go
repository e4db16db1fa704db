package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// Verdict returns one sentence per scenario setting that answers a service
// owner's question for it, computed from the summaries: does fitgo's p99
// differ from the runtime's beyond the spread of the runs (settings with a
// CPU quota and no memory limit), how often each variant was OOM-killed
// (settings with a memory limit), and whether the GC policy spent less GC
// CPU (the gc scenario). ncpu is the host's CPU count, named with a busy
// host. A setting without the variants its sentence compares gets none.
func Verdict(sums []results.Summary, ncpu int) []string {
	var out []string
	for _, st := range results.SortSettings(sums) {
		var group []results.Summary
		for _, s := range sums {
			if s.Setting() == st {
				group = append(group, s)
			}
		}
		var line string
		switch {
		case st.Scenario == "gc":
			line = gcVerdict(st, group)
		case st.MemoryBytes > 0:
			line = memoryVerdict(st, group)
		default:
			line = cpuVerdict(st, group)
		}
		if line == "" {
			continue
		}
		out = append(out, line+busyVerdict(group, ncpu))
	}
	return out
}

// busyVerdict is the verdict's clause for a setting some of whose runs
// competed with other processes for the CPUs.
func busyVerdict(group []results.Summary, ncpu int) string {
	busy, runs, load := 0, 0, 0.0
	for _, s := range group {
		busy += s.BusyRuns
		runs += s.Runs
		load = max(load, s.MaxHostLoad)
	}
	if busy == 0 {
		return ""
	}
	on := ""
	if ncpu > 0 {
		on = fmt.Sprintf(" on %d CPUs", ncpu)
	}
	return fmt.Sprintf(" Busy host: %d of %d runs competed with other work (load average up to %.1f%s): noisy.", busy, runs, load, on)
}

func pick(group []results.Summary, name string) (results.Summary, bool) {
	for _, s := range group {
		if s.Variant == name {
			return s, true
		}
	}
	return results.Summary{}, false
}

// spread returns the [min, max] of a summary's metric over its runs, the
// median for both when the runs did not differ.
func spread(s results.Summary, key string, median results.Float) (lo, hi float64) {
	if r, ok := s.Range[key]; ok {
		return float64(r[0]), float64(r[1])
	}
	return float64(median), float64(median)
}

// compare says how a's metric compares with b's: "0.79× the runtime's
// (12.3 against 15.6 ms; the ranges do not overlap: lower)" or "… within
// noise (the ranges overlap)". lower names the better direction's word.
func compare(a, b results.Summary, key string, get func(results.Summary) results.Float, format func(results.Float) string, unit, bName string) string {
	va, vb := get(a), get(b)
	if math.IsNaN(float64(va)) || math.IsNaN(float64(vb)) || !(vb > 0) {
		return ""
	}
	alo, ahi := spread(a, key, va)
	blo, bhi := spread(b, key, vb)
	r := float64(va / vb)
	s := fmt.Sprintf("%s× %s (%s against %s%s)", strconv.FormatFloat(r, 'f', 2, 64), bName, format(va), format(vb), unit)
	switch {
	case alo <= bhi && blo <= ahi:
		return s + ": within noise, the ranges of the runs overlap"
	case ahi < blo:
		return s + ": lower, the ranges of the runs do not overlap"
	}
	return s + ": higher, the ranges of the runs do not overlap"
}

func p99(s results.Summary) results.Float { return s.LatencyP99MS }

// gcCPU is a summary's GC CPU seconds.
func gcCPU(s results.Summary) results.Float { return s.GCCPUSeconds }

func cpuVerdict(st results.Setting, group []results.Summary) string {
	f, ok1 := pick(group, "fitgo")
	rt, ok2 := pick(group, "runtime")
	if !ok1 || !ok2 {
		return ""
	}
	where := "Without a CPU quota"
	if st.CPUs > 0 {
		where = "At " + strconv.FormatFloat(st.CPUs, 'f', -1, 64) + " CPU"
		if st.Scenario == "nested" {
			where += " on the parent cgroup"
		}
	}
	if st.Load > 0 {
		where += ", load " + strconv.FormatFloat(st.Load, 'f', -1, 64)
	}
	c := compare(f, rt, "latency_p99_ms", p99, ms, " ms", "the runtime's")
	if c == "" {
		return ""
	}
	line := fmt.Sprintf("%s fitgo's p99 was %s.", where, c)
	if !math.IsNaN(float64(f.GOMAXPROCS)) && !math.IsNaN(float64(rt.GOMAXPROCS)) {
		line += fmt.Sprintf(" GOMAXPROCS %s against %s", intOrDash(f.GOMAXPROCS), intOrDash(rt.GOMAXPROCS))
		if !math.IsNaN(float64(f.ThrottledPeriodsRatio)) && !math.IsNaN(float64(rt.ThrottledPeriodsRatio)) {
			line += fmt.Sprintf("; throttled in %s of CFS periods against %s", pct(f.ThrottledPeriodsRatio), pct(rt.ThrottledPeriodsRatio))
		}
		line += "."
	}
	return line
}

// memoryPlace names a memory setting for the verdict: "In 512 MiB beside a
// 200 MiB co-process".
func memoryPlace(st results.Setting) string {
	m := MiB(float64(st.MemoryBytes))
	side := MiB(float64(st.SidecarBytes))
	switch {
	case st.Scenario == "leak":
		return "With a live heap leaking into " + m
	case st.SidecarBytes == 0:
		return "In " + m
	case st.Layout == "coprocess":
		return "In " + m + " beside a " + side + " co-process"
	case st.Layout == "sibling":
		return "In " + m + " shared with a " + side + " sidecar in a sibling cgroup"
	case strings.HasPrefix(st.Layout, "inprocess-"):
		return "In " + m + " with " + side + " of it held outside the Go runtime (" + strings.TrimPrefix(st.Layout, "inprocess-") + ")"
	}
	return "In " + m + " shared with a " + side + " sidecar (" + st.Layout + ")"
}

func memoryVerdict(st results.Setting, group []results.Summary) string {
	f, ok := pick(group, "fitgo")
	if !ok {
		return ""
	}
	var others []string
	for _, s := range group {
		if s.Variant != f.Variant {
			others = append(others, fmt.Sprintf("%s %d/%d", s.Variant, s.OOMKills, s.Runs))
		}
	}
	line := fmt.Sprintf("%s fitgo was OOM-killed %d/%d times", memoryPlace(st), f.OOMKills, f.Runs)
	if len(others) > 0 {
		line += "; " + strings.Join(others, ", ")
	}
	line += "."
	if f.CompletedRuns > 0 {
		var cost []string
		if !math.IsNaN(float64(f.GOMEMLIMITBytes)) {
			cost = append(cost, "GOMEMLIMIT "+MiB(float64(f.GOMEMLIMITBytes)))
		}
		if !math.IsNaN(float64(f.GCCPUFraction)) {
			cost = append(cost, "GC CPU "+pct(f.GCCPUFraction))
		}
		if !math.IsNaN(float64(f.LatencyP99MS)) {
			cost = append(cost, "p99 "+ms(f.LatencyP99MS)+" ms")
		}
		if len(cost) > 0 {
			line += " fitgo's cost: " + strings.Join(cost, ", ") + "."
		}
	}
	return line
}

func gcVerdict(st results.Setting, group []results.Summary) string {
	f, ok1 := pick(group, "fitgo")
	g, ok2 := pick(group, "fitgo-gc")
	if !ok1 || !ok2 {
		return ""
	}
	gc := compare(g, f, "gc_cpu_seconds", gcCPU, cpuSeconds, " CPU-s", "fitgo's default")
	lat := compare(g, f, "latency_p99_ms", p99, ms, " ms", "fitgo's default")
	if gc == "" && lat == "" {
		return ""
	}
	var parts []string
	if gc != "" {
		parts = append(parts, "spent "+gc+" in GC CPU")
	}
	if lat != "" {
		parts = append(parts, "its p99 was "+lat)
	}
	where := fmt.Sprintf("At %s CPU in %s", strconv.FormatFloat(st.CPUs, 'f', -1, 64), MiB(float64(st.MemoryBytes)))
	if st.WorkloadName != "" {
		where += ", " + st.WorkloadName
	}
	kills := fmt.Sprintf("OOM-killed %d/%d times", g.OOMKills, g.Runs)
	if st.BurstBytes > 0 {
		where += ", with a co-process growing by " + MiB(float64(st.BurstBytes))
		kills += fmt.Sprintf(", its co-process %d/%d times (fitgo's default: %d/%d and %d/%d)", g.SidecarOOMKills, g.Runs, f.OOMKills, f.Runs, f.SidecarOOMKills, f.Runs)
	}
	return fmt.Sprintf("%s the GC policy (fitgo-gc) %s; %s.", where, strings.Join(parts, "; "), kills)
}

// WriteVerdict writes the verdict as text, one wrapped paragraph per
// setting under a heading: what a reader of stdout sees first.
func WriteVerdict(w io.Writer, sums []results.Summary, ncpu int) error {
	lines := Verdict(sums, ncpu)
	if len(lines) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("Verdict:\n")
	for _, l := range lines {
		b.WriteString(wrap(l, "  - ", "    ", 100))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks s into lines of at most width characters (a longer word
// stays whole), the first prefixed by first, the others by rest.
func wrap(s, first, rest string, width int) string {
	var b strings.Builder
	line := first
	for i, word := range strings.Fields(s) {
		if i > 0 && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = rest + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}
