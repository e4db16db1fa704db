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

func TestParseRunsRecorded(t *testing.T) {
	f, err := os.Open("testdata/child-anchors.txt")
	require.NoError(t, err)
	defer f.Close()
	runs, err := ParseRuns(f)
	require.NoError(t, err)
	require.Len(t, runs, 9, "one line per round; cgroup, state and PASS lines are skipped")
	assert.Equal(t, Run{Name: "BenchmarkApply/automaxprocs+automemlimit", N: 1419, NsPerOp: 184277, BytesPerOp: 80216, AllocsPerOp: 539}, runs[0])

	sums := Summarize(runs)
	require.Len(t, sums, 1)
	s := sums[0]
	assert.Equal(t, 9, s.Runs)
	assert.InDelta(t, 202763, s.NsPerOp, 0.5, "median of the nine ns/op values")
	assert.InDelta(t, 175928, s.MinNs, 0.5)
	assert.InDelta(t, 284683, s.MaxNs, 0.5)
	assert.InDelta(t, 539, s.AllocsPerOp, 0)
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

func TestCheckAndBenchAnchors(t *testing.T) {
	// Outside a limited cgroup the anchors may leave the knobs alone; what
	// must hold anywhere: Apply succeeds and Undo plus Reset restore the
	// starting state.
	Reset()
	start := Current()
	_, err := Check(Anchors())
	require.NoError(t, err)
	assert.Equal(t, start, Current())

	res := testing.Benchmark(func(b *testing.B) { Bench(b, Anchors()) })
	require.Positive(t, res.N)
	assert.Positive(t, res.AllocsPerOp(), "ReportAllocs is on and the anchors allocate")
	assert.Equal(t, start, Current())
}
