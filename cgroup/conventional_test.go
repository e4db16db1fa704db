package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// magicFS is nsFS with ReadFileIntoMagic: the file system of a name is the
// magic of its longest prefix in magics (0 when none).
type magicFS struct {
	*nsFS
	magics  map[string]int64
	readErr error // returned by ReadFileIntoMagic when set
}

func (m *magicFS) ReadFileIntoMagic(name string, buf []byte, _ bool) ([]byte, int64, error) {
	m.mu.Lock()
	m.opened = append(m.opened, name)
	m.mu.Unlock()
	if m.readErr != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: name, Err: m.readErr}
	}
	data, err := fs.ReadFile(m.MapFS, name)
	if err != nil {
		return nil, 0, err
	}
	best, magic := -1, int64(0)
	for prefix, v := range m.magics {
		if strings.HasPrefix(name, prefix) && len(prefix) > best {
			best, magic = len(prefix), v
		}
	}
	return append(buf[:0], data...), magic, nil
}

var self = strconv.Itoa(os.Getpid()) + "\n"

// v2Container is a Kubernetes container on cgroup v2 with its own cgroup
// namespace: everything at /sys/fs/cgroup, the container's cgroup.
var v2Container = map[string]string{
	"proc/self/cgroup":           "0::/\n",
	"proc/self/mountinfo":        "1 0 8:1 / / rw - overlay overlay rw\n" + v2Mounts,
	"sys/fs/cgroup/cgroup.procs": "1\n" + self,
	"sys/fs/cgroup/cpu.max":      "150000 100000\n",
	"sys/fs/cgroup/memory.max":   "536870912\n",
	"sys/fs/cgroup/memory.high":  "max\n",
}

// v1Host is v1Base with the process listed in its cgroups.
var v1Host = with(v1Base, map[string]string{
	"sys/fs/cgroup/cpu,cpuacct/app/cgroup.procs": self,
	"sys/fs/cgroup/memory/app/cgroup.procs":      "7\n" + self + "9\n",
})

var cgroupMagics = map[string]int64{"sys/fs/cgroup/": cgroup2SuperMagic}

var v1Magics = map[string]int64{"sys/fs/cgroup/": 0x01021994 /* tmpfs */, "sys/fs/cgroup/cpu,cpuacct/": cgroupSuperMagic, "sys/fs/cgroup/memory/": cgroupSuperMagic}

