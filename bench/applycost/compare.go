package applycost

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// Bench is the benchmark body for one side: each iteration times s.Apply
// alone, from the reset state and a quiet runtime ([Settle]), with the
// monotonic clock; the Undo, Reset and Settle between calls are not timed.
//
// It does not use b.StopTimer and b.StartTimer around them: each of those
// reads runtime.MemStats, which stops the world, so every timed call would
// start right after one more stop-the-world pause than a program's call does.
// Allocations are counted in a separate pass ([CountAllocs]), where reading
// MemStats around each call does not matter.
func Bench(b *testing.B, s Side) {
	allocs, bytes, err := CountAllocs(s, allocRuns)
	if err != nil {
		b.Fatal(err)
	}
	Reset()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		Settle()
		t0 := time.Now()
		err := s.Apply()
		total += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		s.Undo()
		Reset()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(allocs, "allocs/op")
	b.ReportMetric(bytes, "B/op")
}

// allocRuns is how many calls CountAllocs measures: the counts are the same
// from call to call, and the median hides a rare one-off (a map growing).
const allocRuns = 7

// CountAllocs measures n calls of s.Apply with MeasureCold and returns the
// median number of heap allocations and bytes of one call, read from
// runtime.MemStats around each call (the same counters testing.B uses).
func CountAllocs(s Side, n int) (allocs, bytes float64, err error) {
	as, bs := make([]float64, n), make([]float64, n)
	for i := range n {
		c, err := MeasureCold(s)
		if err != nil {
			return 0, 0, err
		}
		as[i], bs[i] = c.Allocs, c.Bytes
	}
	return Median(as), Median(bs), nil
}

// settleTime is how long Settle waits: threads woken by a stop-the-world
// look for work for some microseconds before they sleep again.
const settleTime = 100 * time.Microsecond

// Settle busy-waits a moment so that the threads that the harness's own
// stop-the-world calls woke (Reset sets GOMAXPROCS, reading MemStats stops
// the world) are asleep again before the timed call, as they are when a
// program applies the limits at start-up. Without it the next call pays for
// their wind-down: here runtime.GOMAXPROCS(1) measured 46 µs right after
// Reset and 5 µs after Settle in one run here. It waits on the CPU rather than sleeping,
// because waking from a sleep would wake threads again.
func Settle() {
	for t := time.Now(); time.Since(t) < settleTime; {
	}
}

// BenchName is the name under which a side's results are printed, in the Go
// benchmark format, so that benchstat can compare them.
func BenchName(side string) string { return "BenchmarkApply/" + side }

// Interleave runs rounds rounds of testing.Benchmark for every side, in
// alternating order (A B, B A, A B, ...) so that drift on a shared machine hits
// both sides alike, and writes one Go benchmark-format line per side and round
// to w as it goes. testing.Benchmark honours -test.benchtime.
func Interleave(w io.Writer, rounds int, sides ...Side) error {
	for r := range rounds {
		order := slices.Clone(sides)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			var failed error
			recorded := Side{Name: s.Name, Undo: s.Undo, Apply: func() error {
				err := s.Apply()
				if err != nil {
					failed = err
				}
				return err
			}}
			res := testing.Benchmark(func(b *testing.B) { Bench(b, recorded) })
			if failed != nil {
				return fmt.Errorf("%s: %w", s.Name, failed)
			}
			if res.N == 0 {
				return fmt.Errorf("%s: the benchmark did not run", s.Name)
			}
			if _, err := fmt.Fprintf(w, "%s\t%s\t%s\n", BenchName(s.Name), res.String(), res.MemString()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cold is one cold measurement: a side's Apply called once in a fresh
// process, as at start-up, with nothing opened or cached before.
type Cold struct {
	Name   string
	Ns     float64
	Allocs float64
	Bytes  float64
}

// MeasureCold times one call of s.Apply from the reset state and counts its
// heap allocations (runtime.MemStats, read outside the timed call), then
// undoes it. Called first thing in a fresh process, it measures what the side
// costs at start-up.
func MeasureCold(s Side) (Cold, error) {
	Reset()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	Settle()
	t0 := time.Now()
	err := s.Apply()
	d := time.Since(t0)
	runtime.ReadMemStats(&m1)
	s.Undo()
	Reset()
	if err != nil {
		return Cold{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	return Cold{Name: s.Name, Ns: float64(d.Nanoseconds()), Allocs: float64(m1.Mallocs - m0.Mallocs), Bytes: float64(m1.TotalAlloc - m0.TotalAlloc)}, nil
}

// String is the line a cold child prints: "cold <name> <ns> <allocs> <bytes>".
func (c Cold) String() string {
	return fmt.Sprintf("cold %s %.0f %.0f %.0f", c.Name, c.Ns, c.Allocs, c.Bytes)
}

// ParseCold reads the "cold" lines of r, ignoring other lines, as Runs named
// "cold/<name>" so that Summarize takes their medians.
func ParseCold(r io.Reader) ([]Run, error) {
	var runs []Run
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "cold" {
			continue
		}
		var v [3]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[2+i], 64)
			if err != nil {
				return nil, fmt.Errorf("cold line %q: %v", sc.Text(), err)
			}
			v[i] = x
		}
		runs = append(runs, Run{Name: "cold/" + f[1], N: 1, NsPerOp: v[0], AllocsPerOp: v[1], BytesPerOp: v[2]})
	}
	return runs, sc.Err()
}

// Run is one benchmark-format result line.
type Run struct {
	Name        string
	N           int
	NsPerOp     float64
	BytesPerOp  float64
	AllocsPerOp float64
}

// ParseRuns reads Go benchmark-format lines ("BenchmarkX N v ns/op v B/op v
// allocs/op") and ignores every other line. The -P suffix that go test adds
// for GOMAXPROCS is kept in the name.
func ParseRuns(r io.Reader) ([]Run, error) {
	var runs []Run
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue // e.g. "BenchmarkX skipped" or a log line
		}
		run := Run{Name: f[0], N: n}
		if (len(f)-2)%2 != 0 {
			return nil, fmt.Errorf("line %d: odd value/unit pairs: %q", line, sc.Text())
		}
		seen := false
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %v", line, f[i], err)
			}
			switch f[i+1] {
			case "ns/op":
				run.NsPerOp, seen = v, true
			case "B/op":
				run.BytesPerOp = v
			case "allocs/op":
				run.AllocsPerOp = v
			}
		}
		if !seen {
			return nil, fmt.Errorf("line %d: no ns/op: %q", line, sc.Text())
		}
		runs = append(runs, run)
	}
	return runs, sc.Err()
}

