// Command fitgo-ceil is the benchmark workload with fitgo and the Go
// runtime's rounding: GOMAXPROCS is the effective CPU limit rounded up, at
// least 2 (maxprocs.Ceil), and GOMEMLIMIT fitgo's default; both follow the
// limits every second, as the blank import does. The FITGO environment
// variable has no rounding setting, so this variant uses the explicit API, as
// a program that wants the other rounding would.
package main

import (
	"context"

	"github.com/fitgo/fitgo/bench/workload"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

func init() {
	ctx := context.Background()
	maxprocs.Apply(maxprocs.WithRounding(maxprocs.Ceil), maxprocs.WithRefresh(ctx, 0))
	memlimit.Apply(memlimit.WithRefresh(ctx, 0))
}

func main() { workload.Main("fitgo-ceil") }
