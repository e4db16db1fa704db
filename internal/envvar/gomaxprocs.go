package envvar

// GOMAXPROCS parses GOMAXPROCS as the runtime does at start-up; ok only when
// the runtime honours it (an int32 > 0; it ignores every other value).
func GOMAXPROCS(s string) (n int, ok bool) {
	if v, valid := runtimeAtoi(s, 32); valid && v > 0 {
		return int(v), true
	}
	return 0, false
}
