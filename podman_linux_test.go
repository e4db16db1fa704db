//go:build linux

package fitgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/testprog/cgv1"
)

// TestPodmanCPULimitEnv runs the blank-import program in real containers
// (podman with runc) under a 1-CPU quota on their --cgroup-parent, which on
// cgroup v1 the container cannot see: its cpu hierarchy is mounted with its
// own cgroup as the root. Without FITGO_CPU_LIMIT, fitgo finds no CPU limit
// and GOMAXPROCS stays at the host's CPU count; with FITGO_CPU_LIMIT=1000
// (millicores, as the downward API writes limits.cpu with divisor 1m) it is
// 1, with the variable as the source; with a quota of the container's own
// below the variable, that quota binds and its cgroup is the source.
func TestPodmanCPULimitEnv(t *testing.T) {
	cgv1.Require(t)
	podman := requirePodman(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs at least 2 CPUs, so that a 1-CPU limit shows")
	}
	image := podmanImage(t, podman, "./internal/rig/testprog/blank")
	parent := fmt.Sprintf("fitgo-podman-%d-%08x", os.Getpid(), rand.Uint32())
	dir := filepath.Join(cgv1.CPU, parent)
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() { removeCgroupParent(t, parent) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte("100000"), 0))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("100000"), 0))

	for _, tc := range []struct {
		name  string
		args  []string
		procs int
		from  string // the start of the Result's CPU limit; "" for none
	}{
		{"unset", nil, runtime.NumCPU(), ""},
		{"millicores", []string{"-e", "FITGO_CPU_LIMIT=1000"}, 1, "CPU limit 1 cores from $FITGO_CPU_LIMIT"},
		{"own quota", []string{"--cpus=0.5", "-e", "FITGO_CPU_LIMIT=1500m"}, 1, "CPU limit 0.5 cores from /sys/fs/cgroup/cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, stderr := podmanRun(t, podman, parent, image, tc.args...)
			t.Logf("%s | %s", first.MaxProcs, stderr)
			assert.Equal(t, tc.procs, first.GOMAXPROCS)
			if tc.from == "" {
				assert.Contains(t, first.MaxProcs, "(unchanged: no CPU limit)")
				return
			}
			assert.Contains(t, first.MaxProcs, "; "+tc.from)
			source := tc.from[strings.LastIndex(tc.from, " ")+1:]
			assert.Contains(t, stderr, "GOMAXPROCS.source="+source)
		})
	}
}

// requirePodman skips the test unless podman and runc are installed, and
// returns podman's path.
func requirePodman(t *testing.T) string {
	t.Helper()
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("no podman in PATH (Debian: apt-get install podman runc)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("no runc in PATH: crun, podman's default, refuses a hybrid cgroup host")
	}
	return podman
}

// podmanImage builds pkg as a static binary /app, imports it as an image of
// its own and removes the image when the test ends.
func podmanImage(t *testing.T, podman, pkg string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	build := exec.Command("go", "build", "-o", filepath.Join(root, "app"), pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, out)
	tar := filepath.Join(t.TempDir(), "rootfs.tar")
	out, err = exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput()
	require.NoError(t, err, "tar: %s", out)
	image := fmt.Sprintf("localhost/fitgo-test-%d-%08x:latest", os.Getpid(), rand.Uint32())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err = exec.CommandContext(ctx, podman, "import", tar, image).CombinedOutput()
	require.NoError(t, err, "podman import: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command(podman, "rmi", "--force", image).CombinedOutput(); err != nil {
			t.Errorf("podman rmi %s: %v: %s", image, err, out)
		}
	})
	return image
}

// podmanRun runs the image's /app in a container under the cgroup parent
// with extra podman run arguments, and returns the program's first state
// and its stderr (the start-up line: with FITGO=refresh=off, at init, for
// /app exits before a first reading). The timeout is only a cap for a hung
// runtime.
func podmanRun(t *testing.T, podman, parent, image string, args ...string) (testprog.State, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, podman, append(append([]string{"--cgroup-manager=cgroupfs", "run", "--rm",
		"--runtime", "runc", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
		"--cgroup-parent=/" + parent, "-e", "FITGO=refresh=off"}, args...), image, "/app")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "podman run: %s", stderr.String())
	line, _, _ := strings.Cut(string(out), "\n")
	var s testprog.State
	require.NoError(t, json.Unmarshal([]byte(line), &s), "stdout: %s\nstderr: %s", out, stderr.String())
	return s, strings.TrimSpace(stderr.String())
}

// removeCgroupParent removes the directories named parent that podman and
// the test made at the top of every v1 hierarchy, innermost first. podman
// run returns before its conmon process has left its cgroup: a directory
// still busy is tried again, for up to a minute.
func removeCgroupParent(t *testing.T, parent string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent))
	deadline := time.Now().Add(time.Minute)
	for _, top := range dirs {
		var all []string
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			err := os.Remove(all[i])
			for errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				err = os.Remove(all[i])
			}
			if err != nil {
				t.Errorf("removing %s: %v", all[i], err)
			}
		}
	}
}
