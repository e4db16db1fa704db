package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // 0: an error
	}{
		{"256Mi", 256 << 20}, {"256MiB", 256 << 20}, {"1Gi", 1 << 30}, {"1.5Gi", 3 << 29}, {"512Ki", 512 << 10},
		{"268435456", 268435456}, {"1000", 1000}, {" 64Mi ", 64 << 20},
		{"300M", 300e6}, {"2M", 2e6}, {"2G", 2e9}, {"64k", 64000}, {"1k", 1000}, {"1K", 1000},
		{"100B", 100}, {"64B", 64},
		{"", 0}, {"Mi", 0}, {"-1Mi", 0}, {"0", 0}, {"1Xi", 0}, {"NaN", 0}, {"Inf", 0},
		{"9999999999Ti", 0}, {"1e30Gi", 0},
		{"1.5", 0}, {"0.5B", 0}, {"1.0000001Ki", 0}, // not a whole number of bytes
	} {
		got, err := ParseBytes(tc.in)
		if tc.want == 0 {
			assert.ErrorContains(t, err, "bad size", "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
		err  string
	}{
		{in: "256Mi", want: []int64{256 << 20}},
		{in: "256Mi,512Mi", want: []int64{256 << 20, 512 << 20}},
		{in: " 1Gi, ,32Mi,", want: []int64{1 << 30, 32 << 20}},
		{in: "16Mi", err: `memory limit "16Mi" is too small for the workload (at least 32Mi)`},
		{in: "10Mi", err: "too small"},
		{in: "1", err: "too small"},
		{in: "256Mi,lots", err: `bad size "lots"`},
		{in: "1.5", err: "bad size"},
		{in: "", err: `no memory limit in ""`},
		{in: ",", err: "no memory limit"},
	} {
		got, err := ParseSizes(tc.in)
		checkList(t, tc.in, got, err, tc.want, tc.err)
	}
}

// checkList checks what a list parser returned for in: an error containing
// wantErr and no list when wantErr is set, else want.
func checkList[T any](t *testing.T, in string, got []T, err error, want []T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		assert.ErrorContains(t, err, wantErr, "%q", in)
		assert.Nil(t, got, "%q", in)
		return
	}
	require.NoError(t, err, "%q", in)
	assert.Equal(t, want, got, "%q", in)
}

func TestParseCPUs(t *testing.T) {
	for _, tc := range []struct {
		in        string
		allowNone bool
		want      []float64
		err       string
	}{
		{in: "0.5, 1,1.5,250m,none", allowNone: true, want: []float64{0.5, 1, 1.5, 0.25, 0}},
		{in: "500m,2", want: []float64{0.5, 2}},
		{in: "0.01,10m,1.234", want: []float64{0.01, 0.01, 1.234}},
		{in: "none", err: `bad CPU limit "none"`},
		{in: "x", allowNone: true, err: `bad CPU limit "x"`},
		{in: "NaN", allowNone: true, err: "bad CPU limit"},
		{in: "Inf", allowNone: true, err: "bad CPU limit"},
		{in: "0", allowNone: true, err: `"0": a CPU limit must be at least 0.01 (10m)`},
		{in: "-1", allowNone: true, err: "at least 0.01"},
		{in: "0.001", allowNone: true, err: "at least 0.01"},
		{in: "0.0005", err: "at least 0.01"},
		{in: "5m", err: "at least 0.01"},
		{in: "1.2345", allowNone: true, err: `"1.2345": Kubernetes CPU limits are whole millicores`},
		{in: "1,12.5m", err: "whole millicores"},
		{in: "", allowNone: true, err: `no CPU limit in ""`},
		{in: ",", allowNone: true, err: "no CPU limit"},
	} {
		got, err := ParseCPUs(tc.in, tc.allowNone)
		checkList(t, tc.in, got, err, tc.want, tc.err)
	}
}

