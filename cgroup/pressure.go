package cgroup

import (
	"bytes"
	"slices"
	"strconv"
	"time"
)

// parsePressure parses a pressure file, lines "some|full avg10=A avg60=A
// avg300=A total=T", the averages in percent (two decimals), T in µs.
// Unknown lines and keys are ignored; a malformed field is an error.
func parsePressure(data []byte) (Pressure, error) {
	var p Pressure
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		kind, rest := nextField(line)
		l := &p.Some
		switch string(kind) {
		case "some":
			p.HasSome = true
		case "full":
			l, p.HasFull = &p.Full, true
		default:
			continue
		}
		for len(rest) > 0 {
			var f []byte
			f, rest = nextField(rest)
			k, v, ok := bytes.Cut(f, []byte{'='})
			if !ok {
				return Pressure{}, invalid(n, "pressure field", f)
			}
			if i := slices.Index([]string{"avg10", "avg60", "avg300"}, string(k)); i >= 0 {
				if *[3]*float64{&l.Avg10, &l.Avg60, &l.Avg300}[i], ok = parseDecimal(v); !ok {
					return Pressure{}, invalid(n, "pressure average", f)
				}
			} else if string(k) == "total" {
				u, ok := parseUint(v)
				if !ok || u > maxMicros {
					return Pressure{}, invalid(n, "pressure total", f)
				}
				l.Total = time.Duration(u) * time.Microsecond
			}
		}
	}
	return p, nil
}

// parseDecimal parses digits with an optional fraction ("12.34"), as the
// kernel prints the pressure averages, of at most 15 digits.
func parseDecimal(b []byte) (float64, bool) {
	ip, fp, dot := bytes.Cut(b, []byte{'.'})
	_, ok1 := parseUint(ip)
	_, ok2 := parseUint(fp)
	if !ok1 || dot && !ok2 || len(ip)+len(fp) > 15 {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}
