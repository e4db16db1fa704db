package memlimit

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcEnv is a test env whose runtime has a live heap of live bytes and other
// bytes outside the heap; its GOGC is te.gogc. A GC ends between any two
// readings, which are a second apart on one CPU, and takes cost / growth of
// the CPU, where the growth is GOGC/100, as the policy's model has it.
func gcEnv(live, other *uint64, cost float64) *testEnv {
	te := newTestEnv(&fakeKnob{value: noLimit}, nil)
	var r gcReading
	te.gc = func() gcReading {
		v, _ := te.gogc.get()
		r.live, r.other, r.gogc, r.goal = *live, *other, int64(v), *live+*live*uint64(v)/100
		r.cpu++
		r.gcCPU += cost / (float64(v) / 100)
		return r
	}
	return te
}

// TestGCPolicy: readings sent to the tick. GOGC rises so that the heap
// goal plus the memory outside the heap is 70 % of the available memory,
// comes down at the very reading that finds less of it (a resize, or the
// others growing), never below the program's 100, and goes back to 100
// when the limit goes away.
func TestGCPolicy(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	res, s := applyFollowing(t, te, Options{GC: true})
	st := res.Status()
	assert.Equal(t, 100, st.GC.GOGC)
	assert.Equal(t, gcWaiting, st.GC.Reason)
	now := time.Now()
	for i, step := range []struct {
		lim     int64 // memory.max, MiB
		others  int64 // MiB, under a 512 MiB limit
		gogc    int
		ceiling int64
		why     string
	}{
		{lim: 1024, gogc: 606, ceiling: 751619276, why: gcCeiling},
		{lim: 1024, gogc: 606, ceiling: 751619276, why: gcCeiling},
		{lim: 512, gogc: 248, ceiling: 375809638, why: gcCeiling}, // resized: down at once
		{lim: 200, gogc: 100, ceiling: 146800640, why: gcFull},    // the share holds less than 2 × live
		{lim: 1024, gogc: 606, ceiling: 751619276, why: gcCeiling},
		{others: 100, gogc: 178, ceiling: 302409318, why: gcCeiling}, // 412 MiB available
		{others: 200, gogc: 108, ceiling: 229008998, why: gcCeiling}, // the co-process grew: down at once
		{lim: -1, gogc: 100, why: gcNoLimit},
	} {
		lim := memLimits(step.lim*MiB, 0)
		if step.others > 0 {
			lim = headroomLimits(step.others)
		}
		if step.lim < 0 {
			lim = memLimits(0, 0)
		}
		require.True(t, s.tick(s.f, now, lim, nil))
		v, _ := te.gogc.get()
		assert.Equal(t, step.gogc, v, "reading %d", i)
		st := res.Status().GC
		assert.Equal(t, step.gogc, st.GOGC, "reading %d", i)
		assert.Equal(t, step.ceiling, st.Ceiling, "reading %d", i)
		assert.Equal(t, step.why, st.Reason, "reading %d", i)
		assert.Equal(t, 100, st.Base)
	}
	_, sets := te.gogc.get()
	assert.Equal(t, 7, sets, "one write per change, none when the value holds")

	// The heap grows: GOGC comes down with it, never below the base.
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	live = uint64(300 * MiB)
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	v, _ := te.gogc.get()
	assert.Equal(t, 135, v) // (751619276 − 10 MiB − 300 MiB) / 300 MiB × 100
	live = uint64(400 * MiB)
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	v, _ = te.gogc.get()
	assert.Equal(t, 100, v)
	assert.Contains(t, res.Status().String(), "; GC policy: GOGC 100 (heap ceiling 716.8 MiB): "+gcFull)
}

// TestGCPolicyHysteresis: a raise smaller than 5 % waits; a fall does not.
func TestGCPolicyHysteresis(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	_, s := applyFollowing(t, te, Options{GC: true})
	now := time.Now()
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	live = uint64(98 * MiB) // 621: less than 5 % up
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	v, _ := te.gogc.get()
	assert.Equal(t, 606, v)
	live = uint64(101 * MiB) // 599
	require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
	v, _ = te.gogc.get()
	assert.Equal(t, 599, v)
}

