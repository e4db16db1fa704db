package maxprocs

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
	"github.com/fitgo/fitgo/internal/knob"
)

var (
	modernRT = goRuntime{aware: true, updates: true}
	oldRT    = goRuntime{} // go line <= 1.24: container support off
)

func TestApplyTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fsys     fstest.MapFS
		ncpu     int
		start    int
		opts     Options
		goos     string
		envValue string

		after   int
		changed bool
		limit   float64
		source  string
		reason  string
		err     string
	}{
		{name: "leaf 0.5 CPU", fsys: v2FS("50000 100000", ""), ncpu: 8, start: 8,
			after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "parent tighter", fsys: v2FS("400000 100000", "200000 100000"), ncpu: 8, start: 8,
			after: 2, changed: true, limit: 2, source: "/sys/fs/cgroup/pod"},
		{name: "ceil", fsys: v2FS("150000 100000", ""), ncpu: 8, start: 8, opts: Options{Policy: Policy{Rounding: Ceil}},
			after: 2, changed: true, limit: 1.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "reserve and max", fsys: v2FS("650000 100000", ""), ncpu: 8, start: 8, opts: Options{Policy: Policy{Reserve: 0.5, Max: 4}},
			after: 4, changed: true, limit: 6.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "min", fsys: v2FS("50000 100000", ""), ncpu: 8, start: 8, opts: Options{Policy: Policy{Min: 2}},
			after: 2, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "policy", fsys: v2FS("350000 100000", ""), ncpu: 8, start: 8,
			opts:  Options{Policy: Policy{Rounding: Ceil, Max: 4}},
			after: 4, changed: true, limit: 3.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "non-default period", fsys: v2FS("150000 50000", ""), ncpu: 8, start: 8,
			after: 3, changed: true, limit: 3, source: "/sys/fs/cgroup/pod/app"},
		{name: "already right", fsys: v2FS("200000 100000", ""), ncpu: 8, start: 2,
			after: 2, limit: 2, source: "/sys/fs/cgroup/pod/app", reason: "GOMAXPROCS is already 2; left to the Go runtime"},
		{name: "limit above the CPU count", fsys: v2FS("400000 100000", ""), ncpu: 2, start: 2,
			after: 2, limit: 4, source: "/sys/fs/cgroup/pod/app", reason: "the CPU limit (4 cores) is not below the CPU count (2)"},
		{name: "no limit", fsys: v2FS("max 100000", ""), ncpu: 8, start: 8, after: 8, reason: "no CPU limit"},
		{name: "no limit file", fsys: v2FS("", ""), ncpu: 8, start: 8, after: 8, reason: "no CPU limit"},
		{name: "no cgroup", fsys: fstest.MapFS{}, ncpu: 8, start: 8, after: 8, reason: "no cgroup information"},
		{name: "not linux", fsys: v2FS("50000 100000", ""), goos: "darwin", ncpu: 8, start: 8, after: 8, reason: "not Linux"},
		{name: "GOMAXPROCS set", fsys: v2FS("50000 100000", ""), envValue: "4", ncpu: 8, start: 4, after: 4,
			reason: "GOMAXPROCS=4 is set in the environment"},
		{name: "GOMAXPROCS empty is ignored", fsys: v2FS("50000 100000", ""), envValue: "", ncpu: 8, start: 8,
			after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "GOMAXPROCS invalid is ignored", fsys: v2FS("50000 100000", ""), envValue: "auto", ncpu: 8, start: 8,
			after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "GOMAXPROCS 0 is ignored", fsys: v2FS("50000 100000", ""), envValue: "0", ncpu: 8, start: 8,
			after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "GOMAXPROCS negative is ignored", fsys: v2FS("50000 100000", ""), envValue: "-2", ncpu: 8, start: 8,
			after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "malformed cpu.max", fsys: v2FS("lots 100000", ""), ncpu: 8, start: 8, after: 8,
			reason: "the CPU limit cannot be read", err: "cpu.max"},
		{name: "malformed memory file does not stop GOMAXPROCS", fsys: func() fstest.MapFS {
			f := v2FS("50000 100000", "")
			f["sys/fs/cgroup/pod/app/memory.max"] = &fstest.MapFile{Data: []byte("a lot\n")}
			return f
		}(), ncpu: 8, start: 8, after: 1, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "invalid options", fsys: v2FS("50000 100000", ""), ncpu: 8, start: 8, opts: Options{Policy: Policy{Min: 4, Max: 2}},
			after: 8, reason: "invalid options", err: "minimum 4 above maximum 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: tc.start, def: tc.start, modern: true}
			te := newTestEnv(fk, tc.ncpu, modernRT, tc.fsys)
			if tc.goos != "" {
				te.GOOS = tc.goos
			}
			te.Getenv = func(k string) string {
				if k == "GOMAXPROCS" {
					return tc.envValue
				}
				return ""
			}
			fit, err := Apply(te.opts(tc.opts))
			res := fit.res
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Equal(t, err, res.Err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.start, res.Before)
			assert.Equal(t, tc.after, res.After)
			assert.Equal(t, tc.changed, res.Changed)
			assert.Equal(t, tc.limit, res.Limit)
			assert.Equal(t, tc.source, res.Source)
			assert.Equal(t, tc.ncpu, res.NumCPU)
			assert.Equal(t, tc.envValue, res.Env)
			if tc.changed {
				assert.Empty(t, res.Reason)
			} else {
				assert.Contains(t, res.Reason, tc.reason)
			}
			value, sets, _ := fk.get()
			assert.Equal(t, tc.after, value, "GOMAXPROCS afterwards")
			if tc.changed {
				assert.Equal(t, 1, sets)
			} else {
				assert.Zero(t, sets, "runtime.GOMAXPROCS must not be called")
			}
			assert.Zero(t, res.Refresh)
		})
	}
}

