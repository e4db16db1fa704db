package memlimit

import (
	"bytes"
	"log/slog"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGC is a runtime whose GC the test drives: each reading adds one
// second of two CPUs, share of it to the GC. Its marked heap starts at
// 400 MiB; when bound, the goal is GOMEMLIMIT's (440 MiB) and the heap
// leaks 1 MiB a reading unless steady; else the goal is GOGC's.
type fakeGC struct {
	r      gcReading
	bound  bool
	steady bool
	share  float64
	reads  int
}

func (g *fakeGC) read() gcReading {
	g.reads++
	g.r.cpu += 2
	g.r.gcCPU += 2 * g.share
	g.r.gogc = 100
	if g.r.live == 0 {
		g.r.live = 400 << 20
	}
	g.r.goal = 2 * g.r.live
	if g.bound {
		g.r.goal = 440 << 20
		if !g.steady {
			g.r.live += 1 << 20
		}
	}
	return g.r
}

// phase is a run of readings with the same GC.
type phase struct {
	n     int
	bound bool
	share float64
	steps int // the guard's steps in force after the phase
}

// stepValue is GOMEMLIMIT with k of the guard's steps for a 512 MiB limit.
func stepValue(k int) int64 {
	base := soft(512)
	if k == guardSteps {
		return 512 * MiB
	}
	return base + (512*MiB-base)/guardSteps*int64(k)
}

// TestLeakGuard: readings sent to the tick, with a fake GC, no clock. The
// first reading only marks the CPU counters: the window counts the
// readings after one.
func TestLeakGuard(t *testing.T) {
	pinned, busy, calm := 0.45, 0.45, 0.10
	for _, tc := range []struct {
		name   string
		opts   Options
		phases []phase
		warns  int
	}{
		{"pinned for the window: one step", Options{}, []phase{{1, false, calm, 0}, {guardWindow - 1, true, pinned, 0}, {1, true, pinned, 1}}, 1},
		{"transient peaks shorter than the window", Options{}, []phase{{1, false, calm, 0},
			{guardWindow - 1, true, pinned, 0}, {1, false, busy, 0}, {guardWindow - 1, true, pinned, 0}, {1, false, calm, 0},
			{guardWindow - 1, true, pinned, 0}}, 0},
		{"GC CPU high, the goal GOGC's", Options{}, []phase{{3 * guardWindow, false, busy, 0}}, 0},
		{"the goal GOMEMLIMIT's, the GC calm", Options{}, []phase{{3 * guardWindow, true, calm, 0}}, 0},
		{"just below the threshold", Options{}, []phase{{1, false, calm, 0}, {2 * guardWindow, true, guardShare - 0.01, 0}}, 0},
		{"the window slides", Options{}, []phase{{1, false, calm, 0}, {guardWindow, true, calm, 0},
			{8, true, pinned, 0}, {1, true, pinned, 1}}, 1}, // (9 × 0.45 + 21 × 0.10) / 30 > 0.20 > (8 × 0.45 + 22 × 0.10) / 30
		{"a step, then a new window for the next", Options{}, []phase{{1, false, calm, 0}, {guardWindow, true, pinned, 1},
			{guardWindow - 1, true, pinned, 1}, {1, true, pinned, 2}}, 1},
		{"the steps stop at the hard limit", Options{}, []phase{{1, false, calm, 0}, {guardWindow, true, pinned, 1},
			{guardWindow, true, pinned, 2}, {guardWindow, true, pinned, 3}, {guardWindow, true, pinned, 4},
			{3 * guardWindow, true, pinned, 4}}, 1},
		{"the spiral stops, the heap still at the limit: the step stays", Options{}, []phase{{1, false, calm, 0},
			{guardWindow, true, pinned, 1}, {3 * guardWindow, true, calm, 1}}, 1},
		{"the goal GOGC's again, the heap not fallen: the step stays", Options{}, []phase{{1, false, calm, 0},
			{guardWindow, true, pinned, 1}, {3 * guardWindow, false, calm, 1}}, 1},
		{"NoLeakGuard", Options{NoLeakGuard: true}, []phase{{1, false, calm, 0}, {3 * guardWindow, true, pinned, 0}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: noLimit}
			te := newTestEnv(fk, nil)
			gc := &fakeGC{}
			te.gc = gc.read
			var logs bytes.Buffer
			te.src.set(memLimits(512*MiB, 0))
			tc.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			res, s := applyFollowing(t, te, tc.opts)
			require.Equal(t, soft(512), res.Status().After)
			now := time.Now()
			n := 0
			for i, p := range tc.phases {
				gc.bound, gc.share = p.bound, p.share
				for range p.n {
					require.True(t, s.tick(s.f, now, memLimits(512*MiB, 0), nil))
					n++
				}
				v, _ := fk.get()
				assert.Equal(t, stepValue(p.steps), v, "phase %d, after %d readings: %d steps", i, n, p.steps)
				g := res.Status().LeakGuard
				assert.Equal(t, p.steps, g.Steps, "phase %d", i)
				if p.steps > 0 {
					assert.Equal(t, soft(512), g.Policy)
					assert.Equal(t, 512*MiB, g.Limit)
					assert.Equal(t, guardWindow, g.Window)
					assert.Greater(t, g.Share, guardShare)
				}
			}
			if tc.opts.NoLeakGuard {
				assert.Zero(t, gc.reads, "the guard reads nothing when off")
			}
			assert.Equal(t, tc.warns, strings.Count(logs.String(), "level=WARN"), logs.String())
			if tc.warns > 0 {
				assert.Contains(t, logs.String(), "the leak guard raises GOMEMLIMIT toward the memory limit")
			}
		})
	}
}

