package maxprocs

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/refresh"
)

// applyFollowing applies with a refresh loop of an hour, so that the test
// drives the session by calling Tick itself.
func applyFollowing(t *testing.T, te *testEnv, opts ...Option) (Result, *session) {
	t.Helper()
	res, err := Apply(append([]Option{te.opt(), WithRefresh(background, time.Hour)}, opts...)...)
	require.NoError(t, err)
	require.NotNil(t, res.s)
	t.Cleanup(func() { res.Stop(); te.waitIdle(t) })
	return res, res.s
}

func TestTickPinned(t *testing.T) {
	// Go line <= 1.24: the runtime does nothing by itself.
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	res, s := applyFollowing(t, te)
	require.Equal(t, 1, res.After)
	assert.Equal(t, time.Hour, res.Refresh)
	now := time.Now()

	// Unchanged limit: nothing happens.
	assert.True(t, s.Tick(now, cpuLimits(0.5, "/sys/fs/cgroup/app"), nil))
	_, sets, _ := fk.get()
	assert.Equal(t, 1, sets)

	// Resize to 3 CPUs.
	assert.True(t, s.Tick(now, cpuLimits(3, "/sys/fs/cgroup/app"), nil))
	value, sets, _ := fk.get()
	assert.Equal(t, 3, value)
	assert.Equal(t, 2, sets)
	st := res.Status()
	assert.Equal(t, 3, st.GOMAXPROCS)
	assert.True(t, st.Following)
	assert.Equal(t, 1, st.Updates)
	assert.Equal(t, 3.0, st.Limit)

	// A bad reading keeps the value and is reported.
	bad := cpuLimits(3, "/sys/fs/cgroup/app")
	bad.CPU.Err = &cgroup.ParseError{File: "/sys/fs/cgroup/app/cpu.max", Line: 1}
	assert.True(t, s.Tick(now, bad, bad.CPU.Err))
	value, _, _ = fk.get()
	assert.Equal(t, 3, value)
	assert.Error(t, res.Status().Err)
	assert.True(t, s.Tick(now, cpuLimits(3, "/sys/fs/cgroup/app"), nil))
	assert.NoError(t, res.Status().Err)

	// The limit goes away: back to the value before fitgo (no
	// SetDefaultGOMAXPROCS before Go 1.25).
	assert.True(t, s.Tick(now, cpuLimits(0, ""), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 8, value)
	// And comes back.
	assert.True(t, s.Tick(now, cpuLimits(2, "/sys/fs/cgroup"), nil))
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
	res, s := applyFollowing(t, te, WithLogger(logger))
	require.Equal(t, 1, res.After)

	fk.appSet(6) // the application takes over
	assert.False(t, s.Tick(time.Now(), cpuLimits(2, "/sys/fs/cgroup/app"), nil), "the session leaves the loop")
	value, sets, _ := fk.get()
	assert.Equal(t, 6, value, "fitgo does not fight")
	assert.Equal(t, 1, sets)
	st := res.Status()
	assert.False(t, st.Following)
	assert.Equal(t, "GOMAXPROCS was changed from 1 to 6 outside fitgo; no longer managed", st.Reason)
	assert.Contains(t, buf.String(), `msg="fitgo: GOMAXPROCS changed by someone else; fitgo stops managing it" GOMAXPROCS=6 was=1`)

	// Later ticks do nothing; Undo leaves the application's value.
	assert.False(t, s.Tick(time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
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
		res, s := applyFollowing(t, te)
		require.False(t, res.Changed)
		now := time.Now()

		// Resize to 4: the runtime gets there first.
		require.True(t, fk.runtimeUpdate(4))
		assert.True(t, s.Tick(now, cpuLimits(4, app), nil))
		_, sets, _ := fk.get()
		assert.Zero(t, sets, "still no runtime.GOMAXPROCS call")
		assert.True(t, res.Status().Following)

		// Resize to 3: fitgo sees it first; the runtime will choose 3 too, so
		// fitgo waits for it.
		now = now.Add(time.Second)
		assert.True(t, s.Tick(now, cpuLimits(3, app), nil))
		_, sets, _ = fk.get()
		assert.Zero(t, sets, "waiting for the runtime")
		require.True(t, fk.runtimeUpdate(3))
		assert.True(t, s.Tick(now.Add(time.Second), cpuLimits(3, app), nil))
		_, sets, _ = fk.get()
		assert.Zero(t, sets)
		assert.False(t, fk.custom, "the runtime's updates are still on")
	})
	t.Run("the runtime is slow: fitgo sets it after the grace period", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		_, s := applyFollowing(t, te)
		now := time.Now()
		assert.True(t, s.Tick(now, cpuLimits(5, app), nil))
		_, sets, _ := fk.get()
		assert.Zero(t, sets)
		assert.True(t, s.Tick(now.Add(runtimeGrace), cpuLimits(5, app), nil))
		value, sets, _ := fk.get()
		assert.Equal(t, 5, value)
		assert.Equal(t, 1, sets)
	})
	t.Run("fitgo's rule differs: it sets at once", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		_, s := applyFollowing(t, te)
		// 0.5 CPUs: the runtime says 2 (its minimum), fitgo's rule 1.
		assert.True(t, s.Tick(time.Now(), cpuLimits(0.5, app), nil))
		value, sets, _ := fk.get()
		assert.Equal(t, 1, value)
		assert.Equal(t, 1, sets)
	})
	t.Run("a change the runtime would not make is someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(2, app)
		res, s := applyFollowing(t, te)
		fk.appSet(7)
		assert.False(t, s.Tick(time.Now(), cpuLimits(2, app), nil))
		assert.Contains(t, res.Status().Reason, "changed from 2 to 7 outside fitgo")
	})
	t.Run("without runtime updates any change is someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2}
		te := newTestEnv(fk, 8, oldRT, nil)
		te.src.setQuota(2, app)
		res, s := applyFollowing(t, te)
		fk.appSet(4)
		assert.False(t, s.Tick(time.Now(), cpuLimits(4, app), nil))
		assert.False(t, res.Status().Following)
	})
	t.Run("limit removed while pinned: SetDefaultGOMAXPROCS", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8, modern: true}
		te := newTestEnv(fk, 8, modernRT, nil)
		te.src.setQuota(0.5, app)
		res, s := applyFollowing(t, te)
		require.Equal(t, 1, res.After)
		fk.def = 8
		assert.True(t, s.Tick(time.Now(), cpuLimits(0, ""), nil))
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
	r1, s1 := applyFollowing(t, te)
	r2, s2 := applyFollowing(t, te, WithMin(2))
	assert.False(t, r1.Status().Following)
	assert.Equal(t, "superseded by a later Apply", r1.Status().Reason)
	assert.False(t, s1.Tick(time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	assert.True(t, s2.Tick(time.Now(), cpuLimits(4, "/sys/fs/cgroup/app"), nil))
	value, _, _ := fk.get()
	assert.Equal(t, 4, value)
	r2.Stop()
	assert.Equal(t, "stopped", r2.Status().Reason)
	assert.False(t, s2.Tick(time.Now(), cpuLimits(6, "/sys/fs/cgroup/app"), nil))
	value, _, _ = fk.get()
	assert.Equal(t, 4, value, "Stop keeps the value")
	te.waitIdle(t)
}

// TestRefreshFollowsWithinTwoIntervals runs the real loop: the limit changes
// and GOMAXPROCS follows within two intervals; stopping leaves no goroutine.
func TestRefreshFollowsWithinTwoIntervals(t *testing.T) {
	const interval = 50 * time.Millisecond
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Apply(te.opt(), WithRefresh(ctx, interval))
	require.NoError(t, err)
	require.Equal(t, 1, res.After)

	for _, step := range []struct {
		cores float64
		want  int
	}{{3, 3}, {1.5, 2}, {6.2, 7}} {
		te.src.setQuota(step.cores, "/sys/fs/cgroup/app")
		changed, ticks := time.Now(), te.loop.Ticks()
		require.Eventually(t, func() bool { v, _, _ := fk.get(); return v == step.want }, 10*time.Second, time.Millisecond)
		// Counted in ticks, not wall time, so that a loaded machine cannot
		// make the test flaky: the value must follow by the second tick.
		took := te.loop.Ticks() - ticks
		t.Logf("followed %v CPUs in %v, %d ticks", step.cores, time.Since(changed), took)
		assert.LessOrEqual(t, took, uint64(2), "followed within two intervals")
	}
	cancel() // the context stops it
	te.waitIdle(t)
	assert.False(t, res.Status().Following)
	assert.Equal(t, "stopped: context canceled", res.Status().Reason)
	te.src.setQuota(2, "/sys/fs/cgroup/app")
	time.Sleep(3 * interval)
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
	te.read = func() (cgroup.Limits, error) { return cgroup.ReadFS(os.DirFS(root)) }
	te.loop = refresh.New(func() (refresh.Source, error) { return cgroup.NewWatcher(os.DirFS(root)) }, 0)
	res, err := Apply(te.opt(), WithRefresh(background, 20*time.Millisecond))
	require.NoError(t, err)
	defer func() { res.Stop(); te.waitIdle(t) }()
	assert.Equal(t, 1, res.After)
	assert.Equal(t, "/sys/fs/cgroup/pod", res.Source)

	write("sys/fs/cgroup/pod/cpu.max", "200000 100000\n")
	require.Eventually(t, func() bool { v, _, _ := fk.get(); return v == 2 }, 5*time.Second, time.Millisecond)
	st := res.Status()
	assert.Equal(t, 2.0, st.Limit)
	assert.Equal(t, 1, st.Updates)
}

// TestTickAllocs: a refresh tick that changes nothing allocates nothing.
func TestTickAllocs(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, modernRT, nil)
	te.src.setQuota(0.5, "/sys/fs/cgroup/app")
	_, s := applyFollowing(t, te)
	lim := cpuLimits(0.5, "/sys/fs/cgroup/app")
	now := time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.Tick(now, lim, nil) }))
}