// TestGCPolicyHandOver: GOGC set by the program, after fitgo raised it,
// before Apply, racing a reading, or in the environment, is the program's:
// fitgo stops touching it, and says why.
func TestGCPolicyHandOver(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	t.Run("after a raise", func(t *testing.T) {
		te := gcEnv(&live, &other, 0.5)
		te.src.set(memLimits(1024*MiB, 0))
		var logs bytes.Buffer
		res, s := applyFollowing(t, te, Options{GC: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		now := time.Now()
		require.True(t, s.tick(s.f, now, memLimits(1024*MiB, 0), nil))
		te.gogc.appSet(50)
		_, sets := te.gogc.get()
		require.True(t, s.tick(s.f, now.Add(time.Second), memLimits(512*MiB, 0), nil))
		require.True(t, s.tick(s.f, now.Add(2*time.Second), memLimits(1024*MiB, 0), nil)) // confirms it
		v, sets2 := te.gogc.get()
		assert.Equal(t, 50, v)
		assert.Equal(t, sets, sets2, "no write after the hand-over")
		st := res.Status()
		assert.Equal(t, 50, st.GC.GOGC)
		assert.Equal(t, gcHandOver, st.GC.Reason)
		assert.True(t, st.Following, "GOMEMLIMIT is still followed")
		res.Undo()
		v, _ = te.gogc.get()
		assert.Equal(t, 50, v, "Undo leaves the program's value")
		assert.Contains(t, logs.String(), "fitgo: GOGC raised by the GC policy")
		assert.Contains(t, logs.String(), "fitgo: GOGC changed by someone else; the GC policy stops")
	})
	t.Run("racing a reading", func(t *testing.T) {
		te := gcEnv(&live, &other, 0.5)
		read, stale := te.gc, false
		te.gc = func() gcReading {
			r := read()
			if stale {
				stale, r.gogc = false, 100
			}
			return r
		}
		te.src.set(memLimits(1024*MiB, 0))
		res, s := applyFollowing(t, te, Options{GC: true})
		te.gogc.appSet(50)
		// The reading is taken before the program's write, and the next
		// one confirms it.
		stale = true
		for i, why := range []string{gcCeiling, gcHandOver} {
			require.True(t, s.tick(s.f, time.Unix(int64(i), 0), memLimits(1024*MiB, 0), nil))
			v, _ := te.gogc.get()
			assert.Equal(t, 50, v, "the program's value is put back")
			assert.Equal(t, why, res.Status().GC.Reason)
		}
	})
	for _, tc := range []struct {
		name, env string
		before    int
		why       string
	}{
		{"set before Apply", "", 300, "GOGC is 300: set by the program, and left alone"},
		{"off before Apply", "", -1, "GOGC is -1: set by the program, and left alone"},
		{"in the environment", "200", 200, "GOGC=200 is set in the environment: left alone"},
		{"in the environment, as the default", "100", 100, "GOGC=100 is set in the environment: left alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := gcEnv(&live, &other, 0.5)
			te.gogc.appSet(tc.before)
			te.Getenv = func(k string) string {
				if k == "GOGC" {
					return tc.env
				}
				return ""
			}
			te.src.set(memLimits(1024*MiB, 0))
			res, s := applyFollowing(t, te, Options{GC: true})
			require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
			v, sets := te.gogc.get()
			assert.Equal(t, tc.before, v)
			assert.Zero(t, sets)
			assert.Equal(t, tc.why, res.Status().GC.Reason)
		})
	}
}

// TestGCPolicyGivesBack: the value from before fitgo comes back when fitgo
// stops fitting GOMEMLIMIT (someone else set it: the heap is no longer
// bounded by fitgo's value), on Undo, and when a later Apply without the
// policy takes over.
func TestGCPolicyGivesBack(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	for _, how := range []string{"GOMEMLIMIT handed over", "Undo", "a later Apply"} {
		t.Run(how, func(t *testing.T) {
			te := gcEnv(&live, &other, 0.5)
			te.src.set(memLimits(1024*MiB, 0))
			res, s := applyFollowing(t, te, Options{GC: true})
			require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
			v, _ := te.gogc.get()
			require.Equal(t, 606, v)
			want := gcStopped
			switch how {
			case "GOMEMLIMIT handed over":
				te.fk.appSet(300 * MiB)
				assert.False(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
			case "Undo":
				res.Undo()
				want = gcUndone
			default:
				applyFollowing(t, te, Options{})
				want = "superseded by a later Apply"
			}
			v, _ = te.gogc.get()
			assert.Equal(t, 100, v)
			assert.Equal(t, want, res.Status().GC.Reason)
			assert.Equal(t, 100, res.Status().GC.GOGC)
		})
	}
}

// TestGCPolicyLeak: a heap that leaks from 100 MiB toward a 512 MiB limit.
// GOGC comes down as the heap grows and is 100 again before the heap
// reaches GOMEMLIMIT, so that the leak guard takes the same steps at the
// same readings as without the policy; while it has steps in force, GOGC
// is 100.
func TestGCPolicyLeak(t *testing.T) {
	run := func(gc bool) (limits []int64, gogcs []int) {
		live, other := uint64(100*MiB), uint64(10*MiB)
		te := gcEnv(&live, &other, 0.5)
		var r gcReading
		te.gc = func() gcReading {
			v, _ := te.gogc.get()
			r.cpu += 2
			r.live, r.other, r.gogc = live, other, int64(v)
			r.goal = min(r.live*uint64(100+v)/100, 440*uint64(MiB))
			if r.bound() {
				r.gcCPU += 2 * 0.45
			} else {
				r.gcCPU += 2 * 0.10
			}
			return r
		}
		te.src.set(memLimits(512*MiB, 0))
		res, s := applyFollowing(t, te, Options{GC: gc})
		for range 500 {
			require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
			v, _ := te.fk.get()
			g, _ := te.gogc.get()
			limits, gogcs = append(limits, v), append(gogcs, g)
			if gc && res.Status().LeakGuard.Steps > 0 {
				assert.Equal(t, 100, g, "GOGC while the guard steps")
				assert.Equal(t, gcGuard, res.Status().GC.Reason)
			}
			live = min(live+uint64(MiB), uint64(496*MiB))
		}
		return limits, gogcs
	}
	off, _ := run(false)
	on, gogcs := run(true)
	assert.Equal(t, off, on, "GOMEMLIMIT at each reading, the guard's steps with it")
	assert.Equal(t, 248, gogcs[0], "raised at first")
	assert.Equal(t, 512*MiB, on[len(on)-1], "the guard reached the limit")
}

// TestGCPolicyNoRefresh: the policy acts at the refresh's readings.
func TestGCPolicyNoRefresh(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	res, err := Apply(te.opts(Options{GC: true}))
	require.NoError(t, err)
	st := res.Status()
	assert.Equal(t, gcNoRefresh, st.GC.Reason)
	assert.True(t, strings.HasSuffix(st.String(), "; GC policy: GOGC 100: "+gcNoRefresh), st.String())
	res.Undo()
}

// TestGCPolicyTickAllocs: a tick that moves GOGC allocates nothing.
func TestGCPolicyTickAllocs(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	_, s := applyFollowing(t, te, Options{GC: true})
	lim, now := memLimits(1024*MiB, 0), time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { live = 300*uint64(MiB) - live; s.tick(s.f, now, lim, nil) }))
	_, sets := te.gogc.get()
	assert.Greater(t, sets, 1000, "GOGC moved at each tick")
}

