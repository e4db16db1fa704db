package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
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

// vsBase is a column of the ratio of a figure to the base's, "–" without
// the base.
func vsBase(of func(results.Summary) results.Float) func(results.Summary, *results.Summary) string {
	return func(s results.Summary, b *results.Summary) string {
		if b == nil {
			return "–"
		}
		return ratioTo(of(s), of(*b))
	}
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
	{"p99 vs " + gcBase, vsBase(p99)},
	{"p99.9 ms", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "latency_p999_ms", s.LatencyP999MS, ms)
	}},
	{"GC cycles", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_cycles", s.GCCycles, intOrDash)
	}},
	{"GC CPU s", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_cpu_seconds", s.GCCPUSeconds, cpuSeconds)
	}},
	{"GC CPU vs " + gcBase, vsBase(gcCPU)},
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
	{"policy GOGC", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "gc_policy_gogc", s.GCPolicyGOGC, gogc)
	}},
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

// gcAxis is an X axis of the gc scenario's chart: a figure of a summary,
// its key in Summary.Range, its scale and label.
type gcAxis struct {
	title, label, key string
	scale             float64
	get               func(results.Summary) results.Float
}

// The gc chart's two panels per setting: p99 against GC CPU, and against
// the limited cgroup's peak memory.
var (
	gcCPUAxis = gcAxis{"p99 against GC CPU", "GC CPU in the window, CPU-seconds", "gc_cpu_seconds", 1,
		gcCPU}
	gcMemoryAxis = gcAxis{"p99 against peak memory", "peak memory of the cgroup, MiB", "memory_peak_bytes", 1.0 / (1 << 20),
		func(s results.Summary) results.Float { return s.MemoryPeakBytes }}
)

// gcColour returns the colour of variant v in the gc chart: its place among
// the variants of every setting (names), so that a variant keeps its colour
// from panel to panel.
func gcColour(names []string, v string) color.Color {
	i := slices.Index(names, v)
	return palette[(i+1)%len(palette)] // palette[0] is the p99 bars' colour
}

// gcPlot draws p99 against the axis' figure, a point per variant in its
// colour (gcColour of names), with min–max whiskers both ways; the variants
// are named in the chart's legend (add: add them), not beside the points,
// where the labels of close points overlapped. The variants killed in
// every run have no point: the panel names them.
func gcPlot(st results.Setting, ax gcAxis, group []results.Summary, names []string, legend *plot.Legend, add bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = ShortTitle(st) + "\n" + ax.title + " (medians, min–max)"
	p.X.Label.Text = ax.label
	p.Y.Label.Text = "p99, ms"
	p.Add(plotter.NewGrid())
	xmax, ymax := 0.0, 0.0
	var killed []string
	for _, s := range group {
		if s.AllKilled() {
			killed = append(killed, s.Variant)
		}
		x, y := float64(ax.get(s))*ax.scale, float64(s.LatencyP99MS)
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		c := gcColour(names, s.Variant)
		xlo, xhi := spread(s, ax.key, ax.get(s))
		xlo, xhi = xlo*ax.scale, xhi*ax.scale
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
		xmax, ymax = max(xmax, xhi), max(ymax, yhi)
	}
	if add {
		for _, v := range names {
			sc, err := plotter.NewScatter(plotter.XYs{{}})
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = gcColour(names, v), vg.Points(5), draw.CircleGlyph{}
			legend.Add(v, sc)
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = xmax*1.08, ymax*1.08
	if len(killed) > 0 {
		p.Y.Max = ymax * 1.2 // room for the line that names them
	}
	if !(p.X.Max > 0) {
		p.X.Max = 1
	}
	if !(p.Y.Max > 0) {
		p.Y.Max = 1
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	if len(killed) > 0 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: p.X.Max * 0.02, Y: p.Y.Max * 0.97}},
			Labels: []string{"OOM-killed in every run: " + strings.Join(killed, ", ")}})
		if err != nil {
			return nil, err
		}
		l.TextStyle[0].Color = killColour
		l.TextStyle[0].YAlign = draw.YTop
		p.Add(l)
	}
	return p, nil
}

// plainTicks are gonum's default ticks with their labels in the fewest
// digits: 250, not 250.00.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// errPoint is one point with min–max ranges on both axes.
type errPoint struct{ x, y, xlo, xhi, ylo, yhi float64 }

func (e errPoint) Len() int                      { return 1 }
func (e errPoint) XY(int) (float64, float64)     { return e.x, e.y }
func (e errPoint) XError(int) (float64, float64) { return e.x - e.xlo, e.xhi - e.x }
func (e errPoint) YError(int) (float64, float64) { return e.y - e.ylo, e.yhi - e.y }
