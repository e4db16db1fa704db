package report

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
	"github.com/fitgo/fitgo/maxprocs"
)

// sweep is the settings of one scenario and load at several CPU quotas: a
// line of the sweep chart per variant, a panel per load.
type sweep struct {
	scenario string
	load     float64
	settings []results.Setting // by CPU quota
}

func (s sweep) title() string {
	if s.load > 0 {
		return s.scenario + ", load " + strconv.FormatFloat(s.load, 'f', -1, 64) + " of the quota"
	}
	return s.scenario + ", fixed work per request"
}

// sweeps groups the settings with a CPU quota and no memory limit by scenario
// and load, keeping the groups with at least two quotas.
func sweeps(sums []results.Summary) []sweep {
	var out []sweep
	for _, st := range results.SortSettings(sums) {
		if st.CPUs <= 0 || st.MemoryBytes > 0 {
			continue
		}
		i := slices.IndexFunc(out, func(s sweep) bool { return s.scenario == st.Scenario && s.load == st.Load })
		if i < 0 {
			out = append(out, sweep{scenario: st.Scenario, load: st.Load})
			i = len(out) - 1
		}
		out[i].settings = append(out[i].settings, st)
	}
	return slices.DeleteFunc(out, func(s sweep) bool { return len(s.settings) < 2 })
}

// find returns the summary of variant v in setting st.
func find(sums []results.Summary, st results.Setting, v string) (results.Summary, bool) {
	for _, s := range sums {
		if s.Setting() == st && s.Variant == v {
			return s, true
		}
	}
	return results.Summary{}, false
}

// variantsOf returns the variants of sums in order of first appearance.
func variantsOf(sums []results.Summary) []string {
	var out []string
	for _, s := range sums {
		if !slices.Contains(out, s.Variant) {
			out = append(out, s.Variant)
		}
	}
	return out
}

func regret(s results.Summary) string {
	if math.IsNaN(float64(s.Regret)) || s.RegretBase == "" {
		return "–"
	}
	return strconv.FormatFloat(float64(s.Regret), 'f', 2, 64) + "x"
}

// Rule is a GOMAXPROCS rounding rule that the sweep evaluates through its
// static variants.
type Rule struct {
	Name   string
	Policy maxprocs.Policy
}

// Rules are the candidate rules: fitgo's three and the Go runtime's.
var Rules = []Rule{
	{"floor", maxprocs.Policy{Rounding: maxprocs.Floor}},
	{"ceil", maxprocs.Policy{Rounding: maxprocs.Ceil}},
	{"nearest", maxprocs.Policy{Rounding: maxprocs.Nearest}},
	{"runtime (ceil, min 2)", maxprocs.Policy{Rounding: maxprocs.Ceil, Min: 2}},
}

// RuleRegret is a rule's value and regret in one setting: the p99 of the
// static variant GOMAXPROCS=Procs over the best static p99.
type RuleRegret struct {
	Procs  int
	Regret float64 // NaN when the static variant or the best is missing
}

// EvalRule returns the rule's regret in each setting of sw, given the CPUs
// the workload could use.
func EvalRule(r Rule, sums []results.Summary, settings []results.Setting, ncpu int) []RuleRegret {
	out := make([]RuleRegret, len(settings))
	for i, st := range settings {
		n := r.Policy.Procs(st.CPUs, ncpu)
		out[i] = RuleRegret{Procs: n, Regret: math.NaN()}
		if s, ok := find(sums, st, variant.StaticPrefix+strconv.Itoa(n)); ok && variant.IsStatic(s.RegretBase) {
			out[i].Regret = float64(s.Regret)
		}
	}
	return out
}

// worst returns the highest regret, NaN if any is missing.
func worst(rs []RuleRegret) float64 {
	w := 0.0
	for _, r := range rs {
		if math.IsNaN(r.Regret) {
			return math.NaN()
		}
		w = max(w, r.Regret)
	}
	return w
}

