package memlimit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	KiB = int64(1) << 10
	MiB = int64(1) << 20
	GiB = int64(1) << 30
)

func TestPolicyLimit(t *testing.T) {
	def := Policy{}
	for _, tc := range []struct {
		name  string
		p     Policy
		limit int64
		want  int64
	}{
		{"default 512 MiB", def, 512 * MiB, 483183820}, // 0.9 × 512 MiB, rounded down
		{"default 384 MiB", def, 384 * MiB, 362387865},
		{"default 1 GiB", def, GiB, 966367641},
		{"default 8 GiB", def, 8 * GiB, 7730941132},
		{"ratio 1", Policy{Ratio: 1}, 512 * MiB, 512 * MiB},
		{"ratio 0.5", Policy{Ratio: 0.5}, 512 * MiB, 256 * MiB},
		{"ratio 0.75 odd bytes", Policy{Ratio: 0.75, Min: -1}, 1001, 750},
		{"margin lower than ratio", Policy{Ratio: 0.9, Margin: 100 * MiB}, 512 * MiB, 412 * MiB},
		{"ratio lower than margin", Policy{Ratio: 0.9, Margin: 10 * MiB}, 512 * MiB, 483183820},
		{"margin alone", Policy{Ratio: 1, Margin: 64 * MiB}, GiB, GiB - 64*MiB},
		{"margin equal to the limit", Policy{Ratio: 1, Margin: GiB}, GiB, 0},
		{"margin above the limit", Policy{Ratio: 0.9, Margin: 2 * GiB}, GiB, 0},
		// Tiny limits: never above the limit, unset below Min.
		{"tiny: 18 MiB gives 16.2 MiB", def, 18 * MiB, 16986931},
		{"tiny: 17 MiB gives 15.3 MiB, unset", def, 17 * MiB, 0},
		{"tiny: 8 MiB, unset", def, 8 * MiB, 0},
		{"tiny with no minimum", Policy{Ratio: 0.9, Min: -1}, 8 * MiB, 7549747},
		{"tiny: exactly Min", Policy{Ratio: 1, Min: 16 * MiB}, 16 * MiB, 16 * MiB},
		{"one byte", Policy{Ratio: 0.9, Min: -1}, 1, 0},
		{"one byte ratio 1", Policy{Ratio: 1, Min: -1}, 1, 1},
		{"zero limit", def, 0, 0},
		{"negative limit", def, -5, 0},
		// Huge limits: no overflow, never above the limit.
		{"max int64 ratio 1", Policy{Ratio: 1}, math.MaxInt64, math.MaxInt64},
		{"max int64 ratio 0.9", Policy{Ratio: 0.9}, math.MaxInt64, 8301034833169298432},
		{"near max ratio 0.9999999999999999", Policy{Ratio: 0.9999999999999999}, math.MaxInt64 - 1, 9223372036854774784},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.NoError(t, tc.p.validate())
			got := tc.p.SoftLimit(tc.limit)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, got, max(tc.limit, 0), "never above the limit")
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p   Policy
		err string
	}{
		{Policy{}, ""},
		{Policy{Ratio: 1}, ""},
		{Policy{Ratio: 1.1}, "ratio 1.1"},
		{Policy{Ratio: -0.5}, "ratio -0.5"},
		{Policy{Ratio: math.NaN()}, "ratio NaN"},
		{Policy{Ratio: math.Inf(1)}, "ratio +Inf"},
		{Policy{Ratio: 0.9, Margin: -1}, "negative margin -1"},
		{Policy{Ratio: 0.9, Min: -1}, ""},
	} {
		err := tc.p.validate()
		if tc.err == "" {
			assert.NoError(t, err)
			continue
		}
		if assert.Error(t, err, "%+v", tc.p) {
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}

func TestPolicyString(t *testing.T) {
	assert.Equal(t, "ratio 0.9, min 16 MiB", Policy{}.String(), "the zero Policy is the default")
	assert.Equal(t, "ratio 1, margin 256 MiB", Policy{Ratio: 1, Margin: 256 * MiB, Min: -1}.String())
	assert.Equal(t, "ratio 1, margin 256 MiB, min 32 MiB", Policy{Ratio: 1, Margin: 256 * MiB, Min: 32 * MiB}.String())
	assert.Equal(t, "ratio 0.8", Policy{Ratio: 0.8, Min: -1}.String())
	assert.Equal(t, Policy{Ratio: 0.9, Min: 16 * MiB}, Policy{}.resolved())
	assert.Equal(t, Policy{Ratio: 1, Min: -1}, Policy{Ratio: 1, Min: -1}.resolved().resolved())
	assert.Equal(t, "460.8 MiB", formatBytes(483183820))
	assert.Equal(t, "123 B", formatBytes(123))
	assert.Equal(t, "1 GiB", formatBytes(GiB))
	assert.Equal(t, "no limit", formatBytes(noLimit))
	assert.Equal(t, "8 EiB", formatBytes(math.MaxInt64-1))
}

// FuzzPolicyLimit checks the invariants of the pure policy over any input.
func FuzzPolicyLimit(f *testing.F) {
	f.Add(int64(512<<20), 0.9, int64(0), int64(16<<20))
	f.Add(int64(math.MaxInt64), 1.0, int64(0), int64(0))
	f.Add(int64(1), 0.5, int64(1), int64(0))
	f.Fuzz(func(t *testing.T, limit int64, ratio float64, reserve, minLimit int64) {
		p := Policy{Ratio: ratio, Margin: reserve, Min: minLimit}
		if p.validate() != nil {
			return
		}
		got := p.SoftLimit(limit)
		r := p.resolved()
		if got < 0 || got > max(limit, 0) {
			t.Fatalf("%+v.SoftLimit(%d) = %d: outside [0, limit]", p, limit, got)
		}
		if got != 0 && got < r.Min {
			t.Fatalf("%+v.SoftLimit(%d) = %d: below Min", p, limit, got)
		}
		if got != 0 && reserve > 0 && got > limit-reserve {
			t.Fatalf("%+v.SoftLimit(%d) = %d: reserve not kept", p, limit, got)
		}
		if got != 0 && float64(got) > float64(limit)*r.Ratio {
			t.Fatalf("%+v.SoftLimit(%d) = %d: above ratio", p, limit, got)
		}
	})
}

func TestParseMemTotal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"MemTotal:       24554808 kB\nMemFree: 1 kB\n", 24554808 * KiB, ""},
		{"MemFree:  1 kB\nMemTotal:\t2048 kB\n", 2 * MiB, ""},
		{"MemTotal: 4096\n", 4096, ""},
		{"MemTotal: 1 kB", KiB, ""},
		{"", 0, "no MemTotal line"},
		{"MemFree: 1 kB\n", 0, "no MemTotal line"},
		{"MemTotal:\n", 0, "malformed"},
		{"MemTotal: x kB\n", 0, "malformed"},
		{"MemTotal: -1 kB\n", 0, "malformed"},
		{"MemTotal: 1 MB\n", 0, `unit "MB"`},
		{"MemTotal: 1 kB extra\n", 0, "malformed"},
		{"MemTotal: 0 kB\n", 0, "zero"},
		{"MemTotal: 9223372036854775807 kB\n", 0, "too large"},
		{" MemTotal: 1 kB\n", 0, "no MemTotal line"},
	} {
		got, err := parseMemTotal([]byte(tc.in))
		if tc.err == "" {
			assert.NoError(t, err, tc.in)
			assert.Equal(t, tc.want, got, tc.in)
		} else if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}

func FuzzParseMemTotal(f *testing.F) {
	for _, s := range []string{"MemTotal:       24554808 kB\n", "MemTotal: 4096\n", "MemTotal: 1 MB\n", "MemTotal: 9223372036854775807 kB\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseMemTotal(data)
		if err == nil && n <= 0 {
			t.Fatalf("parseMemTotal(%q) = %d without error", data, n)
		}
		if err != nil && n != 0 {
			t.Fatalf("parseMemTotal(%q) = %d with error %v", data, n, err)
		}
	})
}
