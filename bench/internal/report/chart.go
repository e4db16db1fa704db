package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// palette is Tableau 10: ten colours a reader tells apart, in order.
var palette = []color.Color{
	color.RGBA{R: 0x4e, G: 0x79, B: 0xa7, A: 0xff}, // blue
	color.RGBA{R: 0xf2, G: 0x8e, B: 0x2b, A: 0xff}, // orange
	color.RGBA{R: 0xe1, G: 0x57, B: 0x59, A: 0xff}, // red
	color.RGBA{R: 0x76, G: 0xb7, B: 0xb2, A: 0xff}, // teal
	color.RGBA{R: 0x59, G: 0xa1, B: 0x4f, A: 0xff}, // green
	color.RGBA{R: 0xed, G: 0xc9, B: 0x48, A: 0xff}, // yellow
	color.RGBA{R: 0xb0, G: 0x7a, B: 0xa1, A: 0xff}, // purple
	color.RGBA{R: 0xff, G: 0x9d, B: 0xa7, A: 0xff}, // pink
	color.RGBA{R: 0x9c, G: 0x75, B: 0x5f, A: 0xff}, // brown
	color.RGBA{R: 0x79, G: 0x70, B: 0x6e, A: 0xff}, // grey
}

// The colours of chart.png's series.
var (
	p99Colour      = palette[0]
	p999Colour     = color.RGBA{R: 0xa0, G: 0xcb, B: 0xe8, A: 0xff} // light blue, p99's pair
	throttleColour = palette[1]
	killColour     = palette[2]
)

// legendWidth is the column on the right of a chart that holds its legend,
// outside every panel's data.
const legendWidth = 2.4 * vg.Inch

// WriteChart draws one row per scenario setting: the p99 and p99.9 request
// latency per variant (medians, with min–max whiskers over the runs) on the
// left, and on the right the throttled-period ratio (settings with a CPU
// quota) or the OOM-killed runs (settings without); for the gc scenario p99
// against GC CPU on the left and against peak memory on the right; with the
// legend in a column of its own on the right, and writes it as a PNG to
// path.
func WriteChart(path string, sums []results.Summary) error {
	settings := results.SortSettings(sums)
	if len(settings) == 0 {
		return fmt.Errorf("no results to chart")
	}
	legend := newLegend()
	plots := make([][]*plot.Plot, len(settings))
	var gcNames []string // the gc scenario's variants, for their colours
	for _, s := range sums {
		if s.Scenario == "gc" && !slices.Contains(gcNames, s.Variant) {
			gcNames = append(gcNames, s.Variant)
		}
	}
	bars, gcs := false, false // the legend's entries added
	for i, st := range settings {
		var group []results.Summary
		for _, s := range sums {
			if s.Setting() == st {
				group = append(group, s)
			}
		}
		if st.Scenario == "gc" {
			// p99 against GC CPU and against peak memory: the two costs.
			cpu, err := gcPlot(st, gcCPUAxis, group, gcNames, &legend, !gcs)
			if err != nil {
				return err
			}
			mem, err := gcPlot(st, gcMemoryAxis, group, gcNames, &legend, false)
			if err != nil {
				return err
			}
			plots[i], gcs = []*plot.Plot{cpu, mem}, true
			continue
		}
		lat, err := latencyPlot(st, group, &legend, !bars)
		if err != nil {
			return err
		}
		side, err := sidePlot(st, group)
		if err != nil {
			return err
		}
		plots[i], bars = []*plot.Plot{lat, side}, true
	}
	if gcs && !bars {
		legend.Add("whiskers: min–max of the runs", whiskerThumb{})
	}
	const rowHeight = 3.6 * vg.Inch
	img := vgimg.New(13*vg.Inch+legendWidth, rowHeight*vg.Length(len(settings)))
	tiles := draw.Tiles{
		Rows: len(settings), Cols: 2,
		PadX: vg.Inch / 2, PadY: vg.Inch / 3,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4,
	}
	return drawWithLegend(path, img, plots, tiles, legend)
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = font.Length(10)
	l.Padding = vg.Points(5)
	return l
}