// sweepMarkdown writes, for each sweep, the p99 and regret of every variant
// at every quota, and the candidate rounding rules' regrets read off the
// static variants.
func sweepMarkdown(bw *bufio.Writer, meta Meta, sums []results.Summary) error {
	statics := slices.ContainsFunc(sums, func(s results.Summary) bool { return variant.IsStatic(s.Variant) })
	for _, sw := range sweeps(sums) {
		head := []string{"variant"}
		for _, st := range sw.settings {
			head = append(head, strconv.FormatFloat(st.CPUs, 'f', -1, 64)+" CPU")
		}
		if !statics {
			// No static GOMAXPROCS ran: no regret to rank by, only the p99s.
			fmt.Fprintf(bw, "\n## p99 by CPU quota: %s\n\nMedian p99 request latency in ms, (min–max) where the runs differ.\n\n", sw.title())
			tableHead(bw, head)
			for _, v := range variantsOf(sums) {
				if !slices.ContainsFunc(sw.settings, func(st results.Setting) bool { _, ok := find(sums, st, v); return ok }) {
					continue
				}
				row := []string{v}
				for _, st := range sw.settings {
					s, ok := find(sums, st, v)
					switch {
					case !ok:
						row = append(row, "–")
					case s.AllKilled():
						row = append(row, "OOM-killed")
					default:
						row = append(row, withRange(s, "latency_p99_ms", s.LatencyP99MS, ms))
					}
				}
				fmt.Fprintf(bw, "| %s |\n", strings.Join(row, " | "))
			}
			continue
		}
		fmt.Fprintf(bw, "\n## Sweep: %s\n\nMedian p99 request latency in ms and, in brackets, the regret: the p99 over the best static GOMAXPROCS's p99 at that quota.\n\n", sw.title())
		head = append(head, "worst regret")
		tableHead(bw, head)
		for _, v := range variantsOf(sums) {
			row := []string{v}
			w, any := 0.0, false
			for _, st := range sw.settings {
				s, ok := find(sums, st, v)
				switch {
				case !ok:
					row = append(row, "–")
					continue
				case s.AllKilled():
					row = append(row, "OOM-killed")
					continue
				}
				row = append(row, fmt.Sprintf("%s (%s)", ms(s.LatencyP99MS), regret(s)))
				if r := float64(s.Regret); !math.IsNaN(r) {
					w, any = max(w, r), true
				}
			}
			if any {
				row = append(row, strconv.FormatFloat(w, 'f', 2, 64)+"x")
			} else {
				row = append(row, "–")
			}
			fmt.Fprintf(bw, "| %s |\n", strings.Join(row, " | "))
		}
		if !canEvalRules(meta, sums) {
			continue
		}
		fmt.Fprintf(bw, "\nThe rounding rules, read off the static variants: the GOMAXPROCS each rule gives on %d CPUs, and the regret of that static variant.\n\n", meta.CPUs)
		tableHead(bw, head)
		for _, r := range Rules {
			rs := EvalRule(r, sums, sw.settings, meta.CPUs)
			row := []string{r.Name}
			for _, x := range rs {
				row = append(row, fmt.Sprintf("%d (%s)", x.Procs, ratio(x.Regret)))
			}
			row = append(row, ratio(worst(rs)))
			fmt.Fprintf(bw, "| %s |\n", strings.Join(row, " | "))
		}
	}
	return rulesOverall(bw, meta, sums)
}

// rulesOverall writes each rule's worst regret per sweep and over all of
// them: the number that chooses the default.
func rulesOverall(bw *bufio.Writer, meta Meta, sums []results.Summary) error {
	sws := sweeps(sums)
	if len(sws) < 2 || !canEvalRules(meta, sums) {
		return nil
	}
	fmt.Fprintf(bw, "\n## Rounding rules over the whole sweep\n\nEach rule's worst regret (its GOMAXPROCS's p99 over the best static p99) in each sweep and over all cells.\n\n")
	head := []string{"rule"}
	for _, sw := range sws {
		head = append(head, sw.title())
	}
	head = append(head, "worst")
	tableHead(bw, head)
	for _, r := range Rules {
		row := []string{r.Name}
		var all []RuleRegret
		for _, sw := range sws {
			rs := EvalRule(r, sums, sw.settings, meta.CPUs)
			all = append(all, rs...)
			row = append(row, ratio(worst(rs)))
		}
		row = append(row, ratio(worst(all)))
		fmt.Fprintf(bw, "| %s |\n", strings.Join(row, " | "))
	}
	return nil
}

// tableHead writes a Markdown table's header: the first column left-aligned,
// the others right-aligned.
func tableHead(bw *bufio.Writer, head []string) {
	fmt.Fprintf(bw, "| %s |\n|---%s|\n", strings.Join(head, " | "), strings.Repeat("|--:", len(head)-1))
}

