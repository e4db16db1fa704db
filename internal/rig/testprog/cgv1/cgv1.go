// Package cgv1 runs the test programs in cgroup v1 cgroups that a test makes
// for itself (a parent with a child, in the cpu and memory hierarchies),
// as root on a host with writable v1 hierarchies. It skips elsewhere and
// says why. The library's real-kernel tests and the bench module's
// coexistence test share it.
package cgv1

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
)

// The v1 hierarchies.
const (
	CPU    = "/sys/fs/cgroup/cpu"
	Memory = "/sys/fs/cgroup/memory"
)

// Require skips the test unless it can make cgroups in writable v1 cpu and
// memory hierarchies, and under -short (the contributor's loop: these tests
// run programs in real cgroups for seconds each).
func Require(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs in real v1 cgroups; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	for _, h := range []struct{ dir, file string }{
		{CPU, "cpu.cfs_quota_us"},
		{Memory, "memory.limit_in_bytes"},
	} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(h.dir, &st); err != nil || st.Type != 0x27e0eb { // CGROUP_SUPER_MAGIC
			t.Skipf("no cgroup v1 hierarchy at %s", h.dir)
		}
		if _, err := os.Stat(filepath.Join(h.dir, h.file)); err != nil {
			t.Skipf("no %s in %s: %v", h.file, h.dir, err)
		}
		if syscall.Access(h.dir, 2 /* W_OK */) != nil {
			t.Skipf("%s is not writable", h.dir)
		}
	}
}

// Pair is a parent cgroup with a child "app", in both the cpu and memory
// hierarchies, removed when the test ends.
type Pair struct {
	CPUParent, MemParent string
	CPUChild, MemChild   string
}

// NewPair makes a Pair with a name of its own.
func NewPair(t *testing.T) *Pair {
	t.Helper()
	name := fmt.Sprintf("fitgo-test-%d-%08x", os.Getpid(), rand.Uint32())
	p := &Pair{CPUParent: filepath.Join(CPU, name), MemParent: filepath.Join(Memory, name)}
	p.CPUChild = filepath.Join(p.CPUParent, "app")
	p.MemChild = filepath.Join(p.MemParent, "app")
	for _, dir := range []string{p.CPUParent, p.CPUChild, p.MemParent, p.MemChild} {
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { remove(t, dir) })
	}
	return p
}

// remove removes a cgroup directory made by the test, retrying while the
// killed process is being reaped.
func remove(t *testing.T, dir string) {
	var err error
	for i := 0; i < 100; i++ {
		if err = syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("cannot remove test cgroup %s: %v", dir, err)
}

// WriteFile writes value to a cgroup file.
func WriteFile(t *testing.T, path string, value string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(value), 0o644), path)
}

// SetCPU gives the cpu cgroup dir a quota of quotaMicros per 100ms period.
func SetCPU(t *testing.T, dir string, quotaMicros int) {
	WriteFile(t, filepath.Join(dir, "cpu.cfs_period_us"), "100000")
	WriteFile(t, filepath.Join(dir, "cpu.cfs_quota_us"), strconv.Itoa(quotaMicros))
}

// SetMemory gives the memory cgroup dir a limit of bytes.
func SetMemory(t *testing.T, dir string, bytes int64) {
	WriteFile(t, filepath.Join(dir, "memory.limit_in_bytes"), strconv.FormatInt(bytes, 10))
}

// SetParentCPU and SetParentMemory set the parent's limits.
func (p *Pair) SetParentCPU(t *testing.T, quotaMicros int) { SetCPU(t, p.CPUParent, quotaMicros) }

// SetParentMemory sets the parent's memory limit.
func (p *Pair) SetParentMemory(t *testing.T, bytes int64) { SetMemory(t, p.MemParent, bytes) }

// SetChildCPU sets the child's CPU quota.
func (p *Pair) SetChildCPU(t *testing.T, quotaMicros int) { SetCPU(t, p.CPUChild, quotaMicros) }

// Build builds a test program into a temporary directory. It skips the
// test under -short: a build takes seconds.
func Build(t *testing.T, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a test program; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the test program")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

// Child is a running test program.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	States chan testprog.State
	Stderr *SyncBuffer
}

// SyncBuffer is a bytes.Buffer that the process's stderr copier and the
// test may use at the same time.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// StartIn starts prog inside the child cgroups: a shell moves itself there
// and then executes the program, so that fitgo's init already runs inside.
// GOMAXPROCS, GOMEMLIMIT, GODEBUG, FITGO and AUTOMEMLIMIT come from env
// only.
func (p *Pair) StartIn(t *testing.T, prog string, env ...string) *Child {
	t.Helper()
	script := `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && exec "$3"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", p.CPUChild, p.MemChild, prog)
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GOMAXPROCS", "GOMEMLIMIT", "GODEBUG", "FITGO", "AUTOMEMLIMIT":
			continue // the test decides these
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	c := &Child{Cmd: cmd, States: make(chan testprog.State, 100), Stderr: new(SyncBuffer)}
	cmd.Stderr = c.Stderr
	var err error
	c.Stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { Stop(cmd, c.Stdin) })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var s testprog.State
			if err := json.Unmarshal(sc.Bytes(), &s); err == nil {
				c.States <- s
			}
		}
		close(c.States)
	}()
	return c
}

// Next returns the next state line, or false after timeout.
func (c *Child) Next(t *testing.T, timeout time.Duration) (testprog.State, bool) {
	t.Helper()
	select {
	case s, ok := <-c.States:
		return s, ok
	case <-time.After(timeout):
		return testprog.State{}, false
	}
}

// WaitFor waits until the program reports a state for which ok holds, and
// returns it with the time it took since since; it fails the test after
// timeout.
func (c *Child) WaitFor(t *testing.T, since time.Time, timeout time.Duration, ok func(testprog.State) bool) (testprog.State, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, more := c.Next(t, time.Until(deadline))
		if !more {
			t.Fatalf("no matching state within %v (stderr: %s)", timeout, c.Stderr)
		}
		if ok(s) {
			return s, time.Since(since)
		}
	}
}

// Stop ends a started child: it closes its stdin, which the test programs
// take as the end, and kills it if it has not exited 5 s later.
func Stop(cmd *exec.Cmd, stdin io.Closer) {
	stdin.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Send writes a command line to the program.
func (c *Child) Send(t *testing.T, cmd string) {
	t.Helper()
	_, err := io.WriteString(c.Stdin, cmd+"\n")
	require.NoError(t, err)
}
