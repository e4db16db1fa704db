package local

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeKernel stands in for cgroupfs in a temporary directory: mkdir populates a
// cgroup's files, writes to cgroup.procs move a process (append semantics),
// and on v2 cgroup.subtree_control refuses to enable controllers in a
// non-root cgroup that holds processes (EBUSY), as the kernel does.
type fakeKernel struct {
	t    *testing.T
	root string
	v2   bool
	// denied lists parent directories where mkdir fails with EACCES.
	denied []string
	// v2Root is the unified hierarchy's mount point.
	v2Root string
}

func (k *fakeKernel) sysfs() sysfs {
	return sysfs{root: k.root, fake: true, onMkdir: k.mkdir, onWrite: k.write}
}

func (k *fakeKernel) path(p string) string { return filepath.Join(k.root, filepath.FromSlash(p)) }

func (k *fakeKernel) put(p, content string) {
	k.t.Helper()
	require.NoError(k.t, os.MkdirAll(filepath.Dir(k.path(p)), 0o755))
	require.NoError(k.t, os.WriteFile(k.path(p), []byte(content), 0o644))
}

func (k *fakeKernel) get(p string) string {
	k.t.Helper()
	b, err := os.ReadFile(k.path(p))
	require.NoError(k.t, err, p)
	return string(b)
}

func (k *fakeKernel) exists(p string) bool {
	_, err := os.Stat(k.path(p))
	return err == nil
}

func (k *fakeKernel) mkdir(p string) error {
	if slices.Contains(k.denied, path.Dir(p)) {
		return syscall.EACCES
	}
	k.populate(p)
	return nil
}

// populate creates the files the kernel would create in a new cgroup.
func (k *fakeKernel) populate(p string) {
	k.put(path.Join(p, "cgroup.procs"), "")
	if k.v2 {
		k.put(path.Join(p, "cgroup.controllers"), k.childControllers(path.Dir(p)))
		k.put(path.Join(p, "cgroup.subtree_control"), "")
		k.put(path.Join(p, "cpu.max"), "max 100000\n")
		k.put(path.Join(p, "cpu.stat"), "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
		k.put(path.Join(p, "memory.max"), "max\n")
		k.put(path.Join(p, "memory.swap.max"), "max\n")
		k.put(path.Join(p, "memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
		return
	}
	if strings.Contains(p, "/cpu") {
		k.put(path.Join(p, "cpu.cfs_quota_us"), "-1\n")
		k.put(path.Join(p, "cpu.cfs_period_us"), "100000\n")
		k.put(path.Join(p, "cpu.stat"), "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
	}
	if strings.Contains(p, "/memory") {
		k.put(path.Join(p, "memory.limit_in_bytes"), "9223372036854771712\n")
		k.put(path.Join(p, "memory.memsw.limit_in_bytes"), "9223372036854771712\n")
		k.put(path.Join(p, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
		k.put(path.Join(p, "memory.use_hierarchy"), "1\n")
		k.put(path.Join(p, "memory.failcnt"), "0\n")
		k.put(path.Join(p, "memory.usage_in_bytes"), "0\n")
	}
}

func (k *fakeKernel) childControllers(parent string) string {
	if !k.exists(path.Join(parent, "cgroup.subtree_control")) {
		return ""
	}
	return strings.TrimSpace(k.get(path.Join(parent, "cgroup.subtree_control")))
}

func (k *fakeKernel) procs(dir string) []string {
	if !k.exists(path.Join(dir, "cgroup.procs")) {
		return nil
	}
	return strings.Fields(k.get(path.Join(dir, "cgroup.procs")))
}

func (k *fakeKernel) write(p, v string) (bool, error) {
	dir, file := path.Split(p)
	dir = path.Clean(dir)
	switch file {
	case "cgroup.procs":
		// Move the process: out of every other cgroup, into this one.
		err := filepath.WalkDir(k.root, func(fp string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return err
			}
			b, _ := os.ReadFile(fp)
			left := slices.DeleteFunc(strings.Fields(string(b)), func(s string) bool { return s == v })
			return os.WriteFile(fp, []byte(strings.Join(left, "\n")), 0o644)
		})
		if err != nil {
			return true, err
		}
		k.put(p, strings.Join(append(k.procs(dir), v), "\n"))
		return true, nil
	case "cgroup.subtree_control":
		cur := strings.Fields(k.get(p))
		for _, op := range strings.Fields(v) {
			c := op[1:]
			switch op[0] {
			case '+':
				if dir != k.v2Root && len(k.procs(dir)) > 0 {
					return true, syscall.EBUSY
				}
				if !slices.Contains(cur, c) {
					cur = append(cur, c)
				}
			case '-':
				cur = slices.DeleteFunc(cur, func(s string) bool { return s == c })
			}
		}
		k.put(p, strings.Join(cur, " "))
		return true, nil
	}
	return false, nil
}

// newFakeV1 is a v1 host like this project's CI machine: cpu and memory
// hierarchies mounted separately, the process in /user of the memory one.
func newFakeV1(t *testing.T) *fakeKernel {
	k := &fakeKernel{t: t, root: t.TempDir()}
	k.put("/proc/self/mountinfo", strings.Join([]string{
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
		"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
		"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd",
	}, "\n")+"\n")
	k.put("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/user\n2:cpuacct:/\n1:cpu:/\n")
	k.populate("/sys/fs/cgroup/cpu")
	k.populate("/sys/fs/cgroup/memory")
	k.populate("/sys/fs/cgroup/memory/user")
	k.put("/sys/fs/cgroup/memory/user/memory.stat", "cache 0\nhierarchical_memory_limit 9223372036854771712\n")
	k.put("/sys/fs/cgroup/memory/memory.stat", "cache 0\nhierarchical_memory_limit 9223372036854771712\n")
	return k
}

// newFakeV2 is a unified host with the process in /user.slice/app.scope,
// which holds two processes (the runner and its parent) and may enable the
// cpu and memory controllers for children.
func newFakeV2(t *testing.T) *fakeKernel {
	k := &fakeKernel{t: t, root: t.TempDir(), v2: true, v2Root: "/sys/fs/cgroup"}
	k.put("/proc/self/mountinfo", "41 23 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n")
	k.put("/proc/self/cgroup", "0::/user.slice/app.scope\n")
	k.populate("/sys/fs/cgroup")
	k.put("/sys/fs/cgroup/cgroup.controllers", "cpu memory io")
	k.put("/sys/fs/cgroup/cgroup.subtree_control", "memory")
	require.NoError(t, os.MkdirAll(k.path("/sys/fs/cgroup/user.slice"), 0o755))
	k.populate("/sys/fs/cgroup/user.slice")
	k.put("/sys/fs/cgroup/user.slice/cgroup.subtree_control", "cpu memory")
	require.NoError(t, os.MkdirAll(k.path("/sys/fs/cgroup/user.slice/app.scope"), 0o755))
	k.populate("/sys/fs/cgroup/user.slice/app.scope")
	k.put("/sys/fs/cgroup/user.slice/app.scope/cgroup.procs", "100\n200\n")
	return k
}
