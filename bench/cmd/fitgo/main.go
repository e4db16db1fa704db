// Command fitgo is the benchmark workload with fitgo blank-imported with its
// defaults. It reports fitgo's GC policy (FITGO=gc=auto) at the end of the
// window, from the memory limit's Status.
package main

import (
	"github.com/fitgo/fitgo"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/workload"
)

func main() { workload.MainGC("fitgo", gcPolicy) }

// gcPolicy reads the GC policy of the blank import's memory limit.
func gcPolicy() results.GCPolicy {
	gc := fitgo.Startup().MemLimit.Status().GC
	return results.GCPolicy{On: gc.On, GOGC: gc.GOGC, Base: gc.Base, CeilingBytes: gc.Ceiling, Reason: gc.Reason}
}
