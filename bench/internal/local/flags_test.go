package local

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/variant"
)

func TestFlagsAndSettings(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{ScenarioCPU, ScenarioMemory, ScenarioShared}, o.Scenarios, "the default job")
	assert.Equal(t, DefaultRuns, o.Runs)
	assert.Equal(t, DefaultDuration, o.Duration)
	assert.Equal(t, []string{"runtime", "env", "automaxprocs+automemlimit", "fitgo"}, names(o.Variants))
	assert.Equal(t, "go run -C bench . local", o.Command)
	sets, err := o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{
		{scenario: "cpu", cpus: 0.5, heapMiB: 100},
		{scenario: "cpu", cpus: 1.5, heapMiB: 100},
		{scenario: "memory", memory: 256 << 20, heapMiB: 154},
		{scenario: "shared", memory: 512 << 20, heapMiB: 187, layout: LayoutCoprocess, sidecar: 200 << 20},
	}, sets)

	o, err = parseFlags([]string{"-scenario", "cpu"}, io.Discard)
	require.NoError(t, err)
	assert.Len(t, o.Variants, 6, "-scenario keeps the rest: all variants")
	sets, err = o.settings()
	require.NoError(t, err)
	require.Len(t, sets, 3, "and every quota")
	assert.Equal(t, setting{scenario: "cpu", cpus: 0.5, heapMiB: 100}, sets[0])
	assert.Equal(t, setting{scenario: "cpu", cpus: 1.5, heapMiB: 100}, sets[2])

	o, err = parseFlags([]string{"-cpus", "1", "-variants", "fitgo"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"fitgo"}, names(o.Variants), "the default job keeps the flags given")
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, setting{scenario: "cpu", cpus: 1, heapMiB: 100}, sets[0])

	o, err = parseFlags([]string{"-scenario", "all", "-runs", "1", "-variants", "untuned,fitgo", "-duration", "2s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "go run -C bench . local -scenario all -runs 1 -variants untuned,fitgo -duration 2s", o.Command)
	assert.Equal(t, 2*time.Second, o.Duration)
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{
		{scenario: "cpu", cpus: 0.5, heapMiB: 100},
		{scenario: "cpu", cpus: 1, heapMiB: 100},
		{scenario: "cpu", cpus: 1.5, heapMiB: 100},
		{scenario: "nested", cpus: 1, heapMiB: 100},
		{scenario: "memory", memory: 256 << 20, heapMiB: 154}, // 60% of the limit
	}, sets)

	o, err = parseFlags([]string{"-scenario", "memory,cpu", "-memory", "512Mi,1Gi", "-cpus", "2", "-heap-mib", "200"}, io.Discard)
	require.NoError(t, err)
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{
		{scenario: "memory", memory: 512 << 20, heapMiB: 200},
		{scenario: "memory", memory: 1 << 30, heapMiB: 200},
		{scenario: "cpu", cpus: 2, heapMiB: 200},
	}, sets)

	o, err = parseFlags([]string{"-scenario", "sweep"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, variant.Sweep(runtime.NumCPU()), o.Variants, "the sweep's variants by default")
	sets, err = o.settings()
	require.NoError(t, err)
	require.Len(t, sets, 12, "6 quotas × 2 loads")
	assert.Equal(t, setting{scenario: "sweep", cpus: 0.5, heapMiB: 100, load: 0.1}, sets[0])
	assert.Equal(t, setting{scenario: "sweep", cpus: 1.95, heapMiB: 100, load: 0.1}, sets[5])
	assert.Equal(t, setting{scenario: "sweep", cpus: 1.25, heapMiB: 100, load: 0.7}, sets[8])

	o, err = parseFlags([]string{"-scenario", "sweep,memory", "-cpus", "1,2", "-load", "0.5", "-variants", "fitgo,static"}, io.Discard)
	require.NoError(t, err)
	assert.Len(t, o.Variants, 1+runtime.NumCPU())
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{
		{scenario: "sweep", cpus: 1, heapMiB: 100, load: 0.5},
		{scenario: "sweep", cpus: 2, heapMiB: 100, load: 0.5},
		{scenario: "memory", memory: 256 << 20, heapMiB: 154, load: 0.5},
	}, sets)

	o, err = parseFlags([]string{"-cpus", "none, 250m"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0.25}, o.CPUs, "none is no quota, a baseline")

	for _, bad := range [][]string{
		{"-scenario", "disk"}, {"-runs", "0"}, {"-duration", "1ms"}, {"-variants", "nope"},
		{"-cpus", "x"}, {"-memory", "1"}, {"-period", "2s"}, {"extra"}, {"-rate", "0"}, {"-ticker", "bell"},
		{"-cpus", "1.2345"}, {"-memory", "268435456.5"}, // whole millicores, whole bytes
		{"-load", "0"}, {"-load", "1.5"}, {"-load", "x"}, {"-load", ","}, {"-load", "NaN"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%q", bad)
	}
}

