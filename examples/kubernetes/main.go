// Command kubernetes is the program of the Kubernetes examples in this
// directory (deployment.yaml, downward-api.yaml, pod-level.yaml): a stand-in
// for a service that blank-imports fitgo. It logs the GOMAXPROCS and
// GOMEMLIMIT in force next to the container's effective limits, once, or
// every -every so that `kubectl logs` shows them follow an in-place resize.
//
//	go run ./examples/kubernetes              # one line, then exit
//	go run ./examples/kubernetes -every=10s   # as the Deployments run it
//
// See README.md in this directory for the image and the kind commands.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	_ "github.com/fitgo/fitgo" // fits GOMAXPROCS and GOMEMLIMIT to the limits, and follows them

	"github.com/fitgo/fitgo/cgroup"
)

func main() {
	every := flag.Duration("every", 0, "log again at this interval (0: log once and exit)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stdout, nil))
	logRuntime(logger)
	if *every <= 0 {
		return
	}
	t := time.NewTicker(*every)
	defer t.Stop()
	for range t.C {
		logRuntime(logger)
	}
}

// logRuntime logs the runtime's knobs, the environment variables that would
// set them, and the limits fitgo's cgroup package reads.
func logRuntime(l *slog.Logger) {
	l.Info("runtime", attrs(cgroup.Read())...)
}

func attrs(lim cgroup.Limits, err error) []any {
	a := []any{
		"GOMAXPROCS", runtime.GOMAXPROCS(0),
		"GOMEMLIMIT", bytes(debug.SetMemoryLimit(-1)),
		"num_cpu", runtime.NumCPU(),
	}
	for _, name := range []string{"GOMAXPROCS", "GOMEMLIMIT", "FITGO_MEMORY_LIMIT", "FITGO_CPU_LIMIT", "FITGO"} {
		if v, ok := os.LookupEnv(name); ok {
			a = append(a, "env_"+name, v)
		}
	}
	if cores, ok := lim.CPUQuota(); ok {
		a = append(a, "cpu_limit", strconv.FormatFloat(cores, 'f', -1, 64))
	} else {
		a = append(a, "cpu_limit", "none")
	}
	if m, ok := lim.MemoryMax(); ok {
		a = append(a, "memory_limit", bytes(m))
	} else {
		a = append(a, "memory_limit", "none")
	}
	if err != nil {
		a = append(a, "cgroup_error", err.Error())
	}
	return a
}

// bytes formats a byte count as "<n> (<MiB> MiB)", or "off" for no limit.
func bytes(n int64) string {
	if n == math.MaxInt64 {
		return "off"
	}
	return fmt.Sprintf("%d (%.1f MiB)", n, float64(n)/(1<<20))
}
