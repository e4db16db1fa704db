//go:build linux

package fitgo

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/testprog"
	"github.com/fitgo/fitgo/internal/testprog/cgv1"
)

// sidecar is a running internal/testprog/sidecar.
type sidecar struct {
	stdin io.WriteCloser
	lines chan string
}

// startSidecar starts the sidecar holding mibs MiB in the memory cgroup dir
// and waits until it holds them.
func startSidecar(t *testing.T, prog, dir string, mibs string) *sidecar {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" "$3"`, "sh", dir, prog, mibs)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &sidecar{stdin: stdin, lines: make(chan string, 10)}
	t.Cleanup(func() { cgv1.Stop(cmd, stdin) })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	s.expect(t, "held")
	return s
}

// expect waits for the line want; the wait only caps a hung sidecar.
func (s *sidecar) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-s.lines:
		require.Equal(t, want, got)
	case <-time.After(60 * time.Second):
		t.Fatalf("the sidecar did not say %q", want)
	}
}

// TestRealKernelV1Headroom: a 200 MiB sidecar shares a 512 MiB limit with a
// blank-import program, in a sibling cgroup under the limited parent and
// in the program's own limited cgroup. The program gets GOMEMLIMIT ≈
// 0.9 × (512 − 200) MiB, and 0.9 × 512 MiB once the sidecar frees its
// memory. The others also hold a few MiB of the sidecar's runtime and
// kernel memory: the value must be within 16 MiB × 0.9 below the exact
// figure. The waits only cap a hung program.
func TestRealKernelV1Headroom(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/testprog/blank")
	side := cgv1.Build(t, "./internal/testprog/sidecar")
	exact := int64(312 * mib * 9 / 10)
	for _, layout := range []string{"sibling", "co-process"} {
		t.Run(layout, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			sideDir, limited := cg.MemChild, cg.MemChild
			if layout == "sibling" {
				sideDir, limited = filepath.Join(cg.MemParent, "side"), cg.MemParent
				require.NoError(t, os.Mkdir(sideDir, 0o755))
				t.Cleanup(func() { removeDir(t, sideDir) })
			}
			cgv1.SetMemory(t, limited, 512*mib)
			s := startSidecar(t, side, sideDir, "200")
			c := cg.StartIn(t, prog, "FITGO=refresh=100ms")

			first, ok := c.Next(t, 30*time.Second)
			require.True(t, ok, "no output; stderr: %s", c.Stderr)
			t.Logf("init: %s", first.MemLimit)
			assert.Empty(t, first.Err)
			assert.LessOrEqual(t, first.GOMEMLIMIT, exact)
			assert.Greater(t, first.GOMEMLIMIT, exact-16*mib*9/10)
			assert.Contains(t, first.MemLimit, "memory.limit_in_bytes 512 MiB − others ")
			assert.Contains(t, first.MemLimit, " at "+limited)
			assert.True(t, first.MemLimitFollowing)

			s.stdin.Write([]byte("free\n"))
			s.expect(t, "freed")
			st, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
				return s.GOMEMLIMIT == 512*mib*9/10
			})
			assert.True(t, st.MemLimitFollowing, "raised to the whole limit: %+v", st)
		})
	}
}

// removeDir removes a cgroup made by the test, retrying while its
// processes exit.
func removeDir(t *testing.T, dir string) {
	for i := 0; i < 250; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("cannot remove test cgroup %s", dir)
}
