package fitgo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// fakeDeps records what start asks of the packages.
type fakeDeps struct {
	env     map[string]string
	reads   int
	lim     cgroup.Limits
	mp      *maxprocs.Options
	ml      *memlimit.Options
	loops   []time.Duration
	procs   func() maxprocs.Result // what the loop's hint is given
	panicIn string
	logger  *slog.Logger
}

func (f *fakeDeps) deps() deps {
	return deps{
		getenv: func(k string) string { return f.env[k] },
		read:   func() (cgroup.Limits, error) { f.reads++; return f.lim, nil },
		maxprocs: func(o maxprocs.Options) (*maxprocs.Fit, error) {
			f.mp = &o
			if f.panicIn == "maxprocs" {
				panic("boom")
			}
			return nil, nil
		},
		memlimit: func(o memlimit.Options) (*memlimit.Fit, error) {
			f.ml = &o
			if f.panicIn == "memlimit" {
				panic("bang")
			}
			return nil, nil
		},
		loop: func(d time.Duration, procs func() maxprocs.Result, _ <-chan func()) *knob.Loop {
			f.loops, f.procs = append(f.loops, d), procs
			return knob.NewLoop(d, nil, nil)
		},
		log: func() *slog.Logger { return f.logger },
	}
}

func TestStartSetting(t *testing.T) {
	for _, tc := range []struct {
		setting    string
		mp, ml     bool
		refresh    time.Duration // 0: no refresh loop
		rounding   maxprocs.Rounding
		settingErr string
		insist     [2]bool // maxprocs, memlimit
	}{
		{"", true, true, time.Second, 0, "", [2]bool{}},
		{"off", false, false, time.Second, 0, "", [2]bool{}},
		{"maxprocs=off", false, true, time.Second, 0, "", [2]bool{}},
		{"memlimit=off", true, false, time.Second, 0, "", [2]bool{}},
		{"refresh=off", true, true, 0, 0, "", [2]bool{}},
		{"refresh=250ms", true, true, 250 * time.Millisecond, 0, "", [2]bool{}},
		{"rounding=ceil", true, true, time.Second, maxprocs.Ceil, "", [2]bool{}},
		{"rounding=nearest,refresh=off", true, true, 0, maxprocs.Nearest, "", [2]bool{}},
		{"refresh=never,memlimit=off", true, false, time.Second, 0, `"refresh=never"`, [2]bool{}},
		{"insist=on", true, true, time.Second, 0, "", [2]bool{true, true}},
		{"insist=memlimit", true, true, time.Second, 0, "", [2]bool{false, true}},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			f := &fakeDeps{env: map[string]string{envVar: tc.setting}}
			rep := start(f.deps())
			assert.Equal(t, tc.setting, rep.Setting)
			assert.Equal(t, tc.mp, f.mp != nil)
			assert.Equal(t, tc.ml, f.ml != nil)
			if tc.mp || tc.ml {
				assert.Equal(t, 1, f.reads, "the limits are read once for both")
			} else {
				assert.Zero(t, f.reads)
			}
			if tc.refresh > 0 && (tc.mp || tc.ml) {
				assert.Equal(t, []time.Duration{tc.refresh}, f.loops, "one loop for both")
			} else if tc.mp || tc.ml {
				assert.Empty(t, f.loops)
			}
			if f.mp != nil {
				assert.Equal(t, tc.insist[0], f.mp.Insist)
				assert.Equal(t, !tc.insist[0], f.mp.KeepExisting, "insisting: fitgo's value wins over an earlier one too")
				assert.Equal(t, tc.refresh, f.mp.Refresh)
				assert.Equal(t, tc.rounding, f.mp.Rounding)
				assert.NotNil(t, f.mp.Limits)
				assert.NotNil(t, f.mp.Logger)
			} else {
				assert.Nil(t, rep.MaxProcs)
			}
			if f.ml != nil {
				assert.Equal(t, tc.insist[1], f.ml.Insist)
				assert.Equal(t, !tc.insist[1], f.ml.KeepExisting)
				assert.Equal(t, tc.refresh, f.ml.Refresh)
				assert.False(t, f.ml.SystemMemory)
			} else {
				assert.Nil(t, rep.MemLimit)
			}
			if f.mp != nil && f.ml != nil {
				assert.Same(t, f.mp.Limits, f.ml.Limits, "one reading for both")
				if tc.refresh > 0 {
					assert.Same(t, knob.LoopOf(f.mp.Context), knob.LoopOf(f.ml.Context), "one loop for both")
				}
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

// TestStartHintSeesMaxProcs: the refresh loop's throttling hint is given
// the Status of the Fit that start applied, whose limit is the one
// GOMAXPROCS is fitted to (FITGO_CPU_LIMIT included).
func TestStartHintSeesMaxProcs(t *testing.T) {
	f := &fakeDeps{}
	d := f.deps()
	d.maxprocs = func(o maxprocs.Options) (*maxprocs.Fit, error) {
		// No limit and no refresh: GOMAXPROCS is left alone.
		o.Limits, o.Refresh, o.Context = &cgroup.Limits{}, 0, nil
		return maxprocs.Apply(o)
	}
	rep := start(d)
	require.NotNil(t, rep.MaxProcs)
	defer rep.MaxProcs.Undo()
	require.NotNil(t, f.procs)
	assert.Equal(t, rep.MaxProcs.Status().Reason, f.procs().Reason)
	assert.NotEqual(t, "not applied", f.procs().Reason)
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
	logStart(logger, nil,
		&maxprocs.Result{Before: 8, After: 1, Changed: true, Limit: 0.5, Source: "/sys/fs/cgroup/pod"},
		&memlimit.Result{Before: math.MaxInt64, After: 483183820, Changed: true, Limit: 512 << 20, Source: "/sys/fs/cgroup/pod", From: "memory.max"})
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, out, `level=INFO msg="fitgo: fitted the Go runtime to the container" GOMAXPROCS.before=8 GOMAXPROCS.after=1 GOMAXPROCS.changed=true GOMAXPROCS.cpu_limit=0.5 GOMAXPROCS.source=/sys/fs/cgroup/pod`)
	assert.Contains(t, out, `GOMEMLIMIT.before="no limit" GOMEMLIMIT.after="460.8 MiB (483183820 bytes)" GOMEMLIMIT.changed=true GOMEMLIMIT.memory_limit="512 MiB (536870912 bytes)"`)

	// Nothing changed (no container): nothing at Info, nothing at Warn.
	buf.Reset()
	logStart(logger, nil,
		&maxprocs.Result{Before: 8, After: 8, Reason: "no CPU limit"},
		&memlimit.Result{Before: math.MaxInt64, After: math.MaxInt64, Reason: "no memory limit"})
	assert.Empty(t, buf.String())

	// Even a bad cgroup file is a Debug line at start-up, not a warning: the
	// program's logging may not be configured yet; the error is in the Report.
	logStart(logger, nil, &maxprocs.Result{Err: errors.New("cgroup: bad")}, &memlimit.Result{})
	assert.Empty(t, buf.String())
	debugLogger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logStart(debugLogger, nil, &maxprocs.Result{Err: errors.New("cgroup: bad")}, &memlimit.Result{})
	assert.Contains(t, buf.String(), `level=DEBUG msg="fitgo: nothing to change"`)
	assert.Contains(t, buf.String(), `GOMAXPROCS.err="cgroup: bad"`)

	// A setting not understood gets a Warn line of its own, the error as its
	// message, whatever the level of the line after it: one for each field
	// of FITGO and each error of a knob's SettingErr (the packages' own Warn
	// lines are dropped at start-up).
	for _, tc := range []struct {
		fitgo  string
		mp, ml error
		warns  []string
	}{
		{"rounding=round", nil, nil, []string{`level=WARN msg="fitgo: FITGO: \"rounding=round\": want floor, ceil or nearest"`}},
		{"rounding=round,bogus=1", nil, nil, []string{`msg="fitgo: FITGO: \"rounding=round\": want floor, ceil or nearest"`, `msg="fitgo: FITGO: unknown setting \"bogus\" (want maxprocs,`}},
		{"", errors.New("maxprocs: FITGO_CPU_LIMIT: bad; ignored"), nil, []string{`level=WARN msg="fitgo: maxprocs: FITGO_CPU_LIMIT: bad; ignored"`}},
		{"bogus=1", nil, errors.Join(errors.New("memlimit: one; ignored"), errors.New("memlimit: two")), []string{`"fitgo: FITGO: unknown setting`, `level=WARN msg="fitgo: memlimit: one; ignored"`, `level=WARN msg="fitgo: memlimit: two"`}},
	} {
		buf.Reset()
		_, err := parseFITGO(tc.fitgo)
		logStart(logger, err, &maxprocs.Result{SettingErr: tc.mp}, &memlimit.Result{Changed: true, SettingErr: tc.ml})
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, len(tc.warns)+1, buf.String())
		for i, want := range tc.warns {
			assert.Contains(t, lines[i], want)
		}
		assert.Contains(t, lines[len(tc.warns)], `level=INFO msg="fitgo: fitted the Go runtime to the container"`)
	}
	// A knob that FITGO turned off has no Result: only FITGO's error.
	buf.Reset()
	logStart(logger, errors.New("FITGO: bad"), nil, nil)
	assert.Equal(t, 1, strings.Count(buf.String(), "level=WARN"), buf.String())
}

// noLimits is a refresh loop's Source that reads no limits.
type noLimits struct{}

func (noLimits) Read() (cgroup.Limits, error) { return cgroup.Limits{}, nil }
func (noLimits) Close() error                 { return nil }

// TestStartLogsAtFirstReading: with a refresh loop, the start-up lines go
// out at its first reading, through the logger as main has set it by then
// (a JSON handler), not at init: a setting not understood as a Warn line of
// its own, then the line of what was done. With refresh=off, they go out at
// init.
func TestStartLogsAtFirstReading(t *testing.T) {
	var early, late bytes.Buffer
	var logger atomic.Pointer[slog.Logger] // slog.Default, as main sets it
	logger.Store(slog.New(slog.NewTextHandler(&early, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ticks := make(chan time.Time)
	var opens atomic.Int32
	f := &fakeDeps{env: map[string]string{envVar: "rounding=round,insist=maxprocs,memlimit=off"}}
	d := f.deps()
	d.log = logger.Load
	d.maxprocs = func(o maxprocs.Options) (*maxprocs.Fit, error) {
		o.Limits = &cgroup.Limits{} // no CPU limit: GOMAXPROCS left alone, and followed
		return maxprocs.Apply(o)
	}
	d.loop = func(every time.Duration, procs func() maxprocs.Result, first <-chan func()) *knob.Loop {
		return knob.NewLoop(every, func() (knob.Source, error) {
			opens.Add(1)
			src, err := openHinted(throttledFS(), every, logger.Load, procs, first)() // logs the start-up lines
			src.Close()
			return noLimits{}, err
		}, ticks)
	}
	rep := start(d)
	require.NotNil(t, rep.MaxProcs)
	defer rep.MaxProcs.Undo()
	require.True(t, rep.MaxProcs.Status().Following, rep.MaxProcs.Status().Reason)
	assert.Empty(t, early.String(), "nothing at init")

	// main sets its JSON handler; then the loop's first reading.
	logger.Store(slog.New(slog.NewJSONHandler(&late, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ticks <- time.Now()
	ticks <- time.Now() // received once the first reading is done
	assert.Empty(t, early.String())
	assert.EqualValues(t, 1, opens.Load())
	lines := strings.Split(strings.TrimSpace(late.String()), "\n")
	require.Len(t, lines, 2, late.String())
	assert.Contains(t, lines[0], `"level":"WARN","msg":"fitgo: FITGO: \"rounding=round\": want floor, ceil or nearest"}`)
	assert.Contains(t, lines[1], `"level":"DEBUG","msg":"fitgo: nothing to change","GOMAXPROCS":{"before":`)
	assert.Contains(t, lines[1], `"GOMEMLIMIT":{"fitgo":"off","value":`)

	// Later readings log nothing more.
	ticks <- time.Now()
	ticks <- time.Now()
	assert.Equal(t, 2, strings.Count(late.String(), "\n"))

	// refresh=off: at init.
	f = &fakeDeps{env: map[string]string{envVar: "rounding=round,refresh=off"}, logger: logger.Load()}
	start(f.deps())
	assert.Equal(t, 4, strings.Count(late.String(), "\n"), late.String())
}

// TestStartReserve: FITGO=reserve gives the memory limit's Options.Reserve;
// a bad value is skipped with the reason in the Report.
func TestStartReserve(t *testing.T) {
	for _, tc := range []struct {
		setting string
		reserve int64
		err     string
	}{
		{"reserve=64Mi", 64 << 20, ""},
		{"reserve=67108864,refresh=off", 64 << 20, ""},
		{"reserve=-64Mi", 0, `"reserve=-64Mi": want a quantity of bytes`},
		{"reserve=64Mi,reserve=64 Mi", 64 << 20, `"reserve=64 Mi"`},
		{"reserve=", 0, `"reserve="`},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			f := &fakeDeps{env: map[string]string{envVar: tc.setting}}
			rep := start(f.deps())
			require.NotNil(t, f.ml)
			assert.Equal(t, tc.reserve, f.ml.Reserve)
			if tc.err == "" {
				assert.NoError(t, rep.SettingErr)
			} else {
				assert.ErrorContains(t, rep.SettingErr, tc.err)
			}
		})
	}
}

// TestStartGC: FITGO=gc=auto turns on memlimit's GC policy; it is off by
// default.
func TestStartGC(t *testing.T) {
	for setting, on := range map[string]bool{"": false, "gc=auto": true, "gc=auto,gc=off": false, "gc=on": false} {
		f := &fakeDeps{env: map[string]string{envVar: setting}}
		start(f.deps())
		require.NotNil(t, f.ml)
		assert.Equal(t, on, f.ml.GC, setting)
	}
}

func TestStartLogsThroughDefault(t *testing.T) {
	var buf bytes.Buffer
	f := &fakeDeps{logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	start(f.deps())
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"), "one start-up line")
}

func TestLaterHandler(t *testing.T) {
	old := slog.Default()
	defer slog.SetDefault(old)
	var early, late bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&early, nil)))

	var armed atomic.Bool
	h := &laterHandler{armed: &armed}
	l := slog.New(h).With("a", 1).WithGroup("g").With("b", 2)
	l.Info("before arming")
	assert.Empty(t, early.String(), "dropped until armed")

	armed.Store(true)
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

// TestStartup checks the real start-up of this test binary.
func TestStartup(t *testing.T) {
	rep := Startup()
	assert.NoError(t, rep.Err)
	if os.Getenv(envVar) == "" {
		require.NotNil(t, rep.MaxProcs)
		require.NotNil(t, rep.MemLimit)
	}
	assert.NotZero(t, rep.MaxProcs.Status().After)
	assert.NotZero(t, rep.MemLimit.Status().After)
	t.Logf("%v", rep.MaxProcs.Status())
	t.Logf("%v", rep.MemLimit.Status())
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("fitgo", "report", rep)
	assert.Contains(t, buf.String(), "report.GOMAXPROCS.before=")
	assert.Contains(t, buf.String(), "report.GOMEMLIMIT.before=")
}

// TestLogOff: a knob that FITGO turned off reads "off" with the value in
// force, in the start-up line and in a Report's log line, not as a Result of
// zeros (a GOMEMLIMIT of 0 means something else).
func TestLogOff(t *testing.T) {
	procs, mem := strconv.Itoa(runtime.GOMAXPROCS(0)), strconv.FormatInt(debug.SetMemoryLimit(-1), 10)
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		mem = `"no limit"` // a word, not 9223372036854775807
	}
	for _, setting := range []string{"maxprocs=off,memlimit=off", "maxprocs=off", "memlimit=off"} {
		t.Run(setting, func(t *testing.T) {
			var buf bytes.Buffer
			f := &fakeDeps{env: map[string]string{envVar: setting},
				logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			rep := start(f.deps())
			slog.New(slog.NewTextHandler(&buf, nil)).Info("fitgo", "report", rep)
			lines := strings.Split(buf.String(), "\n")
			require.Len(t, lines, 3)
			for i, prefix := range []string{"", "report."} {
				if strings.Contains(setting, "maxprocs=off") {
					assert.Contains(t, lines[i], " "+prefix+"GOMAXPROCS.fitgo=off "+prefix+"GOMAXPROCS.value="+procs+" ")
				}
				if strings.Contains(setting, "memlimit=off") {
					assert.Contains(t, lines[i], " "+prefix+"GOMEMLIMIT.fitgo=off "+prefix+"GOMEMLIMIT.value="+mem)
				}
				assert.NotContains(t, lines[i], "before=0 ")
				assert.NotContains(t, lines[i], "after=0 ")
			}
		})
	}
}

// TestLogLong: a FITGO of 128 KiB makes neither the start-up lines nor a
// Report's log line long: the setting is cut as its errors quote it.
func TestLogLong(t *testing.T) {
	setting := "memlimit=off," + strings.Repeat("x", 128<<10)
	var buf bytes.Buffer
	f := &fakeDeps{env: map[string]string{envVar: setting},
		logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	rep := start(f.deps())
	slog.New(slog.NewTextHandler(&buf, nil)).Info("fitgo", "report", rep)
	lines := strings.Split(buf.String(), "\n")
	require.Len(t, lines, 4) // the setting's Warn, the start-up line, the Report's
	for _, line := range lines[:3] {
		assert.Less(t, len(line), 1000, line)
	}
	assert.Contains(t, lines[0], `\"`+setting[13:13+40]+`...\": want off or key=value`)
	assert.Contains(t, lines[2], `report.setting="`+setting[:40]+`..."`)
}