// Summary is the medians of one benchmark's runs.
type Summary struct {
	Name         string
	Runs         int
	NsPerOp      float64 // median
	MinNs, MaxNs float64
	AllocsPerOp  float64 // median
	BytesPerOp   float64 // median
}

// Summarize groups runs by name, in order of first appearance.
func Summarize(runs []Run) []Summary {
	var names []string
	by := map[string][]Run{}
	for _, r := range runs {
		if _, ok := by[r.Name]; !ok {
			names = append(names, r.Name)
		}
		by[r.Name] = append(by[r.Name], r)
	}
	out := make([]Summary, 0, len(names))
	for _, name := range names {
		rs := by[name]
		ns := make([]float64, len(rs))
		allocs := make([]float64, len(rs))
		bytes := make([]float64, len(rs))
		for i, r := range rs {
			ns[i], allocs[i], bytes[i] = r.NsPerOp, r.AllocsPerOp, r.BytesPerOp
		}
		out = append(out, Summary{
			Name:        name,
			Runs:        len(rs),
			NsPerOp:     Median(ns),
			MinNs:       slices.Min(ns),
			MaxNs:       slices.Max(ns),
			AllocsPerOp: Median(allocs),
			BytesPerOp:  Median(bytes),
		})
	}
	return out
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Find returns the summary named name.
func Find(sums []Summary, name string) (Summary, bool) {
	i := slices.IndexFunc(sums, func(s Summary) bool { return s.Name == name })
	if i < 0 {
		return Summary{}, false
	}
	return sums[i], true
}

// Ratio is a/b for the time and the allocation count of two summaries.
type Ratio struct {
	Ns, Allocs float64
}

// RatioOf returns a's cost relative to b's.
func RatioOf(a, b Summary) Ratio {
	r := Ratio{}
	if b.NsPerOp > 0 {
		r.Ns = a.NsPerOp / b.NsPerOp
	}
	if b.AllocsPerOp > 0 {
		r.Allocs = a.AllocsPerOp / b.AllocsPerOp
	}
	return r
}

// WriteTable writes the summaries as an aligned text table.
func WriteTable(w io.Writer, sums []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\truns\tmedian µs/op\tmin–max µs/op\tallocs/op\tB/op\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f–%.1f\t%.0f\t%.0f\t\n",
			strings.TrimPrefix(s.Name, "BenchmarkApply/"), s.Runs,
			s.NsPerOp/1e3, s.MinNs/1e3, s.MaxNs/1e3, s.AllocsPerOp, s.BytesPerOp)
	}
	return tw.Flush()
}
