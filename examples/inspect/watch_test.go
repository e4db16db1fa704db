package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

func TestWatchLine(t *testing.T) {
	w, err := cgroup.NewWatcher(os.DirFS(filepath.Join("..", "..", "cgroup", "testdata", "stats-v2")))
	require.NoError(t, err)
	defer w.Close()
	lim, err := w.Read()
	require.NoError(t, err)
	cur, err := w.Stats()
	require.NoError(t, err)
	prev := cur
	prev.CPU.Periods -= 10
	prev.CPU.ThrottledPeriods -= 4
	prev.CPU.ThrottledTime -= 300 * time.Millisecond
	prev.Memory.Events.Max -= 2
	now := time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC)
	assert.Equal(t, "14:05:00  throttled 4/10 periods (40%) 300ms of 0.5 cores  working set 38.0 MiB of 256.0 MiB (15%)"+
		"  events max +2 oom_kill +0 high +0  pressure avg10 cpu 12.34% memory 0.00% io 1.50%",
		watchLine(now, lim, prev, cur))
	// The first line counts from zero: since the cgroup was created.
	assert.Contains(t, watchLine(now, lim, cgroup.Stats{}, cur), "throttled 24/30 periods (80%) 1.1s")
	// Nothing available.
	assert.Equal(t, "14:05:00  throttling n/a  memory n/a  pressure n/a", watchLine(now, cgroup.Limits{}, cgroup.Stats{}, cgroup.Stats{}))
}

// TestWatchTicks: one line at start and one per tick, until the context ends.
func TestWatchTicks(t *testing.T) {
	w, err := cgroup.NewWatcher(os.DirFS(filepath.Join("..", "..", "cgroup", "testdata", "stats-v1")))
	require.NoError(t, err)
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ticks := make(chan time.Time)
	var out bytes.Buffer
	done := make(chan error)
	go func() { done <- watch(ctx, &out, w, ticks) }()
	ticks <- time.Now()
	ticks <- time.Now()
	cancel()
	require.NoError(t, <-done)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3, out.String())
	assert.Contains(t, lines[0], "throttled 12/15 periods")
	assert.Contains(t, lines[0], "  working set 32.0 MiB of 256.0 MiB (12%)  events max +3 oom_kill +2  pressure n/a",
		"v1: memory.failcnt as max and oom_kill since the cgroup was created, no high")
	assert.Contains(t, lines[1], "events max +0 oom_kill +0")
	assert.Contains(t, lines[1], "throttled 0/0 periods", "nothing changed in the fixture")
	assert.Contains(t, lines[2], "pressure n/a", "no PSI on v1")
}

// TestWatchInterrupt runs the built program with -watch and interrupts it
// after its first line, as Ctrl-C does: it ends with status 0.
func TestWatchInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program; skipped with -short")
	}
	if _, err := cgroup.Read(); errors.Is(err, cgroup.ErrNoCgroup) {
		t.Skipf("skipped: no cgroup here: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "inspect")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-watch")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Process.Kill()
		cmd.Wait() // stderr is complete after Wait
		t.Fatalf("no first line: %v; stderr: %s", sc.Err(), stderr.String())
	}
	assert.Contains(t, sc.Text(), "throttl")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
	}
	err = cmd.Wait()
	require.NoError(t, err, "exit status after SIGINT; stderr: %s", stderr.String())
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
}
