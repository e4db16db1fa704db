package memlimit

import (
	"bytes"
	"github.com/fitgo/fitgo/cgroup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"log/slog"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

func TestApplyTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fsys     fstest.MapFS
		start    int64
		opts     Options
		goos     string
		envValue string

		after   int64
		changed bool
		limit   int64
		source  string
		from    string
		reason  string
		err     string
	}{
		{name: "v2 memory.max 512 MiB", fsys: v2FS("536870912", "", ""), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "v2 parent tighter", fsys: v2FS("1073741824", "", "536870912"), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod", from: "memory.max"},
		{name: "v2 memory.high below memory.max", fsys: v2FS("1073741824", "536870912", ""), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.high"},
		{name: "v2 memory.high alone", fsys: v2FS("max", "536870912", ""), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.high"},
		{name: "v2 memory.high above memory.max", fsys: v2FS("536870912", "1073741824", ""), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "v1 limit_in_bytes", fsys: v1FS("536870912", "536870912"), start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/memory/app", from: "memory.limit_in_bytes"},
		{name: "ratio", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{Policy: Policy{Ratio: 0.5}},
			after: 256 * MiB, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "margin", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{Policy: Policy{Margin: 128 * MiB}},
			after: 384 * MiB, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "ratio 1 and a margin", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{Policy: Policy{Ratio: 1, Margin: MiB}},
			after: 511 * MiB, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "tiny limit left unset", fsys: v2FS("12582912", "", ""), start: noLimit,
			after: noLimit, limit: 12 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max", reason: "10.8 MiB (from a 12 MiB limit) is below the minimum of 16 MiB"},
		{name: "tiny limit with no minimum", fsys: v2FS("12582912", "", ""), start: noLimit, opts: Options{Policy: Policy{Min: -1}},
			after: 11324620, changed: true, limit: 12 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "margin eats the limit", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{Policy: Policy{Margin: GiB}},
			after: noLimit, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max", reason: "the margin (1 GiB) leaves nothing of the 512 MiB memory.max limit"},
		{name: "already right", fsys: v2FS("536870912", "", ""), start: 483183820,
			after: 483183820, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max", reason: "GOMEMLIMIT is already 460.8 MiB"},
		{name: "application's own limit is replaced on explicit Apply", fsys: v2FS("536870912", "", ""), start: GiB,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "no limit", fsys: v2FS("max", "", ""), start: noLimit, after: noLimit, reason: "no memory limit"},
		{name: "no limit keeps the application's", fsys: v2FS("max", "", ""), start: GiB, after: GiB, reason: "no memory limit"},
		{name: "no limit files", fsys: v2FS("", "", ""), start: noLimit, after: noLimit, reason: "no memory limit"},
		{name: "no limit, system memory fallback", fsys: v2FS("max", "", ""), start: noLimit, opts: Options{SystemMemory: true},
			after: 22629711052, changed: true, limit: 24554808 * KiB, source: "/proc/meminfo", from: "MemTotal"},
		{name: "limit wins over the fallback", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{SystemMemory: true},
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "no cgroup, system memory fallback", fsys: fstest.MapFS{"proc/meminfo": {Data: []byte("MemTotal: 1048576 kB\n")}}, start: noLimit,
			opts: Options{SystemMemory: true}, after: 966367641, changed: true, limit: GiB, source: "/proc/meminfo", from: "MemTotal"},
		{name: "fallback without meminfo", fsys: func() fstest.MapFS { f := v2FS("max", "", ""); delete(f, "proc/meminfo"); return f }(), start: noLimit,
			opts: Options{SystemMemory: true}, after: noLimit, reason: "no memory limit; no system memory either"},
		{name: "no cgroup", fsys: fstest.MapFS{}, start: noLimit, after: noLimit, reason: "no cgroup information"},
		{name: "not linux", fsys: v2FS("536870912", "", ""), goos: "windows", start: noLimit, after: noLimit, reason: "not Linux"},
		{name: "GOMEMLIMIT set", fsys: v2FS("536870912", "", ""), envValue: "300MiB", start: 300 * MiB, after: 300 * MiB,
			reason: "GOMEMLIMIT=300MiB is set in the environment"},
		{name: "GOMEMLIMIT off", fsys: v2FS("536870912", "", ""), envValue: "off", start: noLimit, after: noLimit,
			reason: "GOMEMLIMIT=off is set in the environment"},
		{name: "GOMEMLIMIT 0", fsys: v2FS("536870912", "", ""), envValue: "0", start: 0, after: 0,
			reason: "GOMEMLIMIT=0 is set in the environment"},
		{name: "GOMEMLIMIT empty is unset", fsys: v2FS("536870912", "", ""), envValue: "", start: noLimit,
			after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "GOMEMLIMIT malformed, which the runtime refuses to start with, is taken as set", fsys: v2FS("536870912", "", ""),
			envValue: "lots", start: noLimit, after: noLimit, reason: "GOMEMLIMIT=lots is set in the environment"},
		{name: "malformed memory.max", fsys: v2FS("lots", "", ""), start: noLimit, after: noLimit,
			reason: "the memory limit cannot be read", err: "memory.max"},
		{name: "malformed cpu.max does not stop GOMEMLIMIT", fsys: func() fstest.MapFS {
			f := v2FS("536870912", "", "")
			f["sys/fs/cgroup/pod/app/cpu.max"] = &fstest.MapFile{Data: []byte("x y\n")}
			return f
		}(), start: noLimit, after: 483183820, changed: true, limit: 512 * MiB, source: "/sys/fs/cgroup/pod/app", from: "memory.max"},
		{name: "invalid options", fsys: v2FS("536870912", "", ""), start: noLimit, opts: Options{Policy: Policy{Ratio: 2}},
			after: noLimit, reason: "invalid options", err: "ratio 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: tc.start}
			te := newTestEnv(fk, tc.fsys)
			if tc.goos != "" {
				te.GOOS = tc.goos
			}
			te.Getenv = func(k string) string {
				if k == "GOMEMLIMIT" {
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
			assert.Equal(t, tc.from, res.From)
			if tc.changed {
				assert.Empty(t, res.Reason)
				assert.LessOrEqual(t, res.After, res.Limit, "never above the limit")
			} else {
				assert.Contains(t, res.Reason, tc.reason)
			}
			value, sets := fk.get()
			assert.Equal(t, tc.after, value)
			if tc.changed {
				assert.Equal(t, 1, sets)
			} else {
				assert.Zero(t, sets, "debug.SetMemoryLimit must not be called")
			}
		})
	}
}

func TestPlan(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, v2FS("536870912", "", ""))
	res, err := Plan(te.opts(Options{Refresh: time.Second}))
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, int64(483183820), res.After)
	assert.Zero(t, res.Refresh)
	value, sets := fk.get()
	assert.Equal(t, noLimit, value)
	assert.Zero(t, sets)
}

// TestZeroLimit: a memory limit of 0 is a limit, not "no limit": with
// SystemMemory, GOMEMLIMIT is not made up from the machine's memory, and the
// reason names the limit, not a reserve that was never set. (Before, 0 read
// as "no memory limit", and a 1-byte limit was blamed on "the reserve (0 B)".)
func TestZeroLimit(t *testing.T) {
	for _, tc := range []struct {
		name, max, reason string
	}{
		{"memory.max 0", "0", "a 0 B memory.max limit leaves nothing for a soft limit; GOMEMLIMIT left unset"},
		{"memory.max 1", "1", "a 1 B memory.max limit leaves nothing for a soft limit; GOMEMLIMIT left unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := &fakeKnob{value: noLimit}
			te := newTestEnv(fk, v2FS(tc.max, "", ""))
			fit, err := Apply(te.opts(Options{SystemMemory: true}))
			require.NoError(t, err)
			res := fit.Status()
			assert.False(t, res.Changed)
			assert.Equal(t, "/sys/fs/cgroup/pod/app", res.Source)
			assert.Equal(t, "memory.max", res.From)
			assert.Equal(t, tc.reason, res.Reason)
			value, sets := fk.get()
			assert.Equal(t, noLimit, value)
			assert.Zero(t, sets)
		})
	}
	t.Run("refresh: a limit that drops to 0 restores the value before fitgo", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, v2FS("536870912", "", ""))
		fit, err := Apply(te.opts(Options{SystemMemory: true, Refresh: time.Hour}))
		require.NoError(t, err)
		defer func() { stop(fit); waitIdle(t, fit.loop.Done()) }()
		zero := memLimits(0, 0)
		zero.Memory.MaxSource = "/sys/fs/cgroup/app"
		assert.True(t, fit.tick(fit.f, time.Now(), zero, nil))
		value, _ := fk.get()
		assert.Equal(t, noLimit, value, "not 90% of MemTotal")
		assert.Equal(t, "memory.max", fit.Status().From)
	})
}

func TestUndo(t *testing.T) {
	t.Run("restores the value before", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, v2FS("536870912", "", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fit.Undo()
		value, _ := fk.get()
		assert.Equal(t, noLimit, value)
		fit.Undo()
		_, sets := fk.get()
		assert.Equal(t, 2, sets)
	})
	t.Run("the application changed it since", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, v2FS("536870912", "", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fk.appSet(100 * MiB)
		fit.Undo()
		value, _ := fk.get()
		assert.Equal(t, 100*MiB, value)
	})
	t.Run("last in, first out", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, v2FS("536870912", "", ""))
		r1, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		r2, err := Apply(te.opts(Options{Policy: Policy{Ratio: 0.5}}))
		require.NoError(t, err)
		r2.Undo()
		value, _ := fk.get()
		assert.Equal(t, int64(483183820), value)
		r1.Undo()
		value, _ = fk.get()
		assert.Equal(t, noLimit, value)
	})
	// The case: a library's Apply, then the program's, undone in
	// the library's order, left the library's 256 MiB in force, and a second
	// Undo of the library's changed it.
	t.Run("out of order", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, v2FS("536870912", "", ""))
		lib, err := Apply(te.opts(Options{Policy: Policy{Ratio: 0.5}}))
		require.NoError(t, err)
		app, err := Apply(te.opts(Options{Policy: Policy{Ratio: 0.8}}))
		require.NoError(t, err)
		lib.Undo()
		value, _ := fk.get()
		assert.Equal(t, int64(429496729), value, "app in force: nothing")
		app.Undo()
		value, _ = fk.get()
		assert.Equal(t, noLimit, value, "all undone: no limit, as before fitgo")
		lib.Undo()
		value, sets := fk.get()
		assert.Equal(t, noLimit, value, "a second Undo does nothing")
		assert.Equal(t, 3, sets)
	})
	t.Run("nothing changed, nothing undone", func(t *testing.T) {
		fk := &fakeKnob{value: GiB}
		te := newTestEnv(fk, v2FS("max", "", ""))
		fit, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fit.Undo()
		value, sets := fk.get()
		assert.Equal(t, GiB, value)
		assert.Zero(t, sets)
	})
}

func TestApplyLogsOnlyToItsLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, v2FS("536870912", "", ""))
	_, err := Apply(te.opts(Options{Logger: logger}))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `level=INFO msg="fitgo: GOMEMLIMIT set" result.before="no limit" result.after="460.8 MiB (483183820 bytes)" result.changed=true result.memory_limit="512 MiB (536870912 bytes)" result.source=/sys/fs/cgroup/pod/app result.from=memory.max`)
	assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")))

	var def bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	_, err = Apply(newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", "")).opts(Options{}))
	require.NoError(t, err)
	assert.Empty(t, def.String())
}

func TestApplyConcurrent(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, v2FS("536870912", "", ""))
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
	value, sets := fk.get()
	assert.Equal(t, int64(483183820), value)
	assert.Equal(t, 1, sets)
	for _, f := range fits {
		stop(f)
		if f.loop != nil {
			waitIdle(t, f.loop.Done())
		}
	}
}

func TestResultString(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, v2FS("536870912", "", ""))
	fit, err := Apply(te.opts(Options{}))
	require.NoError(t, err)
	assert.Equal(t, "GOMEMLIMIT no limit -> 460.8 MiB; memory.max 512 MiB from /sys/fs/cgroup/pod/app; policy ratio 0.9, min 16 MiB", fit.Status().String())
}

