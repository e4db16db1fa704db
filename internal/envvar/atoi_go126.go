//go:build go1.26

package envvar

import "strconv"

// runtimeAtoi parses an integer as this toolchain's runtime does: from Go
// 1.26 with strconv.ParseInt.
func runtimeAtoi(s string, bits int) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, bits)
	return n, err == nil
}
