package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

func TestBytesString(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{1<<63 - 1, "off"},
		{512 << 20, "512 MiB"},
		{2 << 30, "2 GiB"},
		{4096, "4 KiB"},
		{682016 << 10, "666.0 MiB (698384384 bytes)"}, // a usage in KiB read as MiB, as the rest of fitgo prints it
		{483183820, "460.8 MiB (483183820 bytes)"},
		{1000, "1000 bytes"},
		{0, "0 bytes"},
	} {
		assert.Equal(t, tc.want, bytesString(tc.in), "bytesString(%d)", tc.in)
	}
}

func TestPrintTextMemoryLevels(t *testing.T) {
	max := int64(512 << 20)
	r := report{GoVersion: "go1.26.8", OS: "linux/amd64", GOMEMLIMIT: 1<<63 - 1, Cgroup: &cgroupReport{
		MemoryMaxBytes: &max, MemoryMaxSource: "/sys/fs/cgroup/pod", RssAnonBytes: 100 << 20,
		MemoryLevels: []memoryLevel{{Dir: "/sys/fs/cgroup/pod/app", Max: -1, High: -1, Usage: 200 << 20},
			{Dir: "/sys/fs/cgroup/pod", Max: max, High: -1, Usage: 300 << 20, File: 20 << 20}},
	}}
	var buf bytes.Buffer
	require.NoError(t, printText(&buf, r))
	assert.Contains(t, buf.String(), "/sys/fs/cgroup/pod/app: no limit; usage 200 MiB (page cache 0 bytes, lazily freed 0 bytes)\n")
	assert.Contains(t, buf.String(), "/sys/fs/cgroup/pod: max 512 MiB, high none; usage 300 MiB (page cache 20 MiB, lazily freed 0 bytes)\n")
	assert.Contains(t, buf.String(), "100 MiB\n")
}

func TestPrintText(t *testing.T) {
	cores, max, high := 1.5, int64(512<<20), int64(300<<20)
	env := "1"
	r := report{
		GoVersion: "go1.26.8", OS: "linux/amd64", NumCPU: 4,
		GOMAXPROCS: 1, GOMAXPROCSEnv: &env, GOMEMLIMIT: 1<<63 - 1,
		Summary: "CPU and memory limited",
		Cgroup: &cgroupReport{
			CPU:           controller{Version: "v2", Path: "/pod/c1", Dir: "/sys/fs/cgroup/pod/c1"},
			Memory:        controller{Version: "v2", Path: "/pod/c1", Dir: "/sys/fs/cgroup/pod/c1"},
			CPUQuotaCores: &cores, CPUPeriodUS: 100000, CPUSource: "/sys/fs/cgroup/pod",
			MemoryMaxBytes: &max, MemoryMaxSource: "/sys/fs/cgroup/pod",
			MemoryHighBytes: &high, MemoryHighSrc: "/sys/fs/cgroup/pod/c1",
			Throttling: &throttling{Periods: 10, ThrottledPeriods: 3, ThrottledSeconds: 0.25},
		},
		Policies: []policy{{Name: "fitgo GOMAXPROCS (floor)", Value: "1 from 1.5 cores", Reason: "left alone: GOMAXPROCS is set in the environment"}},
	}
	var buf bytes.Buffer
	require.NoError(t, printText(&buf, r))
	want := []string{
		"summary                   CPU and memory limited",
		`GOMAXPROCS                1 (env "1")`,
		"GOMEMLIMIT                off",
		"cpu controller            v2 /sys/fs/cgroup/pod/c1 (cgroup /pod/c1)",
		"cpu quota                 1.5 cores (period 100000 µs) from /sys/fs/cgroup/pod",
		"memory max                512 MiB from /sys/fs/cgroup/pod",
		"memory high               300 MiB from /sys/fs/cgroup/pod/c1",
		"throttling                3 of 10 periods throttled, 0.250 s throttled",
		"fitgo GOMAXPROCS (floor)  1 from 1.5 cores (left alone: GOMAXPROCS is set in the environment)",
	}
	out := buf.String()
	for _, line := range want {
		assert.Contains(t, out, line+"\n")
	}
}

