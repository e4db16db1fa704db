package fitgo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// fakeDeps records what start asks of the packages.
type fakeDeps struct {
	env      map[string]string
	mpOpts   int
	mlOpts   int
	mpCalled bool
	mlCalled bool
	mpRes    maxprocs.Result
	mlRes    memlimit.Result
	panicIn  string
	logger   *slog.Logger
}

func (f *fakeDeps) deps() deps {
	return deps{
		getenv: func(k string) string { return f.env[k] },
		maxprocs: func(o ...maxprocs.Option) (maxprocs.Result, error) {
			f.mpCalled, f.mpOpts = true, len(o)
			if f.panicIn == "maxprocs" {
				panic("boom")
			}
			return f.mpRes, f.mpRes.Err
		},
		memlimit: func(o ...memlimit.Option) (memlimit.Result, error) {
			f.mlCalled, f.mlOpts = true, len(o)
			if f.panicIn == "memlimit" {
				panic("bang")
			}
			return f.mlRes, f.mlRes.Err
		},
		log: func() *slog.Logger { return f.logger },
	}
}

func TestStartSetting(t *testing.T) {
	for _, tc := range []struct {
		setting    string
		mp, ml     bool
		opts       int // 2 with a refresh option, 1 without
		settingErr string
	}{
		{"", true, true, 3, ""},
		{"off", false, false, 0, ""},
		{"maxprocs=off", false, true, 3, ""},
		{"memlimit=off", true, false, 3, ""},
		{"refresh=off", true, true, 2, ""},
		{"refresh=250ms", true, true, 3, ""},
		{"refresh=never,memlimit=off", true, false, 3, `"refresh=never"`},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			f := &fakeDeps{env: map[string]string{EnvVar: tc.setting}}
			rep := start(f.deps())
			assert.Equal(t, tc.setting, rep.Setting)
			assert.Equal(t, tc.mp, f.mpCalled)
			assert.Equal(t, tc.ml, f.mlCalled)
			if tc.mp {
				assert.Equal(t, tc.opts, f.mpOpts)
			} else {
				assert.Equal(t, "turned off by FITGO="+tc.setting, rep.MaxProcs.Reason)
				assert.Equal(t, runtime.GOMAXPROCS(0), rep.MaxProcs.After)
			}
			if tc.ml {
				assert.Equal(t, tc.opts, f.mlOpts)
			} else {
				assert.Equal(t, "turned off by FITGO="+tc.setting, rep.MemLimit.Reason)
				assert.Equal(t, debug.SetMemoryLimit(-1), rep.MemLimit.After)
			}
			if tc.settingErr == "" {
				assert.NoError(t, rep.SettingErr)
			} else if assert.Error(t, rep.SettingErr) {
				assert.Contains(t, rep.SettingErr.Error(), tc.settingErr)
			}
			assert.NoError(t, rep.Err)
		})
	}
}

func TestStartRecoversPanics(t *testing.T) {
	for _, where := range []string{"maxprocs", "memlimit"} {
		f := &fakeDeps{panicIn: where}
		var rep Report
		assert.NotPanics(t, func() { rep = start(f.deps()) })
		require.Error(t, rep.Err)
		assert.Contains(t, rep.Err.Error(), "recovered from a panic at start-up")
	}
}

func TestLogStart(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil)) // Info and above
	changed := Report{
		MaxProcs: maxprocs.Result{Before: 8, After: 1, Changed: true, Limit: 0.5, Source: "/sys/fs/cgroup/pod"},
		MemLimit: memlimit.Result{Before: memlimit.NoLimit, After: 483183820, Changed: true, Limit: 512 << 20, Source: "/sys/fs/cgroup/pod", From: "memory.max"},
	}
	logStart(logger, changed)
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, out, `level=INFO msg="fitgo: fitted the Go runtime to the container" GOMAXPROCS.before=8 GOMAXPROCS.after=1 GOMAXPROCS.changed=true GOMAXPROCS.cpu_limit=0.5 GOMAXPROCS.source=/sys/fs/cgroup/pod`)
	assert.Contains(t, out, `GOMEMLIMIT.after=483183820 GOMEMLIMIT.changed=true GOMEMLIMIT.memory_limit=536870912`)

	// Nothing changed (no container): nothing at Info, nothing at Warn.
	buf.Reset()
	logStart(logger, Report{
		MaxProcs: maxprocs.Result{Before: 8, After: 8, Reason: "no CPU limit"},
		MemLimit: memlimit.Result{Before: memlimit.NoLimit, After: memlimit.NoLimit, Reason: "no memory limit"},
	})
	assert.Empty(t, buf.String())

	// Even a bad cgroup file is a Debug line at start-up, not a warning: the
	// program's logging is not configured yet; the error is in Results.
	logStart(logger, Report{MaxProcs: maxprocs.Result{Err: errors.New("cgroup: bad")}})
	assert.Empty(t, buf.String())
	debugLogger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logStart(debugLogger, Report{MaxProcs: maxprocs.Result{Err: errors.New("cgroup: bad")}})
	assert.Contains(t, buf.String(), `level=DEBUG msg="fitgo: nothing to change"`)
	assert.Contains(t, buf.String(), `GOMAXPROCS.err="cgroup: bad"`)
}

func TestStartLogsThroughDefault(t *testing.T) {
	var buf bytes.Buffer
	f := &fakeDeps{
		logger: slog.New(slog.NewTextHandler(&buf, nil)),
		mpRes:  maxprocs.Result{Before: 2, After: 1, Changed: true},
	}
	start(f.deps())
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"))
}

func TestLaterHandler(t *testing.T) {
	old := slog.Default()
	defer slog.SetDefault(old)
	var early, late bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&early, nil)))

	var armed = new(atomicBool)
	h := &laterHandler{armed: &armed.b}
	l := slog.New(h).With("a", 1).WithGroup("g").With("b", 2)
	l.Info("before arming")
	assert.Empty(t, early.String(), "dropped until armed")

	armed.b.Store(true)
	// The program configures logging after start-up: records go there.
	slog.SetDefault(slog.New(slog.NewTextHandler(&late, nil)))
	l.Info("hello", "c", 3)
	l.Debug("not at info")
	assert.Empty(t, early.String())
	assert.Contains(t, late.String(), `level=INFO msg=hello a=1 g.b=2 g.c=3`)
	assert.Equal(t, 1, strings.Count(late.String(), "\n"))
	assert.False(t, l.Enabled(context.Background(), slog.LevelDebug))
	assert.Same(t, h, h.WithAttrs(nil))
	assert.Same(t, h, h.WithGroup(""))
}

// TestResults checks the real start-up of this test binary.
func TestResults(t *testing.T) {
	rep := Results()
	assert.NoError(t, rep.Err)
	assert.NotZero(t, rep.MaxProcs.After)
	assert.NotZero(t, rep.MemLimit.After)
	t.Logf("%v", rep.MaxProcs)
	t.Logf("%v", rep.MemLimit)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("fitgo", "report", rep)
	assert.Contains(t, buf.String(), "report.GOMAXPROCS.before=")
	assert.Contains(t, buf.String(), "report.GOMEMLIMIT.before=")
}

type atomicBool struct{ b atomic.Bool }
