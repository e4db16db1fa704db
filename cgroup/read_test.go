package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// fixtureTests are the scenarios under testdata/<name>: a copy of
// proc/self/cgroup, proc/self/mountinfo and the cgroup files of a machine.
var fixtureTests = []struct {
	name string
	want Limits
}{
	{
		name: "v2-private-ns",
		want: Limits{
			CPU: hierarchy{Version: V2, Path: "/", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup"}.cpu(CPU{
				Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup",
			}),
			Memory: hierarchy{Version: V2, Path: "/", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup"}.memory(Memory{
				Max: 512 * mib, MaxSource: "/sys/fs/cgroup",
			}),
		},
	},
	{
		name: "v2-kubepods-host",
		want: func() Limits {
			pod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6f1d0ba2_5e4c_4c1b_9a53_3c3b1f0c6d7e.slice"
			h := hierarchy{Version: V2, Path: pod + "/cri-containerd-4b1c9d2e7f0a.scope", Mount: "/sys/fs/cgroup", MountRoot: "/",
				Dir: "/sys/fs/cgroup" + pod + "/cri-containerd-4b1c9d2e7f0a.scope"}
			return Limits{
				CPU:    h.cpu(CPU{Quota: 250 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup" + pod}),
				Memory: h.memory(Memory{Max: 1 * gib, MaxSource: "/sys/fs/cgroup" + pod}),
			}
		}(),
	},
	{
		name: "v2-parent-tighter",
		want: func() Limits {
			h := hierarchy{Version: V2, Path: "/app/worker", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup/app/worker"}
			return Limits{
				CPU:    h.cpu(CPU{Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/app"}),
				Memory: h.memory(Memory{Max: 256 * mib, MaxSource: "/sys/fs/cgroup/app"}),
			}
		}(),
	},
	{
		name: "v2-memory-high",
		want: func() Limits {
			h := hierarchy{Version: V2, Path: "/system.slice/svc.service", Mount: "/sys/fs/cgroup", MountRoot: "/",
				Dir: "/sys/fs/cgroup/system.slice/svc.service"}
			return Limits{
				CPU: h.cpu(CPU{}),
				Memory: h.memory(Memory{Max: 1 * gib, MaxSource: "/sys/fs/cgroup/system.slice/svc.service",
					High: 768 * mib, HighSource: "/sys/fs/cgroup/system.slice/svc.service"}),
			}
		}(),
	},
	{
		name: "v1-cfs-period",
		want: Limits{
			CPU: hierarchy{Version: V1, Path: "/batch/job", Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: "/",
				Dir: "/sys/fs/cgroup/cpu,cpuacct/batch/job"}.cpu(CPU{
				Quota: 75 * time.Millisecond, Period: 50 * time.Millisecond, Source: "/sys/fs/cgroup/cpu,cpuacct/batch/job",
			}),
			Memory: hierarchy{Version: V1, Path: "/batch/job", Mount: "/sys/fs/cgroup/memory", MountRoot: "/",
				Dir: "/sys/fs/cgroup/memory/batch/job"}.memory(Memory{}),
		},
	},
	{
		name: "v1-docker",
		want: func() Limits {
			id := "/docker/3f6a2c9b8e1d4f7a0b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
			return Limits{
				CPU: hierarchy{Version: V1, Path: id, Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: id, Dir: "/sys/fs/cgroup/cpu,cpuacct"}.cpu(CPU{
					Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/cpu,cpuacct",
				}),
				Memory: hierarchy{Version: V1, Path: id, Mount: "/sys/fs/cgroup/memory", MountRoot: id, Dir: "/sys/fs/cgroup/memory"}.memory(Memory{
					Max: 512 * mib, MaxSource: "/sys/fs/cgroup/memory",
				}),
			}
		}(),
	},
	{
		name: "v1-hierarchical",
		want: func() Limits {
			p := "/kubepods/burstable/pod0d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f80/9a8b7c6d5e4f"
			return Limits{
				CPU: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: p, Dir: "/sys/fs/cgroup/cpu,cpuacct"}.cpu(CPU{}),
				Memory: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/memory", MountRoot: p, Dir: "/sys/fs/cgroup/memory"}.memory(Memory{
					Max: 256 * mib, MaxSource: "/sys/fs/cgroup/memory",
				}),
			}
		}(),
	},
	{
		name: "v1-kubepods-host",
		want: func() Limits {
			pod := "/kubepods/burstable/pod0d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f80"
			p := pod + "/9a8b7c6d5e4f"
			return Limits{
				CPU: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: "/", Dir: "/sys/fs/cgroup/cpu,cpuacct" + p}.cpu(CPU{
					Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/cpu,cpuacct" + pod,
				}),
				Memory: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/memory", MountRoot: "/", Dir: "/sys/fs/cgroup/memory" + p}.memory(Memory{
					Max: 300 * mib, MaxSource: "/sys/fs/cgroup/memory" + pod,
				}),
			}
		}(),
	},
	{
		name: "hybrid",
		want: func() Limits {
			p := "/user.slice/app.service"
			return Limits{
				CPU: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/cpu", MountRoot: "/", Dir: "/sys/fs/cgroup/cpu" + p}.cpu(CPU{
					Quota: 100 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/cpu" + p,
				}),
				Memory: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/memory", MountRoot: "/", Dir: "/sys/fs/cgroup/memory" + p}.memory(Memory{
					Max: 2 * gib, MaxSource: "/sys/fs/cgroup/memory/user.slice",
				}),
			}
		}(),
	},
	{
		name: "wsl",
		want: func() Limits {
			p := "/user.slice/user-1000.slice/session-2.scope"
			h := hierarchy{Version: V2, Path: p, Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup" + p}
			return Limits{
				CPU:    h.cpu(CPU{}),
				Memory: h.memory(Memory{Max: 4 * gib, MaxSource: "/sys/fs/cgroup/user.slice"}),
			}
		}(),
	},
	{
		name: "escaped-space",
		want: func() Limits {
			h := hierarchy{Version: V2, Path: "/my app/worker", Mount: "/run/my cgroup", MountRoot: "/my app", Dir: "/run/my cgroup/worker"}
			return Limits{
				CPU:    h.cpu(CPU{Quota: 100 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/run/my cgroup"}),
				Memory: h.memory(Memory{Max: 1 * gib, MaxSource: "/run/my cgroup/worker"}),
			}
		}(),
	},
	{
		// A private mount namespace where the process's own v1 memory cgroup
		// is bind-mounted over /sys/fs/cgroup/memory, on top of the whole
		// hierarchy mounted there before: the top mount is the one seen.
		name: "v1-stacked-bind",
		want: Limits{
			CPU: hierarchy{Version: V1, Path: "/fitgo/x", Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: "/",
				Dir: "/sys/fs/cgroup/cpu,cpuacct/fitgo/x"}.cpu(CPU{
				Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/cpu,cpuacct/fitgo/x",
			}),
			Memory: hierarchy{Version: V1, Path: "/fitgo/x", Mount: "/sys/fs/cgroup/memory", MountRoot: "/fitgo/x", Dir: "/sys/fs/cgroup/memory"}.memory(Memory{
				Max: 256 * mib, MaxSource: "/sys/fs/cgroup/memory",
			}),
		},
	},
	// The same v1 hierarchy mounted twice with root "/", a second mount
	// outside /sys/fs/cgroup listed first (OpenJDK's "Multiple controllers,
	// but only one in /sys/fs/cgroup"): the one under /sys/fs/cgroup wins.
	{
		name: "v1-duplicate-cpu",
		want: duplicateMountWant,
	},
	{
		name: "v1-duplicate-memory",
		want: duplicateMountWant,
	},
	{
		// A process that entered a container's cgroup namespace (three levels
		// deep) but kept the host's mounts: its path and the mount root both
		// climb above the namespace, and the path is below the mount root.
		name: "v2-nsenter",
		want: func() Limits {
			p := "/../../../user.slice/user-0.slice/session-1.scope"
			h := hierarchy{Version: V2, Path: p, Mount: "/sys/fs/cgroup", MountRoot: "/../../..",
				Dir: "/sys/fs/cgroup/user.slice/user-0.slice/session-1.scope"}
			return Limits{
				CPU:    h.cpu(CPU{Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond, Source: h.Dir}),
				Memory: h.memory(Memory{Max: 2 * gib, MaxSource: "/sys/fs/cgroup/user.slice"}),
			}
		}(),
	},
	{
		name: "host-root",
		want: func() Limits {
			h := hierarchy{Version: V2, Path: "/", Mount: "/sys/fs/cgroup", MountRoot: "/", Dir: "/sys/fs/cgroup"}
			return Limits{CPU: h.cpu(CPU{}), Memory: h.memory(Memory{})}
		}(),
	},
	{
		name: "outside-ns",
		want: Limits{
			CPU:    hierarchy{Path: "/../../kubepods.slice/other.scope"}.cpu(CPU{}),
			Memory: hierarchy{Path: "/../../kubepods.slice/other.scope"}.memory(Memory{}),
		},
	},
}

// duplicateMountWant is what testdata/v1-duplicate-{cpu,memory} give.
var duplicateMountWant = func() Limits {
	p := "/user.slice/app.service"
	return Limits{
		CPU: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/cpu,cpuacct", MountRoot: "/", Dir: "/sys/fs/cgroup/cpu,cpuacct" + p}.cpu(CPU{
			Quota: 150 * time.Millisecond, Period: 100 * time.Millisecond, Source: "/sys/fs/cgroup/cpu,cpuacct" + p,
		}),
		Memory: hierarchy{Version: V1, Path: p, Mount: "/sys/fs/cgroup/memory", MountRoot: "/", Dir: "/sys/fs/cgroup/memory" + p}.memory(Memory{
			Max: 512 * mib, MaxSource: "/sys/fs/cgroup/memory" + p,
		}),
	}
}()

