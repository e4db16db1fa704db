package maxprocs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rounding is how a fractional CPU limit becomes a whole GOMAXPROCS.
type Rounding uint8

const (
	// Floor rounds down, with a minimum of 1: a limit of 1.5 CPUs gives 1,
	// 0.5 gives 1, 2.7 gives 2. This is fitgo's default and automaxprocs'.
	// With fewer Ps than the quota, the Go scheduler cannot burn the quota
	// faster than it is refilled, so the process is throttled less: on a
	// 2-core machine with a 1-CPU quota, GOMAXPROCS 1 halves the p99 latency
	// of a GC-heavy service compared with 2 (see the README).
	Floor Rounding = iota
	// Ceil rounds up, with a minimum of 2: 1.5 gives 2, 0.5 gives 2, 2.7
	// gives 3. This is the rule of the Go runtime's own container support
	// (Go 1.25 and later), which favours using every fraction of the quota
	// over throttling.
	Ceil
)

// String returns "floor" or "ceil".
func (r Rounding) String() string {
	switch r {
	case Floor:
		return "floor"
	case Ceil:
		return "ceil"
	}
	return "Rounding(" + strconv.Itoa(int(r)) + ")"
}

// minimum is the rounding's own minimum.
func (r Rounding) minimum() int {
	if r == Ceil {
		return 2
	}
	return 1
}

// epsilon absorbs floating-point error in quota arithmetic (2.3-0.3 is
// 1.9999999999999998): a millionth of a core, far below the millicore
// granularity of Kubernetes CPU limits.
const epsilon = 1e-6

// Policy turns a CPU limit into a GOMAXPROCS value. The zero Policy is
// fitgo's default: Floor, minimum 1, no maximum, no reserve.
//
// The value is computed as follows: the limit is capped at the number of CPUs
// the process may run on (its affinity), the Reserve is subtracted, the result
// is rounded, raised to the minimum, lowered to Max, and finally capped again
// at the CPU count, so that GOMAXPROCS never exceeds the CPUs the process can
// use.
type Policy struct {
	// Rounding is Floor (the default) or Ceil.
	Rounding Rounding
	// Min is the smallest value to set; 0 means the rounding's own minimum,
	// 1 for Floor and 2 for Ceil.
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
// (see Validate); a non-positive ncpu counts as 1.
func (p Policy) Procs(quota float64, ncpu int) int {
	ncpu = max(ncpu, 1)
	q := min(quota, float64(ncpu)) - p.Reserve
	if !(q > 0) { // also NaN
		q = 0
	}
	var n int
	if p.Rounding == Ceil {
		n = int(math.Ceil(q - epsilon))
	} else {
		n = int(math.Floor(q + epsilon))
	}
	n = max(n, p.minimum())
	if p.Max > 0 {
		n = min(n, p.Max)
	}
	return min(n, ncpu)
}

// minimum is Min, or the rounding's own minimum when Min is 0.
func (p Policy) minimum() int {
	if p.Min > 0 {
		return p.Min
	}
	return p.Rounding.minimum()
}

// resolved returns p with Min set to the minimum it stands for.
func (p Policy) resolved() Policy {
	p.Min = p.minimum()
	return p
}

// Validate reports whether the Policy can be applied.
func (p Policy) Validate() error {
	var errs []error
	if p.Rounding != Floor && p.Rounding != Ceil {
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

// String describes the policy, e.g. "floor, min 1" or
// "ceil, min 2, max 8, reserve 0.5 cores".
func (p Policy) String() string {
	var b strings.Builder
	b.WriteString(p.Rounding.String())
	b.WriteString(", min ")
	b.WriteString(strconv.Itoa(p.minimum()))
	if p.Max > 0 {
		b.WriteString(", max ")
		b.WriteString(strconv.Itoa(p.Max))
	}
	if p.Reserve != 0 {
		b.WriteString(", reserve ")
		b.WriteString(strconv.FormatFloat(p.Reserve, 'f', -1, 64))
		b.WriteString(" cores")
	}
	return b.String()
}
