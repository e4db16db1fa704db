package workload

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

func TestRun(t *testing.T) {
	var progress syncBuffer
	res, err := Run(context.Background(), Config{
		Variant: "test", Duration: 400 * time.Millisecond, HeapMiB: 2, AllocMiBPerSec: 64,
		Rate: 500, WorkIterations: 200, ReportEvery: 100 * time.Millisecond, Progress: &progress,
	})
	require.NoError(t, err)
	assert.Equal(t, results.TypeResult, res.Type)
	assert.Equal(t, "test", res.Variant)
	assert.Equal(t, uint64(200), res.RequestsScheduled)
	assert.Equal(t, res.RequestsScheduled, res.Requests, "every request completes")
	assert.Greater(t, res.GOMAXPROCS, 0)
	assert.Equal(t, res.GOMAXPROCS, res.GOMAXPROCSStart)
	assert.Equal(t, int64(math.MaxInt64), res.GOMEMLIMIT)
	l := res.Latency
	assert.Greater(t, float64(l.P50), 0.0)
	assert.True(t, l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max, "%+v", l)
	assert.GreaterOrEqual(t, res.DurationMS, 398.0)
	assert.Greater(t, res.PeakRSSBytes, int64(2<<20))
	assert.Greater(t, res.HeapLiveBytes, int64(1<<20))
	assert.Equal(t, results.Config{HeapMiB: 2, AllocMiBPerSec: 64, RequestsPerSec: 500, WorkIterations: 200,
		WorkMicros: 75, DurationSeconds: 0.4, Ticker: res.Config.Ticker}, res.Config)
	if runtime.GOOS == "linux" {
		assert.Equal(t, TickerNetpoll, res.Config.Ticker)
	}
	// 64 MiB/s for 0.4s over a 2 MiB live heap (goal 4 MiB): several cycles.
	assert.GreaterOrEqual(t, res.GCCycles, uint64(1))
	assert.False(t, math.IsNaN(float64(res.GCPause.P99)))
	// A 0.4s window is too short for the runtime's per-cycle CPU estimates to be
	// accurate, but they exist.
	assert.Greater(t, float64(res.GCCPUFraction), 0.0)
	if res.CPUStat == nil {
		assert.NotEmpty(t, res.CPUStatError)
	}

	var lines int
	for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		line, err := results.ParseLine([]byte(l))
		require.NoError(t, err, l)
		require.NotNil(t, line.Progress)
		assert.Equal(t, "test", line.Progress.Variant)
		assert.Contains(t, []string{"setup", "run"}, line.Progress.Phase)
		assert.Greater(t, line.Progress.HeapGoalBytes, int64(0))
		assert.False(t, line.Progress.LimitBound, "no GOMEMLIMIT: GOGC sets the goal")
		assert.Nil(t, line.Progress.Window)
		lines++
	}
	assert.GreaterOrEqual(t, lines, 3)
}

