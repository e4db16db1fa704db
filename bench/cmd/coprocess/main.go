// Command coprocess runs the shared scenario's co-process layout in one
// container: it starts the sidecar (bench/cmd/sidecar), waits until the
// sidecar holds its memory, then runs the workload, so that both run in the
// container's one memory cgroup, under its one limit, as a service that runs
// a helper binary does. The image has no shell, hence a program.
//
//	coprocess -sidecar /bench/sidecar -mib 200 -- /bench/fitgo -duration=5s ...
//
// The workload's stdout and stderr are its own; the sidecar's lines go to
// stderr, so that the pod log has them. When the workload ends, the sidecar
// gets SIGTERM (SIGKILL 5 s later). If the sidecar ended by a SIGKILL that
// coprocess did not send (the OOM killer's), it prints a sidecar line with
// state "killed" on stderr. SIGTERM and SIGINT are passed on to both.
//
// It exits as the workload did: its exit code, or 128 + the number of the
// signal that ended it (as a shell reports it, and as the kubelet shows a
// container killed by a signal); 3 when the sidecar did not hold its memory
// or the workload could not start, 2 for a bad command line.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/syncw"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sig))
}

// stopWait is how long the sidecar has to exit after SIGTERM.
const stopWait = 5 * time.Second

// event is what the sidecar's reader reports, in order: held once, then
// the exit.
type event struct {
	held   bool
	exited bool
	err    error // Wait's error, on exit
}

func run(args []string, stdout, stderr io.Writer, sig <-chan os.Signal) int {
	fs := flag.NewFlagSet("coprocess", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sidecar := fs.String("sidecar", "/bench/sidecar", "the sidecar binary")
	mib := fs.Int("mib", 200, "memory the sidecar holds, MiB")
	timeout := fs.Duration("timeout", time.Minute, "how long the sidecar may take to hold its memory")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: coprocess [flags] [--] workload [args...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "coprocess: no workload command")
		return 2
	}
	errw := &syncw.Writer{W: stderr} // the sidecar's lines, the workload's stderr and coprocess's own

	side := exec.Command(*sidecar, "-mib", strconv.Itoa(*mib))
	side.Stderr = errw
	out, err := side.StdoutPipe()
	if err != nil {
		fmt.Fprintf(errw, "coprocess: %v\n", err)
		return 3
	}
	if err := side.Start(); err != nil {
		fmt.Fprintf(errw, "coprocess: starting the sidecar: %v\n", err)
		return 3
	}
	events := make(chan event, 2)
	go func() {
		sc := bufio.NewScanner(out)
		held := false
		for sc.Scan() {
			fmt.Fprintf(errw, "%s\n", sc.Bytes())
			if l, err := results.ParseSidecarLine(sc.Bytes()); err == nil && l.State == "held" && !held {
				held = true
				events <- event{held: true}
			}
		}
		events <- event{exited: true, err: side.Wait()}
	}()

	var sent []os.Signal // the signals coprocess sent the sidecar
	signalSidecar := func(s os.Signal) {
		if side.Process.Signal(s) == nil {
			sent = append(sent, s)
		}
	}
	// stopSidecar ends the sidecar, unless it has ended (exited != nil), and
	// reports a kill nobody here asked for.
	stopSidecar := func(exited *event) {
		if exited == nil {
			signalSidecar(syscall.SIGTERM)
			t := time.NewTimer(stopWait)
			defer t.Stop()
			for exited == nil {
				select {
				case e := <-events:
					if e.exited {
						exited = &e
					}
				case <-t.C:
					signalSidecar(syscall.SIGKILL)
					t.Reset(time.Hour)
				}
			}
		}
		if s, ok := signaled(exited.err); ok && s == syscall.SIGKILL && !slices.Contains(sent, os.Signal(syscall.SIGKILL)) {
			b, _ := json.Marshal(results.SidecarLine{Type: results.TypeSidecar, State: results.SidecarKilled})
			fmt.Fprintf(errw, "%s\n", b)
		}
	}

	wait := time.NewTimer(*timeout)
	defer wait.Stop()
	for ready := false; !ready; {
		select {
		case e := <-events:
			if e.exited {
				fmt.Fprintf(errw, "coprocess: the sidecar exited before it held its memory: %v\n", e.err)
				return 3
			}
			ready = true
		case <-wait.C:
			fmt.Fprintf(errw, "coprocess: the sidecar did not hold %d MiB within %v\n", *mib, *timeout)
			stopSidecar(nil)
			return 3
		case s := <-sig:
			stopSidecar(nil)
			return 128 + signum(s)
		}
	}

	work := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	work.Stdout, work.Stderr = stdout, errw
	if err := work.Start(); err != nil {
		fmt.Fprintf(errw, "coprocess: starting the workload: %v\n", err)
		stopSidecar(nil)
		return 3
	}
	done := make(chan error, 1)
	go func() { done <- work.Wait() }()
	var exited *event
	for {
		select {
		case s := <-sig:
			work.Process.Signal(s)
			if exited == nil {
				signalSidecar(s)
			}
		case e := <-events:
			if e.exited {
				exited = &e
			}
		case err := <-done:
			stopSidecar(exited)
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				fmt.Fprintf(errw, "coprocess: the workload: %v\n", err)
				return 3
			}
			if s, ok := signaled(err); ok {
				return 128 + signum(s)
			}
			return work.ProcessState.ExitCode()
		}
	}
}

// signaled returns the signal that ended a process, from its Wait error.
func signaled(err error) (syscall.Signal, bool) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal(), true
		}
	}
	return 0, false
}

func signum(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return int(syscall.SIGTERM)
}
