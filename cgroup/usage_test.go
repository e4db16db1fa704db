package cgroup

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/cgfs"
)

// The fixture trees (package cgfs).
var (
	statusOwn, withShmem, withLazyFree = cgfs.StatusOwn, cgfs.WithShmem, cgfs.WithLazyFree
	stat, mibs, headroomV2, headroomV1 = cgfs.Stat, cgfs.MiBs, cgfs.V2, cgfs.V1
)

// TestLevels: the facts of each level whose memory the process shares, as
// read from its files (its own limits, usage, page cache and lazily freed
// pages), and the process's RssAnon and LazyFree; the Watcher reads the
// same. What they leave the process is memlimit's to work out.
func TestLevels(t *testing.T) {
	const pod, app, v1app = "/sys/fs/cgroup/pod", "/sys/fs/cgroup/pod/app", "/sys/fs/cgroup/memory/pod/app"
	for _, tc := range []struct {
		name      string
		fsys      fstest.MapFS
		want      []Level
		rss, lazy int64
		err       bool
	}{
		{"v2 two limited levels", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(400), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
			"pod/memory.max": mibs(512), "pod/memory.high": mibs(480), "pod/memory.current": mibs(300),
			"pod/memory.stat":         stat("active_file", 20) + stat("inactive_file", 10) + stat("file", 30),
			"pod/memory.events.local": "low 1\nhigh 4\nmax 3\noom 1\noom_kill 1\n",
		}), []Level{{app, 400 * mib, -1, 100 * mib, 0, 0, 0}, {pod, 512 * mib, 480 * mib, 300 * mib, 30 * mib, 0, 7}}, 100 * mib, 0, false},
		{"v2 the own cgroup counts without a limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(400), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), []Level{{app, -1, -1, 300 * mib, 0, 0, 0}, {pod, 512 * mib, -1, 400 * mib, 0, 0, 0}}, 100 * mib, 0, false},
		{"v1 lazily freed pages", withLazyFree(headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat":    stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
			"pod/app/memory.failcnt": "12\n",
		}), 250), []Level{{v1app, 512 * mib, -1, 453 * mib, 0, 250 * mib, 12}}, 252 * mib, 250 * mib, false},
		{"v2 bad memory.stat: the level is left out", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "active_file x\ninactive_file 0\n",
		}), nil, 100 * mib, 0, true},
		{"v2 bad memory.events.local: no Hits, the level counts", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
			"pod/memory.events.local": "high x\nmax 3\n",
		}), []Level{{pod, 512 * mib, -1, 300 * mib, 0, 0, 0}}, 100 * mib, 0, true},
		{"v2 no RssAnon: no level", headroomV2(-1, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), nil, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := ReadFS(tc.fsys)
			require.NoError(t, err, "usage problems do not fail the reading")
			m := lim.Memory
			assert.Equal(t, tc.want, m.Levels)
			assert.Equal(t, [2]int64{tc.rss, tc.lazy}, [2]int64{m.RssAnon, m.LazyFree})
			assert.Equal(t, tc.err, m.UsageErr != nil, "%v", m.UsageErr)
			w, err := NewWatcher(tc.fsys)
			require.NoError(t, err)
			defer w.Close()
			wl, _ := w.Read()
			assert.Equal(t, m.Levels, wl.Memory.Levels, "the Watcher agrees")
		})
	}
}

// TestLevelsWatcherNoAllocs: re-reading the usage figures of the limited
// levels (and /proc/self/status) and their Hits allocates nothing; the test
// fails if the figures are not read at all.
func TestLevelsWatcherNoAllocs(t *testing.T) {
	fsys := headroomV2(100, map[string]string{
		"pod/app/memory.max": mibs(400), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
		"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		"pod/memory.events.local": "high 0\nmax 2\n",
	})
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	var lim Limits
	allocs := testing.AllocsPerRun(100, func() { lim, _ = w.Read() })
	require.Len(t, lim.Memory.Levels, 2)
	assert.Equal(t, int64(300*mib), lim.Memory.Levels[1].Usage)
	assert.Equal(t, uint64(2), lim.Memory.Levels[1].Hits)
	assert.Zero(t, allocs)
	fsys["sys/fs/cgroup/pod/memory.current"].Data = []byte(mibs(250))
	fsys["sys/fs/cgroup/pod/memory.events.local"].Data = []byte("high 1\nmax 2\n")
	lim, _ = w.Read()
	assert.Equal(t, int64(250*mib), lim.Memory.Levels[1].Usage, "the Watcher follows the usage")
	assert.Equal(t, uint64(3), lim.Memory.Levels[1].Hits, "and the Hits")
}

var procStatusTests = []struct {
	in   string
	want int64
	err  bool
}{
	{"RssAnon:\t 100 kB\nRssShmem:\t 4 kB\n", 100 << 10, false},
	{"RssShmem:\t 307200 kB\nRssAnon:\t 10240 kB\n", 10 << 20, false},
	{"RssShmem: 1 kB\n", 0, true},
	{"Name: x\nRssAnon: 1 kB\n", 1 << 10, false},
	{"VmRSS: 1 kB\n", 0, true},
	{"RssAnon: 1 MB\n", 0, true},
	{"RssAnon: x kB\n", 0, true},
	{"RssAnon: 99999999999999999999 kB\n", 0, true},
	{"", 0, true},
}