// TestWarmupAndGCPolicy: the warm-up comes before the window, in a phase of
// its own; the result has the GOGC and the largest heap goal of the window,
// and the GC policy as the binary's reader gives it.
func TestWarmupAndGCPolicy(t *testing.T) {
	var progress syncBuffer
	policy := results.GCPolicy{On: true, GOGC: 250, Base: 100, CeilingBytes: 700 << 20, Reason: "raised"}
	res, err := Run(context.Background(), Config{
		Variant: "test", Duration: 200 * time.Millisecond, HeapMiB: 2, AllocMiBPerSec: 64, Rate: 200, WorkIterations: 100,
		Warmup: 300 * time.Millisecond, ReportEvery: 50 * time.Millisecond, Progress: &progress,
		GCPolicy: func() results.GCPolicy { return policy },
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.WarmupMS, 300.0)
	assert.Greater(t, res.SetupMS, res.WarmupMS, "the heap build, then the warm-up")
	assert.Equal(t, 0.3, res.Config.WarmupSeconds)
	assert.Equal(t, &policy, res.GCPolicy)
	gogc := debug.SetGCPercent(100)
	debug.SetGCPercent(gogc)
	assert.Equal(t, gogc, res.GOGC)
	assert.Greater(t, res.HeapGoalMaxBytes, int64(2<<20), "above the live heap")

	phases := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		line, err := results.ParseLine([]byte(l))
		require.NoError(t, err, l)
		phases[line.Progress.Phase] = true
		if line.Progress.Phase == "warmup" {
			assert.Less(t, line.Progress.PhaseMS, res.WarmupMS)
		}
		assert.Equal(t, gogc, line.Progress.GOGC)
	}
	assert.True(t, phases["warmup"] && phases["run"], "%v", phases)
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, Config{Duration: time.Minute, HeapMiB: 1, WorkIterations: 10})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestMain1(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := main1(Config{Variant: "v"}, []string{"-duration", "200ms", "-heap-mib", "4", "-rate", "200", "-work-iters", "100"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Equal(t, 1, strings.Count(stdout.String(), "\n"), "one JSON line on stdout")
	res, _, err := results.ParseOutput(stdout.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "v", res.Variant)
	assert.Equal(t, uint64(40), res.Requests)

	stdout.Reset()
	require.Equal(t, 0, main1(Config{Variant: "v"}, []string{"-calibrate", "-work", "10us"}, &stdout, &stderr))
	assert.Regexp(t, `^[1-9][0-9]*\n$`, stdout.String())

	assert.Equal(t, 0, main1(Config{Variant: "v"}, []string{"-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-report-every")
	assert.Equal(t, 2, main1(Config{Variant: "v"}, []string{"-nope"}, &stdout, &stderr))
}

func TestCalibrate(t *testing.T) {
	short, long := Calibrate(10*time.Microsecond), Calibrate(100*time.Microsecond)
	assert.Greater(t, short, 0)
	assert.InDelta(t, 10, float64(long)/float64(short), 5, "iterations scale with the target")
}

func TestHeap(t *testing.T) {
	h := newHeap(1)
	assert.Len(t, h.groups, 1<<20/groupBytes)
	// A group is a tree of groupNodes nodes with keys seed..seed+31.
	g := newGroup(100)
	var want uint64
	for i := range groupNodes {
		want += 100 + uint64(i)
	}
	assert.Equal(t, want, walk(g))
	h.replace(7)
	assert.Equal(t, want-100*groupNodes+7*groupNodes, h.read(7))
}

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tx\nVmPeak:\t  1000 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\nThreads: 5\n")
	assert.Equal(t, int64(2048<<10), statusField(status, "VmHWM:"))
	assert.Equal(t, int64(1024<<10), statusField(status, "VmRSS:"))
	assert.Equal(t, int64(5), statusField(status, "Threads:"))
	assert.Equal(t, int64(0), statusField(status, "VmSwap:"))
	assert.Equal(t, int64(0), statusField([]byte("VmHWM: x kB\n"), "VmHWM:"))
	assert.Greater(t, peakRSS(), int64(0))
}

func TestHistSum(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 1, 3, math.Inf(1)},
		Counts:  []uint64{1, 2, 1, 1},
	}
	// 1×0 (upper bound of the -Inf bucket) + 2×0.5 + 1×2 + 1×3 (lower bound of the +Inf bucket)
	assert.Equal(t, 6.0, histSum(h))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNoGCInWindow: with no GC cycle in the window the GC measurements are
// NaN, and the result still encodes (as null).
func TestNoGCInWindow(t *testing.T) {
	res, err := Run(context.Background(), Config{Duration: 100 * time.Millisecond, HeapMiB: 32, AllocMiBPerSec: 1, Rate: 100, WorkIterations: 10})
	require.NoError(t, err)
	require.Zero(t, res.GCCycles)
	assert.True(t, math.IsNaN(float64(res.GCPause.P99)))
	assert.True(t, math.IsNaN(float64(res.GCCPUFraction)))
	b, err := jsonMarshal(res)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"gc_pause_ms":{"p50":null,"p99":null,"p999":null,"max":null}`)
	back, _, err := results.ParseOutput(b)
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(back.GCPause.Max)))
	assert.Equal(t, res.Latency.P99, back.Latency.P99)
}
