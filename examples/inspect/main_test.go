package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{483183820, "460.8 MiB (483183820 bytes)"},
		{1000, "1000 bytes"},
		{0, "0 bytes"},
	} {
		assert.Equal(t, tc.want, bytesString(tc.in), "bytesString(%d)", tc.in)
	}
}

func TestPrintTextHeadroom(t *testing.T) {
	max := int64(512 << 20)
	r := report{GoVersion: "go1.26.8", OS: "linux/amd64", GOMEMLIMIT: 1<<63 - 1, Cgroup: &cgroupReport{
		MemoryMaxBytes: &max, MemoryMaxSource: "/sys/fs/cgroup/pod",
		Headroom: &headroom{Source: "/sys/fs/cgroup/pod", From: "memory.max", LimitBytes: max, UsageBytes: 300 << 20,
			OwnBytes: 100 << 20, OthersBytes: 200 << 20, AvailBytes: 312 << 20},
	}}
	var buf bytes.Buffer
	require.NoError(t, printText(&buf, r))
	assert.Contains(t, buf.String(), "memory headroom    312 MiB available at /sys/fs/cgroup/pod: memory.max 512 MiB − others 200 MiB (working set 300 MiB, own 100 MiB)\n")
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
