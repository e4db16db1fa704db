package memlimit

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

func mibLine(n int64) []byte { return []byte(strconv.FormatInt(n*MiB, 10) + "\n") }

// sharedV2 is v2FS with a 512 MiB pod over the process in pod/app, whose
// own share is 100 MiB; the pod's working set is usage MiB.
func sharedV2(usage int64) fstest.MapFS {
	fsys := v2FS("", "", "536870912")
	fsys["proc/self/status"] = &fstest.MapFile{Data: []byte("RssAnon:\t102400 kB\nRssShmem:\t0 kB\n")}
	fsys["sys/fs/cgroup/pod/memory.current"] = &fstest.MapFile{Data: mibLine(usage)}
	fsys["sys/fs/cgroup/pod/memory.stat"] = &fstest.MapFile{Data: []byte("anon 1\ninactive_file 0\n")}
	return fsys
}

// sharedV1 is v1FS (the process in app, 512 MiB there) with a co-process:
// the cgroup's usage is usage MiB of which 100 MiB are the process's.
func sharedV1(usage int64) fstest.MapFS {
	fsys := v1FS("536870912", "536870912")
	fsys["proc/self/status"] = &fstest.MapFile{Data: []byte("RssAnon:\t102400 kB\n")}
	fsys["sys/fs/cgroup/memory/app/memory.usage_in_bytes"] = &fstest.MapFile{Data: mibLine(usage + 20)}
	fsys["sys/fs/cgroup/memory/app/memory.stat"] = &fstest.MapFile{Data: []byte("hierarchical_memory_limit 536870912\ntotal_inactive_file " +
		strconv.FormatInt(20*MiB, 10) + "\n")}
	return fsys
}

// sharedV1Limit is sharedV1 with limit (a memory.limit_in_bytes) in app.
func sharedV1Limit(usage int64, limit string) fstest.MapFS {
	fsys := sharedV1(usage)
	fsys["sys/fs/cgroup/memory/app/memory.limit_in_bytes"] = &fstest.MapFile{Data: []byte(limit + "\n")}
	fsys["sys/fs/cgroup/memory/app/memory.stat"] = &fstest.MapFile{Data: []byte("hierarchical_memory_limit " + limit +
		"\ntotal_inactive_file " + strconv.FormatInt(20*MiB, 10) + "\n")}
	return fsys
}

// soft is the policy's value for n MiB.
func soft(n int64) int64 { return Policy{}.SoftLimit(n * MiB) }