func TestCheckCPU(t *testing.T) {
	for _, tc := range []struct {
		v   float64
		err string
	}{
		{v: 0.01}, {v: 0.5}, {v: 3}, {v: 1.001},
		{v: 0, err: "at least 0.01"}, {v: -1, err: "at least 0.01"}, {v: 0.009, err: "at least 0.01"},
		{v: 1.0005, err: "whole millicores"},
	} {
		err := CheckCPU(tc.v)
		if tc.err == "" {
			assert.NoError(t, err, "%v", tc.v)
		} else {
			assert.ErrorContains(t, err, tc.err, "%v", tc.v)
		}
	}
}

func TestParseScenarios(t *testing.T) {
	local := struct {
		known, all []string
		usage      string
	}{[]string{"cpu", "nested", "memory"}, []string{"cpu", "nested", "memory"}, "cpu, nested, memory or all"}
	kind := local
	kind.known, kind.all, kind.usage = []string{"cpu", "memory", "resize"}, []string{"cpu", "memory"}, "cpu, memory, all, or resize"
	for _, tc := range []struct {
		runner  string
		in      string
		want    []string
		unknown string // the name of an *UnknownScenarioError
	}{
		{runner: "local", in: "cpu", want: []string{"cpu"}},
		{runner: "local", in: "all", want: []string{"cpu", "nested", "memory"}},
		{runner: "local", in: "memory, cpu,memory", want: []string{"memory", "cpu"}},
		{runner: "local", in: "disk", unknown: "disk"},
		{runner: "local", in: "resize", unknown: "resize"},
		{runner: "local", in: "cpu,all", unknown: "all"},
		{runner: "local", in: "", unknown: ""},
		{runner: "kind", in: "all", want: []string{"cpu", "memory"}},
		{runner: "kind", in: "cpu,resize", want: []string{"cpu", "resize"}},
		{runner: "kind", in: "resize,resize", want: []string{"resize"}},
		{runner: "kind", in: "nested", unknown: "nested"},
		{runner: "kind", in: "cpu,bogus", unknown: "bogus"},
	} {
		r := local
		if tc.runner == "kind" {
			r = kind
		}
		got, err := ParseScenarios(tc.in, r.known, r.all, r.usage)
		if tc.unknown != "" || tc.want == nil {
			var u *UnknownScenarioError
			require.ErrorAs(t, err, &u, "%s %q", tc.runner, tc.in)
			assert.Equal(t, tc.unknown, u.Name)
			assert.EqualError(t, err, `unknown scenario "`+tc.unknown+`" (`+r.usage+`)`)
			assert.Nil(t, got)
			continue
		}
		require.NoError(t, err, "%s %q", tc.runner, tc.in)
		assert.Equal(t, tc.want, got, "%s %q", tc.runner, tc.in)
	}
	all := []string{"cpu"}
	got, _ := ParseScenarios("all", all, all, "")
	got[0] = "changed"
	assert.Equal(t, []string{"cpu"}, all, "the result is the caller's own")
}

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		cpus, memory string
		allowNone    bool
		wantCPUs     []float64
		wantMemory   []int64
		err          string
	}{
		{},
		{cpus: "none,1", allowNone: true, wantCPUs: []float64{0, 1}},
		{memory: "256Mi,1Gi", wantMemory: []int64{256 << 20, 1 << 30}},
		{cpus: "500m", memory: "300Mi", wantCPUs: []float64{0.5}, wantMemory: []int64{300 << 20}},
		{cpus: "none", err: `-cpus: bad CPU limit "none"`},
		{cpus: ",", err: `-cpus: no CPU limit in ","`},
		{cpus: "1", memory: "10Mi", err: `-memory: memory limit "10Mi" is too small`},
		{memory: "1.5", err: `-memory: bad size "1.5"`},
	} {
		cpus, memory, err := ParseLimits(tc.cpus, tc.memory, tc.allowNone)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%+v", tc)
			assert.Nil(t, cpus)
			assert.Nil(t, memory)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.wantCPUs, cpus, "%+v", tc)
		assert.Equal(t, tc.wantMemory, memory, "%+v", tc)
	}
}