// drawWithLegend draws plots in tiles on img, less a column on the right
// where it draws the legend, and writes img as a PNG to path.
func drawWithLegend(path string, img *vgimg.Canvas, plots [][]*plot.Plot, tiles draw.Tiles, legend plot.Legend) error {
	dc := draw.New(img)
	canvases := plot.Align(plots, tiles, draw.Crop(dc, 0, -legendWidth, 0, 0))
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	side := draw.Crop(dc, dc.Max.X-dc.Min.X-legendWidth+vg.Inch/8, 0, vg.Inch/8, -vg.Inch/4)
	legend.Draw(side)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func variantNames(group []results.Summary) []string {
	names := make([]string, len(group))
	for i, s := range group {
		names[i] = s.Variant
	}
	return names
}

func nan0(v results.Float) float64 {
	if math.IsNaN(float64(v)) {
		return 0
	}
	return float64(v)
}

func basePlot(title, ylabel string, group []results.Summary) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.NominalX(variantNames(group)...)
	p.X.Tick.Label.Rotation = math.Pi / 8
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	return p
}

// whiskers are min–max error bars.
type whiskers struct{ x, y, lo, hi []float64 }

func (w whiskers) Len() int                        { return len(w.y) }
func (w whiskers) XY(i int) (float64, float64)     { return w.x[i], w.y[i] }
func (w whiskers) YError(i int) (float64, float64) { return w.y[i] - w.lo[i], w.hi[i] - w.y[i] }

// bars adds to p a bar per summary at X positions x0, x0+1, ... of the
// median get(s), with a min–max whisker from the runs' range of key (scaled
// by scale), and returns the bars and the highest whisker.
func bars(p *plot.Plot, group []results.Summary, x0 float64, width vg.Length, c color.Color, key string, scale float64, get func(results.Summary) results.Float) (*plotter.BarChart, float64, error) {
	var w whiskers
	top := 0.0
	vals := make(plotter.Values, len(group))
	for j, s := range group {
		v := nan0(get(s)) * scale
		vals[j] = v
		top = max(top, v)
		if r, ok := s.Range[key]; ok && !math.IsNaN(float64(get(s))) && r[0] < r[1] {
			lo, hi := float64(r[0])*scale, float64(r[1])*scale
			w.x, w.y, w.lo, w.hi = append(w.x, x0+float64(j)), append(w.y, v), append(w.lo, lo), append(w.hi, hi)
			top = max(top, hi)
		}
	}
	b, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return nil, 0, err
	}
	b.Color = c
	b.LineStyle.Width = 0
	b.XMin = x0
	p.Add(b)
	if w.Len() == 0 {
		return b, top, nil
	}
	eb, err := plotter.NewYErrorBars(w)
	if err != nil {
		return nil, 0, err
	}
	eb.LineStyle.Width = vg.Points(1.2)
	eb.CapWidth = vg.Points(6)
	p.Add(eb)
	return b, top, nil
}

func latencyPlot(st results.Setting, group []results.Summary, legend *plot.Legend, first bool) (*plot.Plot, error) {
	p := basePlot(ShortTitle(st)+": request latency", "ms", group)
	// p50 is left out: on an axis that holds the p99.9 of a throttled
	// run it is a line no one can see (report.md's appendix has it).
	series := []struct {
		name, key string
		c         color.Color
		x0        float64
		get       func(results.Summary) results.Float
	}{
		{"p99 (median of the runs)", "latency_p99_ms", p99Colour, -0.17, func(s results.Summary) results.Float { return s.LatencyP99MS }},
		{"p99.9 (median of the runs)", "latency_p999_ms", p999Colour, 0.17, func(s results.Summary) results.Float { return s.LatencyP999MS }},
	}
	top := 0.0
	for _, se := range series {
		b, t, err := bars(p, group, se.x0, vg.Points(16), se.c, se.key, 1, se.get)
		if err != nil {
			return nil, err
		}
		top = max(top, t)
		if first {
			legend.Add(se.name, b)
		}
	}
	if first {
		legend.Add("whiskers: min–max of the runs", whiskerThumb{})
	}
	// A variant killed in every run has no latency: say so where its bars
	// would be, rather than show it as fast.
	var killed plotter.XYLabels
	for j, s := range group {
		if s.AllKilled() {
			killed.XYs = append(killed.XYs, plotter.XY{X: float64(j)})
			killed.Labels = append(killed.Labels, "OOM-killed")
		}
	}
	if len(killed.XYs) > 0 {
		l, err := plotter.NewLabels(killed)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Color = killColour
			l.TextStyle[i].Rotation = math.Pi / 2
			l.TextStyle[i].XAlign = draw.XLeft
			l.TextStyle[i].YAlign = draw.YCenter
		}
		l.Offset = vg.Point{Y: vg.Points(4)}
		p.Add(l)
	}
	fitAxes(p, len(group), top*1.08)
	return p, nil
}

