package memlimit

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
)

// rule is the memory rule: how a reading of the limits becomes GOMEMLIMIT.
// Its steps run in this order (value):
//
//  1. The limit: the tightest memory.max (v1 memory.limit_in_bytes and
//     hierarchical_memory_limit) of the hierarchy; a limit of 0 is a limit.
//  2. memory.high, where it is lower; MemTotal (SystemMemory) when there is
//     neither; the upper limit (UpperLimit, FITGO_MEMORY_LIMIT) where it is
//     tighter, or the limit is MemTotal or none.
//  3. The others: at the level that leaves the process the least, what the
//     other processes hold comes off that level's limit (not NoHeadroom).
//  4. Memory outside Go: the process's own memory that the runtime does not
//     hold counts with the others (not NoNonGo).
//  5. The reserve (Options.Reserve), held where fitgo cannot see it.
//  6. Margin and tolerance: the Policy's ratio, Margin and Min.
//  7. The floor: where the others bind, never below what the live heap needs
//     (runtime/metrics), spending at most half the policy's margin; and the
//     hysteresis: down at once when the others grow (the OOM killer does not
//     wait), up only by 5 %, so that a jittering co-process does not move it.
//  8. The leak guard, on the refresh: steps toward the limit while a
//     growing heap pins the GC at GOMEMLIMIT (guard.go).
//  9. The GC policy's ceiling, from the available memory of step 5 and the
//     runtime's reading that value returns (gcPolicy.target, at tuneGC).
//
// What it does not do: it reads no file itself (cgroup does, once per
// reading), and it sets nothing; the knob sets what it returns.
type rule struct {
	p               Policy   // resolved
	upper           memLimit // bytes 0: none
	reserve         int64
	headroom, nonGo bool  // not NoHeadroom, not NoNonGo
	memTotal        int64 // MemTotal with SystemMemory, else 0
	readGC          bool  // the leak guard or the GC policy reads the GC's state
	env             *env

	// The refresh goroutine's only.
	last    int64        // the last reading's value, for the hysteresis
	log     *slog.Logger // of the floor's Warn line; nil once it is logged
	samples []metrics.Sample
	guard   guard
}

// raiseStep is the hysteresis (step 7): up only by at least 1/raiseStep.
const raiseStep = 20

// value is GOMEMLIMIT for a reading, want, with its limit l (has: there is
// one), the leak guard's event and the runtime's reading for the GC policy.
// It logs a Warn line the first time the floor holds the value.
func (r *rule) value(lim cgroup.Limits) (l memLimit, has bool, want int64, ev guardEvent, rt gcReading) {
	floor, resident, rt := r.readRuntime(r.headroom && len(lim.Memory.Levels) > 0, r.readGC)
	l, has, bound := r.bounded(r.limit(lim)) // 1, 2
	if h, ok := r.others(lim.Memory, resident); ok && r.headroom {
		if bound { // a limit like any other, above the level where the headroom sees the others
			h.from, h.level, h.bytes = l.from, l.bytes, avail(l.bytes, h.others)
		}
		if h.others > 0 && h.bytes < h.level && (!has || h.bytes < l.bytes) {
			h.bytes, h.plain = max(h.bytes, 0), l.bytes
			l, has = h, true
		}
		l.nonGo = h.nonGo
	}
	l.reserve = min(r.reserve, l.bytes) // 5
	l.bytes, l.plain = l.bytes-l.reserve, max(l.plain-l.reserve, 0)
	want = r.p.SoftLimit(l.bytes) // 6
	if l.floor = min(floor, (l.bytes+want)/2, r.p.SoftLimit(l.plain)); l.others == 0 || want == 0 || floor > l.bytes || l.floor <= want {
		l.floor = 0 // 7: the floor only raises a value the policy sets, never above the value without the others
	} else {
		want = l.floor
	}
	if l.others > 0 && l.floor == 0 && want > r.last && r.last > 0 && want-r.last < r.last/raiseStep {
		want = r.last // hysteresis; a floor is applied as it is reported
	}
	r.last = want
	if r.guard.on { // 8
		want, ev = r.guard.step(want, l.bytes, rt, &l)
	}
	if l.floor > 0 && r.log != nil {
		r.log.Warn("fitgo: the other processes leave too little memory; GOMEMLIMIT held at the floor",
			"GOMEMLIMIT", logBytes(want), "available", logBytes(l.bytes), "others", logBytes(l.others), "source", l.source, "floor", logBytes(l.floor))
		r.log = nil // once
	}
	return l, has, want, ev, rt
}

