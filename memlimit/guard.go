package memlimit

import (
	"log/slog"
	"math"
	"strconv"
)

// The leak guard. A leak that grows the heap into GOMEMLIMIT browns out
// instead of being OOM-killed: the GC runs back to back for hours
// (golang/go#58106). At each refresh reading the guard tells that state from
// runtime/metrics and steps GOMEMLIMIT up toward Result.Limit, where the
// kernel kills the process. docs/defaults.md has the measurements behind the values.
const (
	// guardShare is the GC's share of the CPU above which it counts as
	// pinned: its background workers take a quarter of GOMAXPROCS while it
	// marks and the GC CPU limiter caps it with the assists at about a half.
	// A steady heap large for its limit keeps the GC that busy too, so a
	// step also needs the heap to grow (grew).
	guardShare = 0.20

	// guardWindow is how many readings in a row must find the heap goal set
	// by GOMEMLIMIT and the GC above guardShare before a step: long enough
	// (30 s at a one-second refresh) that a transient peak does not step. It
	// is counted in readings, never by the clock.
	guardWindow = 30

	// guardSteps is how many steps reach the limit: each a quarter of the
	// margin between the policy's value and the limit, the least room that
	// ends the spiral of a heap that only peaked.
	guardSteps = 4
)

// gcReading is what the guard and the GC policy read from the runtime.
type gcReading struct {
	goal, live, stacks, globals uint64  // the heap goal; the marked heap, stacks and globals of the last GC
	gogc                        int64   // GOGC; negative: off
	other                       uint64  // the runtime's memory outside the heap's spans, free ones included: the heap goal covers those
	gcCPU, idle, cpu            float64 // CPU-seconds since the start: the GC's, its idle marking, and all (updated at each GC)
}

// forced is the GC's CPU the program had to give it: idle marking left out.
func (r gcReading) forced() float64 { return max(r.gcCPU-r.idle, 0) }

// bound reports whether GOMEMLIMIT, not GOGC, sets the heap goal: the goal
// is more than 1 % below GOGC's, the marked heap plus GOGC percent of the
// marked heap, the scanned stacks and the globals (the runtime's formula).
// With GOGC=off the limit always sets it.
func (r gcReading) bound() bool {
	if r.gogc < 0 {
		return true
	}
	gogcGoal := float64(r.live) + float64(r.live+r.stacks+r.globals)*float64(r.gogc)/100
	return float64(r.goal) < 0.99*gogcGoal
}

// leakGuard is Result.LeakGuard's type.
type leakGuard = struct {
	Steps         int
	Policy, Limit int64
	Share         float64
	Window        int
}

// mark is what the guard keeps of one reading.
type mark struct {
	gc, total float64
	live      uint64
}

// guard is the leak guard's state, used by the refresh's goroutine only.
type guard struct {
	on    bool
	seq   int                   // readings marked
	marks [guardWindow + 1]mark // the last readings, by seq
	top   uint64                // the greatest marked heap before the window
	base  uint64                // the marked heap that the first step's growth started above
	fell  int                   // readings in a row with the marked heap below base
	bound int                   // readings in a row with the goal set by GOMEMLIMIT, each after a marked one
	steps int
	share float64 // of the window of the last step
	warn  bool    // the first step's Warn line is logged
}

// guardEvent is what a reading made the guard do.
type guardEvent int

const (
	guardNone  guardEvent = iota
	guardStep             // it took a step
	guardReset            // it dropped its steps: the heap fell back
)

