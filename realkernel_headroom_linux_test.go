//go:build linux

package fitgo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// sidecar is a running internal/rig/testprog/sidecar.
type sidecar struct {
	stdin io.WriteCloser
	lines chan string
}

// startSidecar starts the sidecar holding mibs MiB in the memory cgroup dir
// and waits until it holds them.
func startSidecar(t *testing.T, prog, dir string, mibs string) *sidecar {
	t.Helper()
	return startShell(t, dir, "held", `exec "$2" "$3"`, prog, mibs)
}

// startShell runs script in a shell in the memory cgroup dir, with args as
// $2..., and waits until it writes the line want.
func startShell(t *testing.T, dir, want, script string, args ...string) *sidecar {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$1/cgroup.procs" && ` + script, "sh", dir}, args...)...)
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
	s.expect(t, want)
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
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
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

// TestRealKernelV1HeadroomPageCache (issue 26, point 1): the program runs
// alone under 512 MiB, and 300 MiB of a file are read twice in its cgroup,
// by the program itself or by a neighbour process: the cgroup then holds
// 300 MiB of active file pages, which the kernel reclaims before it
// OOM-kills anyone. GOMEMLIMIT must stay 0.9 × 512 MiB. A 100 MiB sidecar
// started next proves the refresh has read the cache: the first value at or
// below 0.9 × (512 − 100) MiB must be within 16 MiB × 0.9 of it (the
// sidecar's runtime and kernel memory), and once the sidecar frees its
// memory GOMEMLIMIT must go back to 0.9 × 512 MiB without going lower on
// the way. The working set gave 0.9 × (512 − 300) MiB at the first tick
// after the reads, and then less.
func TestRealKernelV1HeadroomPageCache(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
	whole, exact := int64(512*mib*9/10), int64(412*mib*9/10)
	for _, reader := range []string{"own", "neighbour"} {
		t.Run(reader, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			cgv1.SetMemory(t, cg.MemChild, 512*mib)
			file := sparseFile(t, t.TempDir(), 300*mib) // read, its holes fill the page cache
			c := cg.StartIn(t, prog, "FITGO=refresh=100ms")
			first, ok := c.Next(t, 30*time.Second)
			require.True(t, ok, "no output; stderr: %s", c.Stderr)
			require.Equal(t, whole, first.GOMEMLIMIT, "alone: %s", first.MemLimit)

			if reader == "own" {
				for range 2 {
					c.Send(t, "read "+file)
					st, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Done != "" })
					require.Equal(t, "read", st.Done)
				}
			} else {
				startShell(t, cg.MemChild, "read", `cat "$2" >/dev/null && cat "$2" >/dev/null && echo read && exec cat`, file)
			}
			waitStat(t, cg.MemChild, "total_active_file", func(v int64) bool { return v >= 250*mib })

			low := exact - 16*mib*9/10
			s := startSidecar(t, side, cg.MemChild, "100")
			st, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
				return s.GOMEMLIMIT <= exact
			})
			t.Logf("first value at or below 0.9 × 412 MiB: %.1f MiB (%s)", float64(st.GOMEMLIMIT)/mib, statLine(t, cg.MemChild))
			assert.Greater(t, st.GOMEMLIMIT, low)

			// The sidecar frees its memory: back to the whole limit's value,
			// never below low on the way (the working set went on down as
			// the cache turned active).
			s.stdin.Write([]byte("free\n"))
			s.expect(t, "freed")
			st, _ = c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
				return s.GOMEMLIMIT == whole || s.GOMEMLIMIT <= low
			})
			t.Logf("then: %.1f MiB (%s)", float64(st.GOMEMLIMIT)/mib, statLine(t, cg.MemChild))
			assert.Equal(t, whole, st.GOMEMLIMIT)
		})
	}
}

