package memlimit

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// The GC policy (Options.GC, FITGO=gc=auto). GOGC=100 runs a GC cycle each
// time the heap doubles, however much of the memory limit is unused. At each
// refresh reading the policy raises GOGC so that the heap goal, with the
// runtime's memory outside the heap, reaches gcShare of the memory available
// (Result.Limit: the limit less what the others hold and Reserve), and never
// GOMEMLIMIT: fewer cycles, less GC CPU, more memory in use. It never sets
// GOGC below the program's value (the base), so a heap too big for the share
// runs GOGC's cycles again and the leak guard sees what it sees without the
// policy; while the guard has steps in force, GOGC is the base. It acts only
// while the GOMEMLIMIT of fitgo's latest Apply is in force, which bounds the
// heap whatever GOGC says, gives the base back when that ends, and stops when
// the readings find a GOGC it did not set for gcConfirm. docs/gc.md has more.
const (
	// gcShare is the share of the available memory the heap goal may reach:
	// the ceiling of Uber's and ByteDance's tuners, which leaves GOMEMLIMIT's
	// 0.9 above it for a live heap that grows between two readings.
	gcShare = 0.7
	// heapMinimum is the runtime's least heap goal at GOGC=100; it scales
	// with GOGC, and bounds the value for a tiny live heap.
	heapMinimum = 4 << 20
	// maxGOGC bounds the value below the runtime's int32, which wraps (often
	// to off): a cycle per 1,000 × the live heap costs next to nothing.
	maxGOGC = 100000
	// gcConfirm: the policy hands over when the readings find a GOGC it did
	// not set for this long. The usual read of GOGC, SetGCPercent(-1) and
	// back, shows -1 until a GC's mark ends, which may outlast a reading.
	gcConfirm = 500 * time.Millisecond
)

// The reasons of Result.GC.
const (
	gcWaiting   = "waiting for the first reading"
	gcRaised    = "raised so that the heap goal reaches 70 % of the available memory"
	gcFull      = "the heap needs 70 % of the available memory at the program's GOGC"
	gcNoLimit   = "no GOMEMLIMIT from fitgo: GOGC is the program's"
	gcNoCycle   = "no GC cycle yet"
	gcGuard     = "the leak guard is raising GOMEMLIMIT: GOGC is the program's, so that a leak still fails fast"
	gcStopped   = "fitgo no longer follows the memory limit: GOGC given back"
	gcHandOver  = "GOGC was changed outside fitgo; no longer managed"
	gcNoRefresh = "the policy acts at the refresh's readings: no refresh"
	gcUndone    = "undone: GOGC given back"
)

// gogcKnob is GOGC as fitgo manages it: the Apply in force (latest), whose
// value is in force, and the value from before fitgo.
type gogcKnob struct {
	mu            sync.Mutex
	set           func(int) int // debug.SetGCPercent
	latest, owner *Fit          // owner: nil when the value is not fitgo's
	mine, orig    int
}

var processGOGC = &gogcKnob{set: debug.SetGCPercent}

// giveBack puts the value from before fitgo back when f's is in force,
// unless someone else changed it; g.mu is held.
func (g *gogcKnob) giveBack(f *Fit) {
	if g.owner != f {
		return
	}
	g.owner = nil
	if prev := g.set(g.orig); prev != g.mine {
		g.set(prev)
	}
}

// gcPolicy is a Fit's state of the policy, Result.GC. on does not change
// after Apply; the rest is guarded by the gogcKnob's mu.
type gcPolicy struct {
	on, done bool
	base     int
	ceiling  int64
	why      string
	logged   bool      // the first raise was logged
	odd      time.Time // since when the readings find a GOGC not the policy's; zero: none
}

// gogcNow is GOGC now, read without setting it.
func (f *Fit) gogcNow() int {
	if f.env.gc != nil {
		return int(f.env.gc().gogc)
	}
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(u64(s[0])))
}

// startGC starts the policy of an Apply, before its refresh starts. An
// Apply that takes the memory limit over (later) stops the earlier one's
// policy first, giving its value back: this one decides.
func (f *Fit) startGC(o *Options, later bool) {
	g := f.env.gogc
	g.mu.Lock()
	defer g.mu.Unlock()
	if later {
		g.latest.stopGCLocked("superseded by a later Apply")
		g.latest = f
	}
	if !o.GC {
		return
	}
	cur := f.gogcNow()
	p := &f.gc
	p.on, p.base, p.why = true, cur, gcWaiting
	switch env := f.env.Getenv("GOGC"); {
	case env != "":
		p.done, p.why = true, "GOGC="+env+" is set in the environment: left alone"
	case cur != 100:
		p.done, p.why = true, "GOGC is "+strconv.Itoa(cur)+": set by the program, and left alone"
	case o.Refresh <= 0:
		p.done, p.why = true, gcNoRefresh
	case o.Context != nil:
		context.AfterFunc(o.Context, func() { f.stopGC(gcStopped) })
	}
}