// others is the level of m that leaves the process the least (steps 3, 4):
// level its limit (math.MaxInt64: none), others what they hold, bytes the rest.
func (r *rule) others(m cgroup.Memory, resident int64) (best memLimit, ok bool) {
	for _, lv := range m.Levels {
		h := memLimit{source: lv.Dir}
		var held, lazy int64
		if h.level, h.from, held, lazy = levelOf(&m, lv); h.level < 0 {
			h.from, h.level = noFile, math.MaxInt64
		}
		own := max(m.RssAnon-lazy, 0) // of which the runtime holds what it has resident; the rest is outside Go
		goOwn := own
		if r.nonGo {
			goOwn = min(own, resident)
		}
		h.others = max(held-goOwn, 0)
		h.nonGo, h.bytes = min(own-goOwn, h.others), avail(h.level, h.others) // not pages charged elsewhere, out of held
		if !ok || h.bytes < best.bytes {
			best, ok = h, true
		}
	}
	return best, ok
}

// levelOf is the limit of level lv of m, the lower of memory.max (v1
// limit_in_bytes) and memory.high (-1: none), and its file; held, what the
// kernel cannot reclaim there: usage less the page cache and lazy, the
// process's MADV_FREE pages not written since.
func levelOf(m *cgroup.Memory, lv cgroup.Level) (limit int64, from limitFile, held, lazy int64) {
	limit, from = lv.Max, memoryMax
	if m.Version == cgroup.V1 {
		from = limitInBytes
	}
	if lv.High >= 0 && (limit < 0 || lv.High < limit) {
		limit, from = lv.High, memoryHigh
	}
	lazy = min(lv.Lazy, m.LazyFree)
	return limit, from, max(lv.Usage-lv.File-lazy, 0), lazy
}

// avail is what limit leaves when the others hold others: limit − others,
// or limit when others are within max(limit/32, 8 MiB), taken as the
// process's kernel and shared memory, so that a process alone sees no change.
func avail(limit, others int64) int64 {
	if others > max(limit/32, 8<<20) {
		return limit - others
	}
	return limit
}

// limitFile is the file a limit comes from (Result.From).
type limitFile uint8

const noFile, memoryMax, memoryHigh, limitInBytes, memTotal, upperOption, upperEnv limitFile = 0, 1, 2, 3, 4, 5, 6

func (f limitFile) String() string {
	return [...]string{"", "memory.max", "memory.high", "memory.limit_in_bytes", "MemTotal", "UpperLimit", envvar.MemoryLimitVar}[f]
}

// cgroup reports whether the limit is a cgroup's.
func (f limitFile) cgroup() bool { return f >= memoryMax && f <= limitInBytes }

// bounded is step 2's upper limit over l (has: there is one); bound: it binds.
func (r *rule) bounded(l memLimit, has bool) (memLimit, bool, bool) {
	if u := r.upper; u.bytes > 0 && (!has || l.from == memTotal || u.bytes < l.bytes) {
		return u, true, true
	}
	return l, has, false
}

// limit is the limit read, steps 1 and 2 but the upper limit.
func (r *rule) limit(lim cgroup.Limits) (l memLimit, has bool) {
	m := lim.Memory
	if v, ok := lim.MemoryMax(); ok {
		l, has = memLimit{bytes: v, source: m.MaxSource, from: memoryMax}, true
		if m.Version == cgroup.V1 {
			l.from = limitInBytes
		}
	}
	if v, ok := lim.MemoryHigh(); ok && (!has || v < l.bytes) {
		l, has = memLimit{bytes: v, source: m.HighSource, from: memoryHigh}, true
	}
	if !has && r.memTotal > 0 {
		l, has = memLimit{bytes: r.memTotal, source: "/proc/meminfo", from: memTotal}, true
	}
	return l, has
}

