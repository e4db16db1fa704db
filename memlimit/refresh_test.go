package memlimit

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
)

func applyFollowing(t *testing.T, te *testEnv, o Options) (*Fit, *Fit) {
	t.Helper()
	o.Refresh = time.Hour
	fit, err := Apply(te.opts(o))
	require.NoError(t, err)
	require.NotNil(t, fit.f)
	t.Cleanup(func() { stop(fit); waitIdle(t, fit.loop.Done()) })
	return fit, fit
}

func TestTick(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	res, s := applyFollowing(t, te, Options{})
	require.Equal(t, int64(483183820), res.Status().After)
	assert.Equal(t, time.Hour, res.Status().Refresh)
	now := time.Now()

	assert.True(t, s.tick(s.f, now, memLimits(512*MiB, 0), nil))
	_, sets := fk.get()
	assert.Equal(t, 1, sets, "nothing changed, nothing set")

	// Resize down to 384 MiB.
	assert.True(t, s.tick(s.f, now, memLimits(384*MiB, 0), nil))
	value, _ := fk.get()
	assert.Equal(t, int64(362387865), value)
	// memory.high appears below memory.max.
	assert.True(t, s.tick(s.f, now, memLimits(384*MiB, 256*MiB), nil))
	value, _ = fk.get()
	assert.Equal(t, int64(241591910), value)
	st := res.Status()
	assert.Equal(t, 256*MiB, st.Limit)
	assert.Equal(t, "memory.high", st.From)
	assert.Equal(t, 2, st.Updates)

	// A bad reading keeps the value.
	bad := memLimits(0, 0)
	bad.Memory.Err = &fs.PathError{Op: "read", Path: "/sys/fs/cgroup/app/memory.max", Err: fs.ErrInvalid}
	assert.True(t, s.tick(s.f, now, bad, bad.Memory.Err))
	value, _ = fk.get()
	assert.Equal(t, int64(241591910), value)
	assert.Error(t, res.Status().Err)

	// The limit goes away: back to the value before fitgo, never to a
	// made-up one.
	assert.True(t, s.tick(s.f, now, memLimits(0, 0), nil))
	value, _ = fk.get()
	assert.Equal(t, noLimit, value)
	// It comes back, tiny: still nothing.
	assert.True(t, s.tick(s.f, now, memLimits(8*MiB, 0), nil))
	value, _ = fk.get()
	assert.Equal(t, noLimit, value)
	// And normal again.
	assert.True(t, s.tick(s.f, now, memLimits(GiB, 0), nil))
	value, _ = fk.get()
	assert.Equal(t, int64(966367641), value)
	assert.True(t, res.Status().Following)
}

func TestTickNeverClearsTheApplicationsLimit(t *testing.T) {
	// No container limit at start: fitgo does nothing and follows.
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(0, 0))
	res, s := applyFollowing(t, te, Options{})
	require.False(t, res.Status().Changed)
	// The application sets its own limit.
	fk.appSet(200 * MiB)
	assert.False(t, s.tick(s.f, time.Now(), memLimits(0, 0), nil))
	value, sets := fk.get()
	assert.Equal(t, 200*MiB, value)
	assert.Zero(t, sets)
	assert.Equal(t, "the memory limit was changed from no limit to 200 MiB outside fitgo; no longer managed", res.Status().Reason)
	// Even when a container limit appears later, the application keeps it.
	assert.False(t, s.tick(s.f, time.Now(), memLimits(GiB, 0), nil))
	value, _ = fk.get()
	assert.Equal(t, 200*MiB, value)
}

func TestTickHandOver(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	res, s := applyFollowing(t, te, Options{Logger: logger})
	fk.appSet(GiB) // an operator raises it with debug.SetMemoryLimit
	assert.False(t, s.tick(s.f, time.Now(), memLimits(384*MiB, 0), nil))
	value, _ := fk.get()
	assert.Equal(t, GiB, value, "fitgo does not fight")
	st := res.Status()
	assert.False(t, st.Following)
	assert.Contains(t, st.Reason, "changed from 460.8 MiB to 1 GiB outside fitgo")
	assert.Contains(t, buf.String(), "GOMEMLIMIT changed by someone else")
	res.Undo()
	value, _ = fk.get()
	assert.Equal(t, GiB, value)
}