func TestKeepExisting(t *testing.T) {
	fsys := v2FS("536870912", "", "")
	t.Run("no limit yet: applied", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		fit, err := Apply(newTestEnv(fk, fsys).opts(Options{KeepExisting: true}))
		require.NoError(t, err)
		assert.True(t, fit.Status().Changed)
	})
	t.Run("set by an earlier init: kept", func(t *testing.T) {
		fk := &fakeKnob{value: 300 * MiB}
		fit, err := Apply(newTestEnv(fk, fsys).opts(Options{KeepExisting: true, Refresh: time.Hour}))
		require.NoError(t, err)
		res := fit.Status()
		assert.False(t, res.Changed)
		assert.Equal(t, "the memory limit is already 300 MiB: set by the program or a library, and kept", res.Reason)
		assert.False(t, res.Following)
		value, sets := fk.get()
		assert.Equal(t, 300*MiB, value)
		assert.Zero(t, sets)
	})
	t.Run("fitgo's own earlier value: applied", func(t *testing.T) {
		fk := &fakeKnob{value: noLimit}
		te := newTestEnv(fk, fsys)
		_, err := Apply(te.opts(Options{}))
		require.NoError(t, err)
		fit, err := Apply(te.opts(Options{KeepExisting: true, Policy: Policy{Ratio: 0.5}}))
		require.NoError(t, err)
		assert.Equal(t, 256*MiB, fit.Status().After)
	})
}

// TestKeepExistingRechecked: KeepExisting is decided with the value Apply
// decides on. A limit the program sets while Apply reads the cgroup files
// is kept, not overwritten (it was checked before the reading only).
func TestKeepExistingRechecked(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(memLimits(512*MiB, 0))
	te.Read = func() (cgroup.Limits, error) { fk.appSet(300 * MiB); return te.src.Read() }
	res, err := Apply(te.opts(Options{KeepExisting: true, Refresh: time.Hour}))
	require.NoError(t, err)
	t.Cleanup(res.Undo)
	v, sets := fk.get()
	assert.Equal(t, 300*MiB, v)
	assert.Zero(t, sets, "no write over the program's value")
	assert.Equal(t, "the memory limit is already 300 MiB: set by the program or a library, and kept", res.Status().Reason)
}
