// Command fitgo-ceil is the benchmark workload with fitgo and the Ceil
// rounding: GOMAXPROCS is the effective CPU limit rounded up (maxprocs.Ceil),
// and GOMEMLIMIT fitgo's default; both follow the limits every second, as the
// blank import does. It uses the explicit API, as a program that wants the
// other rounding would.
package main

import (
	"time"

	"github.com/fitgo/fitgo/bench/workload"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

func init() {
	maxprocs.Apply(maxprocs.Options{Policy: maxprocs.Policy{Rounding: maxprocs.Ceil}, Refresh: time.Second})
	memlimit.Apply(memlimit.Options{Refresh: time.Second})
}

func main() { workload.Main("fitgo-ceil") }