// TestApplyConcurrentWithTicks races Apply, Undo, Status and the loop.
func TestApplyConcurrentWithTicks(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, nil)
	te.src.setQuota(1, "/sys/fs/cgroup/app")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			te.src.setQuota(float64(1+i%4), "/sys/fs/cgroup/app")
			time.Sleep(time.Millisecond)
		}
	}()
	var results []Result
	var mu sync.Mutex
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				r, err := Apply(te.opt(), WithRefresh(background, 10*time.Millisecond))
				assert.NoError(t, err)
				_ = r.Status()
				if j%3 == 0 {
					r.Undo()
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, r := range results {
		r.Stop()
	}
	te.waitIdle(t)
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
	var res Result
	calls := 0
	logger := slog.New(callbackHandler{slog.NewTextHandler(&buf, nil), func() {
		calls++
		_, _ = Plan(te.opt())
		_ = res.Status()
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		res, err = Apply(te.opt(), WithLogger(logger), WithRefresh(background, time.Hour))
		assert.NoError(t, err)
		res.s.Tick(time.Now(), cpuLimits(3, "/sys/fs/cgroup/app"), nil)
		fk.appSet(5)
		res.s.Tick(time.Now(), cpuLimits(3, "/sys/fs/cgroup/app"), nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock: a log handler called back into maxprocs")
	}
	assert.Equal(t, 3, calls, "set, updated, handed over")
	te.waitIdle(t)
}
