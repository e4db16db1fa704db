package maxprocs

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
)

// applyFollowing applies with a refresh loop that the test ticks, and calls
// the Fit's tick itself.
func applyFollowing(t *testing.T, te *testEnv, o Options) (*Fit, *Fit) {
	t.Helper()
	o.Refresh = time.Hour
	fit, err := Apply(te.opts(o))
	require.NoError(t, err)
	require.NotNil(t, fit.f)
	t.Cleanup(func() { stop(fit); waitIdle(t, fit.loop.Done()) })
	return fit, fit
}

func TestTickPinned(t *testing.T) {
	// Go line <= 1.24: the runtime does nothing by itself.
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	var buf bytes.Buffer
	res, s := applyFollowing(t, te, Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	require.Equal(t, 1, res.Status().After)
	assert.Equal(t, time.Hour, res.Status().Refresh)
	now := time.Now()

	// Unchanged limit: nothing happens.
	assert.True(t, s.tick(s.f, now, cpuLimits(0.5, "/sys/fs/cgroup/app"), nil))
	_, sets, _ := fk.get()
	assert.Equal(t, 1, sets)

	// Resize to 3 CPUs.
	assert.True(t, s.tick(s.f, now, cpuLimits(3, "/sys/fs/cgroup/app"), nil))
	value, sets, _ := fk.get()
	assert.Equal(t, 3, value)
	assert.Equal(t, 2, sets)
	st := res.Status()
	assert.Equal(t, 3, st.After)
	assert.True(t, st.Following)
	assert.Equal(t, 1, st.Updates)
	assert.Equal(t, 3.0, st.Limit)
	// The limit logs as its cores and source, as memlimit's does.
	assert.Contains(t, buf.String(), `msg="fitgo: GOMAXPROCS updated: CPU limit changed" GOMAXPROCS=3 before=1 cpu_limit.cores=3 cpu_limit.source=/sys/fs/cgroup/app`+"\n")

	// A bad reading keeps the value and is reported.
	bad := cpuLimits(3, "/sys/fs/cgroup/app")
	bad.CPU.Err = &fs.PathError{Op: "read", Path: "/sys/fs/cgroup/app/cpu.max", Err: fs.ErrInvalid}
	assert.True(t, s.tick(s.f, now, bad, bad.CPU.Err))
	value, _, _ = fk.get()
	assert.Equal(t, 3, value)
	assert.Error(t, res.Status().Err)
	assert.True(t, s.tick(s.f, now, cpuLimits(3, "/sys/fs/cgroup/app"), nil))
	assert.NoError(t, res.Status().Err)

	// The limit goes away: back to the value before fitgo (no
	// SetDefaultGOMAXPROCS before Go 1.25).
	assert.True(t, s.tick(s.f, now, cpuLimits(0, ""), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 8, value)
	// And comes back.
	assert.True(t, s.tick(s.f, now, cpuLimits(2, "/sys/fs/cgroup"), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 2, value)
	assert.Equal(t, 3, res.Status().Updates, "resize, removal, return")
}

func TestTickHandOver(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	res, s := applyFollowing(t, te, Options{Logger: logger})
	require.Equal(t, 1, res.Status().After)

	fk.appSet(6) // the application takes over
	assert.False(t, s.tick(s.f, time.Now(), cpuLimits(2, "/sys/fs/cgroup/app"), nil), "the session leaves the loop")
	value, sets, _ := fk.get()
	assert.Equal(t, 6, value, "fitgo does not fight")
	assert.Equal(t, 1, sets)
	st := res.Status()
	assert.False(t, st.Following)
	assert.Equal(t, "GOMAXPROCS was changed from 1 to 6 outside fitgo; no longer managed", st.Reason)
	assert.Contains(t, buf.String(), `msg="fitgo: GOMAXPROCS changed by someone else; fitgo stops managing it" GOMAXPROCS=6 was=1`)

	// Later ticks do nothing; Undo leaves the application's value.
	assert.False(t, s.tick(s.f, time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	res.Undo()
	value, _, _ = fk.get()
	assert.Equal(t, 6, value)
}

func TestTickCooperatesWithRuntime(t *testing.T) {
	app := "/sys/fs/cgroup/app"
	t.Run("runtime updates are accepted while fitgo agrees", func(t *testing.T) {
		// Leaf limit 2 on 8 CPUs: runtime says 2, floor says 2.
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		res, s := applyFollowing(t, te, Options{})
		require.False(t, res.Status().Changed)
		now := time.Now()

		// Resize to 4: the runtime gets there first.
		require.True(t, fk.runtimeUpdate(4))
		assert.True(t, s.tick(s.f, now, cpuLimits(4, app), nil))
		_, sets, _ := fk.get()
		assert.Zero(t, sets, "still no runtime.GOMAXPROCS call")
		assert.True(t, res.Status().Following)

		// Resize to 3: fitgo sees it first; the runtime will choose 3 too, so
		// fitgo waits for it.
		now = now.Add(time.Second)
		assert.True(t, s.tick(s.f, now, cpuLimits(3, app), nil))
		_, sets, _ = fk.get()
		assert.Zero(t, sets, "waiting for the runtime")
		require.True(t, fk.runtimeUpdate(3))
		assert.True(t, s.tick(s.f, now.Add(time.Second), cpuLimits(3, app), nil))
		_, sets, _ = fk.get()
		assert.Zero(t, sets)
		assert.False(t, fk.custom, "the runtime's updates are still on")
	})
	t.Run("the runtime is slow: fitgo sets it after the grace period", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		_, s := applyFollowing(t, te, Options{})
		now := time.Now()
		assert.True(t, s.tick(s.f, now, cpuLimits(5, app), nil))
		_, sets, _ := fk.get()
		assert.Zero(t, sets)
		assert.True(t, s.tick(s.f, now.Add(runtimeGrace), cpuLimits(5, app), nil))
		value, sets, _ := fk.get()
		assert.Equal(t, 5, value)
		assert.Equal(t, 1, sets)
	})
	t.Run("fitgo's rule differs: it sets at once", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		_, s := applyFollowing(t, te, Options{})
		// 0.5 CPUs: the runtime says 2 (its minimum), fitgo's rule 1.
		assert.True(t, s.tick(s.f, time.Now(), cpuLimits(0.5, app), nil))
		value, sets, _ := fk.get()
		assert.Equal(t, 1, value)
		assert.Equal(t, 1, sets)
	})
	t.Run("a change the runtime would not make is someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		res, s := applyFollowing(t, te, Options{})
		fk.appSet(7)
		assert.False(t, s.tick(s.f, time.Now(), cpuLimits(2, app), nil))
		assert.Contains(t, res.Status().Reason, "changed from 2 to 7 outside fitgo")
	})
	t.Run("without runtime updates any change is someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2}
		te := newTestEnv(fk, 8, oldRT, nil)
		te.src.setQuota(2, app)
		res, s := applyFollowing(t, te, Options{})
		fk.appSet(4)
		assert.False(t, s.tick(s.f, time.Now(), cpuLimits(4, app), nil))
		assert.False(t, res.Status().Following)
	})
	t.Run("limit removed while pinned: SetDefaultGOMAXPROCS", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(0.5, app)
		res, s := applyFollowing(t, te, Options{})
		require.Equal(t, 1, res.Status().After)
		fk.def = 8
		assert.True(t, s.tick(s.f, time.Now(), cpuLimits(0, ""), nil))
		value, _, setDefault := fk.get()
		assert.Equal(t, 8, value)
		assert.Equal(t, 1, setDefault)
		assert.False(t, fk.custom)
		assert.True(t, res.Status().Following)
	})
}