func TestStopAndSupersede(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	r1, s1 := applyFollowing(t, te, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r2, s2 := applyFollowing(t, te, Options{Policy: Policy{Ratio: 0.5}, Context: ctx})
	assert.Equal(t, "superseded by a later Apply", r1.Status().Reason)
	assert.False(t, s1.tick(s1.f, time.Now(), memLimits(GiB, 0), nil))
	assert.True(t, s2.tick(s2.f, time.Now(), memLimits(GiB, 0), nil))
	value, _ := fk.get()
	assert.Equal(t, 512*MiB, value)
	done := r2.loop.Done()
	cancel() // the context stops it
	waitIdle(t, done)
	assert.False(t, s2.tick(s2.f, time.Now(), memLimits(2*GiB, 0), nil))
	value, _ = fk.get()
	assert.Equal(t, 512*MiB, value)
}

// TestRefreshFollowsTheLoop runs the real loop, ticked by the test.
func TestRefreshFollowsTheLoop(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fit, err := Apply(te.opts(Options{Refresh: 50 * time.Millisecond, Context: ctx}))
	require.NoError(t, err)
	require.Equal(t, int64(483183820), fit.Status().After)
	for _, step := range []struct {
		max, want int64
	}{{384 * MiB, 362387865}, {GiB, 966367641}, {2 * GiB, 1932735283}} {
		te.src.set(memLimits(step.max, 0))
		te.tick()
		value, _ := fk.get()
		assert.Equal(t, step.want, value, "followed %s at the next tick", formatBytes(step.max))
	}
	done := fit.loop.Done()
	cancel()
	waitIdle(t, done)
	assert.Equal(t, "stopped: context canceled", fit.Status().Reason)
}

func TestRefreshOverWatcher(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write("proc/self/cgroup", "4:memory:/pod/app\n")
	write("proc/self/mountinfo", "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
	write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("sys/fs/cgroup/memory/pod/memory.limit_in_bytes", "536870912\n")
	write("sys/fs/cgroup/memory/pod/app/memory.limit_in_bytes", "9223372036854771712\n")
	write("sys/fs/cgroup/memory/pod/app/memory.stat", "cache 0\nhierarchical_memory_limit 536870912\n")
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.Read = func() (cgroup.Limits, error) { return cgroup.ReadFS(os.DirFS(root)) }
	te.Open = func() (knob.Source, error) { return cgroup.NewWatcher(os.DirFS(root)) }
	fit, err := Apply(te.opts(Options{Refresh: 20 * time.Millisecond}))
	require.NoError(t, err)
	defer func() { stop(fit); waitIdle(t, fit.loop.Done()) }()
	assert.Equal(t, int64(483183820), fit.Status().After)
	assert.Equal(t, "/sys/fs/cgroup/memory/pod", fit.Status().Source)

	write("sys/fs/cgroup/memory/pod/memory.limit_in_bytes", "402653184\n")
	write("sys/fs/cgroup/memory/pod/app/memory.stat", "cache 0\nhierarchical_memory_limit 402653184\n")
	te.tick()
	value, _ := fk.get()
	assert.Equal(t, int64(362387865), value)
}

// TestReadErrorThenRecovers: while the reading fails, Status says GOMEMLIMIT
// is not being fitted; a shrink is followed once the reading is good again.
func TestReadErrorThenRecovers(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	fit, _ := applyFollowing(t, te, Options{})
	bad := memLimits(0, 0)
	bad.Memory.Err = &fs.PathError{Op: "open", Path: "/sys/fs/cgroup/app/memory.max", Err: syscall.EMFILE}
	te.src.setReading(bad, bad.Memory.Err)
	te.tick()
	st := fit.Status()
	assert.True(t, st.Following)
	assert.ErrorIs(t, st.Err, syscall.EMFILE)
	assert.Equal(t, "the memory limit cannot be read: GOMEMLIMIT is not fitted until it can", st.Reason)
	value, _ := fk.get()
	assert.Equal(t, int64(483183820), value, "unchanged meanwhile")
	te.src.set(memLimits(256*MiB, 0))
	te.tick()
	value, _ = fk.get()
	assert.Equal(t, int64(241591910), value, "the shrink is followed")
	assert.NoError(t, fit.Status().Err)
}

func TestTickAllocs(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	_, s := applyFollowing(t, te, Options{})
	lim := memLimits(512*MiB, 0)
	now := time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.tick(s.f, now, lim, nil) }))
}

