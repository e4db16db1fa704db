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
)

var (
	modernRT = Runtime{Version: "go1.26", ContainerAware: true, Updates: true}
	oldRT    = Runtime{Version: "go1.26"} // go line <= 1.24: container support off
)

func TestApplyTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fsys     fstest.MapFS
		ncpu     int
		start    int
		opts     []Option
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
		{name: "ceil", fsys: v2FS("150000 100000", ""), ncpu: 8, start: 8, opts: []Option{WithRounding(Ceil)},
			after: 2, changed: true, limit: 1.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "reserve and max", fsys: v2FS("650000 100000", ""), ncpu: 8, start: 8, opts: []Option{WithReserve(0.5), WithMax(4)},
			after: 4, changed: true, limit: 6.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "min", fsys: v2FS("50000 100000", ""), ncpu: 8, start: 8, opts: []Option{WithMin(2)},
			after: 2, changed: true, limit: 0.5, source: "/sys/fs/cgroup/pod/app"},
		{name: "policy option then field option", fsys: v2FS("350000 100000", ""), ncpu: 8, start: 8,
			opts:  []Option{WithPolicy(Policy{Rounding: Ceil, Max: 2}), WithMax(0)},
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
		{name: "invalid options", fsys: v2FS("50000 100000", ""), ncpu: 8, start: 8, opts: []Option{WithMin(4), WithMax(2)},
			after: 8, reason: "invalid options", err: "minimum 4 above maximum 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: tc.start, def: tc.start, modern: true}
			te := newTestEnv(fk, tc.ncpu, modernRT, tc.fsys)
			if tc.goos != "" {
				te.goos = tc.goos
			}
			te.getenv = func(k string) string {
				if k == "GOMAXPROCS" {
					return tc.envValue
				}
				return ""
			}
			res, err := Apply(append([]Option{te.opt()}, tc.opts...)...)
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
	res, err := Apply(te.opt())
	require.NoError(t, err)
	assert.False(t, res.Changed)
	_, sets, _ := fk.get()
	assert.Zero(t, sets)
	assert.False(t, fk.custom, "the runtime's updates stay on")
	res.Undo()
	_, sets, setDefault := fk.get()
	assert.Zero(t, sets+setDefault, "nothing to undo")
}

func TestPlan(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("150000 100000", ""))
	res, err := Plan(te.opt(), WithRefresh(background, 0))
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, 8, res.Before)
	assert.Equal(t, 2, res.After, "ceil(1.5)")
	assert.Zero(t, res.Refresh, "Plan starts no loop")
	value, sets, _ := fk.get()
	assert.Equal(t, 8, value)
	assert.Zero(t, sets)
	running, _ := te.loop.Running()
	assert.False(t, running)
	res.Undo()
	res.Stop()
	value, _, _ = fk.get()
	assert.Equal(t, 8, value)
}

func TestUndo(t *testing.T) {
	t.Run("go1.25+: back to the runtime's default", func(t *testing.T) {
		fk := &fakeKnob{value: 2, def: 2, modern: true}
		te := newTestEnv(fk, 2, modernRT, v2FS("100000 100000", ""))
		res, err := Apply(te.opt())
		require.NoError(t, err)
		require.True(t, res.Changed)
		assert.True(t, fk.custom)
		res.Undo()
		value, _, setDefault := fk.get()
		assert.Equal(t, 2, value)
		assert.Equal(t, 1, setDefault, "runtime.SetDefaultGOMAXPROCS")
		assert.False(t, fk.custom, "the runtime's updates resume")
		res.Undo() // again: nothing
		_, _, setDefault = fk.get()
		assert.Equal(t, 1, setDefault)
	})
	t.Run("before go1.25: the value before", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, v2FS("100000 100000", ""))
		res, err := Apply(te.opt())
		require.NoError(t, err)
		require.Equal(t, 1, res.After)
		res.Undo()
		value, sets, _ := fk.get()
		assert.Equal(t, 8, value)
		assert.Equal(t, 2, sets)
	})
	t.Run("someone else changed it since", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8, modern: true}
		te := newTestEnv(fk, 8, modernRT, v2FS("100000 100000", ""))
		res, err := Apply(te.opt())
		require.NoError(t, err)
		fk.appSet(3)
		res.Undo()
		value, _, setDefault := fk.get()
		assert.Equal(t, 3, value, "the application's value stays")
		assert.Zero(t, setDefault)
	})
	t.Run("last in, first out", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, v2FS("300000 100000", ""))
		r1, err := Apply(te.opt())
		require.NoError(t, err)
		r2, err := Apply(te.opt(), WithMax(2))
		require.NoError(t, err)
		assert.Equal(t, 3, r2.Before)
		assert.Equal(t, 2, r2.After)
		r1.Undo() // out of order: r2 is in force, nothing happens
		value, _, _ := fk.get()
		assert.Equal(t, 2, value)
		r2.Undo()
		value, _, _ = fk.get()
		assert.Equal(t, 3, value, "back to r1's value")
		r1.Undo()
		value, _, _ = fk.get()
		assert.Equal(t, 8, value, "back to the start")
	})
}

func TestApplyLogsOnlyToItsLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
	_, err := Apply(te.opt(), WithLogger(logger))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `level=INFO msg="fitgo: GOMAXPROCS set" result.before=8 result.after=1 result.changed=true result.cpu_limit=0.5 result.source=/sys/fs/cgroup/pod/app`)
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")), buf.String())

	buf.Reset()
	_, err = Apply(te.opt(), WithLogger(logger))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `level=DEBUG msg="fitgo: GOMAXPROCS left alone: GOMAXPROCS is already 1"`)

	buf.Reset()
	te2 := newTestEnv(fk, 8, oldRT, v2FS("x 100000", ""))
	_, err = Apply(te2.opt(), WithLogger(logger))
	require.Error(t, err)
	assert.Contains(t, buf.String(), `level=WARN`)

	// Without a logger, nothing anywhere: slog.Default must not be used.
	var def bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	_, err = Apply(newTestEnv(&fakeKnob{value: 8}, 8, oldRT, v2FS("50000 100000", "")).opt())
	require.NoError(t, err)
	assert.Empty(t, def.String())
}

func TestApplyConcurrent(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8, modern: true}
	te := newTestEnv(fk, 8, modernRT, v2FS("250000 100000", ""))
	var wg sync.WaitGroup
	results := make([]Result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := []Option{te.opt()}
			if i%2 == 0 {
				opts = append(opts, WithRefresh(background, 0))
			}
			var err error
			results[i], err = Apply(opts...)
			assert.NoError(t, err)
			_ = results[i].Status()
		}()
	}
	wg.Wait()
	value, sets, _ := fk.get()
	assert.Equal(t, 3, value)
	assert.Equal(t, 1, sets, "only the first call changes anything")
	following := 0
	for _, r := range results {
		if r.Status().Following {
			following++
		}
	}
	assert.LessOrEqual(t, following, 1, "a later Apply takes over")
	for _, r := range results {
		r.Stop()
	}
	te.waitIdle(t)
}

func TestResultString(t *testing.T) {
	fk := &fakeKnob{value: 8, def: 8}
	te := newTestEnv(fk, 8, oldRT, v2FS("50000 100000", ""))
	res, err := Apply(te.opt())
	require.NoError(t, err)
	assert.Equal(t, "GOMAXPROCS 8 -> 1; CPU limit 0.5 cores from /sys/fs/cgroup/pod/app; policy ceil, min 1", res.String())
	res, err = Apply(te.opt())
	require.NoError(t, err)
	assert.Equal(t, "GOMAXPROCS 1 (unchanged: GOMAXPROCS is already 1); CPU limit 0.5 cores from /sys/fs/cgroup/pod/app; policy ceil, min 1", res.String())
}

func TestCPUErr(t *testing.T) {
	cpuBad := errors.New("cpu bad")
	memBad := errors.New("mem bad")
	var l cgroup.Limits
	assert.NoError(t, cpuErr(l, nil))
	l.CPU.Err = cpuBad
	assert.Equal(t, cpuBad, cpuErr(l, errors.Join(cpuBad)))
	l = cgroup.Limits{}
	l.Memory.Err = memBad
	assert.NoError(t, cpuErr(l, errors.Join(memBad)))
	assert.ErrorIs(t, cpuErr(cgroup.Limits{}, fs.ErrClosed), fs.ErrClosed)
}

func TestKeepExisting(t *testing.T) {
	leafHalf := v2FS("50000 100000", "")   // leaf imposes 0.5 CPU
	leaf15 := v2FS("150000 100000", "")    // leaf imposes 1.5 CPU
	parentHalf := v2FS("", "50000 100000") // the parent imposes it
	for _, tc := range []struct {
		name   string
		rt     Runtime
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
			res, err := Apply(te.opt(), WithKeepExisting(), WithRefresh(background, time.Hour))
			require.NoError(t, err)
			assert.Equal(t, tc.after, res.After)
			value, _, _ := fk.get()
			assert.Equal(t, tc.after, value)
			if tc.reason != "" {
				assert.Contains(t, res.Reason, tc.reason)
				assert.False(t, res.Status().Following, "someone else owns it")
			} else {
				assert.True(t, res.Changed)
				assert.True(t, res.Status().Following)
			}
			res.Stop()
			te.waitIdle(t)
		})
	}
	t.Run("fitgo's own earlier value is not someone else's", func(t *testing.T) {
		fk := &fakeKnob{value: 8, def: 8}
		te := newTestEnv(fk, 8, oldRT, leafHalf)
		_, err := Apply(te.opt())
		require.NoError(t, err)
		res, err := Apply(te.opt(), WithKeepExisting(), WithMin(2))
		require.NoError(t, err)
		assert.Equal(t, 2, res.After)
	})
}
