package envvar

import (
	"math"
	"strings"
)

// MemLimit is the meaning of a GOMEMLIMIT value.
type MemLimit int

// The meanings of GOMEMLIMIT values. The runtime refuses to start with an
// invalid one, so a program only sees one set after start-up.
const (
	MemLimitUnset   MemLimit = iota // empty or absent: no limit
	MemLimitOff                     // "off": the user asked for no limit
	MemLimitBytes                   // a byte count: that limit
	MemLimitInvalid                 // anything else
)

// GOMEMLIMIT parses GOMEMLIMIT as the runtime does at start-up: n is the
// limit for MemLimitBytes, math.MaxInt64 for MemLimitUnset and MemLimitOff,
// else 0. The user set the limit when the kind is MemLimitOff or
// MemLimitBytes.
func GOMEMLIMIT(s string) (n int64, kind MemLimit) {
	switch s {
	case "":
		return math.MaxInt64, MemLimitUnset
	case "off":
		return math.MaxInt64, MemLimitOff
	}
	if n, ok := byteCount(s); ok {
		return n, MemLimitBytes
	}
	return 0, MemLimitInvalid
}

// byteCount parses digits with an optional suffix B, KiB, MiB, GiB or TiB,
// fitting in an int64.
func byteCount(s string) (int64, bool) {
	shift := 0
	for i, u := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if t, ok := strings.CutSuffix(s, u); ok {
			s, shift = t, 40-10*i
			break
		}
	}
	if s == "" || s[len(s)-1] < '0' || s[len(s)-1] > '9' {
		return 0, false
	}
	n, ok := runtimeAtoi(s, 64)
	if !ok || n < 0 || n > math.MaxInt64>>shift {
		return 0, false
	}
	return n << shift, true
}
