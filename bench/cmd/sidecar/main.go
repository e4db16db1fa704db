// Command sidecar is the other process of the benchmark's shared scenario: it
// holds -mib MiB of resident anonymous memory (allocated and every page
// written) in the memory limit it shares with the workload, prints one JSON
// line on stdout when it holds it, and then waits. On SIGUSR1, or after
// -free-after, it frees the memory, returns it to the kernel and prints a
// second line, so that a run can show a workload following what the others
// hold. With -listen it also accepts TCP connections on that address once it
// holds the memory (and closes them at once): a Kubernetes tcpSocket startup
// probe, which needs no shell in the image, then tells the kubelet to start
// the workload's container only after that. With -cache-mib it also keeps
// page cache: it reads a file of that size (sparse, made for the run in the
// temporary directory and removed at exit) twice before it says it holds
// its memory, so that the pages are active, and then again every
// -cache-every, as a process that serves files, writes logs or runs an
// embedded database does. With -grow-mib, on SIGUSR2 it grows by that much
// resident memory at once (the gc scenario's burst: a co-process whose
// memory jumps) and prints a line with state "grown" once it holds it. It
// exits on SIGTERM or SIGINT.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sig))
}

// run holds the memory, reports on stdout, frees it on SIGUSR1 or after
// -free-after and grows by -grow-mib on SIGUSR2, until sig delivers another
// signal; it returns the exit code.
func run(args []string, stdout, stderr io.Writer, sig <-chan os.Signal) int {
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mib := fs.Int("mib", 200, "resident memory to hold, MiB")
	freeAfter := fs.Duration("free-after", 0, "free the memory after this time (0: only on SIGUSR1)")
	listen := fs.String("listen", "", "once the memory is held, accept TCP connections on this address (e.g. :8642), for a readiness or startup probe")
	cacheMiB := fs.Int("cache-mib", 0, "also keep this much page cache: read a file of this size in a loop (0: none)")
	cacheEvery := fs.Duration("cache-every", time.Second, "read the -cache-mib file again this often")
	growMiB := fs.Int("grow-mib", 0, "on SIGUSR2, grow by this much resident memory at once, MiB (0: SIGUSR2 does nothing)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cacheMiB > 0 {
		file, err := cacheFile(int64(*cacheMiB) << 20)
		if err != nil {
			fmt.Fprintf(stderr, "sidecar: %v\n", err)
			return 1
		}
		defer os.RemoveAll(filepath.Dir(file))
		for range 2 { // twice: the second read makes the pages active
			if err := readAll(file); err != nil {
				fmt.Fprintf(stderr, "sidecar: %v\n", err)
				return 1
			}
		}
		go func() {
			for range time.Tick(*cacheEvery) {
				readAll(file)
			}
		}()
	}
	held := touched(*mib)
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(stderr, "sidecar: %v\n", err)
			return 1
		}
		defer ln.Close()
		go accept(ln)
	}
	say(stdout, results.SidecarLine{State: "held", HeldBytes: int64(*mib) << 20})

	var grown [][]byte // the burst
	var timeout <-chan time.Time
	if *freeAfter > 0 {
		timeout = time.After(*freeAfter)
	}
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGUSR2 {
				if *growMiB > 0 && grown == nil {
					t0 := time.Now()
					grown = touched(*growMiB)
					say(stdout, results.SidecarLine{State: results.SidecarGrown, HeldBytes: int64(len(held)+len(grown)) << 20,
						GrowMS: float64(time.Since(t0)) / float64(time.Millisecond)})
				}
				continue
			}
			if s != syscall.SIGUSR1 {
				return 0
			}
		case <-timeout:
			timeout = nil
		}
		if held != nil || grown != nil {
			held, grown = nil, nil
			debug.FreeOSMemory()
			say(stdout, results.SidecarLine{State: "freed"})
		}
	}
}

// touched returns mib MiB of memory, every page written: resident.
func touched(mib int) [][]byte {
	held := make([][]byte, mib)
	for i := range held {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1 // fault the page in
		}
		held[i] = b
	}
	return held
}

// cacheFile makes a sparse file of size bytes in a new temporary directory:
// reading it fills the page cache (of the reader's memory cgroup) without
// writing to a disk.
func cacheFile(size int64) (string, error) {
	dir, err := os.MkdirTemp("", "fitgo-sidecar-cache-")
	if err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(dir, "cache"))
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return f.Name(), nil
}

// readAll reads the file to its end.
func readAll(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// accept closes every connection it accepts, until ln is closed: a probe
// only needs the connection to succeed.
func accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func say(w io.Writer, l results.SidecarLine) {
	l.Type = results.TypeSidecar
	l.RSSBytes = rss()
	b, _ := json.Marshal(l)
	fmt.Fprintf(w, "%s\n", b)
}

// rss returns VmRSS of /proc/self/status in bytes, or 0.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
