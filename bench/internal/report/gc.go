package report

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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

// gcPlot draws p99 against GC CPU seconds, a labelled point per variant.
func gcPlot(group []results.Summary) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "p99 against GC CPU (medians)"
	p.X.Label.Text = "GC CPU in the window, CPU-seconds"
	p.Y.Label.Text = "p99, ms"
	p.Add(plotter.NewGrid())
	var pts plotter.XYLabels
	for _, s := range group {
		if math.IsNaN(float64(s.GCCPUSeconds)) || math.IsNaN(float64(s.LatencyP99MS)) {
			continue
		}
		pts.XYs = append(pts.XYs, plotter.XY{X: float64(s.GCCPUSeconds), Y: float64(s.LatencyP99MS)})
		pts.Labels = append(pts.Labels, s.Variant)
	}
	if len(pts.XYs) == 0 {
		return p, nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = palette[0]
	sc.GlyphStyle.Radius = vg.Points(4)
	l, err := plotter.NewLabels(pts)
	if err != nil {
		return nil, err
	}
	l.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(sc, l)
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max *= 1.3 // room for the labels
	p.Y.Max *= 1.1
	return p, nil
}