func TestApplyDoesNotCallWhenEqual(t *testing.T) {
	// The runtime already chose 2 for a 2-CPU limit: calling
	// runtime.GOMAXPROCS(2) would switch its updates off for nothing.
	fk := &fakeKnob{value: 2, def: 2, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("200000 100000", ""))
	fit, err := Apply(te.opts(Options{}))
	require.NoError(t, err)
	assert.False(t, fit.Status().Changed)
	_, sets, _ := fk.get()
	assert.Zero(t, sets)
	assert.False(t, fk.custom, "the runtime's updates stay on")
	fit.Undo()
	_, sets, setDefault := fk.get()
	assert.Zero(t, sets+setDefault, "nothing to undo")
}

func TestPlan(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("150000 100000", ""))
	res, err := Plan(te.opts(Options{Refresh: time.Second}))
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, 8, res.Before)
	assert.Equal(t, 2, res.After, "ceil(1.5)")
	assert.Zero(t, res.Refresh, "Plan starts no loop")
	assert.False(t, res.Following)
	value, sets, _ := fk.get()
	assert.Equal(t, 8, value)
	assert.Zero(t, sets)
}

// TestPlanGivenLimits: Plan for limits the caller read, reading nothing.
func TestPlanGivenLimits(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, nil)
	te.Read = func() (cgroup.Limits, error) { t.Fatal("read"); return cgroup.Limits{}, nil }
	lim := cpuLimits(2.5, "/sys/fs/cgroup/app")
	res, err := Plan(te.opts(Options{Limits: &lim, Policy: Policy{Rounding: Nearest}}))
	require.NoError(t, err)
	assert.Equal(t, 3, res.After)
	assert.Equal(t, "/sys/fs/cgroup/app", res.Source)
}

