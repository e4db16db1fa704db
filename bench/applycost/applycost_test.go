package applycost

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sides are the contenders, fitgo first.
func sides() []Side { return []Side{Anchors()} }

// BenchmarkApply times each side's Apply from the reset state. Outside a
// cgroup with limits both sides return early: see TestApplyCostInCgroup.
func BenchmarkApply(b *testing.B) {
	for _, s := range sides() {
		b.Run(s.Name, func(b *testing.B) { Bench(b, s) })
	}
}

const (
	childEnv  = "FITGO_APPLYCOST_CHILD"
	roundsEnv = "FITGO_APPLYCOST_ROUNDS"
	outEnv    = "FITGO_APPLYCOST_OUT"
)

// TestInterleavedChild is the comparison itself. It runs only inside the
// cgroup that TestApplyCostInCgroup creates, and prints what each side sets
// ("state" lines) and then the benchmark lines of every round.
func TestInterleavedChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("runs inside the limited cgroup that TestApplyCostInCgroup creates")
	}
	rounds := 9
	if v := os.Getenv(roundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, roundsEnv)
		rounds = n
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		fmt.Printf("cgroup %s\n", line)
	}
	for _, s := range sides() {
		st, err := Check(s)
		require.NoError(t, err)
		fmt.Printf("state %s gomaxprocs=%d gomemlimit=%d\n", s.Name, st.GOMAXPROCS, st.GOMEMLIMIT)
	}
	require.NoError(t, Interleave(os.Stdout, rounds, sides()...))
}

// TestApplyCostInCgroup builds this package's test binary, runs the
// interleaved comparison in a fresh child cgroup with 1 CPU and 512 MiB, and
// reports the medians and the ratio.
func TestApplyCostInCgroup(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("this is the child")
	}
	if testing.Short() {
		t.Skip("takes about 20 s; not in -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux cgroups")
	}
	const memLimit = 512 << 20
	cg := newLimitedCgroup(t, 100*time.Millisecond, 100*time.Millisecond, memLimit)

	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "applycost.test")
	build := exec.Command(goBin, "test", "-c", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go test -c: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The shell joins the cgroups, then execs the binary, which is born there.
	script := `p=$$; while [ "$1" != -- ]; do echo "$p" > "$1" || exit 97; shift; done; shift; exec "$@"`
	args := []string{"-c", script, "sh"}
	args = append(args, cg.procs...)
	args = append(args, "--", bin, "-test.run=^TestInterleavedChild$", "-test.benchtime=200ms", "-test.count=1")
	cmd := exec.CommandContext(ctx, "/bin/sh", args...)
	cmd.Env = append(cleanEnv(), childEnv+"=1")
	if v := os.Getenv(roundsEnv); v != "" {
		cmd.Env = append(cmd.Env, roundsEnv+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "child: %s\n%s", stdout.String(), stderr.String())
	if path := os.Getenv(outEnv); path != "" {
		require.NoError(t, os.WriteFile(path, stdout.Bytes(), 0o644))
	}

	// Both sides must have found both limits: GOMAXPROCS 1 on this 2-core
	// machine and GOMEMLIMIT about 0.9 × 512 MiB. Otherwise the benchmark
	// would time an early return.
	states := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		var name string
		var procs int
		var limit int64
		if _, err := fmt.Sscanf(line, "state %s gomaxprocs=%d gomemlimit=%d", &name, &procs, &limit); err != nil {
			continue
		}
		states++
		assert.Equal(t, 1, procs, "%s GOMAXPROCS in a 1-CPU cgroup", name)
		assert.InDelta(t, 0.9*memLimit, float64(limit), 0.01*memLimit, "%s GOMEMLIMIT under a 512 MiB limit", name)
	}
	require.Equal(t, len(sides()), states, "state lines from the child:\n%s", stdout.String())

	runs, err := ParseRuns(&stdout)
	require.NoError(t, err)
	sums := Summarize(runs)
	require.Len(t, sums, len(sides()))
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, sums))
	t.Logf("inside a cgroup with 1 CPU and 512 MiB, %d interleaved rounds:\n%s", sums[0].Runs, table.String())
}

// cleanEnv is the environment without the variables that make either side
// skip its work.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GOMAXPROCS", k == "GOMEMLIMIT", k == "AUTOMEMLIMIT", k == "GODEBUG", strings.HasPrefix(k, "FITGO_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}
