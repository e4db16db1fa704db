// Package run is the body of the test programs; see package testprog.
package run

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo"
	"github.com/fitgo/fitgo/internal/rig/testprog"
)

// Run writes the init results of the blank import and then, whenever
// GOMAXPROCS, the memory limit or the refresh status changes (polled every
// 10ms), a State as a JSON line on stdout. It reads commands from stdin, one
// per line: "pin" calls runtime.GOMAXPROCS with the current value (as a
// program that sets it itself would); "setmem N" calls debug.SetMemoryLimit(N);
// "setgogc N" calls debug.SetGCPercent(N); "gc" runs a GC cycle;
// "report N" asks for a State with Report set N ms after it; "undo" calls
// Undo on the memory limit's Fit of the blank import; "read PATH"
// reads the file PATH to the end (into the page cache); "map PATH" maps the
// file PATH shared and reads every page, which stays mapped (shared memory
// when PATH is on a tmpfs); "churn" starts allocating 1 MiB of garbage at a
// time, every page written, until "calm". After read, map and churn it writes a State whose
// Done is the command's name (or its error); so do the commands of Commands.
// Each command counts in Acks, so
// that a State shows it was handled. It returns when stdin is closed.
func Run() {
	rep := fitgo.Startup()
	start, acks := time.Now(), 0
	enc := json.NewEncoder(os.Stdout)
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	cur := func() testprog.State {
		mp, ml := rep.MaxProcs.Status(), rep.MemLimit.Status()
		metrics.Read(gogc)
		return testprog.State{
			Millis:            time.Since(start).Milliseconds(),
			GOMAXPROCS:        runtime.GOMAXPROCS(0),
			GOMEMLIMIT:        debug.SetMemoryLimit(-1),
			MaxProcsFollowing: mp.Following,
			MaxProcsReason:    mp.Reason,
			MemLimitFollowing: ml.Following,
			MemLimitReason:    ml.Reason,
			MemLimitEvents:    ml.HasEvents,
			NonGo:             ml.NonGo,
			Floor:             ml.Floor,
			Avail:             ml.Limit,
			GOGC:              int(int64(gogc[0].Value.Uint64())),
			HeapGoal:          gogc[1].Value.Uint64(),
			GCCeiling:         ml.GC.Ceiling,
			GCReason:          ml.GC.Reason,
			GCStatus:          ml.GC.GOGC,
			GOGCReads:         gogcReads.Load(),
			Acks:              acks,
		}
	}
	first := cur()
	mp, ml := rep.MaxProcs.Status(), rep.MemLimit.Status()
	first.MaxProcs, first.MemLimit = mp.String(), ml.String()
	if rep.MaxProcs == nil {
		first.MaxProcs = "turned off by FITGO=" + rep.Setting
	}
	if rep.MemLimit == nil {
		first.MemLimit = "turned off by FITGO=" + rep.Setting
	}
	first.Changed = mp.Changed || ml.Changed
	if rep.Err != nil {
		first.Err = rep.Err.Error()
	}
	enc.Encode(first)

	done := make(chan struct{})
	cmds := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(done)
	}()
	last := first
	last.MaxProcs, last.MemLimit, last.Changed, last.Err = "", "", false, ""
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var reportAt int64 // 0: none asked for
	for {
		select {
		case <-done:
			return
		case c := <-cmds:
			acks++
			switch f := strings.Fields(c); {
			case len(f) == 1 && f[0] == "pin":
				runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
			case len(f) == 2 && f[0] == "setmem":
				var n int64
				if err := json.Unmarshal([]byte(f[1]), &n); err == nil {
					debug.SetMemoryLimit(n)
				}
			case len(f) == 2 && f[0] == "setgogc":
				if n, err := strconv.Atoi(f[1]); err == nil {
					debug.SetGCPercent(n)
				}
			case len(f) == 1 && f[0] == "gc":
				runtime.GC()
			case len(f) == 1 && f[0] == "calm":
				calm.Store(true)
			case len(f) == 1 && f[0] == "undo":
				rep.MemLimit.Undo()
			case len(f) == 2 && f[0] == "report":
				var n int64
				if err := json.Unmarshal([]byte(f[1]), &n); err == nil {
					reportAt = max(time.Since(start).Milliseconds()+n, 1)
				}
			case len(f) == 2 && (f[0] == "read" || f[0] == "map"), len(f) == 1 && f[0] == "churn", len(f) > 0 && Commands[f[0]] != nil:
				s := cur()
				s.Done = f[0]
				if fn := Commands[f[0]]; fn != nil {
					if err := fn(f[1:]); err != nil {
						s.Done = err.Error()
					}
				} else if err := command(f); err != nil {
					s.Done = err.Error()
				}
				enc.Encode(s)
			}
		case <-tick.C:
			s := cur()
			probe := s
			probe.Millis = last.Millis
			if s.Report = reportAt > 0 && s.Millis >= reportAt; s.Report || probe != last {
				enc.Encode(s)
				last = s
				last.Report = false
			}
			if s.Report {
				reportAt = 0
			}
		}
	}
}

// Commands are more commands, by name, with their arguments: "heap N"
// allocates N MiB of Go heap, every page written, and keeps it; "heapfree"
// drops it and returns it to the OS (debug.FreeOSMemory); "gogcread" starts
// reading GOGC every millisecond the usual way,
// debug.SetGCPercent(debug.SetGCPercent(-1)), counted in State.GOGCReads, and
// "gogcread stop" stops it once no read is under way; on
// Unix, "anon N" maps N MiB of anonymous memory, every page written, and
// "unanon" unmaps it. A test program adds its own before it calls Run.
var Commands = map[string]func(args []string) error{
	"heap": func(args []string) error {
		n, err := mibs(args)
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			heap = append(heap, b)
		}
		return err
	},
	"heapfree": func([]string) error {
		heap = nil
		debug.FreeOSMemory()
		return nil
	},
	"gogcread": func(args []string) error {
		if len(args) == 1 && args[0] == "stop" {
			gogcStop <- struct{}{} // taken between two reads
			return nil
		}
		go func() {
			for {
				select {
				case <-gogcStop:
					return
				default:
				}
				debug.SetGCPercent(debug.SetGCPercent(-1))
				gogcReads.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
		return nil
	},
}

// heap is what the command heap keeps.
var heap [][]byte

// gogcReads counts the reads of the command gogcread, and gogcStop stops
// them.
var (
	gogcReads atomic.Int64
	gogcStop  = make(chan struct{})
)

// mibs is the one argument of a command, a positive number of MiB.
func mibs(args []string) (int, error) {
	if len(args) != 1 {
		return 0, errors.New("want one argument, MiB")
	}
	n, err := strconv.Atoi(args[0])
	if err == nil && n <= 0 {
		err = errors.New("want a positive number of MiB")
	}
	return n, err
}

// calm ends the churn.
var calm atomic.Bool

// command runs the command read, map or churn.
func command(f []string) error {
	switch f[0] {
	case "read":
		file, err := os.Open(f[1])
		if err != nil {
			return err
		}
		defer file.Close()
		_, err = io.Copy(io.Discard, file)
		return err
	case "map":
		return mapFile(f[1])
	}
	go func() {
		for !calm.Load() {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
		}
	}()
	return nil
}