// TestGCPolicyMaxGOGC: with about 123 TiB available and a live heap under
// 4 MiB, the runtime's least heap goal would put GOGC past what
// debug.SetGCPercent takes (an int32: 3,337,859,980 wraps to off). It is
// held at maxGOGC, which the next reading sees as fitgo's own; Undo gives
// the program's 100 back.
func TestGCPolicyMaxGOGC(t *testing.T) {
	live, other := uint64(MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 1e9) // so expensive that the ceiling binds
	res, s := applyFollowing(t, te, Options{GC: true, UpperLimit: 2e14})
	// At 1 GiB, the runtime's least goal, 4 MiB × GOGC/100, bounds it.
	require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
	v, _ := te.gogc.get()
	assert.Equal(t, 17669, v) // (751619276 − 10 MiB) / 4 MiB × 100, rounded down
	for i := range 3 {
		require.True(t, s.tick(s.f, time.Now(), memLimits(0, 0), nil))
		v, _ := te.gogc.get()
		assert.Equal(t, maxGOGC, v, "reading %d", i)
		st := res.Status().GC
		assert.Equal(t, maxGOGC, st.GOGC, "reading %d", i)
		assert.Equal(t, gcCeiling, st.Reason, "reading %d", i)
	}
	res.Undo()
	v, _ = te.gogc.get()
	assert.Equal(t, 100, v, "Undo gives the program's GOGC back")
}