// TestLeakGuardStatus: the Result says that the guard raised the value,
// and why; a later step logs Info, not Warn.
func TestLeakGuardStatus(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	gc := &fakeGC{share: 0.45, bound: true}
	te.gc = gc.read
	var logs bytes.Buffer
	te.src.set(memLimits(512*MiB, 0))
	res, s := applyFollowing(t, te, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 2*guardWindow + 1 {
		require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	}
	st := res.Status()
	assert.Equal(t, stepValue(2), st.After)
	assert.Equal(t, 512*MiB, st.Limit)
	assert.Contains(t, st.String(), "; raised by the leak guard (step 2 of 4 toward 512 MiB): the GC took 45 % of the CPU over 30 readings while the heap grew at GOMEMLIMIT")
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	assert.Contains(t, logs.String(), "level=INFO msg=\"fitgo: the GC is pinned at GOMEMLIMIT again; the leak guard raises it another step\"")
	assert.Contains(t, logs.String(), "leak_guard.steps=2")

	// A resize keeps the steps' share of the margin, never above the new
	// limit; the limit going away drops them.
	require.True(t, s.tick(s.f, time.Now(), memLimits(256*MiB, 0), nil))
	v, _ := fk.get()
	assert.Equal(t, soft(256)+(256*MiB-soft(256))/guardSteps*2, v)
	require.True(t, s.tick(s.f, time.Now(), memLimits(0, 0), nil))
	v, _ = fk.get()
	assert.Equal(t, noLimit, v)
	require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	v, _ = fk.get()
	assert.Equal(t, soft(512), v)
	assert.Zero(t, res.Status().LeakGuard)
}

// TestLeakGuardHeadroom: with the headroom, the hard limit is what the
// others leave at the binding level; a floor never reaches it (a floor above
// it yields), so it does not undo the guard's steps.
func TestLeakGuardHeadroom(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	gc := &fakeGC{share: 0.45, bound: true}
	te.gc = gc.read
	floor := int64(0)
	te.floor = func() int64 { return floor }
	te.src.set(headroomLimits(200))
	res, s := applyFollowing(t, te, Options{})
	for range guardSteps*guardWindow + 1 {
		require.True(t, s.tick(s.f, time.Now(), headroomLimits(200), nil))
	}
	v, _ := fk.get()
	assert.Equal(t, 312*MiB, v, "512 MiB − the others' 200 MiB")
	assert.Equal(t, 312*MiB, res.Status().LeakGuard.Limit)
	floor = 320 * MiB
	require.True(t, s.tick(s.f, time.Now(), headroomLimits(200), nil))
	v, _ = fk.get()
	assert.Equal(t, 312*MiB, v, "the guard's steps: a floor above what the others leave yields")
	assert.Equal(t, guardSteps, res.Status().LeakGuard.Steps)
}

// TestLeakGuardKeepsHandOver: the guard's value is fitgo's: someone else's
// change over it is handed over, Insist puts it back, Undo restores the
// value from before fitgo.
func TestLeakGuardKeepsHandOver(t *testing.T) {
	for _, insist := range []bool{false, true} {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, nil)
		gc := &fakeGC{share: 0.45, bound: true}
		te.gc = gc.read
		te.src.set(memLimits(512*MiB, 0))
		res, s := applyFollowing(t, te, Options{Insist: insist})
		for range guardWindow + 1 {
			require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
		}
		require.Equal(t, stepValue(1), res.Status().After)
		fk.appSet(GiB)
		assert.Equal(t, insist, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
		v, _ := fk.get()
		if insist {
			assert.Equal(t, stepValue(1), v, "put back")
		} else {
			assert.Equal(t, GiB, v, "handed over")
			assert.Contains(t, res.Status().Reason, "changed from 473.6 MiB to 1 GiB outside fitgo")
			continue
		}
		res.Undo()
		v, _ = fk.get()
		assert.Equal(t, noLimit, v)
	}
}

// TestLeakGuardSteadyHeap: a large heap that is steady keeps the GC busy
// with the goal GOMEMLIMIT's, but does not grow: no step, however long.
// A heap that then grows gets one once a third of the window shows it.
func TestLeakGuardSteadyHeap(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	gc := &fakeGC{share: 0.45, bound: true, steady: true}
	te.gc = gc.read
	te.src.set(memLimits(512*MiB, 0))
	res, s := applyFollowing(t, te, Options{})
	for range 4 * guardWindow {
		require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	}
	assert.Equal(t, soft(512), res.Status().After)
	assert.Zero(t, res.Status().LeakGuard)
	gc.steady = false
	n := 0
	for res.Status().After == soft(512) && n < 2*guardWindow {
		require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
		n++
	}
	assert.Equal(t, stepValue(1), res.Status().After)
	// The step comes once the whole last third of the window is above the
	// steady heap of its first third.
	assert.Equal(t, guardWindow/3, n, "readings of growth before the step")
}

// TestLeakGuardGrew: the marked heap's least value in the last third of
// the window must be above its greatest in the first third and before the
// window. Each case has a window before the one tested: live(i) for i < 0.
func TestLeakGuardGrew(t *testing.T) {
	for _, tc := range []struct {
		name string
		live func(i int) uint64 // of reading i of the window
		want bool
	}{
		{"steady", func(int) uint64 { return 400 }, false},
		{"noise around a steady heap", func(i int) uint64 { return 400 + uint64((i+3*guardWindow)%3)*5 }, false},
		{"built in the first reading, steady since", func(i int) uint64 { return map[bool]uint64{true: 100, false: 400}[i <= 0] }, false},
		{"a peak that passed", func(i int) uint64 { return map[bool]uint64{true: 500, false: 400}[i > 10 && i < 20] }, false},
		{"a leak", func(i int) uint64 { return uint64(400 + i) }, true},
		{"a leak with noise", func(i int) uint64 { return uint64(400+i) + uint64(i&1)*6 }, true},
		{"a rising edge below an earlier peak", func(i int) uint64 { return uint64(400+i) + map[bool]uint64{true: 40}[i < 0] }, false},
		{"a rising edge above an earlier peak", func(i int) uint64 { return uint64(400+i) + map[bool]uint64{true: 20}[i < 0] }, true},
	} {
		var g guard
		for i := -guardWindow; i < guardWindow; i++ { // a window before this one
			g.step(0, 0, gcReading{live: tc.live(i)}, nil) // no soft limit: it only marks
		}
		from, grew := g.grew()
		assert.Equal(t, tc.want, grew, tc.name)
		assert.GreaterOrEqual(t, from, tc.live(guardWindow/3-1), tc.name)
	}
}

func TestGCReadingBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    gcReading
		want bool
	}{
		{"GOGC's goal", gcReading{goal: 800, live: 400, gogc: 100}, false},
		{"stacks and globals count", gcReading{goal: 510, live: 400, stacks: 60, globals: 40, gogc: 25}, true}, // 525 with them, 500 without,
		{"below GOGC's", gcReading{goal: 460, live: 400, gogc: 100}, true},
		{"within 1 %", gcReading{goal: 795, live: 400, gogc: 100}, false},
		{"GOGC=off", gcReading{goal: 460, live: 400, gogc: -1}, true},
		{"no GC yet", gcReading{goal: 4 << 20}, false},
	} {
		assert.Equal(t, tc.want, tc.r.bound(), tc.name)
	}
}

