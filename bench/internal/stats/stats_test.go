package stats

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hist(buckets []float64, counts ...uint64) *metrics.Float64Histogram {
	return &metrics.Float64Histogram{Buckets: buckets, Counts: counts}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	b := []float64{math.Inf(-1), 0, 1, 2, 4, 8, inf}
	tests := []struct {
		name string
		h    *metrics.Float64Histogram
		q    float64
		want float64
	}{
		{"median in the middle bucket", hist(b, 0, 1, 1, 1, 1, 0), 0.5, 2},      // ranks 1..4: 2nd sample is in [1,2)
		{"p99 of four samples is the last", hist(b, 0, 1, 1, 1, 1, 0), 0.99, 8}, // rank 4 in [4,8)
		{"q=0 is the minimum's bucket", hist(b, 0, 0, 3, 1, 0, 0), 0, 2},
		{"q=1 is the maximum's bucket", hist(b, 0, 0, 3, 1, 0, 0), 1, 4},
		{"exact rank boundary stays in the lower bucket", hist(b, 0, 50, 50, 0, 0, 0), 0.5, 1},
		{"just past the boundary", hist(b, 0, 50, 50, 0, 0, 0), 0.51, 2},
		{"+Inf bucket reports its lower bound", hist(b, 0, 0, 0, 0, 1, 1), 1, 8},
		{"-Inf bucket reports its upper bound", hist(b, 2, 0, 0, 0, 0, 0), 0.5, 0},
		{"p999 of 1000 samples with one outlier", hist(b, 0, 999, 0, 0, 1, 0), 0.999, 1},
		{"p999 of 999 samples with one outlier", hist(b, 0, 998, 0, 0, 1, 0), 0.999, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, HistogramQuantile(tt.h, tt.q))
		})
	}
}

func TestHistogramQuantileEmpty(t *testing.T) {
	b := []float64{0, 1, 2}
	assert.True(t, math.IsNaN(HistogramQuantile(nil, 0.5)))
	assert.True(t, math.IsNaN(HistogramQuantile(hist(b, 0, 0), 0.5)))
	assert.True(t, math.IsNaN(HistogramQuantile(hist(nil), 0.5)))
	assert.True(t, math.IsNaN(HistogramQuantile(hist(b, 1, 1), 1.5)))
	assert.True(t, math.IsNaN(HistogramQuantile(hist(b, 1, 1), math.NaN())))
	assert.True(t, math.IsNaN(HistogramMax(hist(b, 0, 0))))
	assert.Equal(t, uint64(0), HistogramCount(nil))
}

func TestHistogramMaxAndCount(t *testing.T) {
	b := []float64{0, 1, 2, 4, math.Inf(1)}
	assert.Equal(t, 2.0, HistogramMax(hist(b, 3, 1, 0, 0)))
	assert.Equal(t, 4.0, HistogramMax(hist(b, 3, 1, 0, 7)))
	assert.Equal(t, uint64(11), HistogramCount(hist(b, 3, 1, 0, 7)))
}

func TestHistogramSub(t *testing.T) {
	b := []float64{0, 1, 2, 4}
	prev := hist(b, 1, 2, 3)
	cur := hist(b, 1, 5, 4)
	d := HistogramSub(cur, prev)
	assert.Equal(t, []uint64{0, 3, 1}, d.Counts)
	assert.Equal(t, b, d.Buckets)
	assert.Equal(t, []uint64{1, 5, 4}, HistogramSub(cur, nil).Counts)
	assert.Nil(t, HistogramSub(nil, prev))
	// The delta is a new slice: changing it leaves cur alone.
	d.Counts[0] = 9
	assert.Equal(t, uint64(1), cur.Counts[0])
}

// TestRealRuntimeHistogram checks the functions against a live runtime/metrics
// histogram: GC pauses caused by runtime.GC calls between two snapshots.
func TestRealRuntimeHistogram(t *testing.T) {
	s := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	before := CloneHistogram(s[0].Value.Float64Histogram())
	for range 5 {
		runtime.GC()
	}
	metrics.Read(s)
	d := HistogramSub(s[0].Value.Float64Histogram(), before)
	// Each GC cycle stops the world at least twice (sweep termination, mark termination).
	require.GreaterOrEqual(t, HistogramCount(d), uint64(10))
	p50, p99, mx := HistogramQuantile(d, 0.5), HistogramQuantile(d, 0.99), HistogramMax(d)
	assert.Greater(t, p50, 0.0)
	assert.LessOrEqual(t, p50, p99)
	assert.LessOrEqual(t, p99, mx)
	assert.Less(t, mx, 1.0, "a GC pause of a second in a tiny heap")
}

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	s := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	assert.Equal(t, time.Millisecond, Quantile(s, 0))
	assert.Equal(t, 5*time.Millisecond, Quantile(s, 0.5))
	assert.Equal(t, 10*time.Millisecond, Quantile(s, 0.99))
	assert.Equal(t, 9*time.Millisecond, Quantile(s, 0.9))
	assert.Equal(t, 10*time.Millisecond, Quantile(s, 1))
	assert.Equal(t, time.Duration(0), Quantile(nil, 0.5))

	// 1000 samples: p99.9 is the 999th, p99 the 990th.
	big := make([]time.Duration, 1000)
	for i := range big {
		big[i] = time.Duration(i + 1)
	}
	assert.Equal(t, time.Duration(999), Quantile(big, 0.999))
	assert.Equal(t, time.Duration(990), Quantile(big, 0.99))
}

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	s := Summarize([]float64{3, 1, 2})
	assert.Equal(t, Summary{Median: 2, Min: 1, Max: 3, N: 3}, s)
	s = Summarize([]float64{4, nan, 1, 2, 3})
	assert.Equal(t, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}, s)
	s = Summarize([]float64{nan})
	assert.True(t, math.IsNaN(s.Median))
	assert.True(t, math.IsNaN(s.Min))
	assert.Equal(t, 0, s.N)
	assert.Equal(t, 0, Summarize(nil).N)
}
