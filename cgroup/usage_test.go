package cgroup

import (
	"math"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statusOwn is a /proc/self/status whose RssAnon is own MiB.
func statusOwn(own int64) string {
	return "Name:\tapp\nVmRSS:\t99999 kB\nRssAnon:\t" + strconv.FormatInt(own*1024, 10) + " kB\nRssFile:\t5000 kB\nRssShmem:\t0 kB\n"
}

// withShmem is fsys with a /proc/self/status of own MiB of RssAnon and shmem
// MiB of RssShmem.
func withShmem(fsys fstest.MapFS, own, shmem int64) fstest.MapFS {
	fsys["proc/self/status"] = &fstest.MapFile{Data: []byte("RssAnon:\t" + strconv.FormatInt(own*1024, 10) +
		" kB\nRssFile:\t5000 kB\nRssShmem:\t" + strconv.FormatInt(shmem*1024, 10) + " kB\n")}
	return fsys
}

// withLazyFree is fsys with a /proc/self/smaps_rollup of lazy MiB of
// LazyFree.
func withLazyFree(fsys fstest.MapFS, lazy int64) fstest.MapFS {
	fsys["proc/self/smaps_rollup"] = &fstest.MapFile{Data: []byte("Rss:\t99999 kB\nAnonymous:\t99999 kB\nLazyFree:\t" +
		strconv.FormatInt(lazy*1024, 10) + " kB\nAnonHugePages:\t0 kB\n")}
	return fsys
}

// stat is a memory.stat line "key n MiB".
func stat(key string, n int64) string { return key + " " + strconv.FormatInt(n*mib, 10) + "\n" }

func mibs(n int64) string { return strconv.FormatInt(n*mib, 10) + "\n" }

// headroomV2 is a v2 tree, the process in /pod/app, with files given by
// name under sys/fs/cgroup ("" values are left out).
func headroomV2(own int64, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":    {Data: []byte("0::/pod/app\n")},
		"proc/self/mountinfo": {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")},
	}
	if own >= 0 {
		fsys["proc/self/status"] = &fstest.MapFile{Data: []byte(statusOwn(own))}
	}
	for name, data := range files {
		if data != "" {
			fsys["sys/fs/cgroup/"+name] = &fstest.MapFile{Data: []byte(data)}
		}
	}
	return fsys
}

func headroomV1(own int64, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":                           {Data: []byte("4:memory:/pod/app\n")},
		"proc/self/mountinfo":                        {Data: []byte("30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
		"proc/self/status":                           {Data: []byte(statusOwn(own))},
		"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
	}
	for name, data := range files {
		if data != "" {
			fsys["sys/fs/cgroup/memory/"+name] = &fstest.MapFile{Data: []byte(data)}
		}
	}
	return fsys
}

func TestHeadroom(t *testing.T) {
	const pod, app = "/sys/fs/cgroup/pod", "/sys/fs/cgroup/pod/app"
	const v1pod, v1app = "/sys/fs/cgroup/memory/pod", "/sys/fs/cgroup/memory/pod/app"
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want Headroom // Err is checked for being set only
		err  bool
	}{
		{"v2 alone: no change", headroomV2(300, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(305), "pod/memory.stat": "anon 1\ninactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 305 * mib, Own: 300 * mib, Others: 5 * mib, Avail: 512 * mib}, false},
		{"v2 sibling at the binding level", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		{"v2 co-process in the own cgroup", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: app, From: "memory.max", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		{"v2 others at a non-binding level", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(256), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
			"pod/memory.max": mibs(1024), "pod/memory.current": mibs(400), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: app, From: "memory.max", Limit: 256 * mib, Usage: 100 * mib, Own: 100 * mib, Avail: 256 * mib}, false},
		{"v2 others make the parent bind", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(400), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		{"v2 file pages are not the others'", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(400), "pod/memory.stat": stat("active_file", 50) + stat("inactive_file", 200),
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 150 * mib, Own: 100 * mib, Others: 50 * mib, Avail: 462 * mib}, false},
		{"v2 memory.high is the level's limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.high": mibs(400), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.high", Limit: 400 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 200 * mib}, false},
		{"v2 usage above the limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(700), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 700 * mib, Own: 100 * mib, Others: 600 * mib, Avail: -88 * mib}, false},
		{"v2 own above the usage", headroomV2(300, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(200), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 200 * mib, Own: 300 * mib, Avail: 512 * mib}, false},
		{"v2 no memory.current: level left out", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{}, false},
		{"v2 no memory.stat: level left out", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300),
		}), Headroom{}, false},
		{"v2 no /proc/self/status", headroomV2(-1, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{}, false},
		{"v2 bad memory.current: error, limit kept", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": "lots\n", "pod/memory.stat": "inactive_file 0\n",
		}), Headroom{}, true},
		{"v2 unlimited levels count not", headroomV2(100, map[string]string{
			"pod/memory.max": "max\n", "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.high": mibs(256),
		}), Headroom{}, false},
		{"v2 the own cgroup counts without a limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: app, Limit: math.MaxInt64, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: math.MaxInt64}, false},
		{"v2 a limited level wins over the own cgroup without one", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(400), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 400 * mib, Own: 100 * mib, Others: 300 * mib, Avail: 212 * mib}, false},
		{"v1 sibling under the parent", headroomV1(100, map[string]string{
			"pod/memory.limit_in_bytes": mibs(512), "pod/memory.usage_in_bytes": mibs(320),
			"pod/memory.stat":               "inactive_file 0\ntotal_inactive_file " + strconv.Itoa(20*mib) + "\n",
			"pod/app/memory.limit_in_bytes": "9223372036854771712\n", "pod/app/memory.usage_in_bytes": mibs(100),
		}), Headroom{Source: v1pod, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		{"v1 co-process in the own cgroup", headroomV1(100, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(300),
			"pod/app/memory.stat": "total_inactive_file 0\n",
		}), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		// Issue 26, point 1: file pages, active or not, are the kernel's to
		// reclaim; neither the process's own cache nor a neighbour's is
		// the others' memory.
		{"v1 own active file cache, read twice, alone", headroomV1(5, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(307),
			"pod/app/memory.stat": stat("total_cache", 300) + stat("total_rss", 5) + stat("total_inactive_file", 0) + stat("total_active_file", 300),
		}), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 7 * mib, Own: 5 * mib, Others: 2 * mib, Avail: 512 * mib}, false},
		{"v1 a neighbour's file cache in the own cgroup", headroomV1(230, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(540),
			"pod/app/memory.stat": stat("total_active_file", 200) + stat("total_inactive_file", 100),
		}), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 240 * mib, Own: 230 * mib, Others: 10 * mib, Avail: 512 * mib}, false},
		{"v1 a sibling's file cache and anonymous memory", headroomV1(100, map[string]string{
			"pod/memory.limit_in_bytes": mibs(512), "pod/memory.usage_in_bytes": mibs(600),
			"pod/memory.stat":               stat("total_active_file", 250) + stat("total_inactive_file", 50) + stat("total_shmem", 0),
			"pod/app/memory.limit_in_bytes": "9223372036854771712\n", "pod/app/memory.usage_in_bytes": mibs(100),
		}), Headroom{Source: v1pod, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 300 * mib, Own: 100 * mib, Others: 200 * mib, Avail: 312 * mib}, false},
		{"v2 a neighbour's active file cache", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(410),
			"pod/memory.stat": stat("anon", 105) + stat("file", 300) + stat("active_file", 300) + stat("inactive_file", 0),
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 110 * mib, Own: 100 * mib, Others: 10 * mib, Avail: 512 * mib}, false},
		{"v2 shmem is not file pages", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(410),
			"pod/memory.stat": stat("anon", 100) + stat("file", 300) + stat("shmem", 200) + stat("active_file", 60) + stat("inactive_file", 40) + stat("active_anon", 300),
		}), Headroom{Source: pod, From: "memory.max", Limit: 512 * mib, Usage: 310 * mib, Own: 100 * mib, Others: 210 * mib, Avail: 302 * mib}, false},
		// Issue 26, point 2: the process maps 300 MiB of a tmpfs file whose
		// pages are charged to another cgroup; its RssShmem must not cancel
		// a 200 MiB co-process.
		{"v1 shmem charged elsewhere next to a co-process", withShmem(headroomV1(0, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(215),
			"pod/app/memory.stat": stat("total_cache", 2) + stat("total_rss", 213) + stat("total_shmem", 0) + stat("total_active_file", 2),
		}), 10, 300), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 213 * mib, Own: 10 * mib, Others: 203 * mib, Avail: 309 * mib}, false},
		{"v2 shmem charged elsewhere next to a co-process", withShmem(headroomV2(0, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(215),
			"pod/app/memory.stat": stat("anon", 213) + stat("active_file", 2) + stat("inactive_file", 0),
		}), 10, 300), Headroom{Source: app, From: "memory.max", Limit: 512 * mib, Usage: 213 * mib, Own: 10 * mib, Others: 203 * mib, Avail: 309 * mib}, false},
		{"v2 bad file pages in memory.stat: error, limit kept", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "active_file x\ninactive_file 0\n",
		}), Headroom{}, true},
		// Issue 31, point 1 (readings measured with GODEBUG=madvdontneed=0 next
		// to a 200 MiB co-process): a 250 MiB heap freed with MADV_FREE sits
		// on total_inactive_file, charged as rss and not cache, and in
		// RssAnon; regrown to 200 MiB, 200 of them are written again: not
		// LazyFree any more, on the file list still, and not reclaimable.
		{"v1 lazily freed heap next to a co-process", withLazyFree(headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 250), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 203 * mib, Own: 2 * mib, Others: 201 * mib, Avail: 311 * mib}, false},
		{"v1 lazily freed heap written again, next to a co-process", withLazyFree(headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 50), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 403 * mib, Own: 202 * mib, Others: 201 * mib, Avail: 311 * mib}, false},
		{"v1 lazily freed heap written again, and 150 MiB outside Go", withLazyFree(headroomV1(402, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(403),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 402) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 50), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 353 * mib, Own: 352 * mib, Others: 1 * mib, Avail: 512 * mib}, false},
		{"v2 a co-process's lazily freed pages are the others'", withLazyFree(headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(410),
			"pod/app/memory.stat": stat("anon", 400) + stat("file", 10) + stat("shmem", 0) + stat("inactive_file", 210),
		}), 0), Headroom{Source: app, From: "memory.max", Limit: 512 * mib, Usage: 400 * mib, Own: 100 * mib, Others: 300 * mib, Avail: 212 * mib}, false},
		{"v1 lazily freed pages, no smaps_rollup: all held", headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), Headroom{Source: v1app, From: "memory.limit_in_bytes", Limit: 512 * mib, Usage: 453 * mib, Own: 252 * mib, Others: 201 * mib, Avail: 311 * mib}, false},
		{"v1 no usage file", headroomV1(100, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.stat": "total_inactive_file 0\n",
		}), Headroom{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := ReadFS(tc.fsys)
			require.NoError(t, err, "headroom problems do not fail the reading")
			got := lim.Memory.Headroom
			if tc.err {
				require.Error(t, got.Err)
				got.Err = nil
			} else {
				require.NoError(t, got.Err)
			}
			assert.Equal(t, tc.want, got)
			assert.NotZero(t, lim.Memory.MaxSource+lim.Memory.HighSource, "the limits are read as before")
			w, err := NewWatcher(tc.fsys)
			require.NoError(t, err)
			defer w.Close()
			wl, _ := w.Read()
			wl.Memory.Headroom.Err = nil
			lim.Memory.Headroom.Err = nil
			assert.Equal(t, lim, wl, "the Watcher agrees")
		})
	}
}

// TestHeadroomWatcherNoAllocs: re-reading the usage figures of the limited
// levels (and /proc/self/status) allocates nothing; the test fails if the
// figures are not read at all.
func TestHeadroomWatcherNoAllocs(t *testing.T) {
	fsys := headroomV2(100, map[string]string{
		"pod/app/memory.max": mibs(400), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
		"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
	})
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	var lim Limits
	allocs := testing.AllocsPerRun(100, func() { lim, _ = w.Read() })
	assert.Equal(t, int64(200*mib), lim.Memory.Headroom.Others)
	assert.Zero(t, allocs)
	fsys["sys/fs/cgroup/pod/memory.current"].Data = []byte(mibs(250))
	lim, _ = w.Read()
	assert.Equal(t, int64(150*mib), lim.Memory.Headroom.Others, "the Watcher follows the usage")
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
		u, err := parseUsage([]byte(usage))
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
			v, _, err := statValue([]byte(stat), key, unlimitedMemory-1)
			requireParseError(t, err)
			if v >= unlimitedMemory {
				t.Fatalf("%s %d out of range", key, v)
			}
		}
	})
}