// TestGCReadingFromMetrics: the real reading of this test process, whose
// GOMEMLIMIT is off: GOGC sets the goal, and the GC's CPU is part of the
// total.
func TestGCReadingFromMetrics(t *testing.T) {
	runtimeGC()
	f := &rule{env: &env{}}
	_, _, r := f.readRuntime(false, true)
	assert.Greater(t, r.live, uint64(0))
	assert.Greater(t, r.goal, r.live)
	assert.NotZero(t, r.gogc)
	assert.False(t, r.bound())
	assert.Greater(t, r.cpu, 0.0)
	assert.LessOrEqual(t, r.gcCPU, r.cpu)
	s := newSamples()
	metrics.Read(s)
	for i := range s {
		assert.NotEqual(t, metrics.KindBad, s[i].Value.Kind(), s[i].Name)
	}
	s[mGOGC].Value = metrics.Value{} // a GOGC the runtime does not give: 0, not bound
	assert.Zero(t, gcOf(s).gogc)
}

// seg is a run of n readings whose marked heap goes in a line from its
// value before the run to to MiB, with the GC's share of the CPU.
type seg struct {
	n     int
	to    float64
	share float64
	steps int // the guard's steps in force after the run
}

// TestLeakGuardShapes: heaps sent as readings to the tick under a 512 MiB
// limit, with the goal GOMEMLIMIT's (440 MiB) when GOGC's is above it. A
// sawtooth takes no step, however long each rise, after its first; a step
// is given back once the heap has been below where its growth began for a
// third of a window, also with GOGC=off, where the goal is always
// GOMEMLIMIT's; a leak, fast or slow, still steps.
func TestLeakGuardShapes(t *testing.T) {
	pinned, calm := 0.45, 0.01
	third := guardWindow / 3
	tooth := func(low, high float64) []seg { // a fall, 6 readings low, 40 up, 4 held
		return []seg{{1, low, pinned, 0}, {5, low, pinned, 0}, {40, high, pinned, 0}, {4, high, pinned, 0}}
	}
	for _, tc := range []struct {
		name  string
		gogc  int64
		start float64
		segs  []seg
	}{
		{"a sawtooth from its top", 100, 0, slices.Concat([]seg{{4, 420, calm, 0}},
			tooth(320, 419), tooth(320, 421), tooth(320, 418), tooth(320, 420), tooth(320, 419))},
		{"a sawtooth from its bottom: its first rise steps, its fall gives the step back", 100, 320, slices.Concat(
			[]seg{{1, 320, calm, 0}, {40, 420, pinned, 1}, {4, 420, pinned, 1}, {1, 320, pinned, 1}, {third - 1, 320, pinned, 0}},
			tooth(320, 419), tooth(320, 421), tooth(320, 418))},
		{"a leak that is freed: the step given back", 100, 300, []seg{{1, 300, calm, 0}, {31, 331, pinned, 1},
			{1, 326, pinned, 1}, {guardWindow, 326, calm, 1}, {1, 250, calm, 1}, {third - 2, 250, calm, 1}, {1, 250, calm, 0},
			{3 * guardWindow, 250, pinned, 0}}},
		{"a leak that falls for less than a third of a window keeps its step", 100, 300, []seg{{1, 300, calm, 0},
			{31, 331, pinned, 1}, {1, 250, pinned, 1}, {third - 2, 250, pinned, 1}, {1, 331, pinned, 1}, {guardWindow, 331, pinned, 1}}},
		{"GOGC=off, a burst: the steps given back", -1, 24, []seg{{1, 24, calm, 0}, {60, 400, pinned, 2},
			{1, 24, pinned, 2}, {third - 2, 24, pinned, 2}, {1, 24, calm, 0}, {4 * guardWindow, 24, calm, 0}}},
		{"GOGC=off, a leak steps", -1, 24, []seg{{1, 24, calm, 0}, {guardWindow, 54, pinned, 1}, {guardWindow, 84, pinned, 2}}},
		{"a fast leak steps", 100, 256, []seg{{1, 256, calm, 0}, {guardWindow, 376, pinned, 1},
			{guardWindow, 496, pinned, 2}}},
		{"a slow leak steps", 100, 340, []seg{{1, 340, calm, 0}, {guardWindow, 362.5, pinned, 1},
			{guardWindow, 385, pinned, 2}, {guardWindow, 407.5, pinned, 3}, {guardWindow, 430, pinned, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: noLimit}
			te := newTestEnv(fk, nil)
			var r gcReading
			live, share := tc.start, 0.0
			te.gc = func() gcReading {
				r.cpu += 2
				r.gcCPU += 2 * share
				r.live, r.gogc = uint64(live*float64(MiB)), tc.gogc
				r.goal = 440 << 20
				if tc.gogc >= 0 {
					r.goal = min(r.goal, r.live*uint64(100+tc.gogc)/100)
				}
				return r
			}
			te.src.set(memLimits(512*MiB, 0))
			res, s := applyFollowing(t, te, Options{})
			n := 0
			for i, sg := range tc.segs {
				from := live
				for k := range sg.n {
					live, share = from+(sg.to-from)*float64(k+1)/float64(sg.n), sg.share
					require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
					n++
				}
				v, _ := fk.get()
				assert.Equal(t, stepValue(sg.steps), v, "run %d, after %d readings: %d steps", i, n, sg.steps)
				assert.Equal(t, sg.steps, res.Status().LeakGuard.Steps, "run %d", i)
			}
		})
	}
}
