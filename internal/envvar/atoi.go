package envvar

import "strconv"

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
