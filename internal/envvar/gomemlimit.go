package envvar

import "math"

// MemLimit is the meaning of a GOMEMLIMIT value.
type MemLimit int

const (
	// MemLimitUnset: the variable is empty or absent; the runtime starts with
	// no memory limit.
	MemLimitUnset MemLimit = iota
	// MemLimitOff: "off"; the user asked for no memory limit.
	MemLimitOff
	// MemLimitBytes: a valid byte count; the runtime starts with that limit.
	MemLimitBytes
	// MemLimitInvalid: anything else. The runtime refuses to start with such a
	// value, so a program only sees one that was set after start-up.
	MemLimitInvalid
)

// GOMEMLIMIT parses the value of the GOMEMLIMIT environment variable as the
// runtime does at start-up (readGOMEMLIMIT and parseByteCount). n is the limit
// in bytes for MemLimitBytes, math.MaxInt64 for MemLimitUnset and MemLimitOff,
// and zero for MemLimitInvalid. The user has set the limit exactly when the
// kind is MemLimitOff or MemLimitBytes.
func GOMEMLIMIT(s string) (n int64, kind MemLimit) {
	switch s {
	case "":
		return math.MaxInt64, MemLimitUnset
	case "off":
		return math.MaxInt64, MemLimitOff
	}
	n, ok := ByteCount(s)
	if !ok {
		return 0, MemLimitInvalid
	}
	return n, MemLimitBytes
}

// ByteCount parses a non-negative byte count with an optional unit suffix,
// the syntax of GOMEMLIMIT: digits, optionally followed by "B", "KiB", "MiB",
// "GiB" or "TiB"; the value must fit in an int64.
func ByteCount(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	last := s[len(s)-1]
	if '0' <= last && last <= '9' {
		return nonNegative(s)
	}
	if last != 'B' || len(s) < 2 {
		return 0, false
	}
	c := s[len(s)-2]
	if '0' <= c && c <= '9' {
		return nonNegative(s[:len(s)-1])
	}
	if c != 'i' || len(s) < 4 {
		return 0, false
	}
	var shift uint
	switch s[len(s)-3] {
	case 'K':
		shift = 10
	case 'M':
		shift = 20
	case 'G':
		shift = 30
	case 'T':
		shift = 40
	default:
		return 0, false
	}
	n, ok := nonNegative(s[:len(s)-3])
	if !ok || n > math.MaxInt64>>shift {
		return 0, false
	}
	return n << shift, true
}

func nonNegative(s string) (int64, bool) {
	n, ok := runtimeAtoi(s, 64)
	if !ok || n < 0 {
		return 0, false
	}
	return n, true
}
