package report

import (
	"fmt"
	"math"
	"strconv"

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
	{"peak memory", func(s results.Summary, _ *results.Summary) string { return MiB(float64(s.MemoryPeakBytes)) }},
	{"OOM kills", func(s results.Summary, _ *results.Summary) string { return fmt.Sprintf("%d/%d", s.OOMKills, s.Runs) }},
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