// blockingHandler is a log handler whose Handle blocks, for a message that
// contains block, until release is closed, as a blocked stderr pipe does;
// entered says it is blocked.
type blockingHandler struct {
	slog.Handler
	block            string
	entered, release chan struct{}
}

func (h blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.block) {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Handler.Handle(ctx, r)
}

// TestGCPolicySupersededMidTick: Apply B, without the policy, lands while
// Apply A's tick is blocked in its logger, after A's GOMEMLIMIT step and
// before its GC step. A's tick must then leave GOGC alone: B is in force,
// and after B.Undo GOGC is the program's.
func TestGCPolicySupersededMidTick(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	var logs bytes.Buffer
	h := blockingHandler{Handler: slog.NewTextHandler(&logs, nil), block: "GOMEMLIMIT updated",
		entered: make(chan struct{}), release: make(chan struct{})}
	a, s := applyFollowing(t, te, Options{GC: true, Logger: slog.New(h)})
	done := make(chan bool)
	go func() { done <- s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil) }()
	<-h.entered // A's tick: GOMEMLIMIT stepped, its line blocked
	b, _ := applyFollowing(t, te, Options{})
	close(h.release)
	<-done
	v, _ := te.gogc.get()
	assert.Equal(t, 100, v, "A's tick raised GOGC with B in force")
	b.Undo()
	v, _ = te.gogc.get()
	assert.Equal(t, 100, v, "after B.Undo")
	assert.Equal(t, "superseded by a later Apply", a.Status().GC.Reason)
	assert.NotContains(t, logs.String(), "fitgo: GOGC raised by the GC policy")
}

// TestGCPolicyFailedApply: an Apply that fails on invalid options changes
// nothing: the earlier Apply's policy goes on, with its GOGC.
func TestGCPolicyFailedApply(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	a, s := applyFollowing(t, te, Options{GC: true})
	require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
	for _, o := range []Options{{Policy: Policy{Ratio: 2}}, {GC: true, Policy: Policy{Ratio: 2}, Refresh: time.Hour}} {
		_, err := Apply(te.opts(o))
		require.ErrorContains(t, err, "invalid policy")
		v, _ := te.gogc.get()
		assert.Equal(t, 606, v)
		assert.Equal(t, gcCeiling, a.Status().GC.Reason)
	}
	require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	v, _ := te.gogc.get()
	assert.Equal(t, 248, v, "the earlier Apply's policy still acts")
}

