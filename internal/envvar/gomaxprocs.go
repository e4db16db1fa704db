package envvar

// GOMAXPROCS parses the value of the GOMAXPROCS environment variable as the
// runtime does at start-up. ok is true only when the runtime honours it: an
// integer that fits in 32 bits and is greater than zero. The runtime ignores
// every other value (empty, "0", "-1", "2.5", "four"), so fitgo does too.
func GOMAXPROCS(s string) (n int, ok bool) {
	v, valid := runtimeAtoi(s, 32)
	if !valid || v <= 0 {
		return 0, false
	}
	return int(v), true
}