func TestUndo(t *testing.T) {
	t.Run("go1.25+: back to the runtime's default", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 2, modernRT, v2FS("100000 100000", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		require.True(t, fit.Status().Changed)
		assert.True(t, fk.custom)
		fit.Undo()
		value, _, setDefault := fk.get()
		assert.Equal(t, 2, value)
		assert.Equal(t, 1, setDefault, "runtime.SetDefaultGOMAXPROCS")
		assert.False(t, fk.custom, "the runtime's updates resume")
		fit.Undo() // again: nothing
		_, _, setDefault = fk.get()
		assert.Equal(t, 1, setDefault)
	})
	t.Run("before go1.25: the value before", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, v2FS("100000 100000", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		require.Equal(t, 1, fit.Status().After)
		fit.Undo()
		value, sets, _ := fk.get()
		assert.Equal(t, 8, value)
		assert.Equal(t, 2, sets)
	})
	t.Run("someone else changed it since", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8, modern: true}
		te := newTestEnv(fk, 8, modernRT, v2FS("100000 100000", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fk.appSet(3)
		fit.Undo()
		value, _, setDefault := fk.get()
		assert.Equal(t, 3, value, "the application's value stays")
		assert.Zero(t, setDefault)
	})
	t.Run("last in, first out", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, v2FS("300000 100000", ""))
		r1, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		r2, err := Apply(te.opts(Options{Policy: Policy{Max: 2}}))
		require.NoError(t, err)
		assert.Equal(t, 3, r2.Status().Before)
		assert.Equal(t, 2, r2.Status().After)
		r2.Undo()
		value, _, _ := fk.get()
		assert.Equal(t, 3, value, "back to r1's value")
		r1.Undo()
		value, _, _ = fk.get()
		assert.Equal(t, 8, value, "back to the start")
	})
	// Out of order (issue: a library's Apply undone before the program's
	// left the library's value in force, and its second Undo changed it).
	t.Run("out of order", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, v2FS("300000 100000", ""))
		lib, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		app, err := Apply(te.opts(Options{Policy: Policy{Max: 2}}))
		require.NoError(t, err)
		lib.Undo() // app is in force: nothing happens
		value, _, _ := fk.get()
		assert.Equal(t, 2, value)
		app.Undo()
		value, _, _ = fk.get()
		assert.Equal(t, 8, value, "all undone: the state from before fitgo")
		lib.Undo()
		value, sets, _ := fk.get()
		assert.Equal(t, 8, value, "a second Undo does nothing")
		assert.Equal(t, 3, sets)
	})
}

func TestApplyLogsOnlyToItsLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
	_, err := Apply(te.opts(Options{Logger: logger}))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `level=INFO msg="fitgo: GOMAXPROCS set" result.before=8 result.after=1 result.changed=true result.cpu_limit=0.5 result.source=/sys/fs/cgroup/pod/app`)
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")), buf.String())

	buf.Reset()
	_, err = Apply(te.opts(Options{Logger: logger}))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `level=DEBUG msg="fitgo: GOMAXPROCS left alone: GOMAXPROCS is already 1"`)

	buf.Reset()
	te2 := newTestEnv(fk, 8, oldRT, v2FS("x 100000", ""))
	_, err = Apply(te2.opts(Options{Logger: logger}))
	require.Error(t, err)
	assert.Contains(t, buf.String(), `level=WARN`)

	// Without a logger, nothing anywhere: slog.Default must not be used.
	var def bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	_, err = Apply(newTestEnv(&fakeKnob{value: 8}, 8, oldRT, v2FS("50000 100000", "")).opts(Options{}))
	require.NoError(t, err)
	assert.Empty(t, def.String())
}

func TestApplyConcurrent(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("250000 100000", ""))
	var wg sync.WaitGroup
	fits := make([]*Fit, 16)
	for i := range fits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := Options{}
			if i%2 == 0 {
				o.Refresh = time.Hour
			}
			var err error
			fits[i], err = Apply(te.opts(o))
			assert.NoError(t, err)
			_ = fits[i].Status()
		}()
	}
	wg.Wait()
	value, sets, _ := fk.get()
	assert.Equal(t, 3, value)
	assert.Equal(t, 1, sets, "only the first call changes anything")
	following := 0
	for _, f := range fits {
		if f.Status().Following {
			following++
		}
	}
	assert.LessOrEqual(t, following, 1, "a later Apply takes over")
	for _, f := range fits {
		stop(f)
		if f.loop != nil {
			waitIdle(t, f.loop.Done())
		}
	}
}

func TestResultString(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
	fit, err := Apply(te.opts(Options{}))
	require.NoError(t, err)
	assert.Equal(t, "GOMAXPROCS 8 -> 1; CPU limit 0.5 cores from /sys/fs/cgroup/pod/app; policy ceil, min 1", fit.Status().String())
	fit, err = Apply(te.opts(Options{}))
	require.NoError(t, err)
	assert.Equal(t, "GOMAXPROCS 1 (unchanged: GOMAXPROCS is already 1); CPU limit 0.5 cores from /sys/fs/cgroup/pod/app; policy ceil, min 1", fit.Status().String())
}