// TestGCPolicyTransientRead: a program that reads GOGC the usual way,
// debug.SetGCPercent(debug.SetGCPercent(-1)), shows -1 until a GC's mark
// ends, to one reading or to several 10 ms apart. The policy hands over only
// when the readings find a value it did not set for gcConfirm, and Status
// reports the GOGC in force.
func TestGCPolicyTransientRead(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	odd := false // the reading shows -1
	read := te.gc
	te.gc = func() gcReading {
		r := read()
		if odd {
			r.gogc = -1
		}
		return r
	}
	te.src.set(memLimits(1024*MiB, 0))
	var logs bytes.Buffer
	res, s := applyFollowing(t, te, Options{GC: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	start := time.Now()
	for i, step := range []struct {
		at         time.Duration // of the reading
		odd        bool          // it shows -1
		app        int           // the program sets GOGC before the reading; 0: not
		lim        int64         // MiB
		gogc       int           // in force after the reading
		why        string
		handedOver bool
	}{
		{at: 0, lim: 1024, gogc: 606, why: gcCeiling},
		{at: 1000, odd: true, lim: 512, gogc: 606, why: gcCeiling}, // a passing -1: left to later readings
		{at: 2000, lim: 512, gogc: 248, why: gcCeiling},            // fitgo's value: still managed
		{at: 3000, odd: true, lim: 1024, gogc: 248, why: gcCeiling},
		{at: 3010, odd: true, lim: 1024, gogc: 248, why: gcCeiling}, // a long mark
		{at: 3490, odd: true, lim: 1024, gogc: 248, why: gcCeiling},
		{at: 3500, lim: 1024, gogc: 606, why: gcCeiling},
		{at: 4000, app: 50, lim: 512, gogc: 50, why: gcCeiling}, // the program's, to be confirmed
		{at: 4010, lim: 1024, gogc: 50, why: gcCeiling},
		{at: 4500, lim: 1024, gogc: 50, why: gcHandOver, handedOver: true},
		{at: 5000, app: 16453, lim: 512, gogc: 16453, why: gcHandOver, handedOver: true}, // Status reports what is in force
	} {
		odd = step.odd
		if step.app != 0 {
			te.gogc.appSet(step.app)
		}
		require.True(t, s.tick(s.f, start.Add(step.at*time.Millisecond), memLimits(step.lim*MiB, 0), nil))
		odd = false // the program has put its value back
		v, _ := te.gogc.get()
		assert.Equal(t, step.gogc, v, "reading %d", i)
		st := res.Status().GC
		assert.Equal(t, step.gogc, st.GOGC, "reading %d: Status", i)
		assert.Equal(t, step.why, st.Reason, "reading %d", i)
		assert.Equal(t, step.handedOver, strings.Contains(logs.String(), "GOGC changed by someone else"), "reading %d", i)
	}
}

// TestGCPolicyTransientWrite: the program's read, -1 then its value back,
// lands between the reading and the policy's write: the write finds -1 and
// puts it back, and the program's second call then puts fitgo's earlier
// value back. The policy waits for the next reading, which sees its own
// value, and goes on.
func TestGCPolicyTransientWrite(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	res, s := applyFollowing(t, te, Options{GC: true})
	require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
	calls, was := 0, 0
	set := te.setGOGC
	te.setGOGC = func(n int) int {
		switch calls++; calls {
		case 1: // the program's first call lands before the write
			was = te.gogc.set(-1)
		case 2: // and its second after the put-back
			defer te.gogc.appSet(was)
		}
		return set(n)
	}
	require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	v, _ := te.gogc.get()
	assert.Equal(t, 606, v, "the program's second call put the earlier value back")
	assert.Equal(t, gcCeiling, res.Status().GC.Reason)
	require.True(t, s.tick(s.f, time.Now(), memLimits(512*MiB, 0), nil))
	v, _ = te.gogc.get()
	assert.Equal(t, 248, v, "still managed")
	assert.Equal(t, gcCeiling, res.Status().GC.Reason)
}

// TestGCReadingFreeSpans: the heap's free spans, left by a GC until the
// runtime reuses or releases them, are not memory outside the heap: the heap
// goal covers them. Counted as outside, a raise of GOGC, which leaves more
// free spans after each cycle, shrank the next reading's room, and GOGC
// walked back and forth (292, 154, 100 in three windows of one run).
func TestGCReadingFreeSpans(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100000)) // a heap goal that keeps the free spans from the scavenger
	r := rule{env: &env{}}
	_, _, before := r.readRuntime(false, true)
	garbage := make([][]byte, 256)
	for i := range garbage {
		garbage[i] = make([]byte, MiB)
		garbage[i][0] = 1
	}
	garbage = nil
	runtime.GC() // the spans of the 256 MiB are free now, and not yet released
	_, _, after := r.readRuntime(false, true)
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	require.Greater(t, s[0].Value.Uint64(), uint64(64*MiB), "free spans after the GC")
	assert.Less(t, int64(after.other)-int64(before.other), int64(16*MiB), "outside the heap: %d → %d", before.other, after.other)
}