func TestStopAndSupersede(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	r1, s1 := applyFollowing(t, te, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r2, s2 := applyFollowing(t, te, Options{Policy: Policy{Min: 2}, Context: ctx})
	assert.False(t, r1.Status().Following)
	assert.Equal(t, "superseded by a later Apply", r1.Status().Reason)
	assert.False(t, s1.tick(s1.f, time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	assert.True(t, s2.tick(s2.f, time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	value, _, _ := fk.get()
	assert.Equal(t, 4, value)
	done := r2.loop.Done()
	cancel() // the context stops it
	waitIdle(t, done)
	assert.Equal(t, "stopped: context canceled", r2.Status().Reason)
	assert.False(t, s2.tick(s2.f, time.Now(), cpuLimits(6, "/sys/fs/cgroup/app"), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 4, value, "stopping keeps the value")
}

// TestRefreshFollowsTheLoop runs the real loop, ticked by the test: the
// limit changes and GOMAXPROCS follows at the next tick; the context stops
// it and leaves no goroutine.
func TestRefreshFollowsTheLoop(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fit, err := Apply(te.opts(Options{Refresh: 50 * time.Millisecond, Context: ctx}))
	require.NoError(t, err)
	require.Equal(t, 1, fit.Status().After)
	assert.Equal(t, 50*time.Millisecond, fit.Status().Refresh)

	for _, step := range []struct {
		cores float64
		want  int
	}{{3, 3}, {1.5, 2}, {6.2, 7}} {
		te.src.setQuota(step.cores, "/sys/fs/cgroup/app")
		te.tick()
		value, _, _ := fk.get()
		assert.Equal(t, step.want, value, "followed %v CPUs at the next tick", step.cores)
	}
	done := fit.loop.Done()
	cancel() // the context stops it
	waitIdle(t, done)
	st := fit.Status()
	assert.False(t, st.Following)
	assert.Equal(t, "stopped: context canceled", st.Reason)
	te.src.setQuota(2, "/sys/fs/cgroup/app")
	assert.False(t, fit.tick(fit.f, time.Now(), cpuLimits(2, "/sys/fs/cgroup/app"), nil))
	value, _, _ := fk.get()
	assert.Equal(t, 7, value, "no change after stop")
}

// TestRefreshOverWatcher follows real files through cgroup.Watcher.
func TestRefreshOverWatcher(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write("proc/self/cgroup", "0::/pod/app\n")
	write("proc/self/mountinfo", "25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	write("sys/fs/cgroup/pod/cpu.max", "50000 100000\n")
	write("sys/fs/cgroup/pod/app/cpu.max", "max 100000\n")
	fk := &fakeKnob{value: 2, def: 2}
	te := newTestEnv(fk, 2, oldRT, nil)
	te.Read = func() (cgroup.Limits, error) { return cgroup.ReadFS(os.DirFS(root)) }
	te.Open = func() (knob.Source, error) { return cgroup.NewWatcher(os.DirFS(root)) }
	fit, err := Apply(te.opts(Options{Refresh: 20 * time.Millisecond}))
	require.NoError(t, err)
	defer func() { stop(fit); waitIdle(t, fit.loop.Done()) }()
	assert.Equal(t, 1, fit.Status().After)
	assert.Equal(t, "/sys/fs/cgroup/pod", fit.Status().Source)

	write("sys/fs/cgroup/pod/cpu.max", "200000 100000\n")
	te.tick()
	value, _, _ := fk.get()
	assert.Equal(t, 2, value)
	st := fit.Status()
	assert.Equal(t, 2.0, st.Limit)
	assert.Equal(t, 1, st.Updates)
}

// TestTickAllocs: a refresh tick that changes nothing allocates nothing.
func TestTickAllocs(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, modernRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	_, s := applyFollowing(t, te, Options{})
	lim := cpuLimits(0.5, "/sys/fs/cgroup/app")
	now := time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.tick(s.f, now, lim, nil) }))
}

// TestApplyConcurrentWithTicks races Apply, Undo, Status and the loops.
func TestApplyConcurrentWithTicks(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, nil)
	te.src.setQuota(1, "/sys/fs/cgroup/app")
	te.Ticks = nil // real tickers, at 10ms
	var wg sync.WaitGroup
	var fits []*Fit
	var mu sync.Mutex
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				te.src.setQuota(float64(1+(i+j)%4), "/sys/fs/cgroup/app")
				f, err := Apply(te.opts(Options{Refresh: 10 * time.Millisecond}))
				assert.NoError(t, err)
				_ = f.Status()
				if j%3 == 0 {
					f.Undo()
				}
				mu.Lock()
				fits = append(fits, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, f := range fits {
		stop(f)
	}
	for _, f := range fits {
		if f.loop != nil {
			waitIdle(t, f.loop.Done())
		}
	}
}

// TestReadErrorThenRecovers: while the reading fails (a file that could not
// be opened), Status says GOMAXPROCS is not being fitted; once the reading
// is good again, it follows again.
func TestReadErrorThenRecovers(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	fit, _ := applyFollowing(t, te, Options{})
	bad := cpuLimits(0, "")
	bad.CPU.Err = &fs.PathError{Op: "open", Path: "/sys/fs/cgroup/app/cpu.max", Err: syscall.EMFILE}
	te.src.set(bad, bad.CPU.Err)
	te.tick()
	st := fit.Status()
	assert.True(t, st.Following, "it will follow again")
	assert.ErrorIs(t, st.Err, syscall.EMFILE)
	assert.Equal(t, "the CPU limit cannot be read: GOMAXPROCS is not fitted until it can", st.Reason)
	te.src.setQuota(2, "/sys/fs/cgroup/app")
	te.tick()
	st = fit.Status()
	assert.NoError(t, st.Err)
	assert.Equal(t, 2, st.After, "followed once the reading is good")
}

// TestTickAllocsWhenMoved: a tick after the runtime moved GOMAXPROCS reads
// the CPU affinity again, and allocates nothing for it either.
func TestTickAllocsWhenMoved(t *testing.T) {
	name := filepath.Join(t.TempDir(), "status")
	wide, narrow := []byte("Name:\tx\nCpus_allowed_list:\t0-3\nVoluntary_ctxt_switches:\t1\n"), []byte("Name:\tx\nCpus_allowed_list:\t0-1\nVoluntary_ctxt_switches:\t1\n")
	require.NoError(t, os.WriteFile(name, wide, 0o644))
	w, err := os.OpenFile(name, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer w.Close()

	fk := &fakeKnob{value: 4, def: 4, modern: true}
	te := newTestEnv(fk, 4, modernRT, nil)
	te.env.numCPU = statusAffinity(name)
	te.src.setQuota(4, "/sys/fs/cgroup/app")
	fit, s := applyFollowing(t, te, Options{})
	require.False(t, fit.Status().Changed, "the runtime's 4 is right")
	lim, now, i := cpuLimits(4, "/sys/fs/cgroup/app"), time.Now(), 0
	allocs := testing.AllocsPerRun(100, func() {
		// taskset moves the affinity at every run; the runtime follows.
		status, n := wide, 4
		if i++; i%2 == 1 {
			status, n = narrow, 2
		}
		w.WriteAt(status, 0)
		fk.runtimeUpdate(n)
		if !s.tick(s.f, now, lim, nil) || s.ncpu != n {
			t.Fatalf("run %d: following %v, ncpu %d, want %d", i, fit.Status().Following, s.ncpu, n)
		}
	})
	assert.Zero(t, allocs)
}

func statusAffinity(name string) func() int { return (&statusFile{name: name}).affinity }

// TestAffinityChangeIsTheRuntimes: with the runtime's own updates on, a
// change of GOMAXPROCS that the runtime made because the CPU affinity shrank
// is the runtime's, not someone else's: fitgo keeps following. (Before, its
// prediction used the start-up CPU count and it stopped for good.)
func TestAffinityChangeIsTheRuntimes(t *testing.T) {
	fk := &fakeKnob{value: 4, def: 4, modern: true}
	te := newTestEnv(fk, 8, modernRT, nil)
	te.src.setQuota(4, "/sys/fs/cgroup/app")
	fit, s := applyFollowing(t, te, Options{})
	require.False(t, fit.Status().Changed, "the runtime's 4 is right")
	// taskset: one CPU left; the runtime lowers GOMAXPROCS to 1 itself.
	te.ncpu = 1
	require.True(t, fk.runtimeUpdate(1))
	assert.True(t, s.tick(s.f, time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	st := fit.Status()
	assert.True(t, st.Following, st.Reason)
	assert.Equal(t, 1, st.After)
	_, sets, _ := fk.get()
	assert.Zero(t, sets)
	// A later resize is still fitted (within the CPUs it may use).
	te.ncpu = 8
	require.True(t, fk.runtimeUpdate(2))
	assert.True(t, s.tick(s.f, time.Now().Add(time.Hour), cpuLimits(0.5, "/sys/fs/cgroup/app"), nil))
	value, _, _ := fk.get()
	assert.Equal(t, 1, value, "0.5 rounded up, below the runtime's minimum of 2")
}

// callbackHandler calls back into the package from inside a log call, as a
// handler that adds fitgo's status to every record would.
type callbackHandler struct {
	slog.Handler
	call func()
}

func (h callbackHandler) Handle(ctx context.Context, r slog.Record) error {
	h.call()
	return h.Handler.Handle(ctx, r)
}

func TestLoggerMayCallBack(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	var buf bytes.Buffer
	var res *Fit
	calls := 0
	logger := slog.New(callbackHandler{slog.NewTextHandler(&buf, nil), func() {
		calls++
		_, _ = Plan(te.opts(Options{}))
		_ = res.Status()
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		res, err = Apply(te.opts(Options{Logger: logger, Refresh: time.Hour}))
		assert.NoError(t, err)
		res.tick(res.f, time.Now(), cpuLimits(3, "/sys/fs/cgroup/app"), nil)
		fk.appSet(5)
		res.tick(res.f, time.Now(), cpuLimits(3, "/sys/fs/cgroup/app"), nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock: a log handler called back into maxprocs")
	}
	assert.Equal(t, 3, calls, "set, updated, handed over")
	waitIdle(t, res.loop.Done())
}

// TestSameValueCaveat: a program that sets the value fitgo already has
// cannot be told from no change, and a later resize overwrites it (the
// README states this); stopping fitgo's management first, the README's
// remedy, keeps the program's value.
func TestSameValueCaveat(t *testing.T) {
	app := "/sys/fs/cgroup/app"
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(1, app)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fit, _ := applyFollowing(t, te, Options{Context: ctx})
	require.Equal(t, 1, fit.Status().After)
	fk.appSet(1)
	assert.True(t, fit.tick(fit.f, time.Now(), cpuLimits(3, app), nil))
	value, _, _ := fk.get()
	assert.Equal(t, 3, value, "the caveat: indistinguishable, so overwritten")

	done := fit.loop.Done()
	cancel() // the remedy: end fitgo's management first
	waitIdle(t, done)
	fk.appSet(3)
	assert.False(t, fit.tick(fit.f, time.Now(), cpuLimits(2, app), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 3, value, "after the refresh ends, the program's value stays")
}

// TestNoCgroupNoLoop: without any cgroup there is nothing to follow: Apply
// starts no refresh goroutine.
func TestNoCgroupNoLoop(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, fstest.MapFS{})
	te.Read = func() (cgroup.Limits, error) { return cgroup.ReadFS(fstest.MapFS{}) }
	fit, err := Apply(te.opts(Options{Refresh: time.Second}))
	require.NoError(t, err)
	st := fit.Status()
	assert.False(t, st.Following)
	assert.Zero(t, st.Refresh)
	assert.Contains(t, st.Reason, "no cgroup information")
	assert.Nil(t, fit.loop)
}

// TestOtherLibrary: automaxprocs' Set in main writes its floor over fitgo's
// value. Without Insist fitgo hands over and names it; with Insist it puts
// its value back at the next reading, where it is the Go 1.25+ runtime's
// own default with runtime.SetDefaultGOMAXPROCS, so that the runtime's
// updates resume.
func TestOtherLibrary(t *testing.T) {
	app := "/sys/fs/cgroup/app"
	for _, tc := range []struct {
		name       string
		rt         goRuntime
		start      int // the runtime's value and default
		insist     bool
		after      int
		setDefault int
		reason     string
	}{
		{"hand-over", oldRT, 8, false, 1, 0, "GOMAXPROCS was changed from 2 to 1 by another library, matching automaxprocs' floor of 1.5 cores; no longer managed"},
		{"insist", oldRT, 8, true, 2, 0, "GOMAXPROCS was changed from 2 to 1 by another library, matching automaxprocs' floor of 1.5 cores; fitgo put its value back (insist, 1 times)"},
		{"insist, the runtime's default", modernRT, 2, true, 2, 1, "matching automaxprocs' floor of 1.5 cores; fitgo put its value back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setDefault > 0 && !runtimeContainerSupport {
				t.Skip("runtime.SetDefaultGOMAXPROCS needs Go 1.25")
			}
			var buf bytes.Buffer
			fk := &fakeKnob{value: tc.start, def: tc.start, modern: true}
			te := newTestEnv(fk, 8, tc.rt, nil)
			te.src.setQuota(1.5, app)
			fit, _ := applyFollowing(t, te, Options{Insist: tc.insist, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			require.Equal(t, 2, fit.Status().After)
			fk.appSet(1) // automaxprocs.Set in main
			assert.Equal(t, tc.insist, fit.tick(fit.f, time.Now(), cpuLimits(1.5, app), nil))
			value, _, setDefault := fk.get()
			assert.Equal(t, tc.after, value)
			assert.Equal(t, tc.setDefault, setDefault)
			st := fit.Status()
			assert.Equal(t, tc.insist, st.Following)
			assert.Contains(t, st.Reason, tc.reason)
			assert.Contains(t, buf.String(), `by="another library, matching automaxprocs' floor of 1.5 cores"`)
			if tc.insist {
				te.src.setQuota(0.5, app) // a resize: followed as before
				assert.True(t, fit.tick(fit.f, time.Now(), cpuLimits(0.5, app), nil))
				value, _, _ = fk.get()
				assert.Equal(t, 1, value)
			}
		})
	}
}

// signalSource signals each reading on c, without waiting.
type signalSource struct {
	knob.Source
	c chan struct{}
}

func (s signalSource) Read() (cgroup.Limits, error) {
	defer func() {
		select {
		case s.c <- struct{}{}:
		default:
		}
	}()
	return s.Source.Read()
}

// TestApplyUndoRefreshCycles cycles Apply and Undo with a 10ms refresh on
// the real ticker, each cycle until the refresh has read twice (its first
// reading is fitted): the refresh goroutine must not race the Apply that
// starts it (go test -race).
func TestApplyUndoRefreshCycles(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("200000 100000", ""))
	te.Ticks = nil
	for range 20 {
		read := make(chan struct{}, 2)
		te.Open = func() (knob.Source, error) { return signalSource{te.src, read}, nil }
		fit, err := Apply(te.opts(Options{Refresh: 10 * time.Millisecond}))
		require.NoError(t, err)
		<-read
		<-read
		fit.Undo()
		waitIdle(t, fit.loop.Done())
		v, _, _ := fk.get()
		require.Equal(t, 8, v)
	}
}
