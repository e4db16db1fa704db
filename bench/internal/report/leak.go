package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/fitgo/fitgo/bench/internal/results"
)

func seconds(v results.Float) string {
	if math.IsNaN(float64(v)) {
		return "–"
	}
	return strconv.FormatFloat(float64(v), 'f', 1, 64) + " s"
}

// leakColumns are the leak scenario's table: how long each variant served
// once GOMEMLIMIT held its heap, how well, and how it ended.
var leakColumns = []column{
	{"variant", func(s results.Summary, _ *results.Summary) string { return s.Variant }},
	{"GOMEMLIMIT", columns[2].cell},
	{"GOMEMLIMIT bound at", func(s results.Summary, _ *results.Summary) string {
		if math.IsNaN(float64(s.ReachedSeconds)) {
			return "never"
		}
		return withRange(s, "reached_s", s.ReachedSeconds, seconds)
	}},
	{"GOMEMLIMIT raised at", func(s results.Summary, _ *results.Summary) string {
		if math.IsNaN(float64(s.RaisedSeconds)) {
			return "never"
		}
		return withRange(s, "raised_s", s.RaisedSeconds, seconds)
	}},
	{"then lasted", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "window_s", s.WindowSeconds, seconds)
	}},
	{"ended by", func(s results.Summary, _ *results.Summary) string {
		switch {
		case s.OOMKills == uint64(s.Runs):
			return "OOM kill"
		case s.OOMKills == 0 && s.FailedRuns == 0:
			return "end of run"
		}
		return fmt.Sprintf("OOM kill in %d/%d", s.OOMKills, s.Runs)
	}},
	{"GC CPU in window", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "window_gc_cpu_fraction", s.WindowGCCPUFraction, pct)
	}},
	{"brown-out", func(s results.Summary, _ *results.Summary) string { return seconds(s.BrownoutSeconds) }},
	{"p99 ms in window", func(s results.Summary, _ *results.Summary) string {
		return withRange(s, "window_latency_p99_ms", s.WindowLatencyP99MS, ms)
	}},
	{"requests in window", func(s results.Summary, _ *results.Summary) string { return intOrDash(s.WindowRequests) }},
	{"requests done", func(s results.Summary, _ *results.Summary) string { return intOrDash(s.Requests) }},
	{"OOM kills", func(s results.Summary, _ *results.Summary) string { return fmt.Sprintf("%d/%d", s.OOMKills, s.Runs) }},
	memoryEventsColumn,
}