// TestGCReadingIdleMark: the GC's CPU in a reading counts idle marking.
// The target was chosen on the GC's whole CPU (docs/gc.md's sweep), and
// under a CPU quota idle marking burns the quota as any other work does; left
// out, the heavy workload's cost read half of it (idle marking was about half
// of the GC's CPU in its gctrace), and GOGC stayed near 300 where the target
// calls for about 550.
func TestGCReadingIdleMark(t *testing.T) {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	for i := 0; i < 20 && f64(s[1]) == 0; i++ {
		runtime.GC() // this goroutine waits: the Ps are idle and mark
		metrics.Read(s)
	}
	require.Positive(t, f64(s[1]), "idle marking after 20 GCs")
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no GC in between: the runtime updates these at a GC's end
	r := rule{env: &env{}}
	_, _, rd := r.readRuntime(false, true)
	assert.Equal(t, f64(s[0]), rd.gcCPU, "the GC's CPU, idle marking %v s of it", f64(s[1]))
}

// gcSim is the GC the policy's model describes, for readings a second apart
// on one CPU: a GC ends between any two, the live heap is live bytes, the
// heap goal grows by GOGC percent of it, and the GC takes cost / (GOGC/100)
// of the CPU, where cost is its share at GOGC=100 (the allocation rate
// times the CPU a scanned byte takes).
type gcSim struct {
	p     gcPolicy
	r     gcReading
	cost  float64
	avail int64 // the memory available
}

// read takes a reading under the GOGC in force and returns the policy's
// GOGC, which is then in force, and why.
func (s *gcSim) read() (int, string) {
	v := int(s.r.gogc)
	s.r.goal = s.r.live + s.r.live*uint64(v)/100
	s.r.cpu++
	s.r.gcCPU += s.cost / (float64(v) / 100)
	s.p.measure(s.r)
	n, _, why := s.p.target(s.avail*9/10, true, memLimit{bytes: s.avail}, s.r)
	s.r.gogc = int64(n)
	return n, why
}

// TestGCPolicyModel: the policy on readings of gcSim (100 MiB live, 1 GiB
// available, ceiling 0.7 × 1 GiB: GOGC 606 at most). A GC that takes 1 %
// of the CPU at GOGC=100 is left alone; one that takes 6 % gets GOGC 300,
// about 2 %; the allocation rate doubles, halves: GOGC follows, more than
// halfway within 3 readings and within 10 % of the new value within 8,
// moving one way only (no oscillation), and then holds still. A resize and
// a co-process that grows bring it down at the reading that sees them.
func TestGCPolicyModel(t *testing.T) {
	s := &gcSim{p: gcPolicy{base: 100, share: gcShare}, r: gcReading{live: 100 << 20, other: 10 << 20, gogc: 100},
		cost: 0.01, avail: 1024 * MiB}
	for i := range 10 {
		v, why := s.read()
		require.Equal(t, 100, v, "reading %d", i)
		require.Equal(t, gcCheap, why)
	}
	follow := func(cost float64, want int) {
		t.Helper()
		s.cost = cost
		from, last := int(s.r.gogc), int(s.r.gogc)
		for i := 1; i <= 20; i++ {
			v, _ := s.read()
			assert.True(t, (v-last)*(want-from) >= 0, "reading %d: %d after %d, from %d toward %d", i, v, last, from, want)
			last = v
			if i == 3 {
				assert.Greater(t, (v-from)*(want-from)*2, (want-from)*(want-from), "halfway in 3: %d, from %d toward %d", v, from, want)
			}
			if i >= 8 {
				assert.InEpsilon(t, want, v, 0.1, "reading %d", i)
			}
			if i == 20 {
				v2, _ := s.read()
				assert.Equal(t, v, v2, "holds still")
			}
		}
	}
	follow(0.06, 300) // GC CPU 6 % at GOGC 100
	_, why := s.read()
	assert.Equal(t, gcTargeted, why)
	follow(0.12, 600) // the allocation rate doubles
	follow(0.06, 300) // and halves
	follow(0.5, 606)  // GC-heavy: the ceiling, (0.7 GiB − 10 MiB − 100 MiB) / 100 MiB
	_, why = s.read()
	assert.Equal(t, gcCeiling, why)

	s.avail = 512 * MiB // a resize, or a co-process that grows by half of it
	v, _ := s.read()
	assert.Equal(t, 248, v, "down at once: (0.7 × 512 MiB − 110 MiB) / 100 MiB")
	s.avail = 200 * MiB
	v, why = s.read()
	assert.Equal(t, 100, v)
	assert.Equal(t, gcFull, why)
}

