package cgroup

import (
	"bytes"
	"strconv"
	"time"
)

// parsePressure parses a pressure file: a "some" line and, on most kernels
// and resources, a "full" line, each "avg10=A avg60=A avg300=A total=T" with
// the averages in percent (two decimals) and T in microseconds. Unknown
// lines and keys are ignored; a known key with a malformed value is an error
// on that line.
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
			var avg *float64
			switch string(k) {
			case "avg10":
				avg = &l.Avg10
			case "avg60":
				avg = &l.Avg60
			case "avg300":
				avg = &l.Avg300
			case "total":
				u, ok := parseUint(v)
				if !ok || u > maxMicros {
					return Pressure{}, invalid(n, "pressure total", f)
				}
				l.Total = time.Duration(u) * time.Microsecond
				continue
			default:
				continue
			}
			if *avg, ok = parseDecimal(v); !ok {
				return Pressure{}, invalid(n, "pressure average", f)
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
