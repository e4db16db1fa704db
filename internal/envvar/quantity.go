package envvar

import (
	"math"
	"math/bits"
	"strings"
)

// Quantity parses s as a Kubernetes resource quantity: digits with an
// optional decimal fraction, then an optional suffix, binary (Ki Mi Gi Ti Pi
// Ei), decimal (k M G T P E) or milli (m). It returns the value in units of
// 1/per (1 for bytes, 1000 for millicores), rounded up as the downward API
// rounds a value to its divisor; ok is false for anything else (a sign, an
// exponent such as 1e9, white space), for more than 19 significant digits
// and for a value beyond int64.
func Quantity(s string, per uint64) (n int64, ok bool) {
	num := strings.TrimRight(s, "EGKMPTikm")
	mul, div := uint64(1), uint64(1)
	switch suffix := s[len(num):]; {
	case suffix == "":
	case suffix == "m":
		div = 1000
	case len(suffix) == 1 && suffix != "K" && suffix != "i":
		mul = uint64(math.Pow10(3 * (1 + strings.Index("kMGTPE", suffix))))
	case len(suffix) == 2 && suffix[1] == 'i' && strings.Contains("KMGTPE", suffix[:1]):
		mul = 1 << (10 * (1 + strings.Index("KMGTPE", suffix[:1])))
	default:
		return 0, false
	}
	whole, frac, _ := strings.Cut(num, ".")
	sig := strings.TrimRight(frac, "0") // then up to 19 digits: 10^19 fits uint64, and math.Pow10 is exact there
	digits := strings.TrimLeft(whole, "0") + sig
	if whole+frac == "" || len(digits) > 19 {
		return 0, false
	}
	var m uint64
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		m = 10*m + uint64(c-'0')
	}
	hi, mp := bits.Mul64(mul, per)
	hd, den := bits.Mul64(uint64(math.Pow10(len(sig))), div)
	if hi != 0 || hd != 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(m, mp)
	if hi >= den {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, den)
	if up := min(r, 1); q <= math.MaxInt64-up {
		return int64(q + up), true
	}
	return 0, false
}
