package maxprocs

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
)

// goRuntime is what the Go runtime itself does about GOMAXPROCS in this
// process. From Go 1.25 it sets GOMAXPROCS from the CPU limit of the leaf
// cgroup (ceil, minimum 2) and re-reads it about once a second until the
// program calls runtime.GOMAXPROCS; the GODEBUG settings containermaxprocs
// and updatemaxprocs, which default to off when the main module's go line is
// 1.24 or older, switch each off.
type goRuntime struct {
	aware   bool // the default GOMAXPROCS follows the cgroup CPU limit
	updates bool // the runtime changes GOMAXPROCS by itself
	why     string
}

// systemRuntime is detectRuntime for this process (the runtime reads GODEBUG
// at start-up only).
var systemRuntime = sync.OnceValue(func() goRuntime {
	return detectRuntime(runtime.Version(), runtimeContainerSupport, buildGODEBUG(), os.Getenv("GODEBUG"))
})

// buildGODEBUG is the binary's DefaultGODEBUG: the defaults its main
// module's go line and //go:debug directives chose.
func buildGODEBUG() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "DefaultGODEBUG" {
				return s.Value
			}
		}
	}
	return ""
}

// detectRuntime works out the runtime's GOMAXPROCS behaviour from the
// toolchain's support, the binary's DefaultGODEBUG and the GODEBUG
// environment variable, with the runtime's own parsing rules.
func detectRuntime(version string, support bool, defaultGODEBUG, godebug string) goRuntime {
	if !support {
		return goRuntime{why: version + ": no container support in the runtime (Go 1.25 and later have it)"}
	}
	c, cfrom := envvar.GODEBUG("containermaxprocs", 1, defaultGODEBUG, godebug)
	u, ufrom := envvar.GODEBUG("updatemaxprocs", 1, defaultGODEBUG, godebug)
	origin := [...]string{"runtime default",
		"DefaultGODEBUG: the main module's go line is 1.24 or older, or a //go:debug directive",
		"GODEBUG environment variable"}
	// The runtime tests containermaxprocs > 0 and updatemaxprocs != 0.
	r := goRuntime{aware: c > 0, updates: u != 0, why: version + ": containermaxprocs=" + strconv.Itoa(int(c))}
	if cfrom != ufrom {
		r.why += " (" + origin[cfrom+1] + ")"
	}
	r.why += ", updatemaxprocs=" + strconv.Itoa(int(u)) + " (" + origin[ufrom+1] + ")"
	return r
}

// runtimeDefault predicts the GOMAXPROCS the runtime would choose by itself
// for these limits, or -1 when it cannot tell: it reads the leaf cgroup
// only, so when a parent imposes the limit, the leaf's own is unknown here.
func (r goRuntime) runtimeDefault(lim cgroup.Limits, ncpu int) int {
	q, ok := lim.CPUQuota()
	switch {
	case !r.aware || !ok:
		return ncpu
	case lim.CPU.Source != lim.CPU.Dir:
		return -1
	}
	return min(ncpu, max(2, int(math.Ceil(q))))
}

// affinity returns the number of CPUs the process may run on now, from
// Cpus_allowed_list in /proc/self/status, which follows taskset and cpuset
// changes (runtime.NumCPU, the count at start-up, is the fallback).
func affinity() int {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		if n, ok := parseAffinity(data); ok {
			return n
		}
	}
	return runtime.NumCPU()
}

// parseAffinity counts the CPUs of the Cpus_allowed_list line of
// /proc/self/status, such as "Cpus_allowed_list:\t0-3,8,10-11".
func parseAffinity(status []byte) (int, bool) {
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
