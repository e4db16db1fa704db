package maxprocs

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProcs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     Policy
		quota float64
		ncpu  int
		want  int
	}{
		// Floor, the default: round down, at least 1.
		{"floor 0.1", Policy{Rounding: Floor}, 0.1, 8, 1},
		{"floor 0.5", Policy{Rounding: Floor}, 0.5, 8, 1},
		{"floor 1", Policy{Rounding: Floor}, 1, 8, 1},
		{"floor 1.5", Policy{Rounding: Floor}, 1.5, 8, 1},
		{"floor 1.999", Policy{Rounding: Floor}, 1.999, 8, 1},
		{"floor 2", Policy{Rounding: Floor}, 2, 8, 2},
		{"floor 2.7", Policy{Rounding: Floor}, 2.7, 8, 2},
		{"floor 8.5", Policy{Rounding: Floor}, 8.5, 16, 8},
		{"floor tiny", Policy{Rounding: Floor}, 0.001, 8, 1},
		// Floor at the boundaries.
		{"floor 0.49", Policy{Rounding: Floor}, 0.49, 8, 1},
		{"floor 1.49", Policy{Rounding: Floor}, 1.49, 8, 1},
		{"floor 1.94", Policy{Rounding: Floor}, 1.94, 8, 1},
		{"floor 2.5", Policy{Rounding: Floor}, 2.5, 8, 2},
		// Ceil: round up, at least 1.
		{"ceil 0.25", Policy{Rounding: Ceil}, 0.25, 8, 1},
		{"ceil 0.49", Policy{Rounding: Ceil}, 0.49, 8, 1},
		{"ceil 0.5", Policy{Rounding: Ceil}, 0.5, 8, 1},
		{"ceil 1", Policy{Rounding: Ceil}, 1, 8, 1},
		{"ceil 1.001", Policy{Rounding: Ceil}, 1.001, 8, 2},
		{"ceil 1.49", Policy{Rounding: Ceil}, 1.49, 8, 2},
		{"ceil 1.5", Policy{Rounding: Ceil}, 1.5, 8, 2},
		{"ceil 1.94", Policy{Rounding: Ceil}, 1.94, 8, 2},
		{"ceil 2", Policy{Rounding: Ceil}, 2, 8, 2},
		{"ceil 2.01", Policy{Rounding: Ceil}, 2.01, 8, 3},
		{"ceil 2.5", Policy{Rounding: Ceil}, 2.5, 8, 3},
		{"ceil 8.5", Policy{Rounding: Ceil}, 8.5, 16, 9},
		// Nearest: halves up, at least 1.
		{"nearest 0.1", Policy{Rounding: Nearest}, 0.1, 8, 1},
		{"nearest 0.49", Policy{Rounding: Nearest}, 0.49, 8, 1},
		{"nearest 0.5", Policy{Rounding: Nearest}, 0.5, 8, 1},
		{"nearest 1", Policy{Rounding: Nearest}, 1, 8, 1},
		{"nearest 1.49", Policy{Rounding: Nearest}, 1.49, 8, 1},
		{"nearest 1.5", Policy{Rounding: Nearest}, 1.5, 8, 2},
		{"nearest 1.94", Policy{Rounding: Nearest}, 1.94, 8, 2},
		{"nearest 2.5", Policy{Rounding: Nearest}, 2.5, 8, 3},
		{"nearest 2.4999999 (float error)", Policy{Rounding: Nearest}, 2.4999999, 8, 3},
		{"nearest 2.4999", Policy{Rounding: Nearest}, 2.4999, 8, 2},
		// The Go runtime's rule: ceil, at least 2.
		{"runtime 0.25", Policy{Rounding: Ceil, Min: 2}, 0.25, 8, 2},
		{"runtime 1", Policy{Rounding: Ceil, Min: 2}, 1, 8, 2},
		{"runtime 1.5", Policy{Rounding: Ceil, Min: 2}, 1.5, 8, 2},
		{"runtime 2.01", Policy{Rounding: Ceil, Min: 2}, 2.01, 8, 3},
		{"runtime min 2 capped at one CPU", Policy{Rounding: Ceil, Min: 2}, 0.5, 1, 1},
		// Affinity cap.
		{"floor above ncpu", Policy{Rounding: Floor}, 4, 2, 2},
		{"ceil above ncpu", Policy{Rounding: Ceil}, 3.5, 2, 2},
		{"nearest above ncpu", Policy{Rounding: Nearest}, 2.5, 2, 2},
		{"floor huge", Policy{Rounding: Floor}, 1e12, 24, 24},
		{"floor +Inf", Policy{Rounding: Floor}, math.Inf(1), 4, 4},
		{"ncpu 0 counts as 1", Policy{Rounding: Floor}, 4, 0, 1},
		{"ncpu negative counts as 1", Policy{Rounding: Ceil}, 4, -3, 1},
		// Min.
		{"min 2 floor 0.5", Policy{Rounding: Floor, Min: 2}, 0.5, 8, 2},
		{"min 4 floor 6.5", Policy{Rounding: Floor, Min: 4}, 6.5, 8, 6},
		{"min 1 ceil 0.5", Policy{Rounding: Ceil, Min: 1}, 0.5, 8, 1},
		{"min 3 ceil 1.5", Policy{Rounding: Ceil, Min: 3}, 1.5, 8, 3},
		{"min above ncpu is capped", Policy{Rounding: Floor, Min: 8}, 1, 4, 4},
		// Max.
		{"max 4 floor 6.5", Policy{Rounding: Floor, Max: 4}, 6.5, 8, 4},
		{"max 4 floor 3.5", Policy{Rounding: Floor, Max: 4}, 3.5, 8, 3},
		{"max 2 ceil 2.5", Policy{Rounding: Ceil, Max: 2}, 2.5, 8, 2},
		{"max above ncpu", Policy{Rounding: Floor, Max: 16}, 12, 8, 8},
		{"min equals max", Policy{Rounding: Floor, Min: 3, Max: 3}, 7, 8, 3},
		// Reserve, subtracted before rounding.
		{"reserve 0.5 of 2", Policy{Rounding: Floor, Reserve: 0.5}, 2, 8, 1},
		{"reserve 0.5 of 2.5", Policy{Rounding: Floor, Reserve: 0.5}, 2.5, 8, 2},
		{"reserve 0.3 of 2.3 (float error)", Policy{Rounding: Floor, Reserve: 0.3}, 2.3, 8, 2},
		{"reserve 0.1 of 3.1", Policy{Rounding: Floor, Reserve: 0.1}, 3.1, 8, 3},
		{"reserve 0.7 of 3.7 ceil", Policy{Rounding: Ceil, Reserve: 0.7}, 3.7, 8, 3},
		{"reserve 1 ceil of 3.5", Policy{Rounding: Ceil, Reserve: 1}, 3.5, 8, 3},
		{"reserve above the limit", Policy{Rounding: Floor, Reserve: 4}, 2, 8, 1},
		{"reserve above the limit ceil", Policy{Rounding: Ceil, Reserve: 4}, 2, 8, 1},
		{"reserve 0.5 of 1.5 nearest", Policy{Rounding: Nearest, Reserve: 0.5}, 1.5, 8, 1},
		{"reserve 0.25 of 1.75 nearest", Policy{Rounding: Nearest, Reserve: 0.25}, 1.75, 8, 2},
		{"reserve 0.25 of 1.25 ceil", Policy{Rounding: Ceil, Reserve: 0.25}, 1.25, 8, 1},
		{"reserve applies after the affinity cap", Policy{Rounding: Floor, Reserve: 1}, 10, 4, 3},
		{"reserve with min", Policy{Rounding: Floor, Reserve: 2, Min: 2}, 3, 8, 2},
		{"reserve with max", Policy{Rounding: Floor, Reserve: 0.5, Max: 2}, 6, 8, 2},
		// Odd quotas.
		{"zero quota", Policy{Rounding: Floor}, 0, 8, 1},
		{"negative quota", Policy{Rounding: Floor}, -1, 8, 1},
		{"NaN quota", Policy{Rounding: Floor}, math.NaN(), 8, 1},
		{"NaN quota ceil", Policy{Rounding: Ceil}, math.NaN(), 8, 1},
		{"NaN quota nearest", Policy{Rounding: Nearest}, math.NaN(), 8, 1},
		// Epsilon: a hair below a whole number is that number.
		{"floor 1.9999999", Policy{Rounding: Floor}, 1.9999999, 8, 2},
		{"ceil 2.0000001", Policy{Rounding: Ceil}, 2.0000001, 8, 2},
		{"floor 1.9999", Policy{Rounding: Floor}, 1.9999, 8, 1},
		{"ceil 2.0001", Policy{Rounding: Ceil}, 2.0001, 8, 3},
		// A microsecond over 2 cores in a 1s period: the runtime's exact
		// ceil gives 3 (TestRuntimeDefault).
		{"runtime's rule 2.000001", Policy{Rounding: Ceil, Min: 2}, 2000001.0 / 1000000, 8, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.NoError(t, tc.p.validate())
			assert.Equal(t, tc.want, tc.p.Procs(tc.quota, tc.ncpu))
		})
	}
}