// sidePlot draws the throttled share of CFS periods (with min–max
// whiskers) under a CPU quota, or the share of runs OOM-killed without one;
// when every value is 0 it says so in the panel rather than leave it empty.
func sidePlot(st results.Setting, group []results.Summary) (*plot.Plot, error) {
	var (
		p    *plot.Plot
		top  float64
		none string
	)
	if st.CPUs > 0 {
		p = basePlot("CFS throttling at "+strconv.FormatFloat(st.CPUs, 'f', -1, 64)+" CPU", "throttled periods, %", group)
		_, t, err := bars(p, group, 0, vg.Points(20), throttleColour, "throttled_periods_ratio", 100,
			func(s results.Summary) results.Float { return s.ThrottledPeriodsRatio })
		if err != nil {
			return nil, err
		}
		top, none = t, "no run was throttled"
	} else {
		title := "OOM kills"
		if st.MemoryBytes > 0 {
			title += " in " + MiB(float64(st.MemoryBytes))
		}
		p = basePlot(title, "runs OOM-killed, %", group)
		_, t, err := bars(p, group, 0, vg.Points(20), killColour, "", 1, func(s results.Summary) results.Float {
			if s.Runs == 0 {
				return 0
			}
			return results.Float(100 * float64(s.OOMKills) / float64(s.Runs))
		})
		if err != nil {
			return nil, err
		}
		top, none = t, "no run was OOM-killed"
		// The count over each bar: 0/3 is a result, not a missing bar.
		var counts plotter.XYLabels
		for j, s := range group {
			y := 0.0
			if s.Runs > 0 {
				y = 100 * float64(s.OOMKills) / float64(s.Runs)
			}
			counts.XYs = append(counts.XYs, plotter.XY{X: float64(j), Y: y})
			counts.Labels = append(counts.Labels, fmt.Sprintf("%d/%d", s.OOMKills, s.Runs))
		}
		l, err := plotter.NewLabels(counts)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = draw.XCenter
		}
		l.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(l)
		top = max(top, 100)
		if t == 0 {
			top = 0
		}
	}
	if top == 0 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{{X: float64(len(group)-1) / 2, Y: 0.5}}, Labels: []string{none}})
		if err != nil {
			return nil, err
		}
		l.TextStyle[0].XAlign = draw.XCenter
		l.TextStyle[0].Font.Size = font.Length(14)
		p.Add(l)
		top = 1
	}
	fitAxes(p, len(group), top*1.08)
	return p, nil
}

// fitAxes pads the nominal X axis by half a slot on each side and sets the
// Y axis from 0 to top (0 to 1 for an empty plot).
func fitAxes(p *plot.Plot, n int, top float64) {
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = 0, top
	if !(p.Y.Max > 0) {
		p.Y.Max = 1
	}
}

// whiskerThumb is the legend's picture of a min–max whisker.
type whiskerThumb struct{}

func (whiskerThumb) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	sty := draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
	c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
	c.StrokeLine2(sty, x-vg.Points(3), c.Min.Y, x+vg.Points(3), c.Min.Y)
	c.StrokeLine2(sty, x-vg.Points(3), c.Max.Y, x+vg.Points(3), c.Max.Y)
}

// ShortTitle names a setting in a few words, for a chart panel or a
// progress line: "cpu: 0.5 CPU", "shared, coprocess: 512 MiB, 200 MiB
// sidecar".
func ShortTitle(st results.Setting) string {
	var parts []string
	if st.CPUs > 0 {
		parts = append(parts, strconv.FormatFloat(st.CPUs, 'f', -1, 64)+" CPU")
	}
	if st.Load > 0 {
		parts = append(parts, "load "+strconv.FormatFloat(st.Load, 'f', -1, 64))
	}
	if st.MemoryBytes > 0 {
		parts = append(parts, MiB(float64(st.MemoryBytes)))
	}
	if st.SidecarBytes > 0 {
		parts = append(parts, MiB(float64(st.SidecarBytes))+" sidecar")
	}
	if st.BurstBytes > 0 {
		parts = append(parts, MiB(float64(st.BurstBytes))+" burst")
	}
	if len(parts) == 0 {
		parts = append(parts, "no limits")
	}
	name := st.Scenario
	if st.Layout != "" {
		name += ", " + st.Layout
	}
	if st.WorkloadName != "" {
		name += ", " + st.WorkloadName
	}
	return name + ": " + strings.Join(parts, ", ")
}
