package report

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fitgo/fitgo/bench/internal/results"
)

var palette = []color.Color{
	color.RGBA{R: 0x4e, G: 0x79, B: 0xa7, A: 0xff},
	color.RGBA{R: 0xf2, G: 0x8e, B: 0x2b, A: 0xff},
	color.RGBA{R: 0xe1, G: 0x57, B: 0x59, A: 0xff},
	color.RGBA{R: 0x76, G: 0xb7, B: 0xb2, A: 0xff},
}

// WriteChart draws one row per scenario setting: request latency percentiles
// (p50, p99, p99.9 medians) per variant on the left, and on the right the
// throttled-period ratio (settings with a CPU quota) or the OOM-killed runs
// (settings without), and writes it as a PNG to path.
func WriteChart(path string, sums []results.Summary) error {
	settings := results.SortSettings(sums)
	if len(settings) == 0 {
		return fmt.Errorf("no results to chart")
	}
	plots := make([][]*plot.Plot, len(settings))
	for i, st := range settings {
		var group []results.Summary
		for _, s := range sums {
			if s.Setting() == st {
				group = append(group, s)
			}
		}
		lat, err := latencyPlot(st, group)
		if err != nil {
			return err
		}
		side, err := sidePlot(st, group)
		if st.Scenario == "gc" {
			side, err = gcPlot(group)
		}
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{lat, side}
	}
	const rowHeight = 3.6 * vg.Inch
	img := vgimg.New(13*vg.Inch, rowHeight*vg.Length(len(settings)))
	dc := draw.New(img)
	tiles := draw.Tiles{
		Rows: len(settings), Cols: 2,
		PadX: vg.Inch / 2, PadY: vg.Inch / 3,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4,
	}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
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

func latencyPlot(st results.Setting, group []results.Summary) (*plot.Plot, error) {
	p := basePlot(SettingTitle(st)+": request latency", "ms (median over runs)", group)
	series := []struct {
		name string
		get  func(results.Summary) results.Float
	}{
		{"p50", func(s results.Summary) results.Float { return s.LatencyP50MS }},
		{"p99", func(s results.Summary) results.Float { return s.LatencyP99MS }},
		{"p99.9", func(s results.Summary) results.Float { return s.LatencyP999MS }},
	}
	w := vg.Points(12)
	for i, se := range series {
		vals := make(plotter.Values, len(group))
		for j, s := range group {
			vals[j] = nan0(se.get(s))
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = palette[i]
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(i-1)
		p.Add(b)
		p.Legend.Add(se.name, b)
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
			l.TextStyle[i].Color = palette[2]
			l.TextStyle[i].Rotation = math.Pi / 2
			l.TextStyle[i].XAlign = draw.XLeft
			l.TextStyle[i].YAlign = draw.YCenter
		}
		l.Offset = vg.Point{Y: vg.Points(4)}
		p.Add(l)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = font.Length(9)
	fitAxes(p, len(group), 1.2) // headroom for the legend
	return p, nil
}

func sidePlot(st results.Setting, group []results.Summary) (*plot.Plot, error) {
	vals := make(plotter.Values, len(group))
	var p *plot.Plot
	if st.CPUs > 0 {
		p = basePlot("CFS throttling", "throttled periods, % (median)", group)
		for j, s := range group {
			vals[j] = 100 * nan0(s.ThrottledPeriodsRatio)
		}
	} else {
		p = basePlot("OOM kills", "runs OOM-killed, %", group)
		for j, s := range group {
			if s.Runs > 0 {
				vals[j] = 100 * float64(s.OOMKills) / float64(s.Runs)
			}
		}
	}
	b, err := plotter.NewBarChart(vals, vg.Points(20))
	if err != nil {
		return nil, err
	}
	b.Color = palette[3]
	b.LineStyle.Width = 0
	p.Add(b)
	fitAxes(p, len(group), 1.05)
	return p, nil
}

// fitAxes pads the nominal X axis by half a slot on each side and leaves
// headroom above the tallest bar (an empty plot gets the range 0 to 1).
func fitAxes(p *plot.Plot, n int, headroom float64) {
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min = 0
	p.Y.Max *= headroom
	if !(p.Y.Max > 0) {
		p.Y.Max = 1
	}
}