func TestParseProcStatusOwn(t *testing.T) {
	for _, tc := range procStatusTests {
		got, err := parseProcKB([]byte(tc.in), "RssAnon:")
		if tc.err {
			assert.Error(t, err, "%q", tc.in)
			requireParseError(t, err)
			continue
		}
		assert.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func FuzzProcStatusOwn(f *testing.F) {
	for _, tc := range procStatusTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := parseProcKB([]byte(in), "RssAnon:")
		requireParseError(t, err)
		if err == nil && v < 0 {
			t.Fatalf("negative share %d", v)
		}
	})
}

var filePagesTests = []struct {
	in     string
	v1, v2 [2]int64 // the page cache on the file lists, and the rest of them
	err    bool
}{
	{"active_file 3\ninactive_file 4\ntotal_active_file 30\ntotal_inactive_file 40\n", [2]int64{70, 0}, [2]int64{7, 0}, false},
	{"cache 9\nfile 9\nshmem 5\ntotal_cache 90\ntotal_shmem 50\n", [2]int64{0, 0}, [2]int64{0, 0}, false},
	{"inactive_file 4\ntotal_inactive_file 40\n", [2]int64{40, 0}, [2]int64{4, 0}, false},
	// the page cache, shmem aside, all on the lists: nothing else there
	{"file 12\nshmem 5\nactive_file 3\ninactive_file 4\ntotal_cache 120\ntotal_shmem 50\ntotal_active_file 30\ntotal_inactive_file 40\n", [2]int64{70, 0}, [2]int64{7, 0}, false},
	// MADV_FREE pages on the lists (v1 cache 0 with 250 on total_inactive_file, as measured)
	{"file 2\nshmem 0\ninactive_file 6\ntotal_cache 0\ntotal_shmem 0\ntotal_inactive_file 250\n", [2]int64{0, 250}, [2]int64{2, 4}, false},
	// page cache off the lists (unevictable, in a per-CPU batch): all the lists are page cache
	{"file 20\nshmem 0\ninactive_file 6\ntotal_cache 20\ntotal_shmem 1\ntotal_inactive_file 6\n", [2]int64{6, 0}, [2]int64{6, 0}, false},
	{"file 2\nshmem 9\ninactive_file 6\n", [2]int64{0, 0}, [2]int64{0, 6}, false},
	{"", [2]int64{0, 0}, [2]int64{0, 0}, false},
	{"active_file x\ntotal_active_file -1\n", [2]int64{}, [2]int64{}, true},
	{"file x\ntotal_cache -1\n", [2]int64{}, [2]int64{}, true},
	{"inactive_file 99999999999999999999\ntotal_inactive_file 4611686018427387904\n", [2]int64{}, [2]int64{}, true},
}

func TestParseFilePages(t *testing.T) {
	for _, tc := range filePagesTests {
		for _, c := range []struct {
			v    Version
			want [2]int64
		}{{V1, tc.v1}, {V2, tc.v2}} {
			file, lazy, err := parseFilePages([]byte(tc.in), c.v)
			got := [2]int64{file, lazy}
			if tc.err {
				assert.Error(t, err, "%q v%d", tc.in, c.v)
				requireParseError(t, err)
				continue
			}
			assert.NoError(t, err, "%q v%d", tc.in, c.v)
			assert.Equal(t, c.want, got, "%q v%d", tc.in, c.v)
		}
	}
}

func FuzzUsage(f *testing.F) {
	for _, s := range []string{"123\n", "0", "max\n", "", "1\n2\n", "99999999999999999999"} {
		f.Add(s, "inactive_file 5\ntotal_inactive_file 6\n")
		f.Add(s, "active_file 5\ninactive_file 6\ntotal_active_file 7\ntotal_inactive_file 8\n")
	}
	f.Fuzz(func(t *testing.T, usage, stat string) {
		u, err := parseCount([]byte(usage), "memory.current", unlimitedMemory-1)
		requireParseError(t, err)
		if err == nil && (u < 0 || u >= unlimitedMemory) {
			t.Fatalf("usage %d out of range", u)
		}
		for _, v := range []Version{V1, V2} {
			n, lazy, err := parseFilePages([]byte(stat), v)
			requireParseError(t, err)
			if n < 0 || lazy < 0 {
				t.Fatalf("file pages %d, lazy %d out of range", n, lazy)
			}
		}
		for _, key := range []string{"inactive_file", "total_inactive_file"} {
			v, _, err := statValue([]byte(stat), key, unlimitedMemory-1, "")
			requireParseError(t, err)
			if v >= unlimitedMemory {
				t.Fatalf("%s %d out of range", key, v)
			}
		}
	})
}