func TestApplyHeadroom(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fsys   fstest.MapFS
		opts   Options
		env    string // FITGO_MEMORY_LIMIT
		nonGo  int64  // memory outside Go, in RssAnon
		after  int64
		limit  int64
		others int64
		source string
		from   string
	}{
		{"v2 sibling holds 200 MiB under the pod", sharedV2(300), Options{}, "", 0, soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/pod", "memory.max"},
		{"v2 alone: the whole limit", sharedV2(104), Options{}, "", 0, soft(512), 512 * MiB, 0, "/sys/fs/cgroup/pod", "memory.max"},
		{"v2 headroom off", sharedV2(300), Options{NoHeadroom: true}, "", 0, soft(512), 512 * MiB, 0, "/sys/fs/cgroup/pod", "memory.max"},
		{"v1 co-process in the own cgroup", sharedV1(300), Options{}, "", 0, soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/memory/app", "memory.limit_in_bytes"},
		{"v1 alone", sharedV1(100), Options{}, "", 0, soft(512), 512 * MiB, 0, "/sys/fs/cgroup/memory/app", "memory.limit_in_bytes"},
		{"explicit limit below what fitgo sees", sharedV2(104), Options{}, "268435456", 0, soft(256), 256 * MiB, 0, "$FITGO_MEMORY_LIMIT", "FITGO_MEMORY_LIMIT"},
		{"explicit limit above the headroom", sharedV2(300), Options{}, "1073741824", 0, soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/pod", "memory.max"},
		{"UpperLimit wins over the variable", sharedV2(104), Options{UpperLimit: 128 * MiB}, "268435456", 0, soft(128), 128 * MiB, 0, "Options.UpperLimit", "UpperLimit"},
		{"explicit limit without a cgroup limit", v2FS("", "", ""), Options{}, "268435456", 0, soft(256), 256 * MiB, 0, "$FITGO_MEMORY_LIMIT", "FITGO_MEMORY_LIMIT"},
		// Issue 31, point 2: an upper bound is a limit like any other, and
		// the others (or the process's own memory outside Go) count
		// against it, with no cgroup limit or a looser one.
		{"v1 co-process under FITGO_MEMORY_LIMIT, no cgroup limit", sharedV1Limit(300, "9223372036854771712"), Options{}, "512Mi", 0,
			soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/memory/app", "FITGO_MEMORY_LIMIT"},
		{"v1 co-process under FITGO_MEMORY_LIMIT, a looser 1 GiB cgroup limit", sharedV1Limit(300, "1073741824"), Options{}, "536870912", 0,
			soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/memory/app", "FITGO_MEMORY_LIMIT"},
		{"v1 co-process under UpperLimit", sharedV1Limit(300, "1073741824"), Options{UpperLimit: 512 * MiB}, "", 0,
			soft(312), 312 * MiB, 200 * MiB, "/sys/fs/cgroup/memory/app", "UpperLimit"},
		{"v1 C memory under FITGO_MEMORY_LIMIT, no cgroup limit", sharedV1Limit(100, "9223372036854771712"), Options{}, "512Mi", 60 * MiB,
			soft(452), 452 * MiB, 60 * MiB, "/sys/fs/cgroup/memory/app", "FITGO_MEMORY_LIMIT"},
		{"v1 no co-process under FITGO_MEMORY_LIMIT", sharedV1Limit(100, "9223372036854771712"), Options{}, "512Mi", 0,
			soft(512), 512 * MiB, 0, "$FITGO_MEMORY_LIMIT", "FITGO_MEMORY_LIMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: noLimit}, tc.fsys)
			te.Getenv = func(k string) string {
				if k == "FITGO_MEMORY_LIMIT" {
					return tc.env
				}
				return ""
			}
			te.resident = func() int64 { return 100*MiB - tc.nonGo } // RssAnon is 100 MiB
			r, err := Plan(te.opts(tc.opts))
			require.NoError(t, err)
			assert.Equal(t, tc.after, r.After)
			assert.True(t, r.Changed)
			assert.Equal(t, tc.limit, r.Limit)
			assert.Equal(t, tc.others, r.Others)
			assert.Equal(t, tc.source, r.Source)
			assert.Equal(t, tc.from, r.From)
			assert.Zero(t, r.Floor)
			if tc.others > 0 {
				assert.Equal(t, 512*MiB, r.LevelLimit)
				assert.Contains(t, r.String(), "available "+formatBytes(tc.limit)+" = "+tc.from+" 512 MiB − others "+
					formatBytes(tc.others)+" at "+tc.source)
			}
		})
	}
}

// headroomLimits is a reading where the pod's limit is 512 MiB and the
// others hold others MiB there.
func headroomLimits(others int64) cgroup.Limits {
	l := memLimits(512*MiB, 0)
	if others > 0 {
		l = withLevel(l, (100+others)*MiB, 100*MiB)
	}
	return l
}

// withLevel is l with the process's cgroup, its limit 512 MiB, as the level
// where usage bytes are held, own bytes of them the process's RssAnon.
func withLevel(l cgroup.Limits, usage, own int64) cgroup.Limits {
	l.Memory.Levels = []cgroup.Level{{Dir: "/sys/fs/cgroup/app", Max: 512 * MiB, High: -1, Usage: usage}}
	l.Memory.RssAnon = own
	return l
}

// TestHeadroomHysteresis: sent readings, no clock. The value goes down at
// once when the others grow, up only by a step of 5 % or more while they
// bind it, and back to the whole limit at once when they leave.
func TestHeadroomHysteresis(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(headroomLimits(200))
	res, s := applyFollowing(t, te, Options{})
	require.Equal(t, soft(312), res.Status().After)
	now := time.Now()
	for i, step := range []struct {
		others int64
		want   int64
	}{
		{210, soft(302)}, // the others grow: lowered at once
		{205, soft(302)}, // 5 MiB back: below the step, kept
		{195, soft(302)}, // 15 MiB back: still below 5 % of 302 MiB (15.1 MiB)
		{180, soft(332)}, // 30 MiB back: raised
		{181, soft(331)}, // 1 MiB more: lowered at once
		{0, soft(512)},   // they leave: the whole limit at once
		{8, soft(512)},   // within the margin: no one else
		{100, soft(412)}, // back
		{95, soft(412)},  // a little less: kept
	} {
		assert.True(t, s.tick(s.f, now, headroomLimits(step.others), nil))
		v, _ := fk.get()
		assert.Equal(t, step.want, v, "step %d: others %d MiB", i, step.others)
	}
	st := res.Status()
	assert.Equal(t, int64(417*MiB), st.Limit, "the available memory of the last reading, though the value held")
	assert.Equal(t, int64(95*MiB), st.Others)
	assert.Equal(t, "/sys/fs/cgroup/app", st.Source)
}

// TestHeadroomFloor: when the policy's value for what the others leave is
// below the floor, the value is the floor, reported in the Result, with one
// Warn line for many readings; it spends at most half the policy's margin,
// a floor above what the others leave yields, and it never raises a value
// the policy leaves unset nor goes above the value without the others.
func TestHeadroomFloor(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	floor := int64(150 * MiB)
	te.floor = func() int64 { return floor }
	var logs bytes.Buffer
	te.src.set(headroomLimits(200))
	res, s := applyFollowing(t, te, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.Equal(t, soft(312), res.Status().After)
	now := time.Now()
	for _, tc := range []struct {
		others, want int64 // MiB
	}{
		{300, 0},   // 0.9 × 212 MiB is above the floor: the policy's value
		{350, 150}, // 0.9 × 162 MiB is below it, 0.95 × 162 MiB above: the floor
		{356, 1},   // 0.95 × 156 MiB is below it: half the margin
		{400, 0},   // the 112 MiB left is below it: the floor yields
		{500, -1},  // 0.9 × the 12 MiB left is below the policy's Min: unset
		{600, -1},  // usage above the limit leaves nothing
	} {
		assert.True(t, s.tick(s.f, now, headroomLimits(tc.others), nil))
		v, _ := fk.get()
		want := tc.want * MiB
		switch tc.want {
		case 0:
			want = soft(512 - tc.others)
		case 1:
			want = (156*MiB + soft(156)) / 2
		case -1:
			want = noLimit
		}
		assert.Equal(t, want, v, "others %d MiB", tc.others)
	}
	st := res.Status()
	assert.Zero(t, st.Floor)
	assert.Equal(t, int64(600*MiB), st.Others)
	assert.Zero(t, st.Limit, "512 MiB − 600 MiB leaves nothing")
	assert.NotContains(t, st.String(), "held at the floor")
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	assert.Contains(t, logs.String(), "GOMEMLIMIT held at the floor")

	// The floor never goes above the value without the others: 470 MiB is
	// below 0.95 × the 502 MiB left, above 0.9 × 512 MiB.
	floor = 470 * MiB
	assert.True(t, s.tick(s.f, now, headroomLimits(10), nil))
	v, _ := fk.get()
	assert.Equal(t, soft(512), v)
	// The others leave: the floor is gone.
	floor = 150 * MiB
	assert.True(t, s.tick(s.f, now, headroomLimits(0), nil))
	assert.Zero(t, res.Status().Floor)
}

// TestHeadroomFloorNotAboveWhatIsLeft: where the others leave less than the
// policy's Min can use (15.8 MiB of 512 MiB: 0.9 × that is 14.2 MiB), no
// floor raises GOMEMLIMIT to the Min or beyond what is left: it is unset,
// whether the floor yields, lies between the policy's value and what is
// left, or is not read.
func TestHeadroomFloorNotAboveWhatIsLeft(t *testing.T) {
	for _, floor := range []int64{150 * MiB, 15 * MiB, 0} {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, nil)
		te.floor = func() int64 { return floor }
		lim := withLevel(memLimits(512*MiB, 0), 100*MiB+512*MiB-158*MiB/10, 100*MiB) // 15.8 MiB left
		te.src.set(lim)
		r, err := Plan(te.opts(Options{}))
		require.NoError(t, err)
		assert.False(t, r.Changed, "floor %d MiB: GOMEMLIMIT %s, %s", floor/MiB, formatBytes(r.After), r)
		assert.Zero(t, r.Floor, "floor %d MiB", floor/MiB)
		assert.Contains(t, r.Reason, "below the minimum")
	}
}

// TestHeadroomFloorInForce is a property test over sent readings: whatever
// the others, the floor and the hysteresis do, the GOMEMLIMIT in force is
// what Status reports (After; and the floor when it says it holds one), and
// a floor between 0.9 and 0.95 × what is left is applied at the reading that
// computes it. The readings step the others and the live heap by a few MiB,
// as a jittering co-process and heap do.
func TestHeadroomFloorInForce(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	var floor int64
	te.floor = func() int64 { return floor }
	te.src.set(headroomLimits(200))
	res, s := applyFollowing(t, te, Options{NoLeakGuard: true})
	now := time.Now()
	rnd := rand.New(rand.NewPCG(31, 3))
	others, held, applied := int64(200*MiB), 0, 0
	for i := range 3000 {
		others = min(max(others+rnd.Int64N(9*MiB)-4*MiB, 100*MiB), 400*MiB)
		avail := 512*MiB - others
		floor = avail*int64(80+rnd.IntN(25))/100 + rnd.Int64N(MiB) // 0.8 to 1.04 × what is left
		lim := withLevel(memLimits(512*MiB, 0), others+100*MiB, 100*MiB)
		require.True(t, s.tick(s.f, now, lim, nil))
		v, _ := fk.get()
		st := res.Status()
		require.Equal(t, v, st.After, "reading %d", i)
		if st.Floor > 0 {
			held++
			require.Equal(t, st.Floor, v, "reading %d: %s", i, st)
		}
		if p := (Policy{}).SoftLimit(avail); floor > p && floor <= (avail+p)/2 { // 0.9 to 0.95 × what is left
			applied++
			require.Equal(t, floor, v, "reading %d: a floor of %.3f × what is left: %s", i, float64(floor)/float64(avail), st)
		}
	}
	assert.Greater(t, held, 100)
	assert.Greater(t, applied, 100)
}

// TestHeadroomFloorFromMetrics: the real floor is 1.25 × the live heap plus
// the runtime's memory outside the heap, so at least the live heap.
func TestHeadroomFloorFromMetrics(t *testing.T) {
	f := &rule{env: &env{}}
	keep := make([]byte, 64<<20)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtimeGC()
	metrics.Read(s)
	got, _, _ := f.readRuntime(true, false)
	assert.GreaterOrEqual(t, got, int64(s[0].Value.Uint64())*5/4)
	assert.Greater(t, got, int64(64<<20), "the 64 MiB kept live count")
	keep[0] = 1
}

// TestHeadroomTickAllocs: a tick where the others bind the value, which
// reads the floor's metrics, allocates nothing.
func TestHeadroomTickAllocs(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(headroomLimits(200))
	res, s := applyFollowing(t, te, Options{})
	lim := headroomLimits(200)
	now := time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.tick(s.f, now, lim, nil) }))
	assert.Equal(t, int64(200*MiB), res.Status().Others, "the headroom bound the value")
	require.NotNil(t, s.rule.samples, "the floor's metrics were read")
}