// canEvalRules reports whether the rules can be read off sums: the CPU count
// is known and static variants ran.
func canEvalRules(meta Meta, sums []results.Summary) bool {
	return meta.CPUs > 0 && slices.ContainsFunc(sums, func(s results.Summary) bool { return variant.IsStatic(s.Variant) })
}

func ratio(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "x"
}

// WriteSweepChart draws, for each sweep, the median p99 latency against the
// CPU quota with min–max whiskers over the runs, one line per variant in a
// colour of its own (static variants dashed), on a log scale, one panel per
// load, with the legend in a column on the right, and writes it as a PNG to
// path.
func WriteSweepChart(path string, sums []results.Summary) error {
	sws := sweeps(sums)
	if len(sws) == 0 {
		return fmt.Errorf("no setting has several CPU quotas")
	}
	names := variantsOf(sums)
	legend := newLegend()
	legend.TextStyle.Font.Size = font.Length(9)
	plots := make([][]*plot.Plot, 1)
	for k, sw := range sws {
		p := plot.New()
		p.Title.Text = sw.title() + ": p99 request latency"
		p.X.Label.Text = "CPU quota (cores)"
		p.Y.Label.Text = "p99 ms (median, min–max; log scale)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = ticksIn{plot.LogTicks{Prec: -1}}
		p.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), 0.0
		dodge := 0.012 * (sw.settings[len(sw.settings)-1].CPUs - sw.settings[0].CPUs)
		for i, v := range names {
			var xys plotter.XYs
			var w errPoints
			for _, st := range sw.settings {
				s, ok := find(sums, st, v)
				if !ok || !(s.LatencyP99MS > 0) {
					continue
				}
				y := float64(s.LatencyP99MS)
				ylo, yhi := spread(s, "latency_p99_ms", s.LatencyP99MS)
				xys = append(xys, plotter.XY{X: st.CPUs, Y: y})
				// The whiskers side by side, a little apart, not on one line.
				x := st.CPUs + dodge*(float64(i)-float64(len(names)-1)/2)
				if ylo < yhi {
					w = append(w, errPoint{x: x, y: y, ylo: ylo, yhi: yhi})
				}
				lo, hi = min(lo, ylo), max(hi, yhi)
			}
			if len(xys) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color = palette[i%len(palette)]
			l.Width = vg.Points(1.8)
			pts.Color = l.Color
			pts.Shape = plotutil.Shape(i)
			if variant.IsStatic(v) {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(l, pts)
			if len(w) > 0 {
				eb, err := plotter.NewYErrorBars(w)
				if err != nil {
					return err
				}
				eb.Color = l.Color
				p.Add(eb)
			}
			if k == 0 {
				legend.Add(v, l, pts)
			}
		}
		if hi > 0 {
			p.Y.Min, p.Y.Max = lo/1.3, hi*1.3
		}
		first, last := sw.settings[0].CPUs, sw.settings[len(sw.settings)-1].CPUs
		p.X.Min, p.X.Max = first-0.05*(last-first), last+0.05*(last-first) // the end points off the axes
		plots[0] = append(plots[0], p)
	}
	const panel = 6.5 * vg.Inch
	img := vgimg.New(panel*vg.Length(len(plots[0]))+legendWidth, 5*vg.Inch)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots[0]), PadX: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	return drawWithLegend(path, img, plots, tiles, legend)
}

// errPoints are points with min–max ranges on both axes.
type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].y - e[i].ylo, e[i].yhi - e[i].y }

// ticksIn keeps a ticker's ticks within the axis (LogTicks adds one at the
// next power of ten, and the plot makes room for its label above the data)
// and labels the 2s and 5s too, so that an axis within a decade has more
// than one figure on it.
type ticksIn struct{ plot.Ticker }

func (t ticksIn) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, k := range t.Ticker.Ticks(min, max) {
		if k.Value < min || k.Value > max {
			continue
		}
		if m := k.Value / math.Pow10(int(math.Floor(math.Log10(k.Value)+1e-9))); k.Label == "" && (math.Abs(m-2) < 1e-6 || math.Abs(m-5) < 1e-6) {
			k.Label = strconv.FormatFloat(k.Value, 'g', -1, 64)
		}
		out = append(out, k)
	}
	return out
}
