//go:build !go1.26

package envvar

// runtimeAtoi parses s as the runtime of this toolchain parses the integers in
// GOMAXPROCS, GOMEMLIMIT and GODEBUG: up to Go 1.25 with its own atoi, which
// takes an optional '-' (no '+'), then decimal digits, and rejects values out
// of range for bits. Like the runtime's, it accepts a lone "-" as zero.
func runtimeAtoi(s string, bits int) (int64, bool) {
	return legacyAtoi(s, bits)
}