// setUpper sets the upper limit from o or else the environment variable's
// value env, and the reserve; setting is ignored (Result.SettingErr).
func (r *rule) setUpper(o *Options, env string) (invalid, setting error) {
	v, err := envvar.MemoryLimit(env)
	r.reserve = o.Reserve
	switch opt := o.UpperLimit; {
	case opt < 0 || o.Reserve < 0:
		return fmt.Errorf("memlimit: invalid options: negative UpperLimit %d or Reserve %d", opt, o.Reserve), nil
	case opt > 0:
		r.upper = memLimit{bytes: opt, source: "Options.UpperLimit", from: upperOption}
	case err != nil: // ignored, as if unset
		setting = fmt.Errorf("memlimit: %w; ignored", err)
	case v > 0:
		r.upper = memLimit{bytes: v, source: "$" + envvar.MemoryLimitVar, from: upperEnv}
	}
	if r.upper.bytes > 0 && r.p.SoftLimit(r.upper.bytes) == 0 {
		setting = fmt.Errorf("memlimit: %s %s leaves less than the policy's minimum GOMEMLIMIT (%s); ignored",
			r.upper.from, formatBytes(r.upper.bytes), formatBytes(r.p.Min))
		r.upper = memLimit{}
	}
	return nil, setting
}

// check checks the settings against the limit read at Apply: a reserve that
// leaves less than the policy's minimum of it is dropped, and a
// FITGO_MEMORY_LIMIT in bytes below it is kept with a warning, as the
// downward API's limits.memory with divisor 1 never is.
func (r *rule) check(lim cgroup.Limits, env string) (setting error) {
	p, bound := r.p, r.upper
	l, has := r.limit(lim)
	_, plain := strconv.ParseUint(strings.TrimSpace(env), 10, 63)
	if has && bound.from == upperEnv && plain == nil && l.from != memTotal && bound.bytes < l.bytes {
		setting = fmt.Errorf("memlimit: %s=%s (%s) is below the %s limit %s, as limits.memory never is: a downward-API "+
			"divisor other than \"1\"? (in KiB it would be %s); kept", bound.from, env, formatBytes(bound.bytes), l.from,
			formatBytes(l.bytes), formatBytes(min(bound.bytes, 1<<52)<<10))
	}
	l, has, _ = r.bounded(l, has)
	if u := r.reserve; has && u > 0 && p.SoftLimit(l.bytes-u) == 0 && p.SoftLimit(l.bytes) > 0 {
		r.reserve = 0
		setting = errors.Join(setting, fmt.Errorf("memlimit: the reserve (FITGO=reserve, Reserve) of %s leaves "+
			"less than the policy's minimum GOMEMLIMIT (%s) of the %s %s limit; ignored", formatBytes(u), formatBytes(p.Min),
			l.from, formatBytes(l.bytes)))
	}
	return setting
}

// The runtime/metrics of a reading: the floor's (the first nFloor), then the
// leak guard's and the GC policy's.
const mLive, mTotal, mObjects, mUnused, mFree, mReleased, nFloor = 0, 1, 2, 3, 4, 5, 6
const mGoal, mGOGC, mStacks, mGlobals, mGCCPU, mIdleMark, mCPU, nMetrics = 6, 7, 8, 9, 10, 11, 12, 13

