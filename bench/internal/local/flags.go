package local

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseCPUs parses a comma-separated list of CPU quotas in cores, e.g.
// "0.5,1,1.5", or millicores ("500m"); "none" is no quota (a baseline).
func parseCPUs(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "none" {
			out = append(out, 0)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(f, "m"), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bad CPU quota %q", f)
		}
		if strings.HasSuffix(f, "m") { // Kubernetes millicores
			v /= 1000
		}
		if v < 0.01 {
			return nil, fmt.Errorf("CPU quota %q is below the kernel's minimum of 0.01 CPU (1ms per 100ms period)", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CPU quota in %q", s)
	}
	return out, nil
}

// parseBytes parses a size as Kubernetes quantities are written: a plain byte
// count, or a number with a suffix Ki, Mi, Gi, Ti (powers of 1024, optionally
// followed by B) or k, K, M, G, T (powers of 1000).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	num := s
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
	if err != nil || !(v > 0) || math.IsInf(v, 0) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("bad size %q (want e.g. 256Mi, 1Gi or a byte count)", s)
	}
	return int64(v * mult), nil
}

// parseSizes parses a comma-separated list of sizes.
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := parseBytes(f)
		if err != nil {
			return nil, err
		}
		if v < 32<<20 {
			return nil, fmt.Errorf("memory limit %q is too small for the workload (at least 32Mi)", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no memory limit in %q", s)
	}
	return out, nil
}
