package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// start runs the sidecar with args, and returns its signals, its exit code,
// its output's lines and a function that parses the next one.
func start(t *testing.T, args ...string) (chan os.Signal, <-chan int, *bufio.Scanner, func() results.SidecarLine) {
	r, w := io.Pipe()
	sig := make(chan os.Signal)
	code := make(chan int, 1)
	go func() {
		code <- run(args, w, io.Discard, sig)
		w.Close()
	}()
	lines := bufio.NewScanner(r)
	return sig, code, lines, func() results.SidecarLine {
		t.Helper()
		require.True(t, lines.Scan(), "a line")
		l, err := results.ParseSidecarLine(lines.Bytes())
		require.NoError(t, err)
		return l
	}
}

// TestRun holds 8 MiB, frees it on SIGUSR1, ignores a second SIGUSR1 and
// exits on SIGTERM, one step at a time.
func TestRun(t *testing.T) {
	sig, code, lines, next := start(t, "-mib", "8")
	held := next()
	assert.Equal(t, "held", held.State)
	assert.Equal(t, int64(8<<20), held.HeldBytes)
	assert.GreaterOrEqual(t, held.RSSBytes, int64(8<<20), "the pages are resident")

	sig <- syscall.SIGUSR1
	freed := next()
	assert.Equal(t, "freed", freed.State)
	sig <- syscall.SIGUSR1 // nothing left to free: no line
	sig <- syscall.SIGTERM
	assert.Equal(t, 0, <-code)
	assert.False(t, lines.Scan(), "no more lines")

	assert.Equal(t, 2, run([]string{"-mib", "x"}, io.Discard, io.Discard, sig))
}

// TestRunGrow: with -grow-mib, SIGUSR2 grows the memory held once, and a
// line says so; a second SIGUSR2 does nothing.
func TestRunGrow(t *testing.T) {
	sig, code, lines, next := start(t, "-mib", "0", "-grow-mib", "16")
	held := next()
	assert.Equal(t, "held", held.State)
	assert.Zero(t, held.HeldBytes)

	sig <- syscall.SIGUSR2
	grown := next()
	assert.Equal(t, results.SidecarGrown, grown.State)
	assert.Equal(t, int64(16<<20), grown.HeldBytes)
	assert.GreaterOrEqual(t, grown.RSSBytes, int64(16<<20), "the pages are resident")
	assert.Greater(t, grown.GrowMS, 0.0)
	sig <- syscall.SIGUSR2 // grown once: no line
	sig <- syscall.SIGTERM
	assert.Equal(t, 0, <-code)
	assert.False(t, lines.Scan(), "no more lines")
}

// TestRunListen: with -listen, a connection succeeds once the memory is held
// (the startup probe of the pod-level layout), and the port is closed when
// the sidecar exits.
func TestRunListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	sig, code, _, next := start(t, "-mib", "1", "-listen", addr)
	assert.Equal(t, "held", next().State)
	for range 2 { // a probe connects again and again
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err, "the probe connects once the memory is held")
		c.Close()
	}
	sig <- syscall.SIGTERM
	assert.Equal(t, 0, <-code)
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err, "closed at exit")

	// An address it cannot listen on is an error, not a sidecar that never
	// becomes ready.
	assert.Equal(t, 1, run([]string{"-mib", "1", "-listen", "256.0.0.1:1"}, io.Discard, io.Discard, sig))
}

// TestRunCache: with -cache-mib, the sidecar holds a file of that size in
// the temporary directory while it runs (read in a loop) and removes it
// when it exits.
func TestRunCache(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	sig, code, _, next := start(t, "-mib", "1", "-cache-mib", "4", "-cache-every", "10ms")
	assert.Equal(t, "held", next().State)
	files, err := filepath.Glob(filepath.Join(tmp, "fitgo-sidecar-cache-*", "cache"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	st, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, int64(4<<20), st.Size())

	sig <- syscall.SIGTERM
	assert.Equal(t, 0, <-code)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the file is removed at exit")

	t.Setenv("TMPDIR", filepath.Join(tmp, "missing"))
	assert.Equal(t, 1, run([]string{"-mib", "1", "-cache-mib", "1"}, io.Discard, io.Discard, sig), "no file: an error")
}