// TestInspectHere runs the real inspection on this machine: whatever the
// machine, it must describe the runtime as it is and report the four
// policies, in text and as JSON.
func TestInspectHere(t *testing.T) {
	r := inspect()
	assert.Equal(t, runtime.GOMAXPROCS(0), r.GOMAXPROCS)
	assert.Equal(t, runtime.NumCPU(), r.NumCPU)
	assert.NotEmpty(t, r.Summary)
	require.Len(t, r.Policies, 4)
	for _, p := range r.Policies {
		assert.NotEmpty(t, p.Value, p.Name)
		assert.False(t, strings.HasPrefix(p.Reason, "error:"), "%s: %s", p.Name, p.Reason)
	}
	if runtime.GOOS != "linux" {
		assert.Contains(t, r.Summary, "no cgroup limits")
	}

	var buf bytes.Buffer
	require.NoError(t, printText(&buf, r))
	assert.Contains(t, buf.String(), "summary")

	data, err := json.Marshal(r)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(data, &back))
	for _, k := range []string{"go_version", "num_cpu", "gomaxprocs", "gomemlimit", "summary", "policies"} {
		assert.Contains(t, back, k)
	}
}

// fixtureStats reads the limits and statistics of a cgroup fixture tree.
func fixtureStats(t *testing.T, name string) (cgroup.Limits, cgroup.Stats) {
	t.Helper()
	w, err := cgroup.NewWatcher(os.DirFS(filepath.Join("..", "..", "cgroup", "testdata", name)))
	require.NoError(t, err)
	defer w.Close()
	lim, err := w.Read()
	require.NoError(t, err)
	st, err := w.Stats()
	require.NoError(t, err)
	return lim, st
}

// TestPrintTextStats: plain inspect shows the memory usage, working set,
// peak and events where the memory limit is imposed, and the pressure, next
// to the throttling; as JSON too.
func TestPrintTextStats(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []string
		absent  []string
		events  map[string]uint64
	}{
		{"stats-v2", []string{
			"throttling: 24 of 30 periods throttled, 1.100 s throttled",
			"memory usage: 50 MiB, working set 38 MiB, peak 64 MiB at /sys/fs/cgroup/pod/ctr",
			"memory events: high 0, max 12, oom 1, oom_kill 1, oom_group_kill 0, low 0",
			"pressure avg10/60/300: cpu some 12.34/3.21/0.75% full 11.00/3.00/0.70%; memory some 0.00/0.10/0.02% full 0.00/0.05/0.01%; io some 1.50/0.40/0.10% full 1.00/0.30/0.05% at /sys/fs/cgroup/pod/ctr",
		}, nil, map[string]uint64{"low": 0, "high": 0, "max": 12, "oom": 1, "oom_kill": 1, "oom_group_kill": 0}},
		{"stats-v1", []string{
			"memory usage: 40 MiB, working set 32 MiB, peak 60 MiB at /sys/fs/cgroup/memory",
			"memory events: max 3, oom_kill 2",
		}, []string{"pressure"}, map[string]uint64{"max": 3, "oom_kill": 2}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			lim, st := fixtureStats(t, tc.fixture)
			c := &cgroupReport{}
			addStats(c, lim, st, nil)
			var buf bytes.Buffer
			require.NoError(t, printText(&buf, report{Cgroup: c}))
			rows := rowsOf(buf.String())
			for _, line := range tc.want {
				assert.Contains(t, rows, line)
			}
			for _, s := range tc.absent {
				assert.NotContains(t, buf.String(), s)
			}
			data, err := json.Marshal(c)
			require.NoError(t, err)
			var back struct {
				MemoryUse struct {
					Events map[string]uint64 `json:"events"`
				} `json:"memory_use"`
			}
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, tc.events, back.MemoryUse.Events)
		})
	}

	// Statistics that could not be read at all say why, in both rows.
	lim, _ := fixtureStats(t, "stats-v1")
	c := &cgroupReport{}
	addStats(c, lim, cgroup.Stats{}, errors.New("too many open files"))
	var buf bytes.Buffer
	require.NoError(t, printText(&buf, report{Cgroup: c}))
	rows := rowsOf(buf.String())
	assert.Contains(t, rows, "throttling: error: too many open files")
	assert.Contains(t, rows, "memory usage: error: too many open files")
	assert.NotContains(t, buf.String(), "memory events")
}

// rowsOf returns the rows of printText's output as "key: value".
func rowsOf(out string) []string {
	var rows []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, _ := strings.Cut(l, "  ")
		rows = append(rows, k+": "+strings.TrimLeft(v, " "))
	}
	return rows
}
