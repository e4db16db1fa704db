package workload

import (
	"context"
	"math"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// limitBound reports whether GOMEMLIMIT, rather than GOGC, set the heap goal:
// the goal is more than 1 % below the one GOGC alone gives, the marked heap
// plus GOGC percent of the marked heap, the scanned stacks and the globals
// (the runtime's formula, runtime/mgcpacer.go). With GOGC=off a memory limit
// always sets the goal; without a memory limit it never does.
func limitBound(goal, live, stacks, globals uint64, gogc, memLimit int64) bool {
	switch {
	case memLimit == math.MaxInt64:
		return false
	case gogc < 0:
		return true
	}
	gogcGoal := float64(live) + float64(live+stacks+globals)*float64(gogc)/100
	return float64(goal) < 0.99*gogcGoal
}

// latHist is a histogram of request latencies that requests add to without
// locks, with buckets 5 % wide from 1 µs to about 1000 s; snapshots are
// runtime/metrics histograms (in seconds), so that the stats package's
// quantiles and differences apply to them.
type latHist struct {
	counts [latBuckets + 2]atomic.Uint64 // below 1 µs, the buckets, above
}

const (
	latBuckets = 425 // 1.05^425 ≈ 1e9
	latGrowth  = 1.05
	latMin     = time.Microsecond
)

var latBounds = func() []float64 {
	b := make([]float64, latBuckets+3)
	b[0] = math.Inf(-1)
	for i := 0; i <= latBuckets; i++ {
		b[i+1] = latMin.Seconds() * math.Pow(latGrowth, float64(i))
	}
	b[latBuckets+2] = math.Inf(1)
	return b
}()

func (h *latHist) add(d time.Duration) {
	i := 0
	if d >= latMin {
		i = min(1+int(math.Log(float64(d)/float64(latMin))/math.Log(latGrowth)), latBuckets+1)
		// Rounding in the logarithm may put a value on a boundary one off.
		for i > 1 && float64(d)/1e9 < latBounds[i] {
			i--
		}
		for i <= latBuckets && float64(d)/1e9 >= latBounds[i+1] {
			i++
		}
	}
	h.counts[i].Add(1)
}

func (h *latHist) snapshot() *metrics.Float64Histogram {
	s := &metrics.Float64Histogram{Buckets: latBounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	return s
}

// grow adds rate bytes per second of live heap, never freed, from start until
// ctx is done: a leak. Like allocate it keeps to the schedule, catching up at
// most one second's worth after a stall. It returns what it holds, so that the
// leak stays reachable until the caller drops it.
func grow(ctx context.Context, rate float64, start time.Time) [][]*node {
	var (
		held  [][]*node
		chunk []*node
		added float64
		seed  uint64 = 0x9e3779b97f4a7c15
	)
	const chunkGroups = 1024
	for ctx.Err() == nil {
		due := rate * time.Since(start).Seconds()
		if due-added > rate {
			added = due - rate
		}
		for added < due {
			if chunk == nil {
				chunk = make([]*node, 0, chunkGroups)
				held = append(held, chunk)
			}
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			chunk = append(chunk, newGroup(seed))
			held[len(held)-1] = chunk
			if len(chunk) == chunkGroups {
				chunk = nil
			}
			added += groupBytes
		}
		time.Sleep(time.Millisecond)
	}
	return held
}
