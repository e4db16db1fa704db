package memlimit

import (
	"bytes"
	"log/slog"
	"testing"

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
