package memlimit

import (
	"cmp"
	"context"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"

	"github.com/fitgo/fitgo/internal/knob"
)

// The GC policy (Options.GC, FITGO=gc=auto) spends memory only where it
// buys CPU: the GC's share of the CPU is about cost / (GOGC/100), whatever
// the heap's size, so it measures cost (measure) and sets GOGC to 100 × cost
// / gcTarget, within the heap ceiling and never below the program's GOGC
// (target): down at once when the ceiling falls, up only by 5 %, and the
// base while the leak guard steps. It acts only while fitgo's GOMEMLIMIT,
// which bounds the heap whatever GOGC says, is in force. docs/gc.md has the
// model, the rule, the hand-over and the measurements.
const (
	// gcShare is the default share of the available memory the heap goal
	// may reach: the ceiling of Uber's and ByteDance's tuners, which leaves
	// GOMEMLIMIT's 0.9 above it for a live heap that grows between two
	// readings.
	gcShare = 0.7
	// gcTarget is the GC's share of the CPU the policy aims at (docs/gc.md:
	// chosen by a sweep of live heaps and allocation rates).
	gcTarget = 0.02
	gcWindow = 1.0 // the least CPU time, in seconds, a measure of the GC's cost spans
	// heapMinimum is the runtime's least heap goal at GOGC=100; it scales
	// with GOGC, and bounds the value for a tiny live heap.
	heapMinimum = 4 << 20
	// maxGOGC bounds the value below the runtime's int32, which wraps (often
	// to off): a cycle per 1,000 × the live heap costs next to nothing.
	maxGOGC = 100000
	// gcConfirm is GOGC's Spec.Confirm: how long readings must find a GOGC
	// the policy did not set before it hands over.
	gcConfirm = 500 * time.Millisecond
)

// The reasons of Result.GC.
const (
	gcWaiting   = "waiting for the first reading"
	gcCeiling   = "raised to the heap ceiling: the GC takes more than 2 % of the CPU below it"
	gcTargeted  = "raised so that the GC takes about 2 % of the CPU"
	gcCheap     = "the GC takes under 2 % of the CPU at the program's GOGC"
	gcNoCost    = "no GC cycle's cost measured yet"
	gcFull      = "the heap needs the share of the available memory at the program's GOGC"
	gcNoLimit   = "no GOMEMLIMIT from fitgo: GOGC is the program's"
	gcNoCycle   = "no GC cycle yet"
	gcGuard     = "the leak guard is raising GOMEMLIMIT: GOGC is the program's, so that a leak still fails fast"
	gcStopped   = "fitgo no longer follows the memory limit: GOGC given back"
	gcHandOver  = "GOGC was changed outside fitgo; no longer managed"
	gcNoRefresh = "the policy acts at the refresh's readings: no refresh"
	gcUndone    = "undone: GOGC given back"
)

// processGOGC is the process's GOGC, the GC policy's knob.
var processGOGC = newGCKnob(readGOGC(), debug.SetGCPercent)

func newGCKnob(get func() int, set func(int) int) *knob.Knob[int] {
	return knob.New(knob.Spec[int]{Name: "GOGC", Value: "GOGC", Limit: "memory available", Key: "heap_ceiling", Format: strconv.Itoa,
		Confirm: gcConfirm}, get, set, set)
}

// readGOGC reads GOGC without setting it. The knob calls it with its lock
// held, so one sample serves every call.
func readGOGC() func() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	return func() int { metrics.Read(s); return int(int64(u64(s[0]))) } // off is -1, as a uint64
}

// gcState is what a reading of the GC policy found.
type gcState struct {
	ceiling int64 // the heap ceiling it aims at (0: none)
	why     string
}

// gcPolicy is a Fit's GC policy. on, share and base do not change after
// Apply; the rest is the refresh goroutine's.
type gcPolicy struct {
	on, logged       bool // logged: the first raise
	base             int  // the program's GOGC
	share            float64
	why              string                  // why the policy did not start
	fit              *knob.Fit[int, gcState] // nil: it did not start
	cost, gcCPU, cpu float64                 // the GC's CPU share at a growth of 1 (0: not measured); the last reading's
}

// startGC starts the policy of an Apply, before its refresh. An Apply that
// takes the memory limit over (later) first stops the earlier one's policy,
// which gives its value back.
func (f *Fit) startGC(o *Options, later bool) {
	g := f.env.gogc
	if later {
		g.Yield()
	}
	if !o.GC {
		return
	}
	p := &f.gc
	p.on, p.share = true, cmp.Or(o.GCShare, gcShare)
	for p.fit == nil && p.why == "" {
		cur := g.Current()
		p.base = cur
		switch env := f.env.Getenv("GOGC"); {
		case env != "":
			p.why = "GOGC=" + env + " is set in the environment: left alone"
		case cur != 100:
			p.why = "GOGC is " + strconv.Itoa(cur) + ": set by the program, and left alone"
		case o.Refresh <= 0:
			p.why = gcNoRefresh
		case !later:
			p.why = gcNoLimit
		default:
			_, _, r := f.rule.readRuntime(false, true)
			p.gcCPU, p.cpu = r.gcCPU, r.cpu
			a := &knob.Apply[int, gcState]{Env: &knob.Env[int]{Knob: g}, Refresh: o.Refresh}
			p.fit, _ = a.Start(&knob.Reading[int, gcState]{Limit: gcState{why: gcWaiting}}, knob.Outcome[int]{Before: cur, After: cur})
		}
	}
	if p.fit != nil && o.Context != nil {
		context.AfterFunc(o.Context, func() { f.stopGC(gcStopped) })
	}
}

