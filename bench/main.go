// Command bench is fitgo's benchmark harness. It runs a GC-heavy,
// latency-sensitive workload under CPU quotas and memory limits, once per
// variant (no tuning, the Go runtime's defaults, downward-API environment
// variables, automaxprocs+automemlimit, fitgo), and reports GC pauses, tail
// latency, CFS throttling and OOM kills side by side.
//
//	go run -C bench . local [flags]   # in real cgroups on this machine (root)
//	go run -C bench . kind [flags]    # as Kubernetes Jobs in a kind cluster, or an existing one (-context)
//
// Run a subcommand with -h for its flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fitgo/fitgo/bench/internal/cluster"
	"github.com/fitgo/fitgo/bench/internal/local"
)

func main() {
	local.CgExec() // when started as a run's cgroup trampoline, becomes the workload
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: go run -C bench . <command> [flags]

Commands:
  local   run the benchmark in cgroups on this machine (needs root or a delegated cgroup v2 subtree)
  kind    run the benchmark as Jobs in a kind cluster (Docker or Podman, and kind), or in an existing cluster (-context)

Run "go run -C bench . <command> -h" for a command's flags.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "local":
		return local.Main(ctx, args[1:], stdout, stderr)
	case "kind":
		return cluster.Main(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "bench: unknown command %q\n\n%s", args[0], usage)
	return 2
}
