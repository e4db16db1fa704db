// Command fitgo is the benchmark workload with fitgo blank-imported with its
// defaults.
package main

import (
	_ "github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/bench/workload"
)

func main() { workload.Main("fitgo") }
