package applycost

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7, 7, 1, 100, 7}, 7},
	} {
		in := append([]float64(nil), tc.in...)
		assert.InDelta(t, tc.want, Median(tc.in), 1e-12, "%v", tc.in)
		assert.Equal(t, in, tc.in, "Median must not reorder its input")
	}
}

func TestParseRecordedChild(t *testing.T) {
	f, err := os.Open("testdata/child.txt")
	require.NoError(t, err)
	defer f.Close()
	runs, err := ParseRuns(f)
	require.NoError(t, err)
	require.Len(t, runs, 20, "five rounds of four; cgroup, state, cold and PASS lines are skipped")
	assert.Equal(t, Run{Name: "BenchmarkApply/fitgo", N: 1416, NsPerOp: 642624, BytesPerOp: 11512, AllocsPerOp: 66}, runs[0])

	sums := Summarize(runs)
	require.Len(t, sums, 4)
	fit, ok := Find(sums, BenchName("fitgo"))
	require.True(t, ok)
	assert.Equal(t, 5, fit.Runs)
	assert.InDelta(t, 93385, fit.NsPerOp, 0.5, "median of 642624, 84579, 164440, 93385, 84313")
	assert.InDelta(t, 84313, fit.MinNs, 0.5)
	assert.InDelta(t, 642624, fit.MaxNs, 0.5)
	anc, ok := Find(sums, BenchName("automaxprocs+automemlimit"))
	require.True(t, ok)
	assert.InDelta(t, 210887, anc.NsPerOp, 0.5)
	assert.InDelta(t, 539, anc.AllocsPerOp, 0)
	r := RatioOf(fit, anc)
	assert.InDelta(t, 93385.0/210887, r.Ns, 1e-9)
	assert.InDelta(t, 66.0/539, r.Allocs, 1e-9)

	_, err = f.Seek(0, 0)
	require.NoError(t, err)
	cold, err := ParseCold(f)
	require.NoError(t, err)
	require.Len(t, cold, 10)
	assert.Equal(t, Run{Name: "cold/fitgo", N: 1, NsPerOp: 207168, AllocsPerOp: 78, BytesPerOp: 12856}, cold[0])
	cs := Summarize(cold)
	require.Len(t, cs, 2)
	assert.InDelta(t, 235063, cs[0].NsPerOp, 0.5)
	assert.InDelta(t, 309693, cs[1].NsPerOp, 0.5)
}

func TestColdLine(t *testing.T) {
	c := Cold{Name: "fitgo", Ns: 1234.4, Allocs: 7, Bytes: 880}
	assert.Equal(t, "cold fitgo 1234 7 880", c.String())
	runs, err := ParseCold(strings.NewReader(c.String() + "\nnoise\ncold x 1 2\n"))
	require.NoError(t, err)
	assert.Equal(t, []Run{{Name: "cold/fitgo", N: 1, NsPerOp: 1234, AllocsPerOp: 7, BytesPerOp: 880}}, runs)
	_, err = ParseCold(strings.NewReader("cold x 1 two 3\n"))
	assert.Error(t, err)
}

func TestParseRuns(t *testing.T) {
	in := `goos: linux
BenchmarkApply/fitgo-2   	  20000	     51234 ns/op	     512 B/op	       7 allocs/op
BenchmarkApply/fitgo-2   	  20000	     49000.5 ns/op
BenchmarkOther skipped
--- FAIL: BenchmarkBroken
ok  	x	1.0s
`
	runs, err := ParseRuns(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []Run{
		{Name: "BenchmarkApply/fitgo-2", N: 20000, NsPerOp: 51234, BytesPerOp: 512, AllocsPerOp: 7},
		{Name: "BenchmarkApply/fitgo-2", N: 20000, NsPerOp: 49000.5},
	}, runs)

	for _, bad := range []string{
		"BenchmarkX 10 12 ns/op 5\n",          // dangling value
		"BenchmarkX 10 twelve ns/op\n",        // not a number
		"BenchmarkX 10 12 B/op 1 allocs/op\n", // no time
	} {
		_, err := ParseRuns(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestSummarizeKeepsOrderAndRatio(t *testing.T) {
	runs := []Run{
		{Name: "BenchmarkApply/a", NsPerOp: 10, AllocsPerOp: 2},
		{Name: "BenchmarkApply/b", NsPerOp: 100, AllocsPerOp: 40},
		{Name: "BenchmarkApply/b", NsPerOp: 80, AllocsPerOp: 40},
		{Name: "BenchmarkApply/a", NsPerOp: 30, AllocsPerOp: 2},
		{Name: "BenchmarkApply/a", NsPerOp: 20, AllocsPerOp: 2},
	}
	sums := Summarize(runs)
	require.Len(t, sums, 2)
	assert.Equal(t, "BenchmarkApply/a", sums[0].Name)
	assert.InDelta(t, 20, sums[0].NsPerOp, 0)
	assert.InDelta(t, 90, sums[1].NsPerOp, 0)

	a, ok := Find(sums, "BenchmarkApply/a")
	require.True(t, ok)
	b, ok := Find(sums, "BenchmarkApply/b")
	require.True(t, ok)
	_, ok = Find(sums, "BenchmarkApply/c")
	assert.False(t, ok)
	r := RatioOf(a, b)
	assert.InDelta(t, 20.0/90, r.Ns, 1e-12)
	assert.InDelta(t, 0.05, r.Allocs, 1e-12)
	assert.Equal(t, Ratio{}, RatioOf(a, Summary{}), "no division by zero")

	var sb strings.Builder
	require.NoError(t, WriteTable(&sb, sums))
	assert.Contains(t, sb.String(), "median µs/op")
	assert.Regexp(t, `\ba\s+3\s+0\.0\s+0\.0–0\.0\s+2\s+0\s*\n`, sb.String())
}

func TestCheckAndBenchSides(t *testing.T) {
	// Outside a limited cgroup the sides may leave the knobs alone; what
	// must hold anywhere: Apply succeeds, and Undo plus Reset restore the
	// starting state, so that every call starts from the same place.
	Reset()
	start := Current()
	for _, s := range sides() {
		_, err := Check(s)
		require.NoError(t, err, s.Name)
		assert.Equal(t, start, Current(), s.Name)

		c, err := MeasureCold(s)
		require.NoError(t, err, s.Name)
		assert.Positive(t, c.Ns, s.Name)
		assert.Equal(t, start, Current(), s.Name)
	}
	res := testing.Benchmark(func(b *testing.B) { Bench(b, Anchors()) })
	require.Positive(t, res.N)
	assert.Positive(t, res.AllocsPerOp(), "ReportAllocs is on and the anchors allocate")
	assert.Equal(t, start, Current())
}

func TestFitgoSideDoesTheFullWork(t *testing.T) {
	// Each fitgo call must discover the hierarchy afresh, not re-read files a
	// previous call left open: every call leaves no file open for the next.
	s := Fitgo()
	Reset()
	defer Reset()
	openFDs := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(fds)
	}
	for i := 0; i < 3; i++ {
		before := openFDs()
		require.NoError(t, s.Apply())
		s.Undo()
		Reset()
		assert.Equal(t, before, openFDs(), "call %d leaves files open", i)
	}
}