// TestProcsMatchesRuntimeRule checks Ceil with Min 2 against the runtime's
// formula, min(ncpu, max(2, ceil(quota))), and Floor, Ceil and Nearest against
// theirs, over a grid of millicore quotas.
func TestProcsMatchesRuntimeRule(t *testing.T) {
	for ncpu := 1; ncpu <= 16; ncpu++ {
		for m := 1; m <= 20000; m += 7 {
			q := float64(m*100) / float64(100000) // millicores as Kubernetes writes them
			want := min(ncpu, max(2, int(math.Ceil(q))))
			if got := (Policy{Rounding: Ceil, Min: 2}).Procs(q, ncpu); got != want {
				t.Fatalf("ncpu %d quota %v: got %d, runtime rule %d", ncpu, q, got, want)
			}
			for r, f := range map[Rounding]func(float64) float64{
				Floor:   math.Floor,
				Ceil:    math.Ceil,
				Nearest: func(x float64) float64 { return math.Floor(x + 0.5) },
			} {
				want := min(ncpu, max(1, int(f(q))))
				if got := (Policy{Rounding: r}).Procs(q, ncpu); got != want {
					t.Fatalf("ncpu %d quota %v: %v got %d, want %d", ncpu, q, r, got, want)
				}
			}
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p   Policy
		err string
	}{
		{Policy{}, ""},
		{Policy{Rounding: Ceil, Min: 1, Max: 1}, ""},
		{Policy{Rounding: 7}, "unknown rounding 7"},
		{Policy{Min: -1}, "negative minimum -1"},
		{Policy{Max: -1}, "negative maximum -1"},
		{Policy{Min: 4, Max: 2}, "minimum 4 above maximum 2"},
		{Policy{Rounding: Ceil, Min: 2, Max: 1}, "minimum 2 above maximum 1"},
		{Policy{Rounding: Nearest, Max: 1}, ""},
		{Policy{Reserve: -0.5}, "reserve -0.5 cores"},
		{Policy{Reserve: math.NaN()}, "reserve NaN cores"},
		{Policy{Reserve: math.Inf(1)}, "reserve +Inf cores"},
	} {
		err := tc.p.validate()
		if tc.err == "" {
			assert.NoError(t, err, "%+v", tc.p)
			continue
		}
		if assert.Error(t, err, "%+v", tc.p) {
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}

func TestPolicyString(t *testing.T) {
	assert.Equal(t, "floor, min 1", Policy{Rounding: Floor}.String())
	assert.Equal(t, "ceil, min 1", Policy{Rounding: Ceil}.String())
	assert.Equal(t, "nearest, min 1", Policy{Rounding: Nearest}.String())
	assert.Equal(t, "ceil, min 2", Policy{Rounding: Ceil, Min: 2}.String())
	assert.Equal(t, "ceil, min 1, max 8, reserve 0.5 cores", Policy{Rounding: Ceil, Min: 1, Max: 8, Reserve: 0.5}.String())
	assert.Equal(t, "Rounding(9), min 1", Policy{Rounding: 9}.String())
	assert.Equal(t, 1, Policy{Rounding: Ceil}.resolved().Min)
	// The zero Rounding is the default rule, named by it.
	assert.Equal(t, Policy{Rounding: defaultRounding}.String(), Policy{}.String())
	assert.Equal(t, defaultRounding, Policy{}.resolved().Rounding)
	for _, q := range []float64{0.5, 1.5, 2.5, 7.3} {
		assert.Equal(t, Policy{Rounding: defaultRounding}.Procs(q, 8), Policy{}.Procs(q, 8))
	}
}
