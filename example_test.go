package fitgo_test

import (
	"log/slog"
	"os"

	"github.com/fitgo/fitgo"
)

// A Report logs as a group; here one whose FITGO turned both knobs off.
// fitgo.Startup() returns the blank import's.
func ExampleReport() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("fitgo", "report", fitgo.Report{Setting: "off"})
	// Output:
	// level=INFO msg=fitgo report.GOMAXPROCS="turned off by FITGO=off" report.GOMEMLIMIT="turned off by FITGO=off" report.setting=off
}