func TestConventionalMountWithoutMountinfo(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		magics map[string]int64
		link   string
		// reads are the files read besides proc/self/cgroup, in order.
		reads []string
	}{
		{
			name: "v2 container", files: v2Container, magics: cgroupMagics, link: otherCgroupNS,
			reads: []string{"sys/fs/cgroup/cgroup.procs", "sys/fs/cgroup/cpu.max", "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory.high"},
		},
		{
			name: "v1 host", files: v1Host, magics: v1Magics, link: initialCgroupNS,
			reads: []string{
				"sys/fs/cgroup/cpu,cpuacct/app/cgroup.procs", "sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us",
				"sys/fs/cgroup/memory/app/cgroup.procs", "sys/fs/cgroup/memory/app/memory.limit_in_bytes",
				"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The same files without ReadFileIntoMagic go through mountinfo.
			want, wantErr := ReadFS(&nsFS{MapFS: mapFS(tc.files), link: tc.link})
			require.NoError(t, wantErr)

			f := &magicFS{nsFS: &nsFS{MapFS: mapFS(tc.files), link: tc.link}, magics: tc.magics}
			got, err := ReadFS(f)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, append([]string{"proc/self/cgroup"}, tc.reads...), f.opened, "no mountinfo, each file once")

			w, err := NewWatcher(f)
			require.NoError(t, err)
			defer w.Close()
			gotW, err := w.Read()
			sameResult(t, want, nil, gotW, err)
		})
	}
	// What the cases above found.
	lim, err := ReadFS(&magicFS{nsFS: &nsFS{MapFS: mapFS(v2Container), link: otherCgroupNS}, magics: cgroupMagics})
	require.NoError(t, err)
	assert.Equal(t, Hierarchy{Version: V2, Path: "/", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup"}, lim.CPU.Hierarchy)
	assert.Equal(t, 150*time.Millisecond, lim.CPU.Quota)
	assert.Equal(t, int64(512<<20), lim.Memory.Max)
	lim, err = ReadFS(&magicFS{nsFS: &nsFS{MapFS: mapFS(v1Host), link: initialCgroupNS}, magics: v1Magics})
	require.NoError(t, err)
	assert.Equal(t, Hierarchy{Version: V1, Path: "/app", Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: "/", Dir: "/sys/fs/cgroup/cpu,cpuacct/app"}, lim.CPU.Hierarchy)
	assert.Equal(t, 50*time.Millisecond, lim.CPU.Quota)
	assert.Equal(t, int64(300<<20), lim.Memory.Max)
}

// TestConventionalFallsBackToMountinfo: whenever the proof fails, mountinfo
// is read and the answer is the one it gives.
func TestConventionalFallsBackToMountinfo(t *testing.T) {
	other := "1\n" + strconv.Itoa(os.Getpid()+1) + "\n"
	tests := []struct {
		name    string
		files   map[string]string
		magics  map[string]int64
		link    string
		readErr error
		noProcs bool // cgroup.procs is never read
	}{
		{name: "v2 process not listed", files: with(v2Container, map[string]string{"sys/fs/cgroup/cgroup.procs": other}), magics: cgroupMagics, link: otherCgroupNS},
		{name: "v2 cgroup.procs missing", files: with(v2Container, map[string]string{"sys/fs/cgroup/cgroup.procs": ""}), magics: cgroupMagics, link: otherCgroupNS},
		{name: "v2 not a cgroup2 file system", files: v2Container, magics: map[string]int64{"sys/fs/cgroup/": cgroupSuperMagic}, link: otherCgroupNS},
		{name: "v2 read error", files: v2Container, magics: cgroupMagics, link: otherCgroupNS, readErr: errors.New("permission denied")},
		{name: "v2 pid only as a prefix", files: with(v2Container, map[string]string{"sys/fs/cgroup/cgroup.procs": strconv.Itoa(os.Getpid()) + "1\n"}), magics: cgroupMagics, link: otherCgroupNS},
		{name: "root cgroup of the initial namespace", files: v2Container, magics: cgroupMagics, link: initialCgroupNS, noProcs: true},
		{name: "v1 memory process not listed", files: with(v1Host, map[string]string{"sys/fs/cgroup/memory/app/cgroup.procs": other}), magics: v1Magics, link: initialCgroupNS},
		{name: "v1 no quota file (no CFS bandwidth, or not the cpu hierarchy)", files: with(v1Host, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": ""}), magics: v1Magics, link: initialCgroupNS},
		{name: "v1 cgroup2 where v1 is expected", files: v1Host, magics: cgroupMagics, link: initialCgroupNS},
		{name: "v1 Docker container (mount root is its own path)", files: with(v1Container, map[string]string{"sys/fs/cgroup/cpu,cpuacct/cgroup.procs": self, "sys/fs/cgroup/memory/cgroup.procs": self}), magics: v1Magics, link: initialCgroupNS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := ReadFS(&nsFS{MapFS: mapFS(tc.files), link: tc.link})
			f := &magicFS{nsFS: &nsFS{MapFS: mapFS(tc.files), link: tc.link}, magics: tc.magics, readErr: tc.readErr}
			got, err := ReadFS(f)
			sameResult(t, want, wantErr, got, err)
			assert.Contains(t, f.opened, "proc/self/mountinfo")
			procs := 0
			for _, name := range f.opened {
				if strings.HasSuffix(name, "/cgroup.procs") {
					procs++
				}
			}
			if tc.noProcs {
				assert.Zero(t, procs, "cgroup.procs of the real root is not read")
			} else {
				assert.NotZero(t, procs)
			}
		})
	}
}

// TestConventionalMountWins: when mountinfo lists the conventional mount
// with root "/" and another mount with a longer root, the conventional one
// (which shows every ancestor) is used, with or without the proof.
func TestConventionalMountWins(t *testing.T) {
	files := with(v2Container, map[string]string{
		"proc/self/cgroup":               "0::/app\n",
		"proc/self/mountinfo":            v2Mounts + "90 61 0:30 /app /run/app rw - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/cgroup.procs":     "",
		"sys/fs/cgroup/app/cgroup.procs": self,
		"sys/fs/cgroup/app/cpu.max":      "max 100000\n",
		"run/app/cpu.max":                "max 100000\n",
	})
	want := Hierarchy{Version: V2, Path: "/app", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup/app"}
	for _, fsys := range []fs.FS{
		&nsFS{MapFS: mapFS(files), link: initialCgroupNS},
		&magicFS{nsFS: &nsFS{MapFS: mapFS(files), link: initialCgroupNS}, magics: cgroupMagics},
	} {
		lim, err := ReadFS(fsys)
		require.NoError(t, err)
		assert.Equal(t, want, lim.CPU.Hierarchy)
		_, limited := lim.CPUQuota()
		assert.False(t, limited, "the root of the initial namespace is not read; /app has none")
	}

	// Without the conventional mount, the longest root still wins.
	files["proc/self/mountinfo"] = "35 24 0:30 / /mnt/cg rw - cgroup2 cgroup2 rw\n90 61 0:30 /app /run/app rw - cgroup2 cgroup2 rw\n"
	lim, err := ReadFS(&nsFS{MapFS: mapFS(files), link: initialCgroupNS})
	require.NoError(t, err)
	assert.Equal(t, Hierarchy{Version: V2, Path: "/app", Mount: "/run/app", MountRoot: "/app", Dir: "/run/app"}, lim.CPU.Hierarchy)
}

func TestListsPID(t *testing.T) {
	for _, tc := range []struct {
		data string
		pid  int
		want bool
	}{
		{"1\n42\n", 42, true},
		{"42\n", 42, true},
		{"42", 42, true},
		{"", 42, false},
		{"421\n", 42, false},
		{"142\n", 42, false},
		{" 42\n", 42, false},
		{"1\n2\n3\n", 42, false},
		{"4194304\n", 4194304, true},
	} {
		assert.Equal(t, tc.want, listsPID([]byte(tc.data), tc.pid), "%q %d", tc.data, tc.pid)
	}
}

func TestConventionalPoint(t *testing.T) {
	for _, tc := range []struct {
		e    procEntry
		want string
	}{
		{procEntry{version: V2}, "/sys/fs/cgroup"},
		{procEntry{version: V1, ctrls: "cpu,cpuacct"}, "/sys/fs/cgroup/cpu,cpuacct"},
		{procEntry{version: V1, ctrls: "memory"}, "/sys/fs/cgroup/memory"},
		{procEntry{version: V1}, ""},
		{procEntry{version: V1, ctrls: ".."}, ""},
		{procEntry{version: V1, ctrls: "a/b"}, ""},
		{procEntry{version: V1, ctrls: "a b"}, ""},
		{procEntry{}, ""},
	} {
		assert.Equal(t, tc.want, conventionalPoint(tc.e), "%+v", tc.e)
	}
}
