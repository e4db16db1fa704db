// Command blank is the vm tests' probe of fitgo's blank import: everything
// happens in fitgo's init, before main, with the defaults and the FITGO
// environment variable, exactly as in a program that imports it.
//
//	blank report -scenario S              the knobs as fitgo's init left them, with fitgo.Startup
//	blank watch -scenario S [-for D]      poll the knobs while the limits change, and report each change
//
// This repository's go.mod says go 1.23, so this program has Go 1.23's
// GODEBUG defaults (containermaxprocs=0): the runtime alone would keep
// GOMAXPROCS at the CPU count. A scenario can set GODEBUG to see fitgo with
// the runtime's container support on.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/fitgo/fitgo"
	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rig/vmtest/probe/report"
)

// atStart is the state of the knobs when main starts, right after fitgo's init.
var atStart = report.ReadRuntime()

func main() {
	if len(os.Args) < 2 {
		report.Fail("usage: blank report|watch ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	scenario := fs.String("scenario", "", "scenario name printed with the result")
	watchFor := fs.Duration("for", 10*time.Second, "watch: give up after this long")
	if err := fs.Parse(args); err != nil || *scenario == "" {
		report.Fail("-scenario is required")
	}
	h := report.Header{Scenario: *scenario, Probe: cmd}
	switch cmd {
	case "report":
		report.Emit(report.Blank{Header: h, Runtime: atStart, Fitgo: results(), Limits: report.NewLimits(cgroup.Read())})
	case "watch":
		watch(h, *watchFor)
	default:
		report.Fail("unknown command " + cmd)
	}
}

func results() report.Fitgo {
	r := fitgo.Startup()
	mp, ml := r.MaxProcs.Status(), r.MemLimit.Status()
	f := report.Fitgo{
		Setting:        r.Setting,
		MaxProcs:       report.NewMaxProcs(mp),
		MemLimit:       report.NewMemLimit(ml),
		MaxProcsStatus: report.NewMaxProcsStatus(mp),
		MemLimitStatus: report.NewMemLimitStatus(ml),
	}
	if r.SettingErr != nil {
		f.SettingErr = r.SettingErr.Error()
	}
	if r.Err != nil {
		f.Err = r.Err.Error()
	}
	return f
}

// poll is how often watch reads the knobs: far below fitgo's refresh
// interval (1 s), so that it adds little to the measured delay.
const poll = 5 * time.Millisecond

// watch polls GOMAXPROCS and the memory limit, recording each change with its
// time, until both differ from their values at start or d has passed. The
// scenario changes the cgroup's limits meanwhile; fitgo's refresh loop should
// follow.
func watch(h report.Header, d time.Duration) {
	now := time.Now()
	first := report.ReadRuntime()
	samples := []report.Sample{{UnixNano: now.UnixNano(), GOMAXPROCS: first.GOMAXPROCS, GOMEMLIMIT: first.GOMEMLIMIT}}
	deadline := now.Add(d)
	last := samples[0]
	for time.Now().Before(deadline) {
		time.Sleep(poll)
		rt := report.ReadRuntime()
		if rt.GOMAXPROCS == last.GOMAXPROCS && rt.GOMEMLIMIT == last.GOMEMLIMIT {
			continue
		}
		last = report.Sample{UnixNano: time.Now().UnixNano(), GOMAXPROCS: rt.GOMAXPROCS, GOMEMLIMIT: rt.GOMEMLIMIT}
		samples = append(samples, last)
		if last.GOMAXPROCS != first.GOMAXPROCS && last.GOMEMLIMIT != first.GOMEMLIMIT {
			break
		}
	}
	report.Emit(report.Watch{Header: h, Poll: poll, Samples: samples, Fitgo: results()})
}
