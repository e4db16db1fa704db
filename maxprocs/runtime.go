package maxprocs

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/envvar"
)

// goRuntime is what the Go runtime itself does about GOMAXPROCS in this
// process from Go 1.25, as the package doc says; the GODEBUG settings
// containermaxprocs and updatemaxprocs, which default to off when the main
// module's go line is 1.24 or older, switch each off.
type goRuntime struct {
	aware   bool // the default GOMAXPROCS follows the cgroup CPU limit
	updates bool // the runtime changes GOMAXPROCS by itself
	why     string
}

// systemRuntime is detectRuntime for this process, once: the runtime reads
// GODEBUG at start-up only.
var systemRuntime = sync.OnceValue(func() goRuntime {
	return detectRuntime(runtime.Version(), runtimeContainerSupport, buildGODEBUG(), os.Getenv("GODEBUG"))
})

// buildGODEBUG is the binary's DefaultGODEBUG, from its go line and
// //go:debug directives.
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
	return Policy{Rounding: runtimeCeil, Min: 2}.Procs(q, ncpu)
}

// statusFile reads the number of CPUs the process may run on now from
// Cpus_allowed_list in /proc/self/status, which follows taskset and cpuset
// changes (fallback: runtime.NumCPU, the count at start-up). The first
// reading, at Apply, closes the file; the refresh's keep it open and ReadAt
// into the same buffer, allocating nothing. One goroutine at a time.
type statusFile struct {
	name  string
	f     *os.File
	buf   []byte
	reads int
}

func (s *statusFile) affinity() int {
	var err error
	if s.f == nil {
		s.f, err = os.Open(s.name)
	}
	n := 0
	for err == nil { // ReadAt fills buf, or ends with an error: io.EOF at the end
		if n, err = s.f.ReadAt(s.buf, 0); err == nil {
			s.buf = make([]byte, max(4<<10, 2*n))
		}
	}
	if s.reads++; s.f != nil && (s.reads == 1 || err != io.EOF) {
		s.f.Close()
		s.f = nil
	}
	if cpus, ok := parseAffinity(s.buf[:n]); ok && err == io.EOF {
		return cpus
	}
	return runtime.NumCPU()
}

// parseAffinity counts the CPUs of the line "Cpus_allowed_list:\t0-3,8,10-11"
// of a status file, allocating nothing.
func parseAffinity(status []byte) (int, bool) {
	var list []byte
	for found := false; !found; {
		if len(status) == 0 {
			return 0, false
		}
		var line []byte
		line, status, _ = bytes.Cut(status, []byte{'\n'})
		list, found = bytes.CutPrefix(line, []byte("Cpus_allowed_list:"))
	}
	n := 0
	for rest, more := bytes.TrimSpace(list), true; more; {
		var r []byte
		r, rest, more = bytes.Cut(rest, []byte{','})
		lo, hi, isRange := bytes.Cut(r, []byte{'-'})
		if !isRange {
			hi = lo
		}
		a, ok1 := cpuNumber(lo)
		b, ok2 := cpuNumber(hi)
		if !ok1 || !ok2 || b < a {
			return 0, false
		}
		n += b - a + 1
	}
	return n, n > 0
}

// cpuNumber parses a CPU number: decimal digits, at most 65535.
func cpuNumber(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' || v > 65535 {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, len(b) > 0 && v <= 65535
}