func runtimeGC() { runtime.GC() }

// ownLimits is a reading where the process is alone under a 512 MiB limit
// with rss MiB of resident anonymous memory (RssAnon), all it holds there.
func ownLimits(rss int64) cgroup.Limits {
	return withLevel(memLimits(512*MiB, 0), rss*MiB, rss*MiB)
}

// TestHeadroomNonGo: sent readings, no clock. The process's memory outside
// the Go runtime (RssAnon beyond what the runtime holds resident) is taken
// off with the others', at the reading that sees it, and given back at the
// next one after it is freed; within the margin it changes nothing, and
// NoNonGo leaves it to the ratio.
func TestHeadroomNonGo(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	resident := int64(100 * MiB) // the Go runtime's own account
	te.resident = func() int64 { return resident }
	te.src.set(ownLimits(100))
	res, s := applyFollowing(t, te, Options{})
	require.Equal(t, soft(512), res.Status().After)
	now := time.Now()
	for i, step := range []struct {
		rss, resident int64 // MiB
		want, nonGo   int64
	}{
		{250, 100, soft(362), 150 * MiB}, // 150 MiB of C memory: taken off at once
		{250, 250, soft(512), 0},         // the runtime's after all (a heap that grew): given back
		{250, 100, soft(362), 150 * MiB},
		{100, 100, soft(512), 0},        // freed: the whole limit at the next reading
		{110, 100, soft(512), 10 * MiB}, // within the margin (16 MiB): no change
		{100, 300, soft(512), 0},        // the runtime maps more than is resident: nothing outside
		{40, 300, soft(512), 0},         // its heap released to the OS is in neither
		{200, 40, soft(352), 160 * MiB}, // C memory in its place
	} {
		resident = step.resident * MiB
		assert.True(t, s.tick(s.f, now, ownLimits(step.rss), nil))
		v, _ := fk.get()
		assert.Equal(t, step.want, v, "step %d", i)
		assert.Equal(t, step.nonGo, res.Status().NonGo, "step %d", i)
	}
	st := res.Status()
	assert.Equal(t, int64(160*MiB), st.Others)
	assert.Contains(t, st.String(), "available 352 MiB = memory.max 512 MiB − others 160 MiB at /sys/fs/cgroup/app (own memory outside Go 160 MiB)")

	// Own above the usage (RssAnon charged to another cgroup, or not yet
	// uncharged): no more memory outside Go than the others hold.
	lazy := ownLimits(300)
	lazy.Memory.Levels[0].Usage, resident = 100*MiB, 100*MiB
	assert.True(t, s.tick(s.f, now, lazy, nil))
	v, _ := fk.get()
	assert.Equal(t, soft(512), v)
	assert.Zero(t, res.Status().NonGo)

	fk2 := &fakeKnob{value: noLimit}
	te2 := newTestEnv(fk2, nil)
	te2.resident = func() int64 { return 100 * MiB }
	te2.src.set(ownLimits(250))
	for _, o := range []Options{{NoNonGo: true}, {NoHeadroom: true}} {
		r, err := Plan(te2.opts(o))
		require.NoError(t, err)
		assert.Equal(t, soft(512), r.After, "%+v", o)
		assert.Zero(t, r.NonGo)
	}
	r, err := Plan(te2.opts(Options{}))
	require.NoError(t, err)
	assert.Equal(t, soft(362), r.After)
}

