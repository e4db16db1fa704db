package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// gcBase is the variant the gc scenario's ratios compare with.
const gcBase = "fitgo"

// ratioTo is v over the base's b, as "0.42x"; "–" without either.
func ratioTo(v, b results.Float) string {
	if !(b > 0) || math.IsNaN(float64(v)) {
		return "–"
	}
	return strconv.FormatFloat(float64(v/b), 'f', 2, 64) + "x"
}

func cpuSeconds(v results.Float) string {
	if math.IsNaN(float64(v)) {
		return "–"
	}
	return strconv.FormatFloat(float64(v), 'f', 2, 64)
}

// gcColumns are the gc scenario's table: what each GC policy costs in
// latency, GC CPU and memory; the ratios are to fitgo's default.
var gcColumns = []column{
	{"variant", func(s results.Summary, _ *results.Summary) string { return s.Variant }},
	{"GOMEMLIMIT", columns[2].cell},
	{"p50 ms", func(s results.Summary, _ *results.Summary) string { return ms(s.LatencyP50MS) }},
	{"p99 ms", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "latency_p99_ms", s.LatencyP99MS, ms)
	}},
	{"p99 vs " + gcBase, func(s results.Summary, b *results.Summary) string {
		if b == nil {
			return "–"
		}
		return ratioTo(s.LatencyP99MS, b.LatencyP99MS)
	}},
	{"p99.9 ms", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "latency_p999_ms", s.LatencyP999MS, ms)
	}},
	{"GC cycles", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_cycles", s.GCCycles, intOrDash)
	}},
	{"GC CPU s", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_cpu_seconds", s.GCCPUSeconds, cpuSeconds)
	}},
	{"GC CPU vs " + gcBase, func(s results.Summary, b *results.Summary) string {
		if b == nil {
			return "–"
		}
		return ratioTo(s.GCCPUSeconds, b.GCCPUSeconds)
	}},
	{"GC CPU s w/o idle mark", func(s results.Summary, _ *results.Summary) string { return cpuSeconds(s.GCCPUNoIdleSeconds) }},
	{"GC share of CPU", func(s results.Summary, _ *results.Summary) string { return pct(s.GCShare) }},
	{"w/o idle mark", func(s results.Summary, _ *results.Summary) string { return pct(s.GCShareNoIdle) }},
	{"throttled periods", func(s results.Summary, _ *results.Summary) string {
		return intOrDash(s.ThrottledPeriods) + " (" + pct(s.ThrottledPeriodsRatio) + ")"
	}},
	{"peak memory", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "memory_peak_bytes", s.MemoryPeakBytes, mibOf)
	}},
	{"GOGC at end", func(s results.Summary, _ *results.Summary) string { return withRange(s, "gogc", s.GOGC, gogc) }},
	{"OOM kills", func(s results.Summary, _ *results.Summary) string {
		out := fmt.Sprintf("%d/%d", s.OOMKills, s.Runs)
		if s.BurstBytes > 0 || s.SidecarOOMKills > 0 {
			out += fmt.Sprintf(" (co-process %d/%d)", s.SidecarOOMKills, s.Runs)
		}
		return out
	}},
	{"heap goal max", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "heap_goal_max_bytes", s.HeapGoalMaxBytes, mibOf)
	}},
	{"policy ceiling", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_ceiling_bytes", s.GCCeilingBytes, mibOf)
	}},
	{"policy GOGC", func(s results.Summary, _ *results.Summary) string { return withRange(s, "gc_policy_gogc", s.GCPolicyGOGC, gogc) }},
	{"policy reason", func(s results.Summary, _ *results.Summary) string {
		if len(s.GCReasons) == 0 {
			return "–"
		}
		return strings.Join(s.GCReasons, "; ")
	}},
	{"burst at", func(s results.Summary, _ *results.Summary) string {
		if math.IsNaN(float64(s.BurstAtSeconds)) {
			return "–"
		}
		return fmt.Sprintf("%.1f s, GOGC %s, heap goal %s; held in %d/%d", float64(s.BurstAtSeconds), gogc(s.BurstGOGC),
			MiB(float64(s.BurstHeapGoalBytes)), s.BurstsGrown, s.Runs)
	}},
}

// mibOf is MiB of a median or a bound.
func mibOf(v results.Float) string { return MiB(float64(v)) }

// gogc formats a GOGC: "off" for -1, "–" for none.
func gogc(v results.Float) string {
	switch {
	case math.IsNaN(float64(v)):
		return "–"
	case v < 0:
		return "off"
	}
	return strconv.FormatFloat(float64(v), 'f', 0, 64)
}

// gcPlot draws p99 against GC CPU seconds, a point per variant in a colour
// of its own, with min–max whiskers both ways; the variants are named in the
// chart's legend (first: add them), not beside the points, where the labels
// of close points overlapped.
func gcPlot(group []results.Summary, legend *plot.Legend, first bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "p99 against GC CPU (medians, min–max)"
	p.X.Label.Text = "GC CPU in the window, CPU-seconds"
	p.Y.Label.Text = "p99, ms"
	p.Add(plotter.NewGrid())
	xmax, ymax := 0.0, 0.0
	for i, s := range group {
		x, y := float64(s.GCCPUSeconds), float64(s.LatencyP99MS)
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		c := palette[(i+1)%len(palette)] // palette[0] is the p99 bars' colour
		xlo, xhi := spread(s, "gc_cpu_seconds", s.GCCPUSeconds)
		ylo, yhi := spread(s, "latency_p99_ms", s.LatencyP99MS)
		pt := plotter.XYs{{X: x, Y: y}}
		sc, err := plotter.NewScatter(pt)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = c
		sc.GlyphStyle.Radius = vg.Points(5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		xe, err := plotter.NewXErrorBars(errPoint{x, y, xlo, xhi, ylo, yhi})
		if err != nil {
			return nil, err
		}
		ye, err := plotter.NewYErrorBars(errPoint{x, y, xlo, xhi, ylo, yhi})
		if err != nil {
			return nil, err
		}
		xe.Color, ye.Color = c, c
		p.Add(xe, ye, sc)
		if first {
			legend.Add(s.Variant, sc)
		}
		xmax, ymax = max(xmax, xhi), max(ymax, yhi)
	}
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = max(xmax*1.08, 1), max(ymax*1.08, 1)
	return p, nil
}

// errPoint is one point with min–max ranges on both axes.
type errPoint struct{ x, y, xlo, xhi, ylo, yhi float64 }

func (e errPoint) Len() int                      { return 1 }
func (e errPoint) XY(int) (float64, float64)     { return e.x, e.y }
func (e errPoint) XError(int) (float64, float64) { return e.x - e.xlo, e.xhi - e.x }
func (e errPoint) YError(int) (float64, float64) { return e.y - e.ylo, e.yhi - e.y }