func TestReadFSFixtures(t *testing.T) {
	for _, tc := range fixtureTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFS(os.DirFS(filepath.Join("testdata", tc.name)))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadFSMalformedMemoryKeepsCPU(t *testing.T) {
	got, err := ReadFS(os.DirFS(filepath.Join("testdata", "malformed-memory")))
	require.Error(t, err)

	cores, ok := got.CPUQuota()
	require.True(t, ok, "the CPU limit must survive a bad memory file")
	assert.Equal(t, 0.5, cores)
	require.NoError(t, got.CPU.Err)

	_, ok = got.MemoryMax()
	assert.False(t, ok)
	var pe *parseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "/sys/fs/cgroup/memory.max", pe.File)
	assert.Equal(t, 1, pe.Line)
	assert.ErrorIs(t, err, got.Memory.Err)
	assert.Contains(t, err.Error(), "/sys/fs/cgroup/memory.max:1")
}

func TestReadFSNoCgroup(t *testing.T) {
	for name, fsys := range map[string]fs.FS{
		"empty":        fstest.MapFS{},
		"no proc/self": fstest.MapFS{"proc/cpuinfo": {Data: []byte("processor : 0\n")}},
		"no directory": os.DirFS(filepath.Join("testdata", "does-not-exist")),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadFS(fsys)
			require.ErrorIs(t, err, ErrNoCgroup)
			assert.ErrorIs(t, err, fs.ErrNotExist)
			assert.Equal(t, Limits{}, got)
			_, ok := got.CPUQuota()
			assert.False(t, ok)
		})
	}
}