// TestGCShare: the share of the available memory the heap may fill sets the
// ceiling; one out of range is an invalid option, which changes nothing.
func TestGCShare(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.5)
	te.src.set(memLimits(1024*MiB, 0))
	res, s := applyFollowing(t, te, Options{GC: true, GCShare: 0.5})
	require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
	assert.Equal(t, int64(512*MiB), res.Status().GC.Ceiling)
	assert.Equal(t, 401, res.Status().GC.GOGC) // (512 MiB − 10 − 100) / 100, rounded down

	for _, share := range []float64{-0.1, 0.95, math.NaN()} {
		te := gcEnv(&live, &other, 0.5)
		te.src.set(memLimits(1024*MiB, 0))
		r, err := Apply(te.opts(Options{GC: true, GCShare: share, Refresh: time.Hour}))
		require.ErrorContains(t, err, "memlimit: GCShare", "%v", share)
		assert.Equal(t, "invalid options", r.Status().Reason)
		v, sets := te.fk.get()
		assert.Equal(t, noLimit, v)
		assert.Zero(t, sets)
	}
}

// TestGCPolicyStartUp: a start-up that spent half its CPU in the GC while it
// built its heap, before Apply, is not the cost of what comes after, 1 % at
// GOGC=100: GOGC stays the program's.
func TestGCPolicyStartUp(t *testing.T) {
	live, other := uint64(100*MiB), uint64(10*MiB)
	te := gcEnv(&live, &other, 0.01)
	read := te.gc
	te.gc = func() gcReading { r := read(); r.cpu, r.gcCPU = r.cpu+10, r.gcCPU+5; return r }
	te.src.set(memLimits(1024*MiB, 0))
	res, s := applyFollowing(t, te, Options{GC: true})
	for i := range 5 {
		require.True(t, s.tick(s.f, time.Now(), memLimits(1024*MiB, 0), nil))
		st := res.Status().GC
		assert.Equal(t, 100, st.GOGC, "reading %d", i)
		assert.Equal(t, gcCheap, st.Reason, "reading %d", i)
	}
}

// TestGCGrowth: GOGC/100 from a heap goal is the runtime's goal formula
// solved for it, the least goal (4 MiB × GOGC/100) included: a 1 MiB heap
// at GOGC 1000 has the goal 40 MiB, a growth of 10, not (40 − 1) / 3.
func TestGCGrowth(t *testing.T) {
	for _, tc := range []struct {
		r    gcReading
		goal float64
		want float64
	}{
		{gcReading{live: 100 << 20}, 200 << 20, 1},
		{gcReading{live: 100 << 20, stacks: 10 << 20, globals: 10 << 20}, 460 << 20, 3},
		{gcReading{live: 1 << 20}, 4 << 20, 1},
		{gcReading{live: 1 << 20}, 40 << 20, 10},
	} {
		assert.InDelta(t, tc.want, tc.r.growth(tc.goal), 1e-9, "%+v, goal %v", tc.r, tc.goal)
	}
}