// TestHeadroomResidentFromMetrics: the runtime's resident memory is what it
// has mapped less what it released to the OS: a heap released by
// debug.FreeOSMemory leaves it, so it is not taken for memory outside Go.
func TestHeadroomResidentFromMetrics(t *testing.T) {
	f := &rule{env: &env{}}
	keep := make([]byte, 64<<20)
	for i := 0; i < len(keep); i += 4096 {
		keep[i] = 1
	}
	_, held, _ := f.readRuntime(true, false)
	assert.Greater(t, held, int64(64<<20))
	keep = nil
	debug.FreeOSMemory()
	_, resident, _ := f.readRuntime(true, false)
	assert.Less(t, resident, held-32<<20, "the released heap is not resident")
}

// lazyV1 is v1FS (the process in app, 512 MiB there) with the readings
// measured there with GODEBUG=madvdontneed=0 (MiB): usage, RssAnon, LazyFree
// of smaps_rollup, and total_inactive_file, which holds the heap freed
// with MADV_FREE (charged as rss, not cache).
func lazyV1(usage, rss, lazy, inactive int64) fstest.MapFS {
	fsys := v1FS("536870912", "536870912")
	fsys["proc/self/status"] = &fstest.MapFile{Data: []byte("RssAnon:\t" + strconv.FormatInt(rss<<10, 10) + " kB\n")}
	fsys["proc/self/smaps_rollup"] = &fstest.MapFile{Data: []byte("Anonymous:\t" + strconv.FormatInt(rss<<10, 10) +
		" kB\nLazyFree:\t" + strconv.FormatInt(lazy<<10, 10) + " kB\n")}
	fsys["sys/fs/cgroup/memory/app/memory.usage_in_bytes"] = &fstest.MapFile{Data: mibLine(usage)}
	fsys["sys/fs/cgroup/memory/app/memory.stat"] = &fstest.MapFile{Data: []byte("hierarchical_memory_limit 536870912\ntotal_cache 0\ntotal_shmem 0\n" +
		"total_rss " + strconv.FormatInt((usage-1)*MiB, 10) + "\ntotal_inactive_file " + strconv.FormatInt(inactive*MiB, 10) + "\n")}
	return fsys
}