// step takes a reading r where the policy gives want for the limit hard,
// and returns the value with the guard's steps, filling in l.guard.
func (g *guard) step(want, hard int64, r gcReading, l *memLimit) (int64, guardEvent) {
	ev := guardNone
	prev := g.seq > 0
	g.top = max(g.top, g.marks[(g.seq+1)%len(g.marks)].live) // the reading that leaves the window
	g.marks[g.seq%len(g.marks)] = mark{r.forced(), r.cpu, r.live}
	g.seq++
	if g.fell++; r.live >= g.base {
		g.fell = 0
	}
	switch {
	case want <= 0 || hard <= want:
		// No soft limit, or no room above it (the policy's Min over a tiny
		// limit): the steps go; the knob's own line logs the change.
		g.bound, g.steps = 0, 0
	case g.steps > 0 && g.fell >= guardWindow/3:
		// The heap fell back below where the growth began, for a third of
		// a window: it was a peak.
		g.bound, g.steps, ev = 0, 0, guardReset
	case !r.bound():
		g.bound = 0
	case prev:
		g.bound = min(g.bound+1, guardWindow)
		if g.bound < guardWindow || g.steps >= guardSteps {
			break
		}
		now, then := g.marks[(g.seq-1)%len(g.marks)], g.marks[(g.seq-1-guardWindow)%len(g.marks)]
		share := 0.0
		if d := now.total - then.total; d > 0 {
			share = (now.gc - then.gc) / d
		}
		if from, grew := g.grew(); share > guardShare && grew {
			if g.steps == 0 {
				g.base = from
			}
			g.steps++
			g.share, g.bound, g.fell, ev = share, 0, 0, guardStep
		}
	}
	if g.steps == 0 {
		return want, ev
	}
	v := hard
	if g.steps < guardSteps {
		v = want + (hard-want)/guardSteps*int64(g.steps)
	}
	l.guard = leakGuard{Steps: g.steps, Policy: want, Limit: hard, Share: g.share, Window: guardWindow}
	return v, ev
}

// grew reports whether the marked heap grew to a height it never had: its
// least value in the last third of the last guardWindow readings is above
// from, its greatest in their first third and before them. A steady heap, a
// peak that has passed, a heap built in the first third and the rising edge
// of a sawtooth below an earlier peak do not pass; a heap that jumps up
// mid-window and stays passes once.
func (g *guard) grew() (from uint64, ok bool) {
	third := guardWindow / 3
	var last uint64 = math.MaxUint64
	from = g.top
	for i := range third {
		from = max(from, g.marks[(g.seq-guardWindow+i)%len(g.marks)].live)
		last = min(last, g.marks[(g.seq-1-i)%len(g.marks)].live)
	}
	return from, last > from
}

func guardValue(g leakGuard) slog.Value {
	return slog.GroupValue(slog.Int("steps", g.Steps), slog.Any("policy", logBytes(g.Policy)), slog.Any("limit", logBytes(g.Limit)),
		slog.String("gc_cpu", strconv.Itoa(int(math.Round(g.Share*100)))+"%"), slog.Int("readings", g.Window))
}

// logGuard logs what the guard did at a reading that set want for l: a Warn
// line for its first step (an operator should look), Info lines for the
// later steps and for a reset.
func (f *Fit) logGuard(ev guardEvent, want int64, l memLimit) {
	if f.log == nil || ev == guardNone {
		return
	}
	switch {
	case ev == guardReset:
		f.log.Info("fitgo: the heap fell back below where it grew from; the leak guard gives GOMEMLIMIT back to the policy",
			"GOMEMLIMIT", logBytes(want))
	case !f.rule.guard.warn:
		f.rule.guard.warn = true
		f.log.Warn("fitgo: the GC is pinned at GOMEMLIMIT (a leak?); the leak guard raises GOMEMLIMIT toward the memory limit, "+
			"where the process is killed instead of browning out (FITGO=leakguard=off or Options.NoLeakGuard to keep it)",
			"GOMEMLIMIT", logBytes(want), slog.Attr{Key: "leak_guard", Value: guardValue(l.guard)}, "source", l.source)
	default:
		f.log.Info("fitgo: the GC is pinned at GOMEMLIMIT again; the leak guard raises it another step",
			"GOMEMLIMIT", logBytes(want), slog.Attr{Key: "leak_guard", Value: guardValue(l.guard)})
	}
}