// newSamples are the samples of a reading, by those indices.
func newSamples() []metrics.Sample {
	s := make([]metrics.Sample, nMetrics)
	for i, name := range [nMetrics]string{
		mLive:     "/gc/heap/live:bytes",
		mTotal:    "/memory/classes/total:bytes",
		mObjects:  "/memory/classes/heap/objects:bytes",
		mUnused:   "/memory/classes/heap/unused:bytes",
		mFree:     "/memory/classes/heap/free:bytes",
		mReleased: "/memory/classes/heap/released:bytes",
		mGoal:     "/gc/heap/goal:bytes",
		mGOGC:     "/gc/gogc:percent",
		mStacks:   "/gc/scan/stack:bytes",
		mGlobals:  "/gc/scan/globals:bytes",
		mGCCPU:    "/cpu/classes/gc/total:cpu-seconds",
		mIdleMark: "/cpu/classes/gc/mark/idle:cpu-seconds",
		mCPU:      "/cpu/classes/total:cpu-seconds",
	} {
		s[i].Name = name
	}
	return s
}

// readRuntime reads, with one metrics.Read, the floor and what the runtime
// holds resident when withFloor, and the GC's state when withGC.
func (r *rule) readRuntime(withFloor, withGC bool) (floor, resident int64, rt gcReading) {
	e, n := r.env, 0
	switch {
	case withGC && e.gc == nil:
		n = nMetrics
	case withFloor && (e.floor == nil || e.resident == nil):
		n = nFloor
	}
	if n > 0 {
		if r.samples == nil {
			r.samples = newSamples()
		}
		s := r.samples
		metrics.Read(s[:n])
		if withFloor { // resident: all the runtime has mapped but what it released to the OS
			floor, resident = floorOf(s), int64(min(u64(s[mTotal])-min(u64(s[mReleased]), u64(s[mTotal])), 1<<62))
		}
		if withGC {
			rt = gcOf(s) // stale when a fake gives it (n is nFloor), and replaced
		}
	}
	if withFloor && e.floor != nil {
		floor = e.floor()
	}
	if withFloor && e.resident != nil {
		resident = e.resident()
	}
	if withGC && e.gc != nil {
		rt = e.gc()
	}
	return floor, resident, rt
}

// floorOf is the floor: 1.25 × the live heap plus the runtime's memory
// outside the heap, the lowest GOMEMLIMIT that does not pin the GC (the heap
// may grow by a quarter before the next cycle, as with GOGC=25).
func floorOf(s []metrics.Sample) int64 {
	live, total := u64(s[mLive]), u64(s[mTotal])
	heap := u64(s[mObjects]) + u64(s[mUnused]) + u64(s[mFree]) + u64(s[mReleased])
	return int64(min(live+live/4+total-min(heap, total), 1<<62))
}

func gcOf(s []metrics.Sample) gcReading {
	total := u64(s[mTotal]) // and GOGC=off is -1, which the metric gives as a uint64
	return gcReading{live: u64(s[mLive]), goal: u64(s[mGoal]), gogc: int64(u64(s[mGOGC])), stacks: u64(s[mStacks]),
		globals: u64(s[mGlobals]), gcCPU: f64(s[mGCCPU]), idle: f64(s[mIdleMark]), cpu: f64(s[mCPU]),
		other: total - min(total, u64(s[mObjects])+u64(s[mUnused])+u64(s[mFree])+u64(s[mReleased]))} // total − the heap's spans
}

// u64 and f64 are a sample's value, 0 when the runtime does not have it.
func u64(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}

func f64(s metrics.Sample) float64 {
	if s.Value.Kind() == metrics.KindFloat64 {
		return s.Value.Float64()
	}
	return 0
}

// tinyReason says why the policy leaves GOMEMLIMIT unset for limit l.
func tinyReason(p Policy, l memLimit) string {
	lim := formatBytes(l.bytes) + " " + l.from.String()
	switch raw := p.raw(l.bytes); {
	case p.Margin > 0 && l.bytes-p.Margin <= 0:
		return "the margin (" + formatBytes(p.Margin) + ") leaves nothing of the " + lim + " limit"
	case raw <= 0:
		return "a " + lim + " limit leaves nothing for a soft limit; GOMEMLIMIT left unset"
	default:
		return formatBytes(raw) + " (from a " + formatBytes(l.bytes) + " limit) is below the minimum of " +
			formatBytes(p.Min) + ": too little for the heap next to the runtime's own memory; GOMEMLIMIT left unset"
	}
}