// stopGC ends the policy, giving the value from before fitgo back.
func (f *Fit) stopGC(why string) {
	f.env.gogc.mu.Lock()
	defer f.env.gogc.mu.Unlock()
	f.stopGCLocked(why)
}

// stopGCLocked is stopGC (f may be nil) with the gogcKnob's mu held.
func (f *Fit) stopGCLocked(why string) {
	if f != nil && f.gc.on && !f.gc.done {
		f.gc.done, f.gc.why, f.gc.ceiling = true, why, 0
		f.env.gogc.giveBack(f)
	}
}

// tuneGC sets GOGC for the runtime's reading r that the knob took at now
// (following: fitgo still follows the limit). It allocates nothing but for
// log lines.
func (f *Fit) tuneGC(now time.Time, following bool, want int64, has bool, l memLimit, r gcReading) {
	p := &f.gc
	if !p.on {
		return
	}
	g := f.env.gogc
	g.mu.Lock()
	if p.done {
		g.mu.Unlock()
		return
	}
	cur := int(r.gogc)
	mine := p.base
	if g.owner == f {
		mine = g.mine
	}
	var msg string
	switch odd := cur != mine && following; {
	case odd && p.odd.IsZero():
		p.odd = now // someone else's value, or a passing read: later readings tell
	case odd && now.Sub(p.odd) < gcConfirm:
	case cur != mine: // confirmed: someone else's; the owner is f or nil
		g.owner, p.done, p.why, p.ceiling = nil, true, gcHandOver, 0
		msg = "fitgo: GOGC changed by someone else; the GC policy stops"
	case !following:
		f.stopGCLocked(gcStopped)
	default:
		var v int
		p.odd = time.Time{}
		v, p.ceiling, p.why = p.target(want, has, l, r)
		if v > cur && cur > p.base && v-cur < cur/raiseStep {
			v = cur // hysteresis: raise only by a step worth taking
		}
		if v == cur {
			break
		}
		if prev := g.set(v); prev != cur {
			g.set(prev) // someone wrote in between: later readings tell
			p.odd = now
			break
		}
		if g.owner == nil {
			g.orig = cur
		}
		g.owner, g.mine, cur = f, v, v
		if v == p.base {
			g.owner = nil
		} else if !p.logged {
			p.logged, msg = true, "fitgo: GOGC raised by the GC policy"
		}
	}
	ceiling := p.ceiling
	g.mu.Unlock()
	if msg != "" && f.log != nil {
		f.log.Info(msg, "GOGC", cur, "heap_ceiling", ceiling, "available", l.bytes)
	}
}

// target is the policy's GOGC for GOMEMLIMIT want (has: fitgo's value is in
// force) and the available memory l at reading r, with the heap ceiling it
// aims at and why.
func (p *gcPolicy) target(want int64, has bool, l memLimit, r gcReading) (int, int64, string) {
	switch {
	case !has || want <= 0:
		return p.base, 0, gcNoLimit
	case l.guard.Steps > 0:
		return p.base, 0, gcGuard
	case r.live == 0:
		return p.base, 0, gcNoCycle
	}
	ceiling := min(int64(gcShare*float64(l.bytes)), want)
	// The runtime's heap goal: live + (live + stacks + globals) × GOGC/100,
	// and at least heapMinimum × GOGC/100.
	room := float64(ceiling) - float64(r.other)
	pct := min((room-float64(r.live))/float64(r.live+r.stacks+r.globals)*100, room/heapMinimum*100, maxGOGC)
	if pct <= float64(p.base) {
		return p.base, ceiling, gcFull
	}
	return int(pct), ceiling, gcRaised
}

// gcResult fills in r.GC from the live state and GOGC now.
func (f *Fit) gcResult(r *Result) {
	if !f.gc.on {
		return
	}
	f.env.gogc.mu.Lock()
	defer f.env.gogc.mu.Unlock()
	r.GC.On, r.GC.GOGC, r.GC.Base, r.GC.Ceiling, r.GC.Reason = true, f.gogcNow(), f.gc.base, f.gc.ceiling, f.gc.why
}

// gcText is r.GC for String, "" when the policy is off.
func (r Result) gcText() string {
	if !r.GC.On {
		return ""
	}
	s := "; GC policy: GOGC " + strconv.Itoa(r.GC.GOGC)
	if r.GC.Ceiling > 0 {
		s += " (heap ceiling " + formatBytes(r.GC.Ceiling) + ")"
	}
	return s + ": " + r.GC.Reason
}

// gcValue is r.GC as a log group.
func (r Result) gcValue() slog.Attr {
	return slog.Group("gc", slog.Int("gogc", r.GC.GOGC), slog.Int("base", r.GC.Base), slog.Int64("heap_ceiling", r.GC.Ceiling),
		slog.String("reason", r.GC.Reason))
}