func TestCPUErr(t *testing.T) {
	cpuBad := errors.New("cpu bad")
	memBad := errors.New("mem bad")
	var l cgroup.Limits
	assert.NoError(t, (&Fit{}).cpuErr(l, nil))
	l.CPU.Err = cpuBad
	assert.Equal(t, cpuBad, (&Fit{}).cpuErr(l, errors.Join(cpuBad)))
	l = cgroup.Limits{}
	l.Memory.Err = memBad
	assert.NoError(t, (&Fit{}).cpuErr(l, errors.Join(memBad)))
	assert.ErrorIs(t, (&Fit{}).cpuErr(cgroup.Limits{}, fs.ErrClosed), fs.ErrClosed)
}

func TestKeepExisting(t *testing.T) {
	leafHalf := v2FS("50000 100000", "")   // leaf imposes 0.5 CPU
	leaf15 := v2FS("150000 100000", "")    // leaf imposes 1.5 CPU
	parentHalf := v2FS("", "50000 100000") // the parent imposes it
	for _, tc := range []struct {
		name   string
		rt     goRuntime
		fsys   fstest.MapFS
		start  int
		after  int
		reason string
	}{
		{"not aware, default value: applied", oldRT, leafHalf, 8, 1, ""},
		{"not aware, value set by someone: kept", oldRT, leafHalf, 3, 3, "GOMAXPROCS is already 3, not the runtime's default 8: set by the program or a library, and kept"},
		{"aware, the runtime's value: applied", modernRT, leafHalf, 2, 1, ""},
		{"aware, another value: kept", modernRT, leaf15, 5, 5, "not the runtime's default 2"},
		{"aware, parent imposes, default unknown: applied", modernRT, parentHalf, 5, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: tc.start, def: tc.start, modern: true}
			te := newTestEnv(fk, 8, tc.rt, tc.fsys)
			fit, err := Apply(te.opts(Options{KeepExisting: true, Refresh: time.Hour}))
			require.NoError(t, err)
			res := fit.Status()
			assert.Equal(t, tc.after, res.After)
			value, _, _ := fk.get()
			assert.Equal(t, tc.after, value)
			if tc.reason != "" {
				assert.Contains(t, res.Reason, tc.reason)
				assert.False(t, res.Following, "someone else owns it")
			} else {
				assert.True(t, res.Changed)
				assert.True(t, res.Following)
			}
			stop(fit)
			if fit.loop != nil {
				waitIdle(t, fit.loop.Done())
			}
		})
	}
	t.Run("fitgo's own earlier value is not someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, leafHalf)
		_, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fit, err := Apply(te.opts(Options{KeepExisting: true, Policy: Policy{Min: 2}}))
		require.NoError(t, err)
		assert.Equal(t, 2, fit.Status().After)
	})
}

// TestStartupEnvironment: GOMAXPROCS is judged by the environment the
// process started with, not by what an earlier init made of os.Getenv.
func TestStartupEnvironment(t *testing.T) {
	fk := &fakeKnob{value: 2, def: 2}
	te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
	te.Getenv = func(k string) string { return envvar.Lookup([]byte("A=1\x00GOMAXPROCS=2\x00"), k) }
	res, err := Plan(te.opts(Options{}))
	require.NoError(t, err)
	assert.False(t, res.Changed)
	assert.Equal(t, "GOMAXPROCS=2 is set in the environment", res.Reason)
	e := knob.Process(processKnob, nil, "cpu")
	assert.NotNil(t, e.Getenv, "the process's start-up environment")
}

// TestGOMAXPROCSIgnored: a GOMAXPROCS the runtime ignores (not a positive
// int32) is fitted over as if unset, and the Result says so in SettingErr,
// which the blank import logs as a Warn line.
func TestGOMAXPROCSIgnored(t *testing.T) {
	for _, env := range []string{"two", "0", "-1", "2147483648"} {
		t.Run(env, func(t *testing.T) {
			fk := &fakeKnob{value: 8, def: 8}
			te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
			te.Getenv = func(k string) string { return map[string]string{"GOMAXPROCS": env}[k] }
			res, err := Plan(te.opts(Options{}))
			require.NoError(t, err)
			assert.True(t, res.Changed)
			assert.Equal(t, 1, res.After)
			require.Error(t, res.SettingErr)
			assert.Equal(t, "maxprocs: GOMAXPROCS="+env+" is not a positive integer: the Go runtime ignores it; ignored",
				res.SettingErr.Error())
		})
	}
}
