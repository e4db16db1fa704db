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

// Runtime is what the Go runtime itself does about GOMAXPROCS in this
// process, which fitgo works with rather than against.
//
// From Go 1.25, the runtime sets GOMAXPROCS at start-up from the CPU limit of
// the process's own (leaf) cgroup, rounded up with a minimum of 2, and
// re-reads it about once a second, until the program calls
// runtime.GOMAXPROCS. Both behaviours are GODEBUG settings
// (containermaxprocs, updatemaxprocs) that default to off when the main
// module's go line is 1.24 or older, so they depend on the program, not only
// on the toolchain.
type Runtime struct {
	// Version is runtime.Version().
	Version string
	// ContainerAware is true when the runtime derives its default GOMAXPROCS
	// from the cgroup CPU limit (Go 1.25 or later and containermaxprocs=1).
	ContainerAware bool
	// Updates is true when the runtime changes GOMAXPROCS by itself as the
	// limit or the CPU affinity changes (Go 1.25 or later and
	// updatemaxprocs=1), until runtime.GOMAXPROCS is called.
	Updates bool
	// Why says where these came from, e.g. "Go 1.24: no container support"
	// or "containermaxprocs=0 (DefaultGODEBUG: the main module's go line is
	// 1.24 or older, or a //go:debug directive), updatemaxprocs=0 (GODEBUG)".
	Why string
}

// buildGODEBUG is the DefaultGODEBUG setting of the running binary: the
// GODEBUG defaults that the main module's go line and //go:debug directives
// chose, which the linker also gave the runtime.
func buildGODEBUG() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "DefaultGODEBUG" {
			return s.Value
		}
	}
	return ""
}

// systemRuntime is detectRuntime for this process, computed once (GODEBUG is
// read by the runtime at start-up only, so later changes to the environment
// do not matter).
var systemRuntime = sync.OnceValue(func() Runtime {
	return detectRuntime(runtime.Version(), runtimeContainerSupport, buildGODEBUG(), os.Getenv("GODEBUG"))
})

// detectRuntime works out the runtime's GOMAXPROCS behaviour from the
// toolchain's support (Go 1.25 or later), the binary's DefaultGODEBUG and the
// GODEBUG environment variable, with the runtime's own parsing rules.
func detectRuntime(version string, support bool, defaultGODEBUG, godebug string) Runtime {
	r := Runtime{Version: version}
	if !support {
		r.Why = version + ": no container support in the runtime (Go 1.25 and later have it)"
		return r
	}
	c, cfrom := envvar.GODEBUG("containermaxprocs", 1, defaultGODEBUG, godebug)
	u, ufrom := envvar.GODEBUG("updatemaxprocs", 1, defaultGODEBUG, godebug)
	// The runtime tests containermaxprocs > 0 and updatemaxprocs != 0.
	r.ContainerAware = c > 0
	r.Updates = u != 0
	origin := func(from int) string {
		switch from {
		case 0:
			return "DefaultGODEBUG: the main module's go line is 1.24 or older, or a //go:debug directive"
		case 1:
			return "GODEBUG environment variable"
		}
		return "runtime default"
	}
	r.Why = "containermaxprocs=" + strconv.Itoa(int(c))
	if cfrom != ufrom {
		r.Why += " (" + origin(cfrom) + ")"
	}
	r.Why += ", updatemaxprocs=" + strconv.Itoa(int(u)) + " (" + origin(ufrom) + ")"
	return r
}

// runtimeDefault predicts the GOMAXPROCS the runtime would choose by itself
// for these limits, or returns -1 when it cannot tell: the runtime reads the
// leaf cgroup only, so when a parent imposes the effective limit, the leaf's
// own (looser or absent) limit is unknown here.
func (r Runtime) runtimeDefault(lim cgroup.Limits, ncpu int) int {
	if !r.ContainerAware {
		return ncpu
	}
	q, ok := lim.CPUQuota()
	if !ok {
		return ncpu
	}
	if lim.CPU.Source != lim.CPU.Dir {
		return -1
	}
	return min(ncpu, max(2, int(math.Ceil(q))))
}

// affinity returns the number of CPUs the process may run on now: on Linux
// from Cpus_allowed_list in /proc/self/status, which follows taskset and
// cpuset changes (runtime.NumCPU is the count at start-up, its fallback).
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
