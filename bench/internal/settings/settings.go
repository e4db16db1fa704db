// Package settings parses the scenario settings the local and the kind runner
// share: lists of scenarios, CPU limits and memory limits, written as
// Kubernetes writes resources (cores or millicores, byte quantities). Each
// runner keeps its own scenarios, flags and defaults.
package settings

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// None in a CPU list is no CPU limit, where the caller allows it (ParseCPUs).
const None = "none"

// MinMemory is the least memory limit ParseSizes accepts: the workload needs
// more than that.
const MinMemory = 32 << 20

// ParseBytes parses a size as Kubernetes quantities are written: a byte
// count, or a number with a suffix Ki, Mi, Gi, Ti (powers of 1024, optionally
// followed by B) or k, K, M, G, T (powers of 1000). The size must be positive,
// fit an int64 and be a whole number of bytes: "1.5Gi" is, "1.5" is not.
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult, num := 1.0, s
	for _, u := range []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
	} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	b := v * mult
	if err != nil || !(v > 0) || b >= math.MaxInt64 || b != math.Trunc(b) {
		return 0, fmt.Errorf("bad size %q (want e.g. 256Mi, 1Gi or a whole byte count)", s)
	}
	return int64(b), nil
}

// ParseSizes parses a comma-separated list of memory limits (ParseBytes),
// each at least MinMemory. Empty elements are skipped; the list must hold at
// least one limit.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := ParseBytes(f)
		if err != nil {
			return nil, err
		}
		if v < MinMemory {
			return nil, fmt.Errorf("memory limit %q is too small for the workload (at least 32Mi)", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no memory limit in %q", s)
	}
	return out, nil
}

// ParseCPUs parses a comma-separated list of CPU limits in cores ("0.5") or
// millicores ("500m"), each valid for CheckCPU. With allowNone, None stands
// for no limit and parses as 0. Empty elements are skipped; the list must hold
// at least one limit.
func ParseCPUs(s string, allowNone bool) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if allowNone && f == None {
			out = append(out, 0)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f, "m"), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bad CPU limit %q", f)
		}
		if strings.HasSuffix(f, "m") {
			v /= 1000
		}
		if err := CheckCPU(v); err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CPU limit in %q", s)
	}
	return out, nil
}

// ParseLimits parses the runners' -cpus and -memory flags with ParseCPUs and
// ParseSizes; an empty flag gives a nil list (the scenarios' defaults). Its
// errors name the flag.
func ParseLimits(cpus, memory string, allowNone bool) ([]float64, []int64, error) {
	var (
		c   []float64
		m   []int64
		err error
	)
	if cpus != "" {
		if c, err = ParseCPUs(cpus, allowNone); err != nil {
			return nil, nil, fmt.Errorf("-cpus: %w", err)
		}
	}
	if memory != "" {
		if m, err = ParseSizes(memory); err != nil {
			return nil, nil, fmt.Errorf("-memory: %w", err)
		}
	}
	return c, m, nil
}

// CheckCPU reports whether v cores is a CPU limit both runners can set: at
// least 0.01 (10m; a CFS quota of 1ms per 100ms period is the kernel's least)
// and a whole number of millicores (Kubernetes' resolution).
func CheckCPU(v float64) error {
	if !(v >= 0.01) || math.IsInf(v, 0) {
		return errors.New("a CPU limit must be at least 0.01 (10m)")
	}
	if m := v * 1000; math.Abs(m-math.Round(m)) > 1e-6 {
		return errors.New("Kubernetes CPU limits are whole millicores")
	}
	return nil
}

// UnknownScenarioError is ParseScenarios' error for a name it does not know.
type UnknownScenarioError struct {
	Name string
	// Usage lists what the runner accepts, e.g. "cpu, nested, memory or all".
	Usage string
}

func (e *UnknownScenarioError) Error() string {
	return fmt.Sprintf("unknown scenario %q (%s)", e.Name, e.Usage)
}

// ParseScenarios parses a comma-separated list of scenario names, each one
// of known, in the order given with repeats dropped; "all" alone stands for
// all. An unknown name is an *UnknownScenarioError with usage.
func ParseScenarios(s string, known, all []string, usage string) ([]string, error) {
	if s == "all" {
		return slices.Clone(all), nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return nil, &UnknownScenarioError{Name: name, Usage: usage}
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}
