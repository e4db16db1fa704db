package local

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// cgexecEnv carries, to a re-executed runner, the cgroup.procs files to join
// before it executes the workload binary.
const cgexecEnv = "FITGO_BENCH_CGEXEC"

// CgExec must be called first thing in the runner's main (and in TestMain of
// packages that start runs). When the process was started by the runner as a
// cgroup trampoline, it writes its pid into the run's cgroup.procs files and
// executes the workload binary in place, so that the workload starts, and runs
// its Go initialisation (where fitgo, automaxprocs and the runtime read the
// limits), already inside the run's cgroups. It does not return then;
// otherwise it returns at once.
func CgExec() {
	v, ok := os.LookupEnv(cgexecEnv)
	if !ok {
		return
	}
	os.Unsetenv(cgexecEnv)
	fail := func(code int, format string, args ...any) {
		fmt.Fprintf(os.Stderr, "fitgo-bench cgexec: "+format+"\n", args...)
		os.Exit(code)
	}
	var files []string
	if err := json.Unmarshal([]byte(v), &files); err != nil {
		fail(126, "bad %s: %v", cgexecEnv, err)
	}
	if len(os.Args) < 2 {
		fail(126, "no program to execute")
	}
	self := strconv.Itoa(os.Getpid())
	for _, f := range files {
		if err := os.WriteFile(f, []byte(self), 0); err != nil {
			fail(126, "joining cgroup: %v", err)
		}
	}
	err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	fail(127, "exec %s: %v", os.Args[1], err)
}
