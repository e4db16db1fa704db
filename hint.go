package fitgo

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
)

// The thresholds of the throttling hint, which docs/observability.md
// describes. Windows and quiet time are counted in readings, not by the clock.
const (
	hintShare        = 0.25 // warn when this share of the window's CFS periods ended throttled
	hintMinPeriods   = 50   // enough periods in the window to tell
	hintWindow       = time.Minute
	hintQuietWindows = 60 // windows without another warning: an hour at the default interval
)

// throttleHint detects sustained throttling over counted readings. Its zero
// value is not usable; see newThrottleHint.
type throttleHint struct {
	window, quiet int          // in readings
	start, last   cgroup.Stats // the window's first reading, and the last one
	n             int          // readings since start
	mute          int          // readings left before another warning may be given
}

// throttling is what a window saw.
type throttling struct {
	periods, throttled uint64
	time               time.Duration
	readings           int
}

func (d throttling) share() float64 { return float64(d.throttled) / float64(d.periods) }

// newThrottleHint returns a hint for a loop that reads every interval.
func newThrottleHint(interval time.Duration) throttleHint {
	w := max(1, int(hintWindow/interval))
	return throttleHint{window: w, quiet: w * hintQuietWindows}
}

// step takes the next reading and reports whether to warn about the window
// that it ends. A reading without cpu.stat, of another directory than the
// last one (a resize moved the limit, or the process moved), or whose
// counters went down since the last one (the cgroup was made anew) starts a
// new window.
func (h *throttleHint) step(st cgroup.Stats) (throttling, bool) {
	h.mute = max(h.mute-1, 0)
	c, l := &st.CPU, &h.last.CPU // no window yet: l.Dir is ""
	if c.Dir == "" || c.Dir != l.Dir || c.Periods < l.Periods || c.ThrottledPeriods < l.ThrottledPeriods || c.ThrottledTime < l.ThrottledTime {
		h.start, h.last, h.n = st, st, 1
		return throttling{}, false
	}
	h.last = st
	s := &h.start.CPU
	if h.n++; h.n <= h.window {
		return throttling{}, false
	}
	d := throttling{c.Periods - s.Periods, c.ThrottledPeriods - s.ThrottledPeriods, c.ThrottledTime - s.ThrottledTime, h.n - 1}
	h.start, h.n = st, 1
	if h.mute > 0 || d.periods < hintMinPeriods || d.share() < hintShare {
		return d, false
	}
	h.mute = h.quiet
	return d, true
}

// hinted is the blank import's Source: a Watcher whose statistics feed the
// throttling hint after each reading of the limits.
type hinted struct {
	*cgroup.Watcher
	hint     throttleHint
	interval time.Duration
	log      func() *slog.Logger // nil logger: no hint
	procs    func() maxprocs.Result
}

// openHinted returns the Source opener of a loop reading fsys (nil: the real
// root, as Read opens it) every interval, warning through log with procs,
// maxprocs' Status; it first calls what first gives until first is closed.
func openHinted(fsys fs.FS, interval time.Duration, log func() *slog.Logger, procs func() maxprocs.Result, first <-chan func()) func() (knob.Source, error) {
	return func() (knob.Source, error) {
		for f := range first {
			f()
		}
		w, err := cgroup.NewWatcher(fsys)
		if err != nil {
			return nil, err
		}
		return &hinted{Watcher: w, hint: newThrottleHint(interval), interval: interval, log: log, procs: procs}, nil
	}
}

// Read reads the limits, then the statistics for the hint. The statistics'
// errors do not touch the limits' reading.
func (s *hinted) Read() (cgroup.Limits, error) {
	lim, err := s.Watcher.Read()
	if l := s.log(); l != nil && l.Enabled(context.Background(), slog.LevelWarn) {
		if st, serr := s.Watcher.Stats(); serr == nil {
			if d, warn := s.hint.step(st); warn {
				logHint(l, d, time.Duration(d.readings)*s.interval, lim, s.procs())
			}
		}
	}
	return lim, err
}

// logHint writes the Warn line: how much, at which GOMAXPROCS and limit (of
// maxprocs' Status r, FITGO_CPU_LIMIT and UpperLimit included, or else the
// cgroup's), and what to consider: what maxprocs' policy, floored, fits.
func logHint(l *slog.Logger, d throttling, over time.Duration, lim cgroup.Limits, r maxprocs.Result) {
	if q, ok := lim.CPUQuota(); r.Source == "" && ok {
		r.Limit, r.Source, r.NumCPU = q, lim.CPU.Source, max(r.NumCPU, r.After)
	}
	procs, floor := r.After, r.Policy
	floor.Rounding = maxprocs.Floor
	consider := "raise the CPU limit, or spread the work: bursts above the quota wait for the next period"
	if fit := floor.Procs(r.Limit, r.NumCPU); r.Source != "" && procs > fit {
		how := ""
		if r.Following { // fitgo's own value: its rounding makes the difference
			how = " (FITGO=rounding=floor)"
		}
		consider = fmt.Sprintf("GOMAXPROCS %d is above the limit of %.3g cores: GOMAXPROCS %d%s fits it, or a limit of %d cores", procs, r.Limit, fit, how, procs)
	}
	l.Warn("fitgo: the CPU limit throttles this process",
		"throttled", fmt.Sprintf("%.0f%% of %d periods", 100*d.share(), d.periods),
		"throttled_time", d.time.Round(time.Millisecond), "over", over,
		"GOMAXPROCS", procs, "cpu_limit", r.Limit, "cpu_source", r.Source,
		"consider", consider)
}
