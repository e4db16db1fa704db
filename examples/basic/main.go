// Command basic shows the blank import: importing fitgo sets GOMAXPROCS and
// GOMEMLIMIT from the container's limits before main runs, and follows them.
// It prints what was applied and why.
//
//	go run ./examples/basic                 # what fitgo did here
//	FITGO=off go run ./examples/basic        # the blank import turned off
//	go run ./examples/basic -watch 1m        # keep running and print changes (try a resize)
package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	// The blank import `_ "github.com/fitgo/fitgo"` is all a program needs;
	// this one names the package to print fitgo.Startup().
	"github.com/fitgo/fitgo"
)

func main() {
	watch := flag.Duration("watch", 0, "keep running this long and print every change")
	flag.Parse()

	r := fitgo.Startup()
	fmt.Println("fitgo at start-up:")
	fmt.Println(" ", r.MaxProcs.Status())
	fmt.Println(" ", r.MemLimit.Status())
	if r.Setting != "" {
		fmt.Printf("  FITGO=%q\n", r.Setting)
	}
	if r.SettingErr != nil {
		fmt.Println("  FITGO problems:", r.SettingErr)
	}
	printNow := func() {
		mp, ml := r.MaxProcs.Status(), r.MemLimit.Status()
		fmt.Printf("now: GOMAXPROCS %d (%s), GOMEMLIMIT %s (%s)\n",
			runtime.GOMAXPROCS(0), following(mp.Following, mp.Limit > 0, mp.Reason),
			bytes(debug.SetMemoryLimit(-1)), following(ml.Following, ml.Limit > 0, ml.Reason))
	}
	printNow()
	if *watch <= 0 {
		return
	}
	procs, limit := runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1)
	for end := time.Now().Add(*watch); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if p, l := runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1); p != procs || l != limit {
			procs, limit = p, l
			printNow()
		}
	}
}

// following says whether fitgo follows the limit: with one, it tracks it;
// without one, it watches for one to appear (a resize that adds a limit).
func following(on, limited bool, reason string) string {
	switch {
	case on && limited:
		return "following the limit"
	case on:
		return reason + "; watching for one"
	}
	return "not following: " + reason
}

func bytes(n int64) string {
	if n == 1<<63-1 {
		return "off"
	}
	return fmt.Sprintf("%d (%.1f MiB)", n, float64(n)/(1<<20))
}
