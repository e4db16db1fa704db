// Command explicit applies GOMAXPROCS and GOMEMLIMIT in main, with options
// and a JSON slog logger, instead of the blank import: for programs that want
// their own policy, logging or lifetime.
//
//	go run ./examples/explicit              # apply, print the results, exit
//	go run ./examples/explicit -run 1m      # and follow limit changes for a minute
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

func main() {
	run := flag.Duration("run", 0, "keep running (and following limit changes) this long")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// GOMAXPROCS: round the CPU limit up (the default rule, ceil), but keep
	// a quarter of a core for a sidecar and never go above 8. Follow resizes
	// every second until ctx is done.
	procs, err := maxprocs.Apply(maxprocs.Options{
		Policy:  maxprocs.Policy{Reserve: 0.25, Max: 8},
		Logger:  logger,
		Refresh: time.Second,
		Context: ctx,
	})
	if err != nil {
		// A malformed cgroup file: GOMAXPROCS is untouched, and the program
		// goes on. The logger has the details.
		logger.Warn("GOMAXPROCS not set", "err", err)
	}
	defer procs.Undo()

	// GOMEMLIMIT: 85% of the memory limit, and at least 64 MiB left free.
	mem, err := memlimit.Apply(memlimit.Options{
		Policy:  memlimit.Policy{Ratio: 0.85, Margin: 64 << 20},
		Logger:  logger,
		Refresh: time.Second,
		Context: ctx,
	})
	if err != nil {
		logger.Warn("GOMEMLIMIT not set", "err", err)
	}
	defer mem.Undo()

	// Status gives plain snapshots: log them, export them as metrics, or
	// print them.
	p, m := procs.Status(), mem.Status()
	logger.Info("fitted", "maxprocs", p, "memlimit", m)
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	out.Encode(summary(p, m))

	if *run > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(*run):
		}
		logger.Info("status", "maxprocs_updates", procs.Status().Updates, "memlimit_updates", mem.Status().Updates)
	}
}

// summary is the JSON the example prints: the results' fields, with the
// policies as the words fitgo logs them in ("ceil, min 1, max 8, …"), not
// as their numeric fields.
func summary(p maxprocs.Result, m memlimit.Result) map[string]any {
	return map[string]any{
		"maxprocs": map[string]any{"before": p.Before, "after": p.After, "changed": p.Changed,
			"cpu_limit": p.Limit, "source": p.Source, "policy": p.Policy.String(), "reason": p.Reason,
			"runtime": p.Runtime},
		"memlimit": map[string]any{"before": m.Before, "after": m.After, "changed": m.Changed,
			"memory_limit": m.Limit, "source": m.Source, "from": m.From, "policy": m.Policy.String(), "reason": m.Reason},
	}
}
