// Package stats computes the percentiles and summaries the benchmark reports:
// quantiles of runtime/metrics histograms, quantiles of exact samples, and
// medians with ranges over repeated runs.
package stats

import (
	"math"
	"runtime/metrics"
	"slices"
	"time"
)

// HistogramQuantile returns an upper bound of the q-quantile (0 <= q <= 1) of
// the distribution in h: the upper boundary of the bucket holding the sample of
// rank ceil(q*n), n being the total count. When that bucket's upper boundary is
// +Inf its lower boundary is returned instead. HistogramQuantile returns NaN when
// h is nil or holds no samples, or q is outside [0, 1].
//
// The error is at most the width of one bucket; runtime/metrics time histograms
// have buckets a few percent wide, so this is the resolution of every GC pause
// and scheduling-latency percentile the workload reports.
func HistogramQuantile(h *metrics.Float64Histogram, q float64) float64 {
	if h == nil || len(h.Buckets) < 2 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank == 0 {
		rank = 1 // q == 0: the minimum
	}
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= rank {
			return bucketValue(h.Buckets, i)
		}
	}
	return bucketValue(h.Buckets, len(h.Counts)-1) // unreachable with consistent counts
}

// HistogramMax returns an upper bound of the largest sample in h (the upper
// boundary of the highest non-empty bucket, or its lower boundary when that is
// +Inf), or NaN when h holds no samples.
func HistogramMax(h *metrics.Float64Histogram) float64 {
	if h == nil || len(h.Buckets) < 2 {
		return math.NaN()
	}
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] > 0 {
			return bucketValue(h.Buckets, i)
		}
	}
	return math.NaN()
}

// HistogramCount returns the total number of samples in h.
func HistogramCount(h *metrics.Float64Histogram) uint64 {
	if h == nil {
		return 0
	}
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

func bucketValue(b []float64, i int) float64 {
	if hi := b[i+1]; !math.IsInf(hi, 1) {
		return hi
	}
	return b[i]
}

// HistogramSub returns the samples added to a histogram between the snapshots
// prev and cur of the same metric: cur's counts minus prev's, bucket by bucket.
// A nil prev is an empty histogram. The result shares cur's Buckets.
func HistogramSub(cur, prev *metrics.Float64Histogram) *metrics.Float64Histogram {
	if cur == nil {
		return nil
	}
	d := &metrics.Float64Histogram{Buckets: cur.Buckets, Counts: make([]uint64, len(cur.Counts))}
	for i, c := range cur.Counts {
		if prev != nil && i < len(prev.Counts) && prev.Counts[i] <= c {
			c -= prev.Counts[i]
		}
		d.Counts[i] = c
	}
	return d
}

// CloneHistogram returns a deep copy of h's counts (Buckets are shared: they
// never change for a metric). runtime/metrics.Read may reuse the memory of a
// histogram sample, so a snapshot that must outlive the next Read is cloned.
func CloneHistogram(h *metrics.Float64Histogram) *metrics.Float64Histogram {
	if h == nil {
		return nil
	}
	return &metrics.Float64Histogram{Buckets: h.Buckets, Counts: slices.Clone(h.Counts)}
}

// Quantile returns the q-quantile (0 <= q <= 1) of the sorted samples by the
// nearest-rank method: the sample of rank ceil(q*n), or the minimum for q == 0.
// It returns 0 for no samples. sorted must be in increasing order.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Summary is the median and range of repeated measurements.
type Summary struct {
	Median, Min, Max float64
	N                int // number of values that were not NaN
}

// Summarize returns the median, minimum and maximum of the values, ignoring
// NaNs (runs that did not produce the measurement). With no values, every field
// but N is NaN. The median of an even count is the mean of the middle two.
func Summarize(values []float64) Summary {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Summary{Median: med, Min: v[0], Max: v[n-1], N: n}
}
