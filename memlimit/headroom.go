package memlimit

import (
	"errors"
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
)

// raiseStep is the hysteresis of the headroom: while the others bind the
// value, it goes down at once when they grow (the OOM killer does not wait)
// but up only by at least 1/raiseStep (5 %), so that a co-process whose
// memory jitters does not move it at every reading.
const raiseStep = 20

// runtimeMetrics are the runtime/metrics samples of a tick, read in one
// metrics.Read: the floor's (the first nFloor), then the leak guard's.
var runtimeMetrics = [...]string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",

	"/gc/heap/goal:bytes",
	"/gc/gogc:percent",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
}

// nFloor is how many of runtimeMetrics the floor reads.
const nFloor = 6

// floorOf is the floor from samples of runtimeMetrics (the first nFloor):
// 1.25 × the live heap marked by the last GC plus the runtime's memory
// outside the heap, the lowest GOMEMLIMIT that does not pin the GC (the heap
// may grow by a quarter before the next cycle, as with GOGC=25).
func floorOf(s []metrics.Sample) int64 {
	live, total := u64(s[0]), u64(s[1])
	nonHeap := uint64(0)
	if heap := u64(s[2]) + u64(s[3]) + u64(s[4]) + u64(s[5]); total > heap {
		nonHeap = total - heap
	}
	return int64(min(live+live/4+nonHeap, 1<<62))
}

// u64 and f64 are the value of a sample, 0 when it is not of their kind
// (the runtime does not have the metric).
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

// softLimit is GOMEMLIMIT for l by the policy. When the others bind l and
// the policy's value is below floor, the value is the floor, spending at
// most half the policy's margin, and l.floor says so; a floor above all the
// others leave yields to the policy (the heap does not fit). The floor only
// raises a value the policy sets (at least its Min), never above the value
// without the others.
func (f *Fit) softLimit(l *memLimit, floor int64) int64 {
	p := f.res.Policy
	v := p.SoftLimit(l.bytes)
	l.floor = min(floor, (l.bytes+v)/2, p.SoftLimit(l.plain))
	if l.others == 0 || v == 0 || floor > l.bytes || l.floor <= v {
		l.floor = 0
		return v
	}
	return l.floor
}

// setUpper sets the upper limit from o or else the environment variable's
// value env, and the reserve.
func (f *Fit) setUpper(o *Options, env string) error {
	v, err := envvar.MemoryLimit(env)
	f.reserve = o.Reserve
	switch opt := o.UpperLimit; {
	case opt < 0 || o.Reserve < 0:
		return fmt.Errorf("memlimit: invalid options: negative UpperLimit %d or Reserve %d", opt, o.Reserve)
	case opt > 0:
		f.upper = memLimit{bytes: opt, source: "Options.UpperLimit", from: "UpperLimit"}
	case err != nil: // ignored, as if unset
		f.res.SettingErr = fmt.Errorf("memlimit: %w; ignored", err)
	case v > 0:
		f.upper = memLimit{bytes: v, source: "$" + envvar.MemoryLimitVar, from: envvar.MemoryLimitVar}
	}
	if p := f.res.Policy; f.upper.bytes > 0 && p.SoftLimit(f.upper.bytes) == 0 {
		f.res.SettingErr = fmt.Errorf("memlimit: %s %s leaves less than the policy's minimum GOMEMLIMIT (%s); ignored",
			f.upper.from, formatBytes(f.upper.bytes), formatBytes(p.Min))
		f.upper = memLimit{}
	}
	return nil
}

// checkSettings checks the settings against the limit read at Apply: a
// reserve that leaves less than the policy's minimum of it is dropped, and a
// FITGO_MEMORY_LIMIT in bytes below it is kept with a warning, as the
// downward API's limits.memory with divisor 1 never is.
func (f *Fit) checkSettings(lim cgroup.Limits, env string) {
	p, bound := f.res.Policy, f.upper
	l, has := f.limit(lim)
	_, plain := strconv.ParseUint(strings.TrimSpace(env), 10, 63)
	if has && bound.from == envvar.MemoryLimitVar && plain == nil && l.source != "/proc/meminfo" && bound.bytes < l.bytes {
		f.res.SettingErr = fmt.Errorf("memlimit: %s=%s (%s) is below the %s limit %s, as limits.memory never is: a downward-API "+
			"divisor other than \"1\"? (in KiB it would be %s); kept", bound.from, env, formatBytes(bound.bytes), l.from,
			formatBytes(l.bytes), formatBytes(min(bound.bytes, 1<<52)<<10))
	}
	l, has, _ = f.bounded(l, has)
	if u := f.reserve; has && u > 0 && p.SoftLimit(l.bytes-u) == 0 && p.SoftLimit(l.bytes) > 0 {
		f.reserve = 0
		f.res.SettingErr = errors.Join(f.res.SettingErr, fmt.Errorf("memlimit: the reserve (FITGO=reserve, Reserve) of %s leaves "+
			"less than the policy's minimum GOMEMLIMIT (%s) of the %s %s limit; ignored", formatBytes(u), formatBytes(p.Min),
			l.from, formatBytes(l.bytes)))
	}
}
