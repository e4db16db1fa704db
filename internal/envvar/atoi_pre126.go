//go:build !go1.26

package envvar

// runtimeAtoi parses an integer as this toolchain's runtime does: up to Go
// 1.25 with its own atoi.
func runtimeAtoi(s string, bits int) (int64, bool) { return legacyAtoi(s, bits) }
