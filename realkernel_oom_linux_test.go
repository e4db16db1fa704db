//go:build linux

package fitgo

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// oomLimit is the v1 limit of the OOM capture's tests, and oomStep the
// MiB a step of growth adds, a step every oomPace: about 30 MiB/s.
const (
	oomLimit = 192 * mib
	oomStep  = "8"
	oomPace  = 250 * time.Millisecond
)

// startOOMCase starts prog, a blank-import program, alone in a new pair of
// cgroups under oomLimit, with the OOM capture into a new directory.
func startOOMCase(t *testing.T, prog string) (*cgv1.Pair, *cgv1.Child, string) {
	t.Helper()
	dir := t.TempDir()
	cg := cgv1.NewPair(t)
	cgv1.SetMemory(t, cg.MemChild, oomLimit)
	ch := cg.StartIn(t, prog, "FITGO=refresh=100ms,oomprofile="+dir)
	first, ok := ch.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", ch.Stderr)
	require.Empty(t, first.Err)
	return cg, ch, dir
}

// growToKill sends cmd every oomPace until the program is killed: its
// output ends. The wait only caps a hung program.
func growToKill(t *testing.T, ch *cgv1.Child, cmd string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		io.WriteString(ch.Stdin, cmd+"\n") // fails once it is dead
		for done := false; !done; {
			s, more := ch.Next(t, time.Until(deadline))
			if !more {
				require.Error(t, ch.Cmd.Wait(), "killed")
				return
			}
			done = s.Done != ""
		}
		time.Sleep(oomPace)
	}
	t.Fatalf("not killed within 3 minutes; stderr: %s", ch.Stderr)
}

// oomBreakdown is the breakdown of the one capture in dir, whose heap
// profile beside it opens with go tool pprof -top.
func oomBreakdown(t *testing.T, dir string) string {
	t.Helper()
	txt, _ := filepath.Glob(filepath.Join(dir, "oom-*.txt"))
	require.Len(t, txt, 1, "one capture")
	data, err := os.ReadFile(txt[0])
	require.NoError(t, err)
	profile := txt[0][:len(txt[0])-len(".txt")] + ".pb.gz"
	out, err := exec.Command("go", "tool", "pprof", "-top", profile).CombinedOutput()
	assert.NoError(t, err, "the heap profile opens: %s", out)
	t.Logf("%s:\n%s", filepath.Base(txt[0]), data)
	return string(data)
}

// TestRealKernelV1OOMCaptureHeap: a blank-import program whose Go heap grows
// to an OOM kill under a 192 MiB v1 limit leaves a capture written before
// the kill (it is dead after), which names the Go runtime; the next process
// with the same directory says so in its start-up line.
func TestRealKernelV1OOMCaptureHeap(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	cg, ch, dir := startOOMCase(t, prog)
	growToKill(t, ch, "heap "+oomStep)
	assert.Contains(t, ch.Stderr.String(), "OOM capture written")
	assert.Contains(t, oomBreakdown(t, dir), "largest holder: the Go runtime,")

	next := cg.StartIn(t, prog, "FITGO=refresh=100ms,oomprofile="+dir)
	for i := 0; i < 300 && !strings.Contains(next.Stderr.String(), "fitgo: fitted"); i++ { // the wait only caps a hung program
		time.Sleep(100 * time.Millisecond)
	}
	assert.Contains(t, next.Stderr.String(), "the previous process wrote an OOM capture at ")
	t.Logf("the next start-up line: %s", next.Stderr)
}

// TestRealKernelV1OOMCaptureCgo: the same with C memory (cgo's malloc): the
// capture names the memory outside Go.
func TestRealKernelV1OOMCaptureCgo(t *testing.T) {
	cgv1.Require(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to build the cgo test program")
	}
	_, ch, dir := startOOMCase(t, cgv1.Build(t, "./internal/rig/testprog/blankcgo"))
	growToKill(t, ch, "cmalloc "+oomStep)
	assert.Contains(t, ch.Stderr.String(), "OOM capture written")
	assert.Contains(t, oomBreakdown(t, dir), "largest holder: outside Go (cgo, mmap),")
}

// TestRealKernelV1OOMCaptureCoProcess: co-processes of oomStep MiB each
// join the program's cgroup until the kernel OOM-kills one: the capture is
// in the directory when the test sees the kill, and names the others.
func TestRealKernelV1OOMCaptureCoProcess(t *testing.T) {
	cgv1.Require(t)
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
	cg, ch, dir := startOOMCase(t, cgv1.Build(t, "./internal/rig/testprog/blank"))
	deadline := time.Now().Add(3 * time.Minute)
	for held := true; held; time.Sleep(oomPace) {
		require.True(t, time.Now().Before(deadline), "no OOM kill within 3 minutes")
		cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" "$3"`, "sh", cg.MemChild, side, oomStep)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cgv1.Stop(cmd, stdin) })
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		kills, _ := oomKills(t, cg.MemChild)
		held = line == "held\n" && kills == 0
	}
	txt, _ := filepath.Glob(filepath.Join(dir, "oom-*.txt"))
	require.NotEmpty(t, txt, "a capture before the kill")
	assert.Contains(t, oomBreakdown(t, dir), "largest holder: others (processes, tmpfs),")
	assert.Contains(t, ch.Stderr.String(), "OOM capture written")
}
