package maxprocs

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/cgroup"
)

func TestDetectRuntime(t *testing.T) {
	const goLine124 = "containermaxprocs=0,cryptocustomrand=1,updatemaxprocs=0,x509sha256skid=0"
	for _, tc := range []struct {
		name              string
		support           bool
		def, env          string
		aware, updates    bool
		whyHas, whyHasNot string
	}{
		{"go 1.24 toolchain", false, "", "", false, false, "no container support", "containermaxprocs"},
		{"go 1.24 toolchain ignores GODEBUG", false, "", "containermaxprocs=1,updatemaxprocs=1", false, false, "no container support", ""},
		{"go line 1.25+", true, "", "", true, true, "containermaxprocs=1, updatemaxprocs=1 (runtime default)", ""},
		{"go line 1.24", true, goLine124, "", false, false, "containermaxprocs=0, updatemaxprocs=0 (DefaultGODEBUG: the main module's go line is 1.24 or older", ""},
		{"go line 1.24, GODEBUG turns both on", true, goLine124, "containermaxprocs=1,updatemaxprocs=1", true, true, "containermaxprocs=1, updatemaxprocs=1 (GODEBUG environment variable)", ""},
		{"GODEBUG turns updates off", true, "", "updatemaxprocs=0", true, false, "containermaxprocs=1 (runtime default), updatemaxprocs=0 (GODEBUG", ""},
		{"GODEBUG turns container off", true, "", "containermaxprocs=0", false, true, "containermaxprocs=0 (GODEBUG", ""},
		{"//go:debug on in an old module", true, "containermaxprocs=1,updatemaxprocs=1", "", true, true, "(DefaultGODEBUG", ""},
		{"invalid GODEBUG value is ignored", true, goLine124, "containermaxprocs=on", false, false, "containermaxprocs=0, updatemaxprocs=0 (DefaultGODEBUG", ""},
		{"negative containermaxprocs is off, negative updatemaxprocs on", true, "", "containermaxprocs=-1,updatemaxprocs=-1", false, true, "", ""},
		{"last GODEBUG field wins", true, "", "updatemaxprocs=0,updatemaxprocs=1", true, true, "updatemaxprocs=1 (GODEBUG", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := detectRuntime("go1.99", tc.support, tc.def, tc.env)
			assert.Contains(t, r.why, "go1.99")
			assert.Equal(t, tc.aware, r.aware, "aware")
			assert.Equal(t, tc.updates, r.updates, "updates")
			assert.Contains(t, r.why, tc.whyHas)
			if tc.whyHasNot != "" {
				assert.NotContains(t, r.why, tc.whyHasNot)
			}
		})
	}
}

// TestSystemRuntime checks the detection on this test binary: its main
// module's go line is 1.23, so the runtime's container support is off
// whatever the toolchain, unless GODEBUG says otherwise.
func TestSystemRuntime(t *testing.T) {
	r := systemRuntime()
	assert.Contains(t, r.why, runtime.Version())
	if runtimeContainerSupport && buildGODEBUG() != "" {
		assert.Contains(t, buildGODEBUG(), "containermaxprocs=0")
	}
	t.Logf("%+v", r)
}

func TestRuntimeDefault(t *testing.T) {
	leaf := func(quota, period int64, source string) cgroup.Limits {
		var l cgroup.Limits
		l.CPU.Dir = "/sys/fs/cgroup/app"
		if source != "" {
			l.CPU.Quota, l.CPU.Period, l.CPU.Source = durUS(quota), durUS(period), source
		}
		return l
	}
	aware := goRuntime{aware: true, updates: true}
	for _, tc := range []struct {
		name string
		rt   goRuntime
		lim  cgroup.Limits
		ncpu int
		want int
	}{
		{"not aware", goRuntime{}, leaf(50000, 100000, "/sys/fs/cgroup/app"), 8, 8},
		{"no limit", aware, leaf(0, 0, ""), 8, 8},
		{"leaf 0.5", aware, leaf(50000, 100000, "/sys/fs/cgroup/app"), 8, 2},
		{"leaf 2.5", aware, leaf(250000, 100000, "/sys/fs/cgroup/app"), 8, 3},
		{"leaf 16", aware, leaf(1600000, 100000, "/sys/fs/cgroup/app"), 8, 8},
		{"leaf 0.5 on one CPU", aware, leaf(50000, 100000, "/sys/fs/cgroup/app"), 1, 1},
		{"parent imposes: unknown", aware, leaf(50000, 100000, "/sys/fs/cgroup"), 8, -1},
		// The runtime's ceil is exact: a microsecond over 2 cores in a 1s
		// period (the largest) gives 3, where fitgo's Ceil, whose epsilon
		// is a millionth of a core, gives 2.
		{"leaf 2.000001", aware, leaf(2000001, 1000000, "/sys/fs/cgroup/app"), 8, 3},
		{"leaf 1.000001: the minimum", aware, leaf(1000001, 1000000, "/sys/fs/cgroup/app"), 8, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.rt.runtimeDefault(tc.lim, tc.ncpu))
		})
	}
}

func TestParseAffinity(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int
		ok bool
	}{
		{"Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n", 2, true},
		{"Cpus_allowed_list:\t0\n", 1, true},
		{"Cpus_allowed_list:\t0-3,8,10-11\n", 7, true},
		{"Cpus_allowed_list:\t3-1\n", 0, false},
		{"Cpus_allowed_list:\t\n", 0, false},
		{"Cpus_allowed_list:\tx\n", 0, false},
		{"Name:\tx\n", 0, false},
	} {
		n, ok := parseAffinity([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.n, n, tc.in)
	}
	assert.Positive(t, (&statusFile{name: "/proc/self/status"}).affinity(), "this process")
}

func FuzzParseAffinity(f *testing.F) {
	f.Add([]byte("Cpus_allowed_list:\t0-3,8\n"))
	f.Add([]byte("Cpus_allowed_list:\t65535\n"))
	f.Add([]byte("Name:\tx\nCpus_allowed_list:\t0-1,,3\n"))
	f.Add([]byte("Cpus_allowed_list:\t65536\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, ok := parseAffinity(data)
		if wn, wok := affinityOracle(data); ok != (n > 0) || n != wn || ok != wok {
			t.Fatalf("parseAffinity(%q) = %d, %v; oracle %d, %v", data, n, ok, wn, wok)
		}
	})
}

// affinityOracle is parseAffinity as it was with strconv, before it was
// made allocation-free.
func affinityOracle(status []byte) (int, bool) {
	const key = "\nCpus_allowed_list:"
	i := bytes.Index(append([]byte{'\n'}, status...), []byte(key))
	if i < 0 {
		return 0, false
	}
	list, _, _ := bytes.Cut(status[i+len(key)-1:], []byte{'\n'})
	n := 0
	for _, r := range bytes.Split(bytes.TrimSpace(list), []byte{','}) {
		lo, hi, isRange := bytes.Cut(r, []byte{'-'})
		a, err1 := strconv.ParseUint(string(lo), 10, 16)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(string(hi), 10, 16)
		}
		if err1 != nil || err2 != nil || b < a {
			return 0, false
		}
		n += int(b-a) + 1
	}
	return n, n > 0
}
