package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// The test binary plays the sidecar (called with -mib) and the workload
// (called with its role) when roleVar is set; sidecarVar says how the
// sidecar behaves.
const (
	roleVar    = "COPROCESS_TEST_CHILD"
	sidecarVar = "COPROCESS_TEST_SIDECAR"
)

func TestMain(m *testing.M) {
	if os.Getenv(roleVar) == "" {
		os.Exit(m.Run())
	}
	if len(os.Args) > 1 && os.Args[1] == "-mib" {
		os.Exit(fakeSidecar(os.Getenv(sidecarVar)))
	}
	os.Exit(fakeWorkload(os.Args[1]))
}

func fakeSidecar(mode string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "sidecar: cannot allocate")
		return 1
	}
	fmt.Printf(`{"type":"sidecar","state":"held","held_bytes":%d,"rss_bytes":%d}`+"\n", 8<<20, 9<<20)
	if mode == "die" { // the OOM killer's SIGKILL, right after it held
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {}
	}
	<-term
	return 0
}

func fakeWorkload(role string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println(`{"type":"result","variant":"fake"}`)
	switch role {
	case "ok":
		return 0
	case "exit3":
		fmt.Fprintln(os.Stderr, "workload: failed")
		return 3
	case "killed":
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {}
	case "wait": // until SIGTERM
		<-term
		return 7
	}
	return 99
}

// launch runs coprocess with the test binary as sidecar and workload.
func launch(t *testing.T, sidecar string, stdout io.Writer, sig <-chan os.Signal, workload ...string) (int, string) {
	t.Helper()
	t.Setenv(roleVar, "1")
	t.Setenv(sidecarVar, sidecar)
	var stderr bytes.Buffer
	code := run(append([]string{"-sidecar", os.Args[0], "-mib", "8", "--", os.Args[0]}, workload...), stdout, &stderr, sig)
	return code, stderr.String()
}

// killedLine reports whether stderr has the launcher's "killed" line.
func killedLine(stderr string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if sl, err := results.ParseSidecarLine([]byte(l)); err == nil && sl.State == results.SidecarKilled {
			return true
		}
	}
	return false
}

func TestRunExitsAsTheWorkload(t *testing.T) {
	for _, tc := range []struct {
		role string
		code int
	}{{"ok", 0}, {"exit3", 3}, {"killed", 128 + 9}} {
		t.Run(tc.role, func(t *testing.T) {
			var stdout bytes.Buffer
			code, stderr := launch(t, "hold", &stdout, nil, tc.role)
			assert.Equal(t, tc.code, code, stderr)
			assert.Equal(t, `{"type":"result","variant":"fake"}`+"\n", stdout.String(), "the workload's stdout is its own")
			assert.Contains(t, stderr, `"state":"held"`, "the sidecar's lines are in the log")
			assert.False(t, killedLine(stderr), "the sidecar ended by the SIGTERM it was sent: %s", stderr)
		})
	}
}

// TestRunSidecarKilled: a sidecar killed by a SIGKILL the launcher did not
// send is reported; the workload still runs, and its exit code is the
// launcher's.
func TestRunSidecarKilled(t *testing.T) {
	var stdout bytes.Buffer
	code, stderr := launch(t, "die", &stdout, nil, "ok")
	assert.Equal(t, 0, code, stderr)
	assert.True(t, killedLine(stderr), stderr)
	assert.Contains(t, stdout.String(), `"type":"result"`)
}

func TestRunSidecarFails(t *testing.T) {
	var stdout bytes.Buffer
	code, stderr := launch(t, "fail", &stdout, nil, "ok")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "the sidecar exited before it held its memory: exit status 1")
	assert.Contains(t, stderr, "sidecar: cannot allocate", "the sidecar's stderr")
	assert.Empty(t, stdout.String(), "no workload without the sidecar's memory")
}

// TestRunPassesSignals: SIGTERM to the launcher (the kubelet stopping the
// container) reaches the workload, whose exit code is the launcher's.
func TestRunPassesSignals(t *testing.T) {
	pr, pw := io.Pipe()
	sig := make(chan os.Signal, 1)
	go func() {
		// The workload prints its line after it has set up its handler.
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			sig <- syscall.SIGTERM
		}
		io.Copy(io.Discard, pr)
	}()
	code, stderr := launch(t, "hold", pw, sig, "wait")
	pw.Close()
	assert.Equal(t, 7, code, stderr)
	assert.False(t, killedLine(stderr))
}

func TestRunUsage(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(nil, io.Discard, &stderr, nil))
	assert.Contains(t, stderr.String(), "no workload command")
	assert.Equal(t, 2, run([]string{"-mib", "x", "w"}, io.Discard, io.Discard, nil))
	require.Equal(t, 3, run([]string{"-sidecar", "/nonexistent/sidecar", "w"}, io.Discard, &stderr, nil))
	assert.Contains(t, stderr.String(), "starting the sidecar")
}
