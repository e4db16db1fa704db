package cgroup

import (
	"math"
	"testing"
)

func FuzzCPUStat(f *testing.F) {
	for _, tc := range cpuStatTests {
		f.Add(tc.in)
	}
	f.Add("71333165549\n")
	f.Fuzz(func(t *testing.T, in string) {
		var s Stats
		err := parseCPUStat([]byte(in), &s)
		requireParseError(t, err)
		c := s.CPU
		if err != nil && c != (cpuStats{}) {
			t.Fatalf("%q: %+v with error %v", in, c, err)
		}
		if c.ThrottledTime < 0 || c.BurstTime < 0 || c.Usage < 0 || (!c.HasUsage && c.Usage != 0) || c.Dir != "" {
			t.Fatalf("%q: %+v", in, c)
		}
		u, err := parseCount([]byte(in), "cpuacct.usage", math.MaxInt64)
		requireParseError(t, err)
		if u < 0 || (err != nil && u != 0) {
			t.Fatalf("%q: usage %v, %v", in, u, err)
		}
	})
}

func FuzzPressure(f *testing.F) {
	for _, tc := range pressureTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := parsePressure([]byte(in))
		requireParseError(t, err)
		if err != nil && p != (Pressure{}) {
			t.Fatalf("%q: %+v with error %v", in, p, err)
		}
		for _, l := range []struct {
			has                  bool
			avg10, avg60, avg300 float64
			total                int64
		}{
			{p.HasSome, p.Some.Avg10, p.Some.Avg60, p.Some.Avg300, int64(p.Some.Total)},
			{p.HasFull, p.Full.Avg10, p.Full.Avg60, p.Full.Avg300, int64(p.Full.Total)},
		} {
			if l.avg10 < 0 || l.avg60 < 0 || l.avg300 < 0 || l.total < 0 || l.avg10 != l.avg10 {
				t.Fatalf("%q: %+v", in, p)
			}
			if !l.has && (l.avg10 != 0 || l.avg60 != 0 || l.avg300 != 0 || l.total != 0) {
				t.Fatalf("%q: values without the line: %+v", in, p)
			}
		}
	})
}

func FuzzMemoryEvents(f *testing.F) {
	for _, tc := range memoryEventsTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s Stats
		err := parseMemoryEvents([]byte(in), &s)
		requireParseError(t, err)
		if err != nil && s.Memory.Events != (memEvents{}) {
			t.Fatalf("%q: %+v with error %v", in, s.Memory.Events, err)
		}
		if s.Memory.HasEvents || s.Memory.Dir != "" {
			t.Fatalf("%q: the parser set more than the events: %+v", in, s.Memory)
		}
	})
}

func FuzzStatValue(f *testing.F) {
	for _, tc := range statValueTests {
		f.Add(tc.in, tc.key)
	}
	f.Add("52428800\n", "")
	f.Fuzz(func(t *testing.T, in, key string) {
		v, found, err := statValue([]byte(in), key, math.MaxInt64, "")
		requireParseError(t, err)
		if v > math.MaxInt64 || (!found && v != 0) || (err != nil && found) {
			t.Fatalf("%q %q: %d %v %v", in, key, v, found, err)
		}
		n, err := parseCount([]byte(in), "memory.current", math.MaxInt64)
		requireParseError(t, err)
		if n < 0 || (err != nil && n != 0) {
			t.Fatalf("%q: %d, %v", in, n, err)
		}
	})
}
