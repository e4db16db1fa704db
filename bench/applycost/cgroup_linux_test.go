//go:build linux

package applycost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitedCgroup is a child cgroup this test created, with a CPU quota and a
// memory limit, and the cgroup.procs files a process must join.
type limitedCgroup struct {
	dirs  []string // created directories, removed by cleanup
	procs []string // cgroup.procs files to write the child's pid to
}

// ownDirs finds the calling process's cgroup directory for each v1 controller
// in want, from /proc/self/cgroup and /proc/self/mountinfo. It is written
// here, not taken from fitgo's cgroup package, so that the rig does not depend
// on the code being measured.
func ownDirs(want ...string) (map[string]string, error) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	paths := map[string]string{} // controller -> path in hierarchy
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[1] == "" {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mi))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, af := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(af) < 3 || af[0] != "cgroup" {
			continue
		}
		root, mnt := pf[3], pf[4]
		for _, opt := range strings.Split(af[2], ",") {
			p, ok := paths[opt]
			if !ok {
				continue
			}
			rel := p
			if root != "/" {
				var ok bool
				if rel, ok = strings.CutPrefix(p, root); !ok || (rel != "" && rel[0] != '/') {
					continue // our cgroup is outside this mount's view
				}
			}
			dirs[opt] = filepath.Join(mnt, rel)
		}
	}
	for _, c := range want {
		if _, ok := dirs[c]; !ok {
			return nil, fmt.Errorf("no cgroup v1 hierarchy with the %s controller is mounted", c)
		}
	}
	return dirs, nil
}

// newLimitedCgroup creates a uniquely named child of the calling process's
// cpu and memory cgroups (v1) with quota/period CPUs and memBytes of memory,
// or skips the test saying why it cannot. Cleanup always removes it.
func newLimitedCgroup(t *testing.T, quota, period time.Duration, memBytes int64) *limitedCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups (run as root on a host with cgroup v1 cpu and memory hierarchies)")
	}
	dirs, err := ownDirs("cpu", "memory")
	if err != nil {
		t.Skipf("needs writable cgroup v1 cpu and memory hierarchies: %v", err)
	}
	name := fmt.Sprintf("fitgo-applycost-%d-%d", os.Getpid(), time.Now().UnixNano())
	cg := &limitedCgroup{}
	t.Cleanup(func() {
		if err := cg.remove(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, c := range []string{"cpu", "memory"} {
		dir := filepath.Join(dirs[c], name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cannot create a %s cgroup under %s: %v", c, dirs[c], err)
		}
		cg.dirs = append(cg.dirs, dir)
		cg.procs = append(cg.procs, filepath.Join(dir, "cgroup.procs"))
	}
	write := func(file, val string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(val), 0); err != nil {
			t.Fatalf("write %s: %v", file, err)
		}
	}
	write(filepath.Join(cg.dirs[0], "cpu.cfs_period_us"), fmt.Sprint(period.Microseconds()))
	write(filepath.Join(cg.dirs[0], "cpu.cfs_quota_us"), fmt.Sprint(quota.Microseconds()))
	write(filepath.Join(cg.dirs[1], "memory.limit_in_bytes"), fmt.Sprint(memBytes))
	return cg
}

// remove moves any process left in the cgroups to their parents and removes
// the directories, retrying while the kernel finishes reaping an exited child.
func (cg *limitedCgroup) remove() error {
	var errs []error
	for i := len(cg.dirs) - 1; i >= 0; i-- {
		dir := cg.dirs[i]
		var err error
		for try := 0; try < 50; try++ {
			if procs, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
				for _, pid := range strings.Fields(string(procs)) {
					_ = os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(pid), 0)
				}
			}
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
