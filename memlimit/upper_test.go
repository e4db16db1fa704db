package memlimit

import (
	"bytes"
	"log/slog"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpperLimitEnv: FITGO_MEMORY_LIMIT in the forms Kubernetes writes
// bounds the limit; any other value is ignored as if unset, with the reason
// in the Result and a Warn line, and GOMEMLIMIT is still fitted to the
// cgroup's 512 MiB.
func TestUpperLimitEnv(t *testing.T) {
	for _, tc := range []struct {
		env   string
		limit int64 // 0: ignored
	}{
		{"268435456", 256 * MiB},
		{"256Mi", 256 * MiB},
		{"0.25Gi", 256 * MiB},
		{"256M", 256e6},
		{"1Gi", 512 * MiB},
		{"1e9", 0},
		{"0", 0},
		{"512", 0}, // 512Mi with divisor 1Mi
		{"0x10000000", 0},
		{"+268435456", 0},
		{"99999999999999999999", 0},
		{"-5", 0},
		{"512MB", 0},
	} {
		t.Run(tc.env, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", ""))
			te.Getenv = func(k string) string {
				if k == "FITGO_MEMORY_LIMIT" {
					return tc.env
				}
				return ""
			}
			var buf bytes.Buffer
			fit, err := Apply(te.opts(Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}))
			require.NoError(t, err)
			defer fit.Undo()
			r := fit.Status()
			assert.True(t, r.Changed)
			if tc.limit == 0 {
				assert.Equal(t, 512*MiB, r.Limit)
				assert.Equal(t, soft(512), r.After)
				require.Error(t, r.SettingErr)
				assert.Contains(t, r.SettingErr.Error(), "FITGO_MEMORY_LIMIT")
				assert.Contains(t, r.String(), "ignored")
				assert.Contains(t, buf.String(), "level=WARN")
				return
			}
			lim := min(tc.limit, 512*MiB)
			assert.Equal(t, lim, r.Limit)
			assert.Equal(t, Policy{}.SoftLimit(lim), r.After)
			assert.NoError(t, r.SettingErr)
			assert.NotContains(t, buf.String(), "level=WARN")
		})
	}
}

// TestUnseen: memory held where fitgo cannot see it (FITGO=reserve) is
// taken off the limit before the policy's ratio, whichever limit binds: the
// cgroup's, FITGO_MEMORY_LIMIT, or what the others leave.
func TestUnseen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fsys   fstest.MapFS
		opts   Options
		env    string // FITGO_MEMORY_LIMIT
		after  int64  // 0: left unset
		limit  int64
		unseen int64
		text   string
	}{
		{"cgroup", v2FS("536870912", "", ""), Options{Unseen: 64 * MiB}, "", soft(448), 448 * MiB, 64 * MiB,
			"available 448 MiB = memory.max 512 MiB from /sys/fs/cgroup/pod/app − unseen 64 MiB"},
		{"pod limit from the environment", v2FS("", "", ""), Options{Unseen: 64 * MiB}, "256Mi", soft(192), 192 * MiB, 64 * MiB,
			"available 192 MiB = FITGO_MEMORY_LIMIT 256 MiB from $FITGO_MEMORY_LIMIT − unseen 64 MiB"},
		{"others", sharedV2(300), Options{Unseen: 64 * MiB}, "", soft(248), 248 * MiB, 64 * MiB,
			"available 248 MiB = memory.max 512 MiB − others 200 MiB at /sys/fs/cgroup/pod − unseen 64 MiB"},
		{"with the policy's reserve", v2FS("536870912", "", ""), Options{Unseen: 64 * MiB, Policy: Policy{Reserve: 64 * MiB}},
			"", 384 * MiB, 448 * MiB, 64 * MiB, "− unseen 64 MiB"},
		{"all of it", v2FS("536870912", "", ""), Options{Unseen: 512 * MiB}, "", 0, 0, 512 * MiB, "leaves nothing"},
		{"more than all", v2FS("536870912", "", ""), Options{Unseen: 1 << 40}, "", 0, 0, 512 * MiB, "leaves nothing"},
		{"no limit", v2FS("", "", ""), Options{Unseen: 64 * MiB}, "", 0, 0, 0, "no memory limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: noLimit}, tc.fsys)
			te.Getenv = func(k string) string { return map[string]string{"FITGO_MEMORY_LIMIT": tc.env}[k] }
			r, err := Plan(te.opts(tc.opts))
			require.NoError(t, err)
			assert.Equal(t, tc.after != 0, r.Changed, r.Reason)
			if tc.after != 0 {
				assert.Equal(t, tc.after, r.After)
			}
			assert.Equal(t, tc.limit, r.Limit)
			assert.Equal(t, tc.unseen, r.Unseen)
			assert.Contains(t, r.String(), tc.text)
		})
	}
	_, err := Plan(newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", "")).opts(Options{Unseen: -1}))
	assert.ErrorContains(t, err, "negative UpperLimit 0 or Unseen -1")
}
