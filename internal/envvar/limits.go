package envvar

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// The environment variables of explicit limits, which the Kubernetes
// downward API can fill from a container's resources.
const (
	CPULimitVar    = "FITGO_CPU_LIMIT"    // see CPULimit
	MemoryLimitVar = "FITGO_MEMORY_LIMIT" // see MemoryLimit
)

// CPULimit parses the value of FITGO_CPU_LIMIT into millicores: cores with
// a decimal point (1.5, 0.5, 2.0) or millicores with an m (1500m), white
// space around it ignored; "" is none (0). A bare integer is millicores, as
// the downward API writes limits.cpu with divisor 1m (1500), and must be at
// least 1000: a smaller one may be whole cores, as the default divisor 1
// writes them, so it is an error. So are 0, any other unit and anything a
// Quantity is not.
func CPULimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	num, milli := strings.CutSuffix(t, "m")
	bare := !milli && !strings.Contains(t, ".")
	if bare {
		t += "m"
	}
	n, ok := Quantity(t, 1000)
	switch {
	case ok && bare && n > 0 && n < 1000:
		return 0, fmt.Errorf("%s: %q: a bare integer is millicores, and below 1000 it may be whole cores: write %dm for millicores or %d.0 for cores", CPULimitVar, Short(s), n, n)
	case ok && n > 0 && strings.Trim(num, "0123456789.") == "":
		return n, nil
	}
	return 0, fmt.Errorf("%s: %q: want a positive number of cores (1.5) or millicores (1500m, or 1500 as the downward API writes limits.cpu with divisor 1m)", CPULimitVar, Short(s))
}

// MemoryLimit parses the value of FITGO_MEMORY_LIMIT: a Quantity of bytes
// (536870912, 512Mi, 1G), as the downward API writes limits.memory with
// divisor "1" (the default), white space around it ignored; "" is none (0).
// Below 1 MiB, 0 included, is an error: no such memory limit exists (the
// downward API writes a container without one the node's allocatable
// memory), and a divisor other than "1" writes another unit (512 for 1Mi).
func MemoryLimit(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if v, ok := Quantity(t, 1); ok && v >= 1<<20 {
		return v, nil
	}
	return 0, fmt.Errorf("%s: %q: want bytes, at least 1Mi, such as 536870912 or 512Mi", MemoryLimitVar, Short(s))
}

// Short is s cut to 40 bytes, as the errors quote it: a malformed value
// cannot make a huge log line.
func Short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Quantity parses s as a Kubernetes resource quantity: digits with an
// optional decimal fraction, then an optional suffix, binary (Ki Mi Gi Ti Pi
// Ei), decimal (k M G T P E) or milli (m). It returns the value in units of
// 1/per (1 for bytes, 1000 for millicores), rounded up as the downward API
// rounds a value to its divisor; ok is false for anything else (a sign, an
// exponent such as 1e9, white space), for more than 19 significant digits
// and for a value beyond int64.
func Quantity(s string, per uint64) (n int64, ok bool) {
	num := strings.TrimRight(s, "EGKMPTikm")
	mul, div := uint64(1), uint64(1)
	switch suffix := s[len(num):]; {
	case suffix == "":
	case suffix == "m":
		div = 1000
	case len(suffix) == 1 && suffix != "K" && suffix != "i":
		mul = uint64(math.Pow10(3 * (1 + strings.Index("kMGTPE", suffix))))
	case len(suffix) == 2 && suffix[1] == 'i' && strings.Contains("KMGTPE", suffix[:1]):
		mul = 1 << (10 * (1 + strings.Index("KMGTPE", suffix[:1])))
	default:
		return 0, false
	}
	whole, frac, _ := strings.Cut(num, ".")
	sig := strings.TrimRight(frac, "0") // then up to 19 digits: 10^19 fits uint64, and math.Pow10 is exact there
	digits := strings.TrimLeft(whole, "0") + sig
	m, err := strconv.ParseUint(cmp.Or(digits, "0"), 10, 64) // digits alone: no sign, no underscore in base 10
	if whole+frac == "" || len(digits) > 19 || err != nil {
		return 0, false
	}
	hi, mp := bits.Mul64(mul, per)
	hd, den := bits.Mul64(uint64(math.Pow10(len(sig))), div)
	if hi != 0 || hd != 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(m, mp)
	if hi >= den {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, den)
	if up := min(r, 1); q <= math.MaxInt64-up {
		return int64(q + up), true
	}
	return 0, false
}
