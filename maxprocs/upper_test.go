package maxprocs

import (
	"bytes"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// TestUpperLimitEnv: FITGO_CPU_LIMIT bounds the CPU limit of the cgroup (4
// cores here, on 8 CPUs) and is named as the source when it binds; any
// other value is ignored as if unset, with the reason in the Result and a
// Warn line, and GOMAXPROCS is still fitted to the cgroup's 4 cores.
func TestUpperLimitEnv(t *testing.T) {
	const cg = "/sys/fs/cgroup/pod/app"
	for _, tc := range []struct {
		env    string
		limit  float64 // 0: ignored
		source string
	}{
		{"1000", 1, "$FITGO_CPU_LIMIT"},
		{"1500", 1.5, "$FITGO_CPU_LIMIT"},
		{"1500m", 1.5, "$FITGO_CPU_LIMIT"},
		{" 2.5 ", 2.5, "$FITGO_CPU_LIMIT"},
		{"0.5", 0.5, "$FITGO_CPU_LIMIT"},
		{"8000", 4, cg},
		{"4", 0, cg}, // whole cores or millicores? ignored
		{"999", 0, cg},
		{"0", 0, cg},
		{"0m", 0, cg},
		{"-1500", 0, cg},
		{"+1500", 0, cg},
		{"1.5 cores", 0, cg},
		{"1 500", 0, cg},
		{"2k", 0, cg},
		{"1e3", 0, cg},
		{"99999999999999999999", 0, cg},
	} {
		t.Run(tc.env, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, v2FS("400000 100000", ""))
			te.Getenv = func(k string) string {
				if k == "FITGO_CPU_LIMIT" {
					return tc.env
				}
				return ""
			}
			var buf bytes.Buffer
			fit, err := Apply(te.opts(Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}))
			require.NoError(t, err)
			defer fit.Undo()
			r := fit.Status()
			assert.Equal(t, tc.source, r.Source)
			if tc.limit == 0 {
				assert.Equal(t, 4.0, r.Limit)
				assert.Equal(t, 4, r.After)
				require.Error(t, r.SettingErr)
				assert.Contains(t, r.SettingErr.Error(), "FITGO_CPU_LIMIT")
				assert.Contains(t, r.String(), "; ignored")
				assert.Contains(t, buf.String(), "level=WARN")
				assert.Contains(t, buf.String(), "result.setting_err=")
				return
			}
			assert.Equal(t, tc.limit, r.Limit)
			assert.Equal(t, int(math.Ceil(tc.limit)), r.After)
			assert.True(t, r.Changed)
			assert.NoError(t, r.SettingErr)
			assert.NotContains(t, buf.String(), "level=WARN")
		})
	}
}

// TestUpperLimit: Options.UpperLimit takes precedence over the variable,
// bounds a hierarchy without a CPU limit or without a cgroup at all, and is
// checked like the policy.
func TestUpperLimit(t *testing.T) {
	env := func(string) string { return "3000m" }
	for _, tc := range []struct {
		name   string
		fsys   func() (cgroup.Limits, error)
		upper  float64
		after  int
		source string
		err    string
	}{
		{"option over variable", nil, 1.5, 2, "Options.UpperLimit", ""},
		{"variable", nil, 0, 3, "$FITGO_CPU_LIMIT", ""},
		{"no CPU limit", func() (cgroup.Limits, error) { return cgroup.ReadFS(v2FS("", "")) }, 0, 3, "$FITGO_CPU_LIMIT", ""},
		{"no cgroup", func() (cgroup.Limits, error) { return cgroup.Limits{}, cgroup.ErrNoCgroup }, 0, 3, "$FITGO_CPU_LIMIT", ""},
		{"negative", nil, -1, 8, "", "UpperLimit -1: want a finite number of cores >= 0"},
		{"NaN", nil, math.NaN(), 8, "", "UpperLimit NaN"},
		{"Inf", nil, math.Inf(1), 8, "", "UpperLimit +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, v2FS("400000 100000", ""))
			te.Getenv = env
			if tc.fsys != nil {
				te.Read = tc.fsys
			}
			r, err := Plan(te.opts(Options{UpperLimit: tc.upper}))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Equal(t, "invalid options", r.Reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.after, r.After, r.Reason)
			assert.Equal(t, tc.source, r.Source)
		})
	}
}

// TestUpperLimitRefresh: the bound holds while the cgroup's limit moves
// above it or goes, and the cgroup's limit binds when it drops below.
func TestUpperLimitRefresh(t *testing.T) {
	te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, nil)
	te.Getenv = func(k string) string { return map[string]string{"FITGO_CPU_LIMIT": "2000"}[k] }
	te.src.setQuota(4, "/sys/fs/cgroup/app")
	fit, s := applyFollowing(t, te, Options{})
	require.Equal(t, 2, fit.Status().After)
	now := time.Now()
	for _, step := range []struct {
		cores  float64
		source string
		after  int
		limit  float64
	}{
		{6, "$FITGO_CPU_LIMIT", 2, 2},
		{0.5, "/sys/fs/cgroup/app", 1, 0.5},
		{3, "$FITGO_CPU_LIMIT", 2, 2},
		{0, "$FITGO_CPU_LIMIT", 2, 2}, // no cgroup limit any more
	} {
		src := "/sys/fs/cgroup/app"
		if step.cores == 0 {
			src = ""
		}
		require.True(t, s.tick(s.f, now, cpuLimits(step.cores, src), nil))
		st := fit.Status()
		assert.Equal(t, step.after, st.After, "%v cores", step.cores)
		assert.Equal(t, step.source, st.Source, "%v cores", step.cores)
		assert.Equal(t, step.limit, st.Limit, "%v cores", step.cores)
	}
}
