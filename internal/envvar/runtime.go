package envvar

import (
	"strconv"
	"strings"
)

// GODEBUG returns the start-up value of the integer runtime setting key as
// the runtime's parsegodebug computes it: def, then each list in order (the
// binary's DefaultGODEBUG, then the GODEBUG variable), a later key=value
// field overriding an earlier one; fields without '=' or with a value that is
// not an int32 are skipped. from is the index of the list that decided, -1
// for def.
func GODEBUG(key string, def int32, lists ...string) (v int32, from int) {
	v, from = def, -1
	for i, list := range lists {
		for _, field := range strings.Split(list, ",") {
			if k, value, ok := strings.Cut(field, "="); ok && k == key {
				if n, ok := runtimeAtoi(value, 32); ok {
					v, from = int32(n), i
				}
			}
		}
	}
	return v, from
}

// GOMAXPROCS parses GOMAXPROCS as the runtime does at start-up; ok only when
// the runtime honours it (an int32 > 0; it ignores every other value).
func GOMAXPROCS(s string) (n int, ok bool) {
	if v, valid := runtimeAtoi(s, 32); valid && v > 0 {
		return int(v), true
	}
	return 0, false
}

// legacyAtoi is the integer syntax of the Go runtime up to Go 1.25: that of
// strconv.ParseInt(s, 10, bits) without a leading '+', and a lone "-" reads
// as zero. It is compiled into every build so that both rules are tested.
func legacyAtoi(s string, bits int) (int64, bool) {
	if s == "-" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, bits)
	return n, err == nil && s[0] != '+'
}