// TestHeadroomLazyFree (issue 31, point 1): sent readings, through the
// cgroup reader. A 250 MiB heap freed with MADV_FREE (GODEBUG=
// madvdontneed=0) and regrown to 200 MiB: the pages written again are
// the runtime's, on the inactive file list still, but no longer LazyFree
// (the kernel cannot drop them); they neither cancel a 200 MiB co-process
// nor hide 150 MiB of C memory, and the freed heap is not memory outside Go.
func TestHeadroomLazyFree(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		usage, rss, lazy, inactive int64 // MiB
		resident                   int64 // MiB, the runtime's account
		after, others, nonGo       int64
	}{
		{"freed, next to a 200 MiB co-process", 453, 252, 250, 250, 5, soft(311), 201 * MiB, 0},
		{"regrown, next to a 200 MiB co-process", 453, 252, 50, 250, 205, soft(311), 201 * MiB, 0},
		{"regrown, and 150 MiB of C memory", 403, 402, 50, 250, 205, soft(364), 148 * MiB, 147 * MiB},
		{"regrown, no smaps_rollup: the lazily freed pages held", 403, 402, -1, 250, 205, soft(314), 198 * MiB, 197 * MiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := lazyV1(tc.usage, tc.rss, tc.lazy, tc.inactive)
			if tc.lazy < 0 {
				delete(fsys, "proc/self/smaps_rollup")
			}
			te := newTestEnv(&fakeKnob{value: noLimit}, fsys)
			te.resident = func() int64 { return tc.resident * MiB }
			r, err := Plan(te.opts(Options{}))
			require.NoError(t, err)
			assert.Equal(t, tc.after, r.After, "%s", r)
			assert.Equal(t, tc.others, r.Others, "%s", r)
			assert.Equal(t, tc.nonGo, r.NonGo, "%s", r)
		})
	}
}
