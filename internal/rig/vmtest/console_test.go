package vmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var consoleTests = []struct {
	name    string
	in      string
	results []Result // JSON compared as text
	steps   []Step
	errors  []string
	done    bool
	wantErr string
}{
	{name: "empty", in: ""},
	{
		name: "serial console",
		in: "[    1.000000] Run /init as init process\r\n" +
			"FITGO-STEP v2/start 1.25\r\n" +
			"FITGO-RESULT {\"scenario\":\"v2/leaf\",\"probe\":\"runtime\",\"gomaxprocs\":2}\r\n" +
			"FITGO-ERROR write '1' to /sys/fs/cgroup/x/cpu.max\r\n" +
			"FITGO-RESULT {\"scenario\":\"v2/leaf\"}\r\n" +
			"FITGO-DONE\r\n" +
			"[    2.000000] reboot: Power down\r\n",
		results: []Result{
			{Line: 3, Scenario: "v2/leaf", Probe: "runtime", JSON: json.RawMessage(`{"scenario":"v2/leaf","probe":"runtime","gomaxprocs":2}`)},
			{Line: 5, Scenario: "v2/leaf", JSON: json.RawMessage(`{"scenario":"v2/leaf"}`)},
		},
		steps:  []Step{{Line: 2, Name: "v2/start", Uptime: 1250 * time.Millisecond}},
		errors: []string{"write '1' to /sys/fs/cgroup/x/cpu.max"},
		done:   true,
	},
	{
		name: "marker not at line start",
		in:   "echo FITGO-RESULT {\"scenario\":\"x\"}\nxFITGO-DONE\nFITGO-DONE now\n",
	},
	{
		name: "no final newline",
		in:   "FITGO-DONE",
		done: true,
	},
	{name: "step without uptime", in: "FITGO-STEP x\n", wantErr: "console line 1: bad step"},
	{name: "step with bad uptime", in: "FITGO-STEP x 1s\n", wantErr: "console line 1: bad step"},
	{name: "step with negative uptime", in: "FITGO-STEP x -1\n", wantErr: "console line 1: bad step"},
	{name: "step without name", in: "FITGO-STEP  1\n", wantErr: "console line 1: bad step"},
	{name: "not json", in: "x\nFITGO-RESULT {\"scenario\":\n", wantErr: "console line 2: bad result"},
	{name: "array", in: "FITGO-RESULT [1]\n", wantErr: "console line 1: bad result"},
	{name: "null", in: "FITGO-RESULT null\n", wantErr: "console line 1: result is not a JSON object"},
	{name: "no scenario", in: "FITGO-RESULT {\"probe\":\"x\"}\n", wantErr: "console line 1: result without a scenario"},
	{name: "empty scenario", in: "FITGO-RESULT {\"scenario\":\"\"}\n", wantErr: "console line 1: result without a scenario"},
	{name: "scenario not a string", in: "FITGO-RESULT {\"scenario\":1}\n", wantErr: "console line 1: result without a scenario"},
	{name: "scenario in other case", in: "FITGO-RESULT {\"Scenario\":\"x\"}\n", wantErr: "console line 1: result without a scenario"},
	{name: "probe not a string", in: "FITGO-RESULT {\"scenario\":\"x\",\"probe\":2}\n", wantErr: "console line 1: bad probe"},
}

func TestParseConsole(t *testing.T) {
	for _, tt := range consoleTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConsole([]byte(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, c.Results, len(tt.results))
			for i, want := range tt.results {
				got := c.Results[i]
				assert.Equal(t, want.Line, got.Line)
				assert.Equal(t, want.Scenario, got.Scenario)
				assert.Equal(t, want.Probe, got.Probe)
				assert.JSONEq(t, string(want.JSON), string(got.JSON))
			}
			assert.Equal(t, tt.steps, c.Steps)
			assert.Equal(t, tt.errors, c.Errors)
			assert.Equal(t, tt.done, c.Done)
		})
	}
}

func TestConsoleFind(t *testing.T) {
	c, err := ParseConsole([]byte("FITGO-RESULT {\"scenario\":\"a\",\"probe\":\"p\",\"n\":1}\n" +
		"FITGO-RESULT {\"scenario\":\"a\",\"probe\":\"q\"}\n" +
		"FITGO-RESULT {\"scenario\":\"b\",\"probe\":\"p\"}\n" +
		"FITGO-RESULT {\"scenario\":\"a\",\"probe\":\"p\",\"n\":2}\n"))
	require.NoError(t, err)
	rs := c.Find("a", "p")
	require.Len(t, rs, 2)
	assert.Equal(t, 1, rs[0].Line)
	assert.Equal(t, 4, rs[1].Line)
	assert.Empty(t, c.Find("b", "q"))
}

func FuzzParseConsole(f *testing.F) {
	for _, tt := range consoleTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := ParseConsole(in)
		require.NotNil(t, c)
		if err != nil {
			return
		}
		for _, st := range c.Steps {
			require.NotEmpty(t, st.Name)
			require.GreaterOrEqual(t, st.Uptime, time.Duration(0))
		}
		for _, r := range c.Results {
			require.NotEmpty(t, r.Scenario)
			require.Positive(t, r.Line)
			var v map[string]any
			require.NoError(t, json.Unmarshal(r.JSON, &v))
			require.Equal(t, r.Scenario, v["scenario"])
		}
	})
}

func TestDoneWatch(t *testing.T) {
	for _, chunks := range [][]string{
		{"x\r\nFITGO-DONE\r\n"},
		{"x\r\nFITGO-", "DO", "NE\r", "\n[ 1.0] reboot: Power down\r\n"},
		{"x\n", "FITGO-DONE\n"},
	} {
		var out bytes.Buffer
		calls := 0
		d := &doneWatch{w: &out, stop: func() { calls++ }}
		for _, c := range chunks {
			n, err := d.Write([]byte(c))
			require.NoError(t, err)
			require.Equal(t, len(c), n)
		}
		assert.True(t, d.seen, "%q", chunks)
		assert.Equal(t, 1, calls, "%q", chunks)
		assert.Equal(t, strings.Join(chunks, ""), out.String())
	}
	for _, chunks := range [][]string{
		{"echo FITGO-DONE\n"},
		{"x\nFITGO-DONE now\n"},
		{"x\nFITGO-DON", "\n"},
	} {
		d := &doneWatch{w: io.Discard, stop: func() { t.Errorf("stop called for %q", chunks) }}
		for _, c := range chunks {
			_, err := d.Write([]byte(c))
			require.NoError(t, err)
		}
		assert.False(t, d.seen)
	}
}
