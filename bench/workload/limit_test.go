package workload

import (
	"context"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/stats"
)

func TestLimitBound(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                        string
		goal, live, stacks, globals uint64
		gogc, limit                 int64
		want                        bool
	}{
		{"no limit", 100 * mib, 100 * mib, 0, 0, 100, math.MaxInt64, false},
		{"GOGC's goal", 201 * mib, 100 * mib, 512 << 10, 512 << 10, 100, 460 * mib, false},
		{"GOGC's goal, rounded", 200 * mib, 100 * mib, 1 * mib, 1 * mib, 100, 460 * mib, false},
		{"held below GOGC's goal", 440 * mib, 256 * mib, 1 * mib, 0, 100, 460 * mib, true},
		{"GOGC=50", 150 * mib, 100 * mib, 0, 0, 50, 460 * mib, false},
		{"GOGC=50, held", 120 * mib, 100 * mib, 0, 0, 50, 130 * mib, true},
		{"GOGC=off with a limit", 440 * mib, 256 * mib, 0, 0, -1, 460 * mib, true},
		{"GOGC=off without one", 440 * mib, 256 * mib, 0, 0, -1, math.MaxInt64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, limitBound(tc.goal, tc.live, tc.stacks, tc.globals, tc.gogc, tc.limit))
		})
	}
}

func TestLatHist(t *testing.T) {
	var h latHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	h.add(0)
	h.add(500 * time.Nanosecond)
	h.add(time.Hour) // above the last bucket
	s := h.snapshot()
	assert.Equal(t, uint64(1003), stats.HistogramCount(s))
	assert.Equal(t, uint64(2), s.Counts[0], "below 1 µs")
	assert.Equal(t, uint64(1), s.Counts[len(s.Counts)-1], "above the last bucket")
	// Rank 993 of 1003 is the sample 990 ms: an upper bound within 5 %.
	p99 := stats.HistogramQuantile(s, 0.99)
	assert.GreaterOrEqual(t, p99, 0.990)
	assert.LessOrEqual(t, p99, 0.990*latGrowth)
	// Every sample lies in its bucket.
	for _, d := range []time.Duration{time.Microsecond, 1050 * time.Nanosecond, 7 * time.Millisecond, 3 * time.Second} {
		var one latHist
		one.add(d)
		snap := one.snapshot()
		for i, c := range snap.Counts {
			if c == 1 {
				assert.True(t, snap.Buckets[i] <= d.Seconds() && d.Seconds() < snap.Buckets[i+1], "%v in [%v, %v)", d, snap.Buckets[i], snap.Buckets[i+1])
			}
		}
	}
	// The window is a difference of snapshots.
	h.add(2 * time.Second)
	d := stats.HistogramSub(h.snapshot(), s)
	assert.Equal(t, uint64(1), stats.HistogramCount(d))
}

// countedCtx is a context whose Err is nil for its first n calls.
type countedCtx struct {
	context.Context
	n int
}

func (c *countedCtx) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func TestGrow(t *testing.T) {
	// One pass of the loop, ten seconds behind at 1 MiB/s: it catches up one
	// second's worth, 1024 groups, and keeps them.
	held := grow(&countedCtx{Context: context.Background(), n: 1}, 1<<20, time.Now().Add(-10*time.Second))
	n := 0
	for _, c := range held {
		n += len(c)
		for _, g := range c {
			require.NotNil(t, g)
		}
	}
	assert.Equal(t, 1024, n)
}

// TestRunWindow: with GOMEMLIMIT below the heap, the progress lines say the
// limit sets the goal and carry the window's figures.
func TestRunWindow(t *testing.T) {
	old := debug.SetMemoryLimit(1)
	defer debug.SetMemoryLimit(old)
	var progress syncBuffer
	_, err := Run(context.Background(), Config{
		Variant: "test", Duration: 300 * time.Millisecond, HeapMiB: 2, AllocMiBPerSec: 16, GrowMiBPerSec: 8,
		Rate: 200, WorkIterations: 100, ReportEvery: 50 * time.Millisecond, Progress: &progress,
	})
	require.NoError(t, err)
	var last *results.Progress
	for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		line, err := results.ParseLine([]byte(l))
		require.NoError(t, err, l)
		last = line.Progress
	}
	require.NotNil(t, last)
	assert.True(t, last.LimitBound)
	require.NotNil(t, last.Window)
	assert.Greater(t, last.ElapsedMS, last.Window.StartMS)
	assert.LessOrEqual(t, last.Window.Requests, last.Requests)
	assert.Equal(t, int64(1), last.GOMEMLIMIT)
}
