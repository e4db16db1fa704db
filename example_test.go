package fitgo_test

import (
	"log/slog"
	"os"

	"github.com/fitgo/fitgo"
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