type callbackHandler struct {
	slog.Handler
	call func()
}

func (h callbackHandler) Handle(ctx context.Context, r slog.Record) error {
	h.call()
	return h.Handler.Handle(ctx, r)
}

func TestLoggerMayCallBack(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
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
		res.tick(res.f, time.Now(), memLimits(GiB, 0), nil)
		fk.appSet(5 * GiB)
		res.tick(res.f, time.Now(), memLimits(GiB, 0), nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock: a log handler called back into memlimit")
	}
	assert.Equal(t, 3, calls, "set, updated, handed over")
	waitIdle(t, res.loop.Done())
}

// TestOtherLibrary: automemlimit's Set in main writes its ratio of the hard
// limit (AUTOMEMLIMIT=0.8 here) over fitgo's value. Without Insist fitgo
// hands over and names it; with Insist it puts its value back at the next
// reading and follows a resize.
func TestOtherLibrary(t *testing.T) {
	for _, insist := range []bool{false, true} {
		t.Run(fmt.Sprint("insist=", insist), func(t *testing.T) {
			var buf bytes.Buffer
			fk := &fakeKnob{value: noLimit}
			te := newTestEnv(fk, nil)
			te.Getenv = func(k string) string { return map[string]string{"AUTOMEMLIMIT": "0.8"}[k] }
			te.src.set(memLimits(512*MiB, 0))
			fit, _ := applyFollowing(t, te, Options{Insist: insist, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			require.Equal(t, int64(483183820), fit.Status().After)
			fk.appSet(429496729) // automemlimit: uint64(float64(512 MiB) * 0.8)
			assert.Equal(t, insist, fit.tick(fit.f, time.Now(), memLimits(512*MiB, 0), nil))
			value, _ := fk.get()
			st := fit.Status()
			assert.Contains(t, buf.String(), `by="another library, matching automemlimit's 0.8 × 512 MiB"`)
			if !insist {
				assert.Equal(t, int64(429496729), value, "fitgo does not fight")
				assert.Equal(t, "the memory limit was changed from 460.8 MiB to 409.6 MiB by another library, matching automemlimit's 0.8 × 512 MiB; no longer managed (to keep fitgo's value: FITGO=insist=on or Options.Insist)", st.Reason)
				return
			}
			assert.Equal(t, int64(483183820), value, "put back")
			assert.True(t, st.Following)
			assert.Contains(t, st.Reason, "fitgo put its value back (insist, 1 times)")
			assert.True(t, fit.tick(fit.f, time.Now(), memLimits(256*MiB, 0), nil))
			value, _ = fk.get()
			assert.Equal(t, int64(256*MiB*9/10), value, "follows a resize")
		})
	}
}

func TestAutomemlimitRatio(t *testing.T) {
	for in, want := range map[string]float64{"": 0.9, "0.8": 0.8, "1": 1, "off": 0, "0": 0, "1.5": 0, "x": 0, "NaN": 0} {
		assert.Equal(t, want, automemlimitRatio(in), in)
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
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, v2FS("536870912", "", ""))
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
		v, _ := fk.get()
		require.Equal(t, noLimit, v)
	}
}
