package cgroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWalkReadsTopBelowMountRoot: when the mount root is not "/" (a v1
// container that sees only its own cgroup), the top of the walk is a
// cgroup below the hierarchy's root and is read.
func TestWalkReadsTopBelowMountRoot(t *testing.T) {
	lim, err := ReadFS(mapFS(with(v1Container, map[string]string{
		"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "30000\n",
	})))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Millisecond, lim.CPU.Quota)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct", lim.CPU.Source)
}

// TestWalkReadsMountPoint: the mount point is the last level of the walk
// whatever the mount root: in a cgroup namespace of its own, "/" is a
// container's cgroup, often the very one with the limits. (The root cgroup
// of a whole hierarchy has none to find: v2 has no limit files there, v1
// shows "no limit".)
func TestWalkReadsMountPoint(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"v1": with(v1Base, map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n3:cpu,cpuacct:/\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "10000\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "104857600\n",
		}),
		"v2": with(v2Base, map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/cpu.max":    "10000 100000\n",
			"sys/fs/cgroup/memory.max": "104857600\n",
		}),
	} {
		t.Run(name, func(t *testing.T) {
			lim, err := ReadFS(mapFS(files))
			require.NoError(t, err)
			assert.Equal(t, lim.CPU.Mount, lim.CPU.Dir)
			assert.Equal(t, lim.CPU.Dir, lim.CPU.Source)
			assert.Equal(t, 10*time.Millisecond, lim.CPU.Quota)
			assert.Equal(t, int64(100<<20), lim.Memory.Max)

			w, err := NewWatcher(mapFS(files))
			require.NoError(t, err)
			defer w.Close()
			got, err := w.Read()
			sameResult(t, lim, nil, got, err)
		})
	}
}
