package maxprocs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Rounding is how a fractional CPU limit becomes a whole GOMAXPROCS. Every
// rule has a minimum of 1; the Go runtime's own rule is Ceil with a minimum
// of 2 (Policy.Min 2). The zero Rounding is the default rule.
type Rounding uint8

// defaultRounding is the zero Rounding's rule: it never gives fewer Ps than
// the quota can keep busy, and at or below one CPU it gives 1, where the
// runtime's 2 throttles (docs/benchmark.md has the sweep that chose it).
const defaultRounding = Ceil

const (
	// Floor rounds down: 0.5 gives 1, 1.5 gives 1, 2.7 gives 2. It is
	// automaxprocs' rule.
	Floor Rounding = iota + 1
	// Ceil rounds up: 0.5 gives 1, 1.2 gives 2, 2.7 gives 3. It uses every
	// fraction of the quota.
	Ceil
	// Nearest rounds to the nearest whole number, halves up: 0.5 gives 1,
	// 1.49 gives 1, 1.5 gives 2.
	Nearest
	runtimeCeil // the Go runtime's ceil, exact (no epsilon); not a public rule
)

// rule is r, or the default rule for the zero Rounding.
func (r Rounding) rule() Rounding {
	if r == 0 {
		return defaultRounding
	}
	return r
}

// round rounds q, which is not negative, by r.
func (r Rounding) round(q float64) int {
	switch r.rule() {
	case Ceil:
		return int(math.Ceil(q - epsilon))
	case runtimeCeil:
		return int(math.Ceil(q))
	case Nearest:
		return int(math.Floor(q + 0.5 + epsilon))
	}
	return int(math.Floor(q + epsilon))
}

// epsilon absorbs floating-point error in quota arithmetic (2.3-0.3 is
// 1.9999999999999998): a millionth of a core, far below the millicore
// granularity of Kubernetes CPU limits.
const epsilon = 1e-6

// Policy turns a CPU limit into a GOMAXPROCS value: the limit is capped at
// the CPUs the process may run on, the Reserve subtracted, the result
// rounded, raised to Min, lowered to Max, and capped again at the CPU count.
// The zero Policy is fitgo's default: Ceil, minimum 1, no maximum, no reserve.
type Policy struct {
	// Rounding is the rounding rule; the zero value is the default.
	Rounding Rounding
	// Min is the smallest value to set; 0 means 1.
	Min int
	// Max is the largest value to set; 0 means no maximum.
	Max int
	// Reserve is a number of cores, fractions allowed, subtracted from the
	// limit before rounding: room for sidecars or agents that share the
	// process's CPU limit.
	Reserve float64
}

// Procs returns GOMAXPROCS for a CPU limit of quota cores (quota/period)
// when the process may run on ncpu CPUs (runtime.NumCPU). It is a pure
// function: it reads nothing and sets nothing. It assumes a valid Policy
// (Apply checks it); a non-positive ncpu counts as 1.
func (p Policy) Procs(quota float64, ncpu int) int {
	ncpu = max(ncpu, 1)
	q := min(quota, float64(ncpu)) - p.Reserve
	if !(q > 0) { // also NaN
		q = 0
	}
	n := max(p.Rounding.round(q), p.minimum())
	if p.Max > 0 {
		n = min(n, p.Max)
	}
	return min(n, ncpu)
}

func (p Policy) minimum() int { return max(p.Min, 1) }

// resolved returns p with its defaults filled in.
func (p Policy) resolved() Policy {
	p.Rounding, p.Min = p.Rounding.rule(), p.minimum()
	return p
}

// validate reports whether the Policy can be applied.
func (p Policy) validate() error {
	var errs []error
	if p.Rounding > Nearest {
		errs = append(errs, fmt.Errorf("unknown rounding %d", p.Rounding))
	}
	if p.Min < 0 {
		errs = append(errs, fmt.Errorf("negative minimum %d", p.Min))
	}
	if p.Max < 0 {
		errs = append(errs, fmt.Errorf("negative maximum %d", p.Max))
	}
	if p.Max > 0 && p.minimum() > p.Max {
		errs = append(errs, fmt.Errorf("minimum %d above maximum %d", p.minimum(), p.Max))
	}
	if !(p.Reserve >= 0) || math.IsInf(p.Reserve, 0) {
		errs = append(errs, fmt.Errorf("reserve %v cores: want a finite number >= 0", p.Reserve))
	}
	if len(errs) > 0 {
		return fmt.Errorf("maxprocs: invalid policy: %w", errors.Join(errs...))
	}
	return nil
}

// String describes the policy, as Status and log lines show it, e.g.
// "ceil, min 2, max 8, reserve 0.5 cores"; the zero Rounding is named by its rule.
func (p Policy) String() string {
	s := "Rounding(" + strconv.Itoa(int(p.Rounding)) + ")"
	if n := p.Rounding.rule(); n >= Floor && n <= Nearest {
		s = [...]string{"floor", "ceil", "nearest"}[n-1]
	}
	s += ", min " + strconv.Itoa(p.minimum())
	if p.Max > 0 {
		s += ", max " + strconv.Itoa(p.Max)
	}
	if p.Reserve != 0 {
		s += ", reserve " + strconv.FormatFloat(p.Reserve, 'f', -1, 64) + " cores"
	}
	return s
}
