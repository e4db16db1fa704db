// Command explicit is the vm tests' probe of fitgo's packages used explicitly
// (no blank import, so nothing happens at init):
//
//	explicit read -scenario S                      what cgroup.Read returns
//	explicit burn -scenario S [-threads N] [-for D] burn CPU and report cpu.stat's change
//	explicit ceil -scenario S                      maxprocs.Apply with the Ceil rounding
package main

import (
	"flag"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
	"github.com/fitgo/fitgo/maxprocs"
)

func main() {
	if len(os.Args) < 2 {
		report.Fail("usage: explicit read|burn|ceil ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	scenario := fs.String("scenario", "", "scenario name printed with the result")
	threads := fs.Int("threads", 2, "burn: goroutines spinning at once")
	burnFor := fs.Duration("for", 2*time.Second, "burn: how long")
	if err := fs.Parse(args); err != nil || *scenario == "" {
		report.Fail("-scenario is required")
	}
	h := report.Header{Scenario: *scenario, Probe: cmd}
	switch cmd {
	case "read":
		read(h)
	case "burn":
		burn(h, *threads, *burnFor)
	case "ceil":
		fit, _ := maxprocs.Apply(maxprocs.Options{Policy: maxprocs.Policy{Rounding: maxprocs.Ceil}}) // the error is in the Result
		report.Emit(report.Ceil{Header: h, MaxProcs: report.NewMaxProcs(fit.Status()), Runtime: report.ReadRuntime()})
	default:
		report.Fail("unknown command " + cmd)
	}
}

func read(h report.Header) {
	report.Emit(report.Read{Header: h, Limits: report.NewLimits(cgroup.Read()), Runtime: report.ReadRuntime()})
}

// burn keeps threads goroutines spinning for d and reports how cpu.stat of
// the effective CPU cgroup changed meanwhile.
func burn(h report.Header, threads int, d time.Duration) {
	w, err := cgroup.NewWatcher(os.DirFS("/"))
	if err != nil {
		report.Fail("NewWatcher: " + err.Error())
	}
	lim := report.NewLimits(w.Read())
	st, err := w.Stats()
	if err != nil {
		report.Fail("Stats before: " + err.Error())
	}
	before := report.NewCPU(st)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for time.Now().Before(deadline) {
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			sink(x)
		}()
	}
	wg.Wait()
	// The kernel's files just before and just after the reader's last
	// reading, so that the test can check the reader against them: every
	// counter only grows. (Anything this process does later, such as printing
	// to the serial console, costs guest CPU time in the throttled cgroup and
	// moves the counters on.)
	rawBefore := readRaw(lim.CPU.Source)
	st, err = w.Stats()
	wall := time.Since(start)
	rawAfter := readRaw(lim.CPU.Source)
	if err != nil {
		report.Fail("Stats after: " + err.Error())
	}
	after := report.NewCPU(st)
	report.Emit(report.Burn{
		Header: h, Limits: lim, Runtime: report.ReadRuntime(), Threads: threads,
		Wall: wall, Before: before, After: after, Delta: after.Sub(before), Stats: st,
		RawBefore: rawBefore, RawAfter: rawAfter,
	})
}

// readRaw returns cpu.stat and, where it exists, cpuacct.usage of dir.
func readRaw(dir string) map[string]string {
	raw := map[string]string{}
	for _, name := range []string{"cpu.stat", "cpuacct.usage"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			raw[name] = string(b)
		}
	}
	return raw
}

var sinkMu sync.Mutex
var sinkV uint64

// sink keeps the spinning loop's result alive.
func sink(x uint64) {
	sinkMu.Lock()
	sinkV += x
	sinkMu.Unlock()
}
