package main

import (
	"bufio"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// TestRun holds 8 MiB, frees it on SIGUSR1, ignores a second SIGUSR1 and
// exits on SIGTERM, one step at a time.
func TestRun(t *testing.T) {
	r, w := io.Pipe()
	sig := make(chan os.Signal)
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"-mib", "8"}, w, io.Discard, sig)
		w.Close()
	}()
	lines := bufio.NewScanner(r)
	next := func() results.SidecarLine {
		t.Helper()
		require.True(t, lines.Scan(), "a line")
		l, err := results.ParseSidecarLine(lines.Bytes())
		require.NoError(t, err)
		return l
	}
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