// TestRealKernelV1HeadroomShmemElsewhere (issue 26, point 2): a 200 MiB
// sidecar shares the program's 512 MiB cgroup, and the program maps a
// 300 MiB tmpfs file whose pages a process in another cgroup wrote, so they
// are charged there. That RssShmem is not this cgroup's and must not cancel
// the sidecar: GOMEMLIMIT stays 0.9 × (512 − 200) MiB, and with a 50 MiB
// sidecar started next it goes down to 0.9 × (512 − 250) MiB (less up to
// 16 MiB × 0.9) before it goes up at all (before the fix it went up to
// 0.9 × 512 MiB after the mapping). Then the program, with GOGC=off, churns garbage up to
// its GOMEMLIMIT for 100 readings of its RssAnon: no OOM kill.
func TestRealKernelV1HeadroomShmemElsewhere(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
	owner, cg := cgv1.NewPair(t), cgv1.NewPair(t)
	shm, err := os.MkdirTemp("/dev/shm", "fitgo-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) }) // before owner's cgroups go
	file := filepath.Join(shm, "shared")
	startShell(t, owner.MemChild, "written", `dd if=/dev/zero of="$2" bs=1M count=300 2>/dev/null && echo written && exec cat`, file)
	waitStat(t, owner.MemChild, "total_shmem", func(v int64) bool { return v >= 290*mib }) // the kernel flushes its counters lazily

	cgv1.SetMemory(t, cg.MemChild, 512*mib)
	startSidecar(t, side, cg.MemChild, "200")
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms", "GOGC=off")
	first, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	exact := int64(312 * mib * 9 / 10)
	require.LessOrEqual(t, first.GOMEMLIMIT, exact, first.MemLimit)
	require.Greater(t, first.GOMEMLIMIT, exact-16*mib*9/10, first.MemLimit)

	c.Send(t, "map "+file)
	st, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Done != "" })
	require.Equal(t, "map", st.Done)
	pid := c.Cmd.Process.Pid
	assert.GreaterOrEqual(t, procStatus(t, pid, "RssShmem"), int64(290*mib), "the mapping is resident")
	assert.Less(t, statValue(t, cg.MemChild, "total_shmem"), int64(10*mib), "and charged elsewhere")

	startSidecar(t, side, cg.MemChild, "50")
	exact = int64(262 * mib * 9 / 10)
	st, _ = c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool {
		return s.GOMEMLIMIT <= exact || s.GOMEMLIMIT > first.GOMEMLIMIT
	})
	t.Logf("first value at or below 0.9 × 262 MiB, or up: %.1f MiB (%s)", float64(st.GOMEMLIMIT)/mib, statLine(t, cg.MemChild))
	assert.LessOrEqual(t, st.GOMEMLIMIT, exact)
	assert.Greater(t, st.GOMEMLIMIT, exact-16*mib*9/10)

	c.Send(t, "churn")
	st, _ = c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.Done != "" })
	require.Equal(t, "churn", st.Done)
	high := 0
	for i := 0; i < 3000 && high < 100; i++ {
		if anon, ok := procStatusOK(pid, "RssAnon"); !ok {
			break // killed
		} else if anon >= st.GOMEMLIMIT*3/4 {
			high++
		}
		time.Sleep(10 * time.Millisecond)
	}
	kills, _ := oomKills(t, cg.MemChild)
	t.Logf("%d readings of RssAnon at 3/4 of GOMEMLIMIT or more; %s", high, statLine(t, cg.MemChild))
	assert.Zero(t, kills, "the cgroup's oom_kill count")
	assert.Equal(t, 100, high, "the program churned at its GOMEMLIMIT")
}

// sparseFile is a file of size bytes in dir with no data written: reading
// it fills the page cache of the reader's cgroup, and no other's.
func sparseFile(t *testing.T, dir string, size int64) string {
	f, err := os.Create(filepath.Join(dir, "sparse"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	return f.Name()
}

// statValue is key of the v1 cgroup dir's memory.stat.
func statValue(t *testing.T, dir, key string) int64 {
	data, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + key + ` (\d+)$`).FindSubmatch(data)
	require.NotNil(t, m, "no %s in %s/memory.stat", key, dir)
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	return n
}

// waitStat waits until ok holds for key of dir's memory.stat, for at most
// 500 readings.
func waitStat(t *testing.T, dir, key string, ok func(int64) bool) {
	t.Helper()
	for range 500 {
		if ok(statValue(t, dir, key)) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s of %s: %d MiB, not as wanted", key, dir, statValue(t, dir, key)/mib)
}

// statLine is the usage and the main figures of dir's memory.stat, for the log.
func statLine(t *testing.T, dir string) string {
	usage, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	require.NoError(t, err)
	line := "usage " + strings.TrimSpace(string(usage))
	for _, k := range []string{"total_rss", "total_shmem", "total_active_file", "total_inactive_file"} {
		line += fmt.Sprintf(" %s %d MiB", k, statValue(t, dir, k)/mib)
	}
	return line
}

// procStatus is the field key (in kB) of /proc/pid/status, in bytes.
func procStatus(t *testing.T, pid int, key string) int64 {
	v, ok := procStatusOK(pid, key)
	require.True(t, ok, "no %s for process %d", key, pid)
	return v
}

func procStatusOK(pid int, key string) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	m := regexp.MustCompile(`(?m)^` + key + `:\s+(\d+) kB$`).FindSubmatch(data)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	return n << 10, err == nil
}

// TestRealKernelV1HeadroomUpperBound (issue 31, point 2): an upper bound is
// a limit like any other. A blank-import program with
// FITGO_MEMORY_LIMIT=512Mi, in a v1 cgroup with no limit or a looser 1 GiB
// one, shares it with a 200 MiB sidecar: it gets 0.9 × (512 − 200) MiB (less
// up to 16 MiB × 0.9 for the sidecar's runtime and kernel memory), and
// 0.9 × 512 MiB once the sidecar frees its memory; alone, it holds 150 MiB
// outside Go (anonymous mmap): 0.9 × (512 − 150) MiB within 8 %. Before the
// fix it got 0.9 × 512 MiB throughout. The waits only cap a hung program.
func TestRealKernelV1HeadroomUpperBound(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
	exact := int64(312 * mib * 9 / 10)
	for _, tc := range []struct {
		name  string
		limit int64 // of the program's cgroup; 0: none
		anon  bool  // memory outside Go instead of a sidecar
	}{
		{"sidecar, no cgroup limit", 0, false},
		{"sidecar, a looser 1 GiB cgroup limit", 1024 * mib, false},
		{"memory outside Go, no cgroup limit", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := cgv1.NewPair(t)
			if tc.limit > 0 {
				cgv1.SetMemory(t, cg.MemChild, tc.limit)
			}
			var s *sidecar
			if !tc.anon {
				s = startSidecar(t, side, cg.MemChild, "200")
			}
			c := cg.StartIn(t, prog, "FITGO=refresh=100ms", "FITGO_MEMORY_LIMIT=512Mi")
			first, ok := c.Next(t, 30*time.Second)
			require.True(t, ok, "no output; stderr: %s", c.Stderr)
			t.Logf("init: %s", first.MemLimit)
			require.Empty(t, first.Err)
			assert.True(t, first.MemLimitFollowing)
			if tc.anon {
				require.Equal(t, whole, first.GOMEMLIMIT, "alone, the bound's value: %s", first.MemLimit)
				do(t, c, "anon 150", "anon")
				st, _ := c.WaitFor(t, time.Now(), 20*time.Second, func(s testprog.State) bool {
					return float64(s.GOMEMLIMIT) <= float64(362*mib)*0.9*1.08
				})
				t.Logf("held: GOMEMLIMIT %.1f MiB, outside Go %.1f MiB", float64(st.GOMEMLIMIT)/mib, float64(st.NonGo)/mib)
				assert.True(t, within150(st.GOMEMLIMIT), "GOMEMLIMIT %d not within 8 %% of 0.9 × 362 MiB", st.GOMEMLIMIT)
				backToWhole(t, c, "unanon", st.GOMEMLIMIT)
				return
			}
			assert.LessOrEqual(t, first.GOMEMLIMIT, exact, first.MemLimit)
			assert.Greater(t, first.GOMEMLIMIT, exact-16*mib*9/10, first.MemLimit)
			assert.Contains(t, first.MemLimit, "FITGO_MEMORY_LIMIT 512 MiB − others ")
			assert.Contains(t, first.MemLimit, " at "+cg.MemChild)

			s.stdin.Write([]byte("free\n"))
			s.expect(t, "freed")
			st, _ := c.WaitFor(t, time.Now(), 60*time.Second, func(s testprog.State) bool { return s.GOMEMLIMIT == whole })
			assert.True(t, st.MemLimitFollowing, "raised to the bound's value: %+v", st)
		})
	}
}