// stopGC ends the policy for why, giving the value from before fitgo back.
func (f *Fit) stopGC(why string) {
	if p := f.gc.fit; p != nil {
		p.Stop(why)
		p.Undo()
	}
}

// tuneGC steps GOGC at a reading r of the memory limit's Fit (following:
// it still follows) that set want (has: fitgo's value is in force) for the
// available memory l. It allocates nothing but for log lines.
func (f *Fit) tuneGC(now time.Time, following bool, want int64, has bool, l memLimit, r gcReading) {
	p := &f.gc
	if p.fit == nil {
		return
	}
	if !following {
		f.stopGC(gcStopped)
		return
	}
	p.measure(r)
	v, ceiling, why := p.target(want, has, l, r)
	was := p.fit.State().Following
	p.fit.Step(now, knob.Reading[int, gcState]{Want: v, Has: v != p.base, Limit: gcState{ceiling, why}})
	if f.log == nil || p.logged && !was {
		return
	}
	switch st := p.fit.State(); {
	case st.HandedOver && was:
		f.log.Info("fitgo: GOGC changed by someone else; the GC policy stops", "GOGC", st.Value, "was", st.From)
	case !p.logged && st.Updates > 0: // the first change is a raise
		p.logged = true
		f.log.Info("fitgo: GOGC raised by the GC policy", "GOGC", st.Value, "heap_ceiling", logBytes(ceiling), "available", logBytes(l.bytes))
	}
}

// measure takes the GC's cost from a reading r, when GCs ended over at
// least gcWindow of CPU since the last measure (the first at Apply, so that
// a start-up's heap building is not taken for the cost to come): the GC's
// share of the CPU in between times the growth in force (GOGC/100, or less
// where GOMEMLIMIT bounds the goal), averaged with the earlier cost.
func (p *gcPolicy) measure(r gcReading) {
	d := r.cpu - p.cpu
	if d < gcWindow {
		return // too short: one forced cycle is not the cost of the allocation
	}
	if r.live > 0 && r.goal > r.live {
		c := (r.gcCPU - p.gcCPU) / d * r.growth(float64(r.goal))
		if p.cost > 0 {
			c = (p.cost + c) / 2
		}
		p.cost = c
	}
	p.gcCPU, p.cpu = r.gcCPU, r.cpu
}

// target is the policy's GOGC at reading r, as tuneGC's, with the heap
// ceiling and why.
func (p *gcPolicy) target(want int64, has bool, l memLimit, r gcReading) (int, int64, string) {
	switch {
	case !has || want <= 0:
		return p.base, 0, gcNoLimit
	case l.guard.Steps > 0:
		return p.base, 0, gcGuard
	case r.live == 0:
		return p.base, 0, gcNoCycle
	}
	ceiling := min(int64(p.share*float64(l.bytes)), want)
	mem := min(r.growth(float64(ceiling)-float64(r.other))*100, maxGOGC)
	cpu := p.cost / gcTarget * 100
	switch {
	case mem <= float64(p.base):
		return p.base, ceiling, gcFull
	case p.cost == 0:
		return p.base, ceiling, gcNoCost
	}
	v, why := int(mem), gcCeiling
	switch {
	case cpu <= float64(p.base):
		v, why = p.base, gcCheap
	case cpu < mem:
		v, why = int(cpu), gcTargeted
	}
	switch cur := int(r.gogc); {
	case v > cur && cur > p.base && v-cur < cur/raiseStep: // up only by a step worth taking
		v = cur
	case v < cur && float64(cur) <= mem && v > cur*9/10: // down for the memory at once, for the CPU by a tenth
		v = cur
	}
	return v, ceiling, why
}

// growth is GOGC/100 for the heap goal goal at reading r: the runtime's
// goal, live + (live + stacks + globals) × GOGC/100 and at least
// heapMinimum × GOGC/100, solved for GOGC/100; for the growth in force and
// the room under the ceiling.
func (r gcReading) growth(goal float64) float64 {
	return min((goal-float64(r.live))/float64(r.live+r.stacks+r.globals), goal/heapMinimum)
}

// gcResult fills in r.GC from the live state and GOGC now.
func (f *Fit) gcResult(r *Result) {
	p := &f.gc
	if !p.on {
		return
	}
	r.GC.On, r.GC.Base, r.GC.GOGC, r.GC.Reason = true, p.base, f.env.gogc.Current(), p.why
	if p.fit == nil {
		return
	}
	st := p.fit.State()
	r.GC.GOGC, r.GC.Reason = st.Value, st.Reason
	switch {
	case st.HandedOver:
		r.GC.Reason = gcHandOver
	case st.Following:
		r.GC.Ceiling, r.GC.Reason = st.Limit.ceiling, st.Limit.why
	}
}
