package fitgo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fitgo/fitgo"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// A Report logs as a group; here one whose FITGO turned both knobs off: each
// gives the value in force. fitgo.Startup() returns the blank import's.
func ExampleReport() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{}
			case "value": // the machine's
				a.Value = slog.StringValue("N")
			}
			return a
		},
	}))
	logger.Info("fitgo", "report", fitgo.Report{Setting: "off"})
	// Output:
	// level=INFO msg=fitgo report.GOMAXPROCS.fitgo=off report.GOMAXPROCS.value=N report.GOMEMLIMIT.fitgo=off report.GOMEMLIMIT.value=N report.setting=off
}

// What the blank import did at start-up, and what is in force now, for a
// debug endpoint or a health check. The blank import logs its start-up lines
// itself: logging the Report again would repeat them.
func ExampleStartup() {
	r := fitgo.Startup()
	fmt.Println(r.MaxProcs.Status())
	fmt.Println(r.MemLimit.Status())
}

// Instead of the blank import: both knobs applied in main with a policy of
// the program's own, a logger and a lifetime.
func Example_apply() {
	logger := slog.Default()
	ctx := context.Background() // the program's lifetime

	procs, err := maxprocs.Apply(maxprocs.Options{
		Policy:  maxprocs.Policy{Reserve: 0.25}, // leave a quarter core to a sidecar
		Logger:  logger,                         // *slog.Logger; nil: nothing is logged
		Refresh: time.Second,                    // follow resizes; 0: set once
		Context: ctx,                            // until ctx is done
	})
	if err != nil {
		logger.Warn("GOMAXPROCS unchanged", "err", err) // a malformed cgroup file
	}
	defer procs.Undo()

	mem, err := memlimit.Apply(memlimit.Options{
		Policy:  memlimit.Policy{Ratio: 0.85, Margin: 64 << 20}, // the lower result wins
		Logger:  logger,
		Refresh: time.Second,
		Context: ctx,
	})
	if err != nil {
		logger.Warn("GOMEMLIMIT unchanged", "err", err)
	}
	defer mem.Undo()
}