// TestRealKernelV1HeadroomFloorInForce (issue 31, point 3): a blank-import
// program shares 512 MiB with a 200 MiB sidecar and steps its live heap up
// by 2 MiB at a time from 200 MiB, with a GC after each step, so that the
// floor walks through 0.9 to 0.95 × what is left. At each step, two refresh
// readings later, the GOMEMLIMIT in force must be the floor its Status
// reports, when it reports one; and some step must report one in that band.
// Before the fix the raise hysteresis held GOMEMLIMIT at the policy's value
// below a reported floor. The waits only cap a hung program.
func TestRealKernelV1HeadroomFloorInForce(t *testing.T) {
	cgv1.Require(t)
	prog := cgv1.Build(t, "./internal/rig/testprog/blank")
	side := cgv1.Build(t, "./internal/rig/testprog/sidecar")
	cg := cgv1.NewPair(t)
	cgv1.SetMemory(t, cg.MemChild, 512*mib)
	startSidecar(t, side, cg.MemChild, "200")
	c := cg.StartIn(t, prog, "FITGO=refresh=100ms,leakguard=off")
	first, ok := c.Next(t, 30*time.Second)
	require.True(t, ok, "no output; stderr: %s", c.Stderr)
	t.Logf("init: %s", first.MemLimit)
	require.Empty(t, first.Err)
	inBand := 0
	for live := 200; live <= 240; live += 2 {
		n := "2"
		if live == 200 {
			n = "200"
		}
		do(t, c, "heap "+n, "heap")
		c.Send(t, "gc")
		report := func(ms string) testprog.State {
			c.Send(t, "report "+ms)
			st, _ := c.WaitFor(t, time.Now(), 20*time.Second, func(s testprog.State) bool { return s.Report })
			return st
		}
		st := report("350")
		if st.Floor > 0 && st.Floor != st.GOMEMLIMIT {
			st = report("150") // a State reads Status and GOMEMLIMIT apart: one may race a reading
		}
		share := float64(st.Floor) / float64(st.Avail)
		t.Logf("live heap %d MiB: GOMEMLIMIT %.1f MiB, floor %.1f MiB (%.3f × the %.1f MiB left)", live,
			float64(st.GOMEMLIMIT)/mib, float64(st.Floor)/mib, share, float64(st.Avail)/mib)
		if st.Floor > 0 {
			require.Equal(t, st.Floor, st.GOMEMLIMIT, "live heap %d MiB: the floor reported is in force", live)
			if share > 0.9 && share < 0.945 {
				inBand++
			}
		}
	}
	assert.Positive(t, inBand, "no step had a floor between 0.9 and 0.945 × what is left")
}
