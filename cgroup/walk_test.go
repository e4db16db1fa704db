package cgroup

import (
	"errors"
	"io/fs"
	"sort"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nsFS is a MapFS whose proc/self/ns/cgroup is a link to link (or fails
// with linkErr), and that records the names it opens.
type nsFS struct {
	fstest.MapFS
	link    string
	linkErr error

	mu     sync.Mutex
	opened []string
	links  int
}

func (f *nsFS) Open(name string) (fs.File, error) {
	f.mu.Lock()
	f.opened = append(f.opened, name)
	f.mu.Unlock()
	return f.MapFS.Open(name)
}

func (f *nsFS) ReadLink(name string) (string, error) {
	f.mu.Lock()
	f.links++
	f.mu.Unlock()
	if name != "proc/self/ns/cgroup" {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrNotExist}
	}
	if f.linkErr != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: f.linkErr}
	}
	return f.link, nil
}

// openedFiles returns what was opened, sorted, without duplicates.
func (f *nsFS) openedFiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, n := range f.opened {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// noLinkFS hides nsFS's ReadLink: a file system that cannot read links.
type noLinkFS struct{ f *nsFS }

func (n noLinkFS) Open(name string) (fs.File, error) { return n.f.Open(name) }

const otherCgroupNS = "cgroup:[4026532412]"

// rootLimited is v1Base and a v2 equivalent where the root cgroup of the
// hierarchy holds limits tighter than /app's. A real kernel never shows
// that (the v1 root rejects them, the v2 root has no such files); here it
// tells whether the walk read the root.
var (
	v1RootLimited = with(v1Base, map[string]string{
		"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "10000\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "104857600\n",
	})
	v2RootLimited = with(v2Base, map[string]string{
		"sys/fs/cgroup/cpu.max":    "10000 100000\n",
		"sys/fs/cgroup/memory.max": "104857600\n",
	})
)

func TestWalkSkipsHierarchyRootInInitialNamespace(t *testing.T) {
	v1Root := []string{"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "sys/fs/cgroup/memory/memory.limit_in_bytes"}
	v2Root := []string{"sys/fs/cgroup/cpu.max", "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory.high"}
	tests := []struct {
		name     string
		files    map[string]string
		link     string
		linkErr  error
		noLink   bool
		wantRoot bool // the root's (impossible) limits were read and won
		rootIs   []string
	}{
		{name: "v1 initial namespace", files: v1RootLimited, link: initialCgroupNS, rootIs: v1Root},
		{name: "v1 other namespace", files: v1RootLimited, link: otherCgroupNS, wantRoot: true, rootIs: v1Root},
		{name: "v1 link unreadable", files: v1RootLimited, linkErr: errors.New("permission denied"), wantRoot: true, rootIs: v1Root},
		{name: "v1 no ReadLink", files: v1RootLimited, noLink: true, wantRoot: true, rootIs: v1Root},
		{name: "v1 no namespace file", files: v1RootLimited, linkErr: fs.ErrNotExist, wantRoot: true, rootIs: v1Root},
		{name: "v2 initial namespace", files: v2RootLimited, link: initialCgroupNS, rootIs: v2Root},
		{name: "v2 other namespace", files: v2RootLimited, link: otherCgroupNS, wantRoot: true, rootIs: v2Root},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, watch := range []bool{false, true} {
				f := &nsFS{MapFS: mapFS(tc.files), link: tc.link, linkErr: tc.linkErr}
				var fsys fs.FS = f
				if tc.noLink {
					fsys = noLinkFS{f}
				}
				var lim Limits
				var err error
				if watch {
					w, werr := NewWatcher(fsys)
					require.NoError(t, werr)
					lim, err = w.Read()
					w.Close()
				} else {
					lim, err = ReadFS(fsys)
				}
				require.NoError(t, err)
				if tc.wantRoot {
					assert.Equal(t, 10*time.Millisecond, lim.CPU.Quota, "watch=%v", watch)
					assert.Equal(t, int64(100<<20), lim.Memory.Max, "watch=%v", watch)
					assert.Subset(t, f.openedFiles(), tc.rootIs, "watch=%v", watch)
				} else {
					assert.Equal(t, lim.CPU.Dir, lim.CPU.Source, "watch=%v", watch)
					assert.Equal(t, lim.Memory.Dir, lim.Memory.MaxSource, "watch=%v", watch)
					assert.Greater(t, lim.CPU.Quota, 10*time.Millisecond, "watch=%v", watch)
					for _, name := range tc.rootIs {
						assert.NotContains(t, f.openedFiles(), name, "watch=%v", watch)
					}
				}
				if !tc.noLink {
					assert.Equal(t, 1, f.links, "the namespace is read once per discovery, watch=%v", watch)
				}
			}
		})
	}
}

// TestWalkInRootCgroup: a process in the root cgroup of the initial
// namespace has no limit, and nothing but the proc files is read.
func TestWalkInRootCgroup(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"v1": with(v1RootLimited, map[string]string{"proc/self/cgroup": "4:memory:/\n3:cpu,cpuacct:/\n"}),
		"v2": with(v2RootLimited, map[string]string{"proc/self/cgroup": "0::/\n"}),
	} {
		t.Run(name, func(t *testing.T) {
			f := &nsFS{MapFS: mapFS(files), link: initialCgroupNS}
			lim, err := ReadFS(f)
			require.NoError(t, err)
			assert.Equal(t, lim.CPU.Mount, lim.CPU.Dir)
			_, limited := lim.CPUQuota()
			assert.False(t, limited)
			_, limited = lim.MemoryMax()
			assert.False(t, limited)
			assert.Equal(t, []string{"proc/self/cgroup", "proc/self/mountinfo"}, f.openedFiles())

			w, err := NewWatcher(f)
			require.NoError(t, err)
			defer w.Close()
			got, err := w.Read()
			sameResult(t, lim, nil, got, err)

			// In a cgroup namespace the same "/" is the namespace's root,
			// a container's cgroup: its limits count.
			f = &nsFS{MapFS: mapFS(files), link: otherCgroupNS}
			lim, err = ReadFS(f)
			require.NoError(t, err)
			assert.Equal(t, 10*time.Millisecond, lim.CPU.Quota)
		})
	}
}

// TestWalkReadsTopBelowMountRoot: when the mount root is not "/" (a v1
// container that sees only its own cgroup), the top of the walk is a
// cgroup below the hierarchy's root and is read whatever the namespace.
func TestWalkReadsTopBelowMountRoot(t *testing.T) {
	f := &nsFS{MapFS: mapFS(with(v1Container, map[string]string{
		"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "30000\n",
	})), link: initialCgroupNS}
	lim, err := ReadFS(f)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Millisecond, lim.CPU.Quota)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct", lim.CPU.Source)
	assert.Zero(t, f.links, "no namespace question when no mount shows the whole hierarchy")
}
