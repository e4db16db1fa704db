package envvar

import "math"

// legacyAtoi is the integer syntax of the Go runtime up to Go 1.25 (atoi64,
// atoi32 and their successors in internal/runtime/strconv): the empty string
// is invalid; an optional leading '-'; then only decimal digits (none at all
// after the '-' reads as zero); the value must fit in bits.
//
// It is compiled into every build so that both rules are tested whatever the
// toolchain; runtimeAtoi picks the one the running runtime uses.
func legacyAtoi(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	var un uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if un > math.MaxUint64/10 {
			return 0, false
		}
		un *= 10
		next := un + uint64(c-'0')
		if next < un {
			return 0, false
		}
		un = next
	}
	limit := uint64(1) << (bits - 1) // magnitude of the most negative value
	if !neg && un >= limit || neg && un > limit {
		return 0, false
	}
	if neg {
		return -int64(un), true // un == limit wraps to the minimum, as intended
	}
	return int64(un), true
}
