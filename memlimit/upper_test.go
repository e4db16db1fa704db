package memlimit

import (
	"bytes"
	"cmp"
	"log/slog"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpperLimitEnv: FITGO_MEMORY_LIMIT in the forms Kubernetes writes
// bounds the limit; any other value, or one that leaves less than the
// policy's minimum, is ignored as if unset, with the reason in the Result and
// a Warn line, and GOMEMLIMIT is still fitted to the cgroup's 512 MiB. A
// plain number of bytes below the cgroup's limit, as the downward API writes
// with a divisor other than 1 (33554432: 32Gi with divisor 1Ki), is kept
// with a Warn line that says so (issue 31, point 5).
func TestUpperLimitEnv(t *testing.T) {
	for _, tc := range []struct {
		env   string
		limit int64  // 0: ignored
		warn  string // "": no Warn line
	}{
		{"268435456", 256 * MiB, "divisor"},
		{"33554432", 32 * MiB, "divisor"},
		{"256Mi", 256 * MiB, ""},
		{"0.25Gi", 256 * MiB, ""},
		{"256M", 256e6, ""},
		{"1Gi", 512 * MiB, ""},
		{"536870912", 512 * MiB, ""},
		{"1e9", 0, "ignored"},
		{"0", 0, "ignored"},
		{"512", 0, "ignored"}, // 512Mi with divisor 1Mi
		{"0x10000000", 0, "ignored"},
		{"+268435456", 0, "ignored"},
		{"99999999999999999999", 0, "ignored"},
		{"-5", 0, "ignored"},
		{"512MB", 0, "ignored"},
		{"1048576", 0, "minimum"}, // 1Gi with divisor 1Ki
		{"1Mi", 0, "minimum"},
		{"17Mi", 0, "minimum"}, // 0.9 × 17 MiB is below 16 MiB
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
			lim := cmp.Or(min(tc.limit, 512*MiB), 512*MiB)
			assert.Equal(t, lim, r.Limit)
			assert.Equal(t, Policy{}.SoftLimit(lim), r.After)
			if tc.warn == "" {
				assert.NoError(t, r.SettingErr)
				assert.NotContains(t, buf.String(), "level=WARN")
				return
			}
			require.Error(t, r.SettingErr)
			assert.Contains(t, r.SettingErr.Error(), "FITGO_MEMORY_LIMIT")
			assert.Contains(t, r.SettingErr.Error(), tc.warn)
			assert.Contains(t, r.String(), tc.warn)
			assert.Contains(t, buf.String(), "level=WARN")
			if tc.limit != 0 {
				assert.Contains(t, r.SettingErr.Error(), formatBytes(tc.limit<<10), "the value in KiB")
			}
		})
	}
}

// TestUpperLimitTiny: an UpperLimit that leaves less than the policy's
// minimum is ignored the same way, and so is a reserve (FITGO=reserve,
// Reserve) that leaves less than it of the limit read at Apply: warned, named
// and the cgroup's limit kept (issue 31, point 5).
func TestUpperLimitTiny(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"UpperLimit", Options{UpperLimit: 17 * MiB}, "UpperLimit 17 MiB leaves less than the policy's minimum GOMEMLIMIT (16 MiB); ignored"},
		{"reserve 496Mi", Options{Reserve: 496 * MiB}, "reserve (FITGO=reserve, Reserve) of 496 MiB leaves less than the policy's minimum"},
		{"reserve 512Mi", Options{Reserve: 512 * MiB}, "of 512 MiB leaves less than"},
		{"reserve 600Mi", Options{Reserve: 600 * MiB}, "of 600 MiB leaves less than"},
		{"reserve 7Ei", Options{Reserve: 7 << 60}, "of 7 EiB leaves less than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", ""))
			var buf bytes.Buffer
			fit, err := Apply(te.opts(Options{Logger: slog.New(slog.NewTextHandler(&buf, nil)), UpperLimit: tc.opts.UpperLimit,
				Reserve: tc.opts.Reserve}))
			require.NoError(t, err)
			defer fit.Undo()
			r := fit.Status()
			assert.True(t, r.Changed, r.Reason)
			assert.Equal(t, soft(512), r.After)
			assert.Zero(t, r.Reserve)
			require.Error(t, r.SettingErr)
			assert.Contains(t, r.SettingErr.Error(), tc.want)
			assert.Contains(t, buf.String(), "level=WARN")
			assert.Contains(t, buf.String(), "level=INFO msg=\"fitgo: GOMEMLIMIT set\"")
		})
	}
}

// TestReserve: memory held where fitgo cannot see it (FITGO=reserve) is
// taken off the limit before the policy's ratio, whichever limit binds: the
// cgroup's, FITGO_MEMORY_LIMIT, or what the others leave.
func TestReserve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		opts    Options
		env     string // FITGO_MEMORY_LIMIT
		after   int64  // 0: left unset
		limit   int64
		reserve int64
		text    string
	}{
		{"cgroup", v2FS("536870912", "", ""), Options{Reserve: 64 * MiB}, "", soft(448), 448 * MiB, 64 * MiB,
			"available 448 MiB = memory.max 512 MiB from /sys/fs/cgroup/pod/app − reserve 64 MiB"},
		{"pod limit from the environment", v2FS("", "", ""), Options{Reserve: 64 * MiB}, "256Mi", soft(192), 192 * MiB, 64 * MiB,
			"available 192 MiB = FITGO_MEMORY_LIMIT 256 MiB from $FITGO_MEMORY_LIMIT − reserve 64 MiB"},
		{"others", sharedV2(300), Options{Reserve: 64 * MiB}, "", soft(248), 248 * MiB, 64 * MiB,
			"available 248 MiB = memory.max 512 MiB − others 200 MiB at /sys/fs/cgroup/pod − reserve 64 MiB"},
		{"with the policy's margin", v2FS("536870912", "", ""), Options{Reserve: 64 * MiB, Policy: Policy{Margin: 64 * MiB}},
			"", 384 * MiB, 448 * MiB, 64 * MiB, "− reserve 64 MiB"},
		{"all of it: ignored", v2FS("536870912", "", ""), Options{Reserve: 512 * MiB}, "", soft(512), 512 * MiB, 0, "; ignored"},
		{"more than all: ignored", v2FS("536870912", "", ""), Options{Reserve: 1 << 40}, "", soft(512), 512 * MiB, 0, "; ignored"},
		{"no limit", v2FS("", "", ""), Options{Reserve: 64 * MiB}, "", 0, 0, 0, "no memory limit"},
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
			assert.Equal(t, tc.reserve, r.Reserve)
			assert.Contains(t, r.String(), tc.text)
		})
	}
	_, err := Plan(newTestEnv(&fakeKnob{value: noLimit}, v2FS("536870912", "", "")).opts(Options{Reserve: -1}))
	assert.ErrorContains(t, err, "negative UpperLimit 0 or Reserve -1")
}