// TestWorkIters: a load scales the request's CPU work to that fraction of the
// quota (the host's CPUs without one); without a load it is the fixed -work.
func TestWorkIters(t *testing.T) {
	o := Options{Work: 75 * time.Microsecond, Rate: 1000}
	for _, tc := range []struct {
		st    setting
		iters int
		work  time.Duration
	}{
		{setting{cpus: 1}, 7500, 75 * time.Microsecond},
		{setting{cpus: 1, load: 0.7}, 70000, 700 * time.Microsecond},
		{setting{cpus: 0.5, load: 0.1}, 5000, 50 * time.Microsecond},
		{setting{cpus: 1.95, load: 0.7}, 136500, 1365 * time.Microsecond},
		{setting{load: 0.5}, 200000, 2 * time.Millisecond}, // no quota: 4 host CPUs
		{setting{cpus: 0.01, load: 0.0001}, 1, 1 * time.Nanosecond},
	} {
		iters, work := o.workIters(tc.st, 7500, 4)
		assert.Equal(t, tc.iters, iters, "%+v", tc.st)
		assert.Equal(t, tc.work, work, "%+v", tc.st)
	}
}

// TestOutDir: without -out, each run writes to a fresh directory under the
// bench module's git-ignored out/.
func TestOutDir(t *testing.T) {
	dir, err := outDir(Options{Out: "/x/y"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "/x/y", dir)

	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+modulePath+"\n"), 0o644))
	at := time.Date(2026, 12, 1, 12, 30, 0, 0, time.UTC)
	o := Options{Src: src, Scenarios: []string{"sweep"}}
	a, err := outDir(o, at)
	require.NoError(t, err)
	b, err := outDir(o, at)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "fresh each time")
	assert.Equal(t, filepath.Join(src, "out"), filepath.Dir(a))
	assert.True(t, strings.HasPrefix(filepath.Base(a), "20261201-123000-sweep-"), a)
	assert.DirExists(t, a)
}

func TestMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, Main(t.Context(), []string{"-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: go run -C bench . local")
	errb.Reset()
	assert.Equal(t, 2, Main(t.Context(), []string{"-scenario", "nope"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown scenario "nope"`)
}

func TestCleanEnv(t *testing.T) {
	env := cleanEnv([]string{"PATH=/bin", "GOMAXPROCS=3", "GOMEMLIMIT=1GiB", "GODEBUG=x=1", "GOGC=50",
		"AUTOMEMLIMIT=0.5", "FITGO=off", "FITGO_CEIL=1", cgexecEnv + "=[]", "HOME=/root"})
	assert.Equal(t, []string{"PATH=/bin", "HOME=/root"}, env)
}

func TestLineWriter(t *testing.T) {
	var lines []string
	w := &lineWriter{fn: func(b []byte) { lines = append(lines, string(b)) }}
	w.Write([]byte("a\nb"))
	w.Write([]byte("c\n\nd"))
	assert.Equal(t, []string{"a\n", "bc\n", "\n"}, lines)
	w.Flush()
	assert.Equal(t, "d", lines[3])
}

func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	vs, err := variant.Parse("fitgo", 2)
	require.NoError(t, err)
	_, err = prebuilt(dir, vs, true)
	require.ErrorContains(t, err, "the fitgo variant's binary")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fitgo"), []byte("#!/bin/sh\n"), 0o755))
	_, err = prebuilt(dir, vs, true)
	require.ErrorContains(t, err, "the untuned variant's binary", "calibration needs untuned")
	bins, err := prebuilt(dir, vs, false)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "fitgo"), bins["fitgo"])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "untuned"), []byte("x"), 0o644))
	_, err = prebuilt(dir, vs, true)
	require.ErrorContains(t, err, "not an executable file")
}

func names(vs []variant.Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}
