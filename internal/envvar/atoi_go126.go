//go:build go1.26

package envvar

import "strconv"

// runtimeAtoi parses s as the runtime of this toolchain parses the integers in
// GOMAXPROCS, GOMEMLIMIT and GODEBUG: from Go 1.26 with
// strconv.ParseInt(s, 10, bits), so an optional '+' or '-' sign followed by at
// least one decimal digit, in range for bits.
func runtimeAtoi(s string, bits int) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, bits)
	return n, err == nil
}