// mapFS builds a MapFS from file names and contents.
func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

// with returns a copy of base with files replaced or added; an empty content
// removes the file.
func with(base map[string]string, files map[string]string) map[string]string {
	m := make(map[string]string, len(base)+len(files))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range files {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

const v2Mounts = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"

const v1Mounts = "30 26 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n" +
	"32 26 0:29 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"

// v2Base is a v2 container at /sys/fs/cgroup/app with limits everywhere.
var v2Base = map[string]string{
	"proc/self/cgroup":                     "0::/app\n",
	"proc/self/mountinfo":                  v2Mounts,
	"sys/fs/cgroup/app/cpu.max":            "200000 100000\n",
	"sys/fs/cgroup/app/memory.max":         "1073741824\n",
	"sys/fs/cgroup/app/memory.high":        "max\n",
	"sys/fs/cgroup/app/cpu.stat":           "usage_usec 10\nnr_periods 1\nnr_throttled 0\nthrottled_usec 0\n",
	"sys/fs/cgroup/cgroup.subtree_control": "cpu memory\n",
}

// v1Base is a v1 process in /app with limits on /app.
var v1Base = map[string]string{
	"proc/self/cgroup":                                "4:memory:/app\n3:cpu,cpuacct:/app\n",
	"proc/self/mountinfo":                             v1Mounts,
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us":  "50000\n",
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": "100000\n",
	"sys/fs/cgroup/memory/app/memory.limit_in_bytes":  "314572800\n",
	"sys/fs/cgroup/memory/app/memory.stat":            "cache 1\nhierarchical_memory_limit 314572800\n",
	"sys/fs/cgroup/memory/memory.limit_in_bytes":      "9223372036854771712\n",
	"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":      "-1\n",
	"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":     "100000\n",
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.stat":          "nr_periods 7\nnr_throttled 2\nthrottled_time 3000\n",
	"sys/fs/cgroup/cpu,cpuacct/app/cpuacct.usage":     "42000\n",
}

// v1Container is a v1 container that sees only its own cgroup /pod/app:
// the mount roots are its path, and a pod limit above shows only in
// memory.stat.
var v1Container = map[string]string{
	"proc/self/cgroup": "4:memory:/pod/app\n3:cpu,cpuacct:/pod/app\n",
	"proc/self/mountinfo": "30 26 0:27 /pod/app /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n" +
		"32 26 0:29 /pod/app /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
	"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "-1\n",
	"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
	"sys/fs/cgroup/memory/memory.limit_in_bytes":  "9223372036854771712\n",
	"sys/fs/cgroup/memory/memory.stat":            "cache 1\nrss 2\nhierarchical_memory_limit 314572800\n",
}

func TestReadFSMalformed(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		file     string // the file the parseError names
		line     int
		cpuBad   bool // CPU.Err set (else Memory.Err)
		otherOK  bool // the other controller still has its limit
		contains string
	}{
		{"cpu.max quota", with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "lots 100000\n"}), "/sys/fs/cgroup/app/cpu.max", 1, true, true, `"lots"`},
		{"cpu.max period zero", with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "max 0\n"}), "/sys/fs/cgroup/app/cpu.max", 1, true, true, "period"},
		{"cpu.max three fields", with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "1 2 3\n"}), "/sys/fs/cgroup/app/cpu.max", 1, true, true, "cpu.max"},
		{"cpu.max empty", with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "\n"}), "/sys/fs/cgroup/app/cpu.max", 0, true, true, "empty"},
		{"cpu.max second line", with(v2Base, map[string]string{"sys/fs/cgroup/app/cpu.max": "max 100000\nmax 100000\n"}), "/sys/fs/cgroup/app/cpu.max", 2, true, true, "after the first line"},
		{"memory.max negative", with(v2Base, map[string]string{"sys/fs/cgroup/app/memory.max": "-1\n"}), "/sys/fs/cgroup/app/memory.max", 1, false, true, `"-1"`},
		{"memory.high word", with(v2Base, map[string]string{"sys/fs/cgroup/app/memory.high": "unlimited\n"}), "/sys/fs/cgroup/app/memory.high", 1, false, true, "unlimited"},
		{"cfs quota", with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": "-2\n"}), "/sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us", 1, true, true, `"-2"`},
		{"cfs quota zero", with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": "0\n"}), "/sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us", 1, true, true, `"0"`},
		{"cfs period", with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": "1e5\n"}), "/sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us", 1, true, true, `"1e5"`},
		{"cfs quota overflow", with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": "99999999999999999999\n"}), "/sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us", 1, true, true, "cfs_quota_us"},
		{"limit_in_bytes", with(v1Base, map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9.2e18\n"}), "/sys/fs/cgroup/memory/memory.limit_in_bytes", 1, false, true, `"9.2e18"`},
		{"memory.stat", with(v1Container, map[string]string{"sys/fs/cgroup/memory/memory.stat": "cache 1\nrss 2\nhierarchical_memory_limit -\n"}), "/sys/fs/cgroup/memory/memory.stat", 3, false, false, "hierarchical_memory_limit"},
		{"proc self cgroup path", with(v1Base, map[string]string{"proc/self/cgroup": "4:memory:/app\n3:cpu,cpuacct:app\n"}), "/proc/self/cgroup", 2, true, true, `"app"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFS(mapFS(tc.files))
			require.Error(t, err)
			var pe *parseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.file, pe.File)
			assert.Equal(t, tc.line, pe.Line)
			assert.Contains(t, err.Error(), tc.file)
			assert.Contains(t, err.Error(), tc.contains)
			bad, other := got.CPU.Err, got.Memory.Err
			if !tc.cpuBad {
				bad, other = other, bad
			}
			assert.ErrorIs(t, bad, pe)
			assert.NoError(t, other)
			_, cpuOK := got.CPUQuota()
			_, memOK := got.MemoryMax()
			if tc.cpuBad {
				assert.False(t, cpuOK, "no made-up CPU limit")
				assert.Equal(t, tc.otherOK, memOK)
			} else {
				assert.False(t, memOK, "no made-up memory limit")
				assert.Equal(t, tc.otherOK, cpuOK)
			}
		})
	}
}

func TestReadFSCases(t *testing.T) {
	type want struct {
		cpuVersion, memVersion Version
		cores                  float64 // 0: no limit
		cpuSource              string
		mem                    int64 // 0: no limit
		memSource              string
		high                   int64
		cpuDir, memDir         string
	}
	tests := []struct {
		name  string
		files map[string]string
		want  want
	}{
		{
			name:  "v2 base",
			files: v2Base,
			want:  want{V2, V2, 2, "/sys/fs/cgroup/app", gib, "/sys/fs/cgroup/app", 0, "/sys/fs/cgroup/app", "/sys/fs/cgroup/app"},
		},
		{
			name:  "v1 base",
			files: v1Base,
			want: want{V1, V1, 0.5, "/sys/fs/cgroup/cpu,cpuacct/app", 300 * mib, "/sys/fs/cgroup/memory/app", 0,
				"/sys/fs/cgroup/cpu,cpuacct/app", "/sys/fs/cgroup/memory/app"},
		},
		{
			name: "v1 path outside the mount root",
			files: with(v1Base, map[string]string{
				"proc/self/mountinfo": "30 26 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
					"32 26 0:29 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			}),
			want: want{},
		},
		{
			name: "v1 mount root that is only a name prefix is not an ancestor",
			files: with(v1Base, map[string]string{
				"proc/self/cgroup":    "4:memory:/application\n3:cpu,cpuacct:/application\n",
				"proc/self/mountinfo": "32 26 0:29 /app /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			}),
			want: want{},
		},
		{
			name: "v1 controller listed but not mounted, no v2 fallback",
			files: with(v1Base, map[string]string{
				"proc/self/cgroup":          "4:memory:/app\n3:cpu,cpuacct:/app\n0::/app\n",
				"proc/self/mountinfo":       v2Mounts,
				"sys/fs/cgroup/app/cpu.max": "10000 100000\n",
			}),
			want: want{},
		},
		{
			name: "v2 without mountinfo cgroup2 line",
			files: with(v2Base, map[string]string{
				"proc/self/mountinfo": "22 27 0:21 / /proc rw,relatime - proc proc rw\n",
			}),
			want: want{},
		},
		{
			name: "v2 mount found through mountinfo, not a fixed path",
			files: map[string]string{
				"proc/self/cgroup":          "0::/app\n",
				"proc/self/mountinfo":       "35 24 0:30 / /cg rw - cgroup2 none rw\n",
				"cg/app/cpu.max":            "100000 50000\n",
				"sys/fs/cgroup/app/cpu.max": "1000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 2, cpuSource: "/cg/app", cpuDir: "/cg/app", memDir: "/cg/app"},
		},
		{
			name: "the shortest mount root wins (it shows the most ancestors), then the first of equals",
			files: map[string]string{
				"proc/self/cgroup": "0::/a/b/c\n",
				"proc/self/mountinfo": "1 0 0:30 /a /first rw - cgroup2 cgroup2 rw\n" +
					"2 0 0:30 /a/b /longer rw - cgroup2 cgroup2 rw\n" +
					"3 0 0:30 /a /second rw - cgroup2 cgroup2 rw\n" +
					"4 0 0:30 /a/b/c/d /deeper rw - cgroup2 cgroup2 rw\n" +
					"5 0 0:30 /x /elsewhere rw - cgroup2 cgroup2 rw\n",
				"first/b/c/cpu.max": "300000 100000\n",
				"first/b/cpu.max":   "400000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 3, cpuSource: "/first/b/c", cpuDir: "/first/b/c", memDir: "/first/b/c"},
		},
		{
			name: "the whole hierarchy wins over a mount of a subtree: it shows every ancestor",
			files: map[string]string{
				"proc/self/cgroup":          "0::/app\n",
				"proc/self/mountinfo":       v2Mounts + "90 61 0:30 /app /run/app rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/app/cpu.max": "100000 100000\n",
				"run/app/cpu.max":           "200000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 1, cpuSource: "/sys/fs/cgroup/app", cpuDir: "/sys/fs/cgroup/app", memDir: "/sys/fs/cgroup/app"},
		},
		{
			name: "a mount stacked on the same mount point hides the one below",
			files: map[string]string{
				"proc/self/cgroup": "0::/app\n",
				"proc/self/mountinfo": "35 24 0:30 /app /mnt/cg rw - cgroup2 cgroup2 rw\n" +
					"36 35 0:30 / /mnt/cg rw - cgroup2 cgroup2 rw\n",
				"mnt/cg/app/cpu.max": "100000 100000\n",
				"mnt/cg/cpu.max":     "200000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 1, cpuSource: "/mnt/cg/app", cpuDir: "/mnt/cg/app", memDir: "/mnt/cg/app"},
		},
		{
			name: "the mount on top wins even when listed first (moved there)",
			files: map[string]string{
				"proc/self/cgroup": "0::/app\n",
				"proc/self/mountinfo": "40 41 0:30 / /mnt/cg rw - cgroup2 cgroup2 rw\n" +
					"41 24 0:30 /app /mnt/cg rw - cgroup2 cgroup2 rw\n",
				"mnt/cg/app/cpu.max": "100000 100000\n",
				"mnt/cg/cpu.max":     "200000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 1, cpuSource: "/mnt/cg/app", cpuDir: "/mnt/cg/app", memDir: "/mnt/cg/app"},
		},
		{
			name: "a path above the namespace at the mount root",
			files: map[string]string{
				"proc/self/cgroup":      "0::/../../..\n",
				"proc/self/mountinfo":   "25 24 0:23 /../../.. /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/cpu.max": "100000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 1, cpuSource: "/sys/fs/cgroup", cpuDir: "/sys/fs/cgroup", memDir: "/sys/fs/cgroup"},
		},
		{
			name: "a path that climbs out of every mount root: no limit",
			files: map[string]string{
				"proc/self/cgroup": "0::/../../x\n",
				"proc/self/mountinfo": "25 24 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n" +
					"26 24 0:23 /.. /mnt/up rw - cgroup2 cgroup2 rw\n",
				"sys/fs/cgroup/cpu.max": "100000 100000\n",
				"mnt/up/cpu.max":        "100000 100000\n",
			},
			want: want{},
		},
		{
			name: "of the mounts that show the path, the one it does not climb out of",
			files: map[string]string{
				"proc/self/cgroup": "0::/../../x\n",
				"proc/self/mountinfo": "25 24 0:23 /../.. /mnt/top rw - cgroup2 cgroup2 rw\n" +
					"26 24 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
				"mnt/top/x/cpu.max":     "300000 100000\n",
				"sys/fs/cgroup/cpu.max": "100000 100000\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 3, cpuSource: "/mnt/top/x", cpuDir: "/mnt/top/x", memDir: "/mnt/top/x"},
		},
		{
			name: "cgroup mounted at the file system root",
			files: map[string]string{
				"proc/self/cgroup":    "0::/a\n",
				"proc/self/mountinfo": "1 0 0:30 / / rw - cgroup2 cgroup2 rw\n",
				"a/cpu.max":           "100000 100000\n",
				"memory.max":          "1024\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, cores: 1, cpuSource: "/a", mem: 1024, memSource: "/", cpuDir: "/a", memDir: "/a"},
		},
		{
			name: "unlimited everywhere on v1",
			files: with(v1Base, map[string]string{
				"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us": "-1\n",
				"sys/fs/cgroup/memory/app/memory.limit_in_bytes": "9223372036854775807\n",
				"sys/fs/cgroup/memory/app/memory.stat":           "hierarchical_memory_limit 9223372036854710272\n",
			}),
			want: want{cpuVersion: V1, memVersion: V1, cpuDir: "/sys/fs/cgroup/cpu,cpuacct/app", memDir: "/sys/fs/cgroup/memory/app"},
		},
		{
			name: "v1 period is not read when there is no quota",
			files: with(v1Base, map[string]string{
				"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": "",
			}),
			want: want{V1, V1, 0, "", 300 * mib, "/sys/fs/cgroup/memory/app", 0, "/sys/fs/cgroup/cpu,cpuacct/app", "/sys/fs/cgroup/memory/app"},
		},
		{
			name:  "v1 container: the limit above the mount root is in memory.stat",
			files: v1Container,
			want: want{cpuVersion: V1, memVersion: V1, mem: 300 * mib, memSource: "/sys/fs/cgroup/memory",
				cpuDir: "/sys/fs/cgroup/cpu,cpuacct", memDir: "/sys/fs/cgroup/memory"},
		},
		{
			name: "v1 whole hierarchy mounted: memory.stat is not read",
			files: with(v1Base, map[string]string{
				"sys/fs/cgroup/memory/app/memory.stat": "hierarchical_memory_limit bad\n",
			}),
			want: want{V1, V1, 0.5, "/sys/fs/cgroup/cpu,cpuacct/app", 300 * mib, "/sys/fs/cgroup/memory/app", 0,
				"/sys/fs/cgroup/cpu,cpuacct/app", "/sys/fs/cgroup/memory/app"},
		},
		{
			name: "v1 memory.stat missing",
			files: with(v1Base, map[string]string{
				"sys/fs/cgroup/memory/app/memory.stat": "",
			}),
			want: want{V1, V1, 0.5, "/sys/fs/cgroup/cpu,cpuacct/app", 300 * mib, "/sys/fs/cgroup/memory/app", 0,
				"/sys/fs/cgroup/cpu,cpuacct/app", "/sys/fs/cgroup/memory/app"},
		},
		{
			name: "odd lines of proc/self/cgroup are skipped",
			files: with(v2Base, map[string]string{
				"proc/self/cgroup": "garbage\n\nx:y\nnot-a-number:cpu:/elsewhere\n0::/app",
			}),
			want: want{V2, V2, 2, "/sys/fs/cgroup/app", gib, "/sys/fs/cgroup/app", 0, "/sys/fs/cgroup/app", "/sys/fs/cgroup/app"},
		},
		{
			name: "cgroup path with colons",
			files: map[string]string{
				"proc/self/cgroup":             "0::/a:b\n",
				"proc/self/mountinfo":          v2Mounts,
				"sys/fs/cgroup/a:b/memory.max": "4096\n",
			},
			want: want{cpuVersion: V2, memVersion: V2, mem: 4096, memSource: "/sys/fs/cgroup/a:b", cpuDir: "/sys/fs/cgroup/a:b", memDir: "/sys/fs/cgroup/a:b"},
		},
		{
			name: "empty proc/self/cgroup: no controller, no error",
			files: map[string]string{
				"proc/self/cgroup": "",
			},
			want: want{},
		},
		{
			name: "memory.high tighter at a parent",
			files: with(v2Base, map[string]string{
				"proc/self/cgroup":                   "0::/app/leaf\n",
				"sys/fs/cgroup/app/memory.high":      "536870912\n",
				"sys/fs/cgroup/app/leaf/memory.high": "805306368\n",
			}),
			want: want{V2, V2, 2, "/sys/fs/cgroup/app", gib, "/sys/fs/cgroup/app", 512 * mib, "/sys/fs/cgroup/app/leaf", "/sys/fs/cgroup/app/leaf"},
		},
		{
			name: "equal limits: the level nearest the process is the source",
			files: with(v2Base, map[string]string{
				"proc/self/cgroup":                  "0::/app/leaf\n",
				"sys/fs/cgroup/app/leaf/cpu.max":    "100000 50000\n",
				"sys/fs/cgroup/app/leaf/memory.max": "1073741824\n",
			}),
			want: want{V2, V2, 2, "/sys/fs/cgroup/app/leaf", gib, "/sys/fs/cgroup/app/leaf", 0, "/sys/fs/cgroup/app/leaf", "/sys/fs/cgroup/app/leaf"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFS(mapFS(tc.files))
			require.NoError(t, err)
			assert.Equal(t, tc.want.cpuVersion, got.CPU.Version)
			assert.Equal(t, tc.want.memVersion, got.Memory.Version)
			assert.Equal(t, tc.want.cpuDir, got.CPU.Dir)
			assert.Equal(t, tc.want.memDir, got.Memory.Dir)
			cores, ok := got.CPUQuota()
			assert.Equal(t, tc.want.cores != 0, ok)
			assert.Equal(t, tc.want.cores, cores)
			assert.Equal(t, tc.want.cpuSource, got.CPU.Source)
			mem, ok := got.MemoryMax()
			assert.Equal(t, tc.want.mem != 0, ok)
			assert.Equal(t, tc.want.mem, mem)
			assert.Equal(t, tc.want.memSource, got.Memory.MaxSource)
			high, ok := got.MemoryHigh()
			assert.Equal(t, tc.want.high != 0, ok)
			assert.Equal(t, tc.want.high, high)
		})
	}
}

// TestZeroLimits: a memory limit of 0 is a limit of 0 bytes, not "no limit".
func TestZeroLimits(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		max, high bool // MemoryMax and MemoryHigh are (0, true)
	}{
		{"v2 memory.max 0", with(v2Base, map[string]string{"sys/fs/cgroup/app/memory.max": "0\n"}), true, false},
		{"v2 memory.high 0", with(v2Base, map[string]string{"sys/fs/cgroup/app/memory.max": "max\n", "sys/fs/cgroup/app/memory.high": "0\n"}), false, true},
		{"v1 limit_in_bytes 0", with(v1Base, map[string]string{"sys/fs/cgroup/memory/app/memory.limit_in_bytes": "0\n"}), true, false},
		{"v1 hierarchical_memory_limit 0", with(v1Container, map[string]string{"sys/fs/cgroup/memory/memory.stat": "hierarchical_memory_limit 0\n"}), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := ReadFS(mapFS(tc.files))
			require.NoError(t, err)
			w, err := NewWatcher(mapFS(tc.files))
			require.NoError(t, err)
			defer w.Close()
			wl, err := w.Read()
			require.NoError(t, err)
			for _, l := range []Limits{lim, wl} {
				max, ok := l.MemoryMax()
				assert.Equal(t, tc.max, ok, "MemoryMax")
				assert.Zero(t, max)
				high, ok := l.MemoryHigh()
				assert.Equal(t, tc.high, ok, "MemoryHigh")
				assert.Zero(t, high)
			}
		})
	}
}

func TestReadFSErrors(t *testing.T) {
	t.Run("mountinfo missing", func(t *testing.T) {
		got, err := ReadFS(mapFS(with(v2Base, map[string]string{"proc/self/mountinfo": ""})))
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.NotErrorIs(t, err, ErrNoCgroup)
		assert.ErrorIs(t, got.CPU.Err, fs.ErrNotExist)
		assert.ErrorIs(t, got.Memory.Err, fs.ErrNotExist)
		assert.Contains(t, err.Error(), "/proc/self/mountinfo")
		assert.Equal(t, 1, countSubstr(err.Error(), "mountinfo"), "the shared error is reported once: %v", err)
	})
	t.Run("v1 period missing while a quota is set", func(t *testing.T) {
		got, err := ReadFS(mapFS(with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": ""})))
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.Contains(t, err.Error(), "/sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us")
		_, ok := got.CPUQuota()
		assert.False(t, ok)
		_, ok = got.MemoryMax()
		assert.True(t, ok)
	})
	t.Run("limit file is a directory", func(t *testing.T) {
		m := mapFS(v2Base)
		delete(m, "sys/fs/cgroup/app/cpu.max")
		m["sys/fs/cgroup/app/cpu.max/x"] = &fstest.MapFile{Data: []byte("x")}
		got, err := ReadFS(m)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "/sys/fs/cgroup/app/cpu.max")
		assert.Error(t, got.CPU.Err)
		assert.NoError(t, got.Memory.Err)
	})
	t.Run("both controllers bad", func(t *testing.T) {
		_, err := ReadFS(mapFS(with(v2Base, map[string]string{
			"sys/fs/cgroup/app/cpu.max":    "x\n",
			"sys/fs/cgroup/app/memory.max": "y\n",
		})))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "/sys/fs/cgroup/app/cpu.max:1")
		assert.Contains(t, err.Error(), "/sys/fs/cgroup/app/memory.max:1")
	})
}

func countSubstr(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

func TestParseErrorUnwraps(t *testing.T) {
	inner := errors.New("bad")
	err := error(&parseError{File: "/x", Line: 3, Err: inner})
	assert.ErrorIs(t, err, inner)
	assert.Equal(t, "cgroup: /x:3: bad", err.Error())
	assert.Equal(t, "cgroup: /x: bad", (&parseError{File: "/x", Err: inner}).Error())
}

func TestVersionString(t *testing.T) {
	assert.Equal(t, "v1", V1.String())
	assert.Equal(t, "v2", V2.String())
	assert.Equal(t, "none", Version(0).String())
}

// hierarchy is where CPU and Memory locate the process's cgroup, for the
// tables.
type hierarchy struct {
	Version                     Version
	Path, Mount, MountRoot, Dir string
}

func (h hierarchy) cpu(c CPU) CPU {
	c.Version, c.Path, c.Mount, c.MountRoot, c.Dir = h.Version, h.Path, h.Mount, h.MountRoot, h.Dir
	return c
}

func (h hierarchy) memory(m Memory) Memory {
	m.Version, m.Path, m.Mount, m.MountRoot, m.Dir = h.Version, h.Path, h.Mount, h.MountRoot, h.Dir
	return m
}

func (c CPU) where() hierarchy { return hierarchy{c.Version, c.Path, c.Mount, c.MountRoot, c.Dir} }

func (m Memory) where() hierarchy { return hierarchy{m.Version, m.Path, m.Mount, m.MountRoot, m.Dir} }
