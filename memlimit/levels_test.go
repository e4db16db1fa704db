package memlimit

import (
	"math"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/cgfs"

	"github.com/fitgo/fitgo/cgroup"
)

// The fixture trees (package cgfs).
var (
	statusOwn, withShmem, withLazyFree = cgfs.StatusOwn, cgfs.WithShmem, cgfs.WithLazyFree
	stat, mibs, headroomV2, headroomV1 = cgfs.Stat, cgfs.MiBs, cgfs.V2, cgfs.V1
)

// TestOthersFromFiles: the level that leaves the process the least, from
// the files cgroup reads (the others as the headroom counts them, without
// memory outside Go), through ReadFS and a Watcher alike.
func TestOthersFromFiles(t *testing.T) {
	const pod, app = "/sys/fs/cgroup/pod", "/sys/fs/cgroup/pod/app"
	const v1pod, v1app = "/sys/fs/cgroup/memory/pod", "/sys/fs/cgroup/memory/pod/app"
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want memLimit // memLimit{}: none
		err  bool
	}{
		{"v2 alone: no change", headroomV2(300, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(305), "pod/memory.stat": "anon 1\ninactive_file 0\n",
		}), memLimit{bytes: 512 * MiB, source: pod, from: memoryMax, others: 5 * MiB, level: 512 * MiB}, false},
		{"v2 sibling at the binding level", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 312 * MiB, source: pod, from: memoryMax, others: 200 * MiB, level: 512 * MiB}, false},
		{"v2 co-process in the own cgroup", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 312 * MiB, source: app, from: memoryMax, others: 200 * MiB, level: 512 * MiB}, false},
		{"v2 others at a non-binding level", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(256), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
			"pod/memory.max": mibs(1024), "pod/memory.current": mibs(400), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 256 * MiB, source: app, from: memoryMax, level: 256 * MiB}, false},
		{"v2 others make the parent bind", headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(400), "pod/app/memory.current": mibs(100), "pod/app/memory.stat": "inactive_file 0\n",
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 312 * MiB, source: pod, from: memoryMax, others: 200 * MiB, level: 512 * MiB}, false},
		{"v2 file pages are not the others'", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(400), "pod/memory.stat": stat("active_file", 50) + stat("inactive_file", 200),
		}), memLimit{bytes: 462 * MiB, source: pod, from: memoryMax, others: 50 * MiB, level: 512 * MiB}, false},
		{"v2 memory.high is the level's limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.high": mibs(400), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 200 * MiB, source: pod, from: memoryHigh, others: 200 * MiB, level: 400 * MiB}, false},
		{"v2 usage above the limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(700), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: -88 * MiB, source: pod, from: memoryMax, others: 600 * MiB, level: 512 * MiB}, false},
		{"v2 own above the usage", headroomV2(300, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(200), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 512 * MiB, source: pod, from: memoryMax, level: 512 * MiB}, false},
		{"v2 no memory.current: level left out", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{}, false},
		{"v2 no memory.stat: level left out", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300),
		}), memLimit{}, false},
		{"v2 no /proc/self/status", headroomV2(-1, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{}, false},
		{"v2 bad memory.current: error, limit kept", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": "lots\n", "pod/memory.stat": "inactive_file 0\n",
		}), memLimit{}, true},
		{"v2 unlimited levels count not", headroomV2(100, map[string]string{
			"pod/memory.max": "max\n", "pod/memory.current": mibs(300), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.high": mibs(256),
		}), memLimit{}, false},
		{"v2 the own cgroup counts without a limit", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: math.MaxInt64, source: app, others: 200 * MiB, level: math.MaxInt64}, false},
		{"v2 a limited level wins over the own cgroup without one", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(400), "pod/memory.stat": "inactive_file 0\n",
			"pod/app/memory.current": mibs(300), "pod/app/memory.stat": "inactive_file 0\n",
		}), memLimit{bytes: 212 * MiB, source: pod, from: memoryMax, others: 300 * MiB, level: 512 * MiB}, false},
		{"v1 sibling under the parent", headroomV1(100, map[string]string{
			"pod/memory.limit_in_bytes": mibs(512), "pod/memory.usage_in_bytes": mibs(320),
			"pod/memory.stat":               "inactive_file 0\ntotal_inactive_file " + strconv.Itoa(20<<20) + "\n",
			"pod/app/memory.limit_in_bytes": "9223372036854771712\n", "pod/app/memory.usage_in_bytes": mibs(100),
		}), memLimit{bytes: 312 * MiB, source: v1pod, from: limitInBytes, others: 200 * MiB, level: 512 * MiB}, false},
		{"v1 co-process in the own cgroup", headroomV1(100, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(300),
			"pod/app/memory.stat": "total_inactive_file 0\n",
		}), memLimit{bytes: 312 * MiB, source: v1app, from: limitInBytes, others: 200 * MiB, level: 512 * MiB}, false},
		// Issue 26, point 1: file pages, active or not, are the kernel's to
		// reclaim; neither the process's own cache nor a neighbour's is
		// the others' memory.
		{"v1 own active file cache, read twice, alone", headroomV1(5, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(307),
			"pod/app/memory.stat": stat("total_cache", 300) + stat("total_rss", 5) + stat("total_inactive_file", 0) + stat("total_active_file", 300),
		}), memLimit{bytes: 512 * MiB, source: v1app, from: limitInBytes, others: 2 * MiB, level: 512 * MiB}, false},
		{"v1 a neighbour's file cache in the own cgroup", headroomV1(230, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(540),
			"pod/app/memory.stat": stat("total_active_file", 200) + stat("total_inactive_file", 100),
		}), memLimit{bytes: 512 * MiB, source: v1app, from: limitInBytes, others: 10 * MiB, level: 512 * MiB}, false},
		{"v1 a sibling's file cache and anonymous memory", headroomV1(100, map[string]string{
			"pod/memory.limit_in_bytes": mibs(512), "pod/memory.usage_in_bytes": mibs(600),
			"pod/memory.stat":               stat("total_active_file", 250) + stat("total_inactive_file", 50) + stat("total_shmem", 0),
			"pod/app/memory.limit_in_bytes": "9223372036854771712\n", "pod/app/memory.usage_in_bytes": mibs(100),
		}), memLimit{bytes: 312 * MiB, source: v1pod, from: limitInBytes, others: 200 * MiB, level: 512 * MiB}, false},
		{"v2 a neighbour's active file cache", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(410),
			"pod/memory.stat": stat("anon", 105) + stat("file", 300) + stat("active_file", 300) + stat("inactive_file", 0),
		}), memLimit{bytes: 512 * MiB, source: pod, from: memoryMax, others: 10 * MiB, level: 512 * MiB}, false},
		{"v2 shmem is not file pages", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(410),
			"pod/memory.stat": stat("anon", 100) + stat("file", 300) + stat("shmem", 200) + stat("active_file", 60) + stat("inactive_file", 40) + stat("active_anon", 300),
		}), memLimit{bytes: 302 * MiB, source: pod, from: memoryMax, others: 210 * MiB, level: 512 * MiB}, false},
		// Issue 26, point 2: the process maps 300 MiB of a tmpfs file whose
		// pages are charged to another cgroup; its RssShmem must not cancel
		// a 200 MiB co-process.
		{"v1 shmem charged elsewhere next to a co-process", withShmem(headroomV1(0, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(215),
			"pod/app/memory.stat": stat("total_cache", 2) + stat("total_rss", 213) + stat("total_shmem", 0) + stat("total_active_file", 2),
		}), 10, 300), memLimit{bytes: 309 * MiB, source: v1app, from: limitInBytes, others: 203 * MiB, level: 512 * MiB}, false},
		{"v2 shmem charged elsewhere next to a co-process", withShmem(headroomV2(0, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(215),
			"pod/app/memory.stat": stat("anon", 213) + stat("active_file", 2) + stat("inactive_file", 0),
		}), 10, 300), memLimit{bytes: 309 * MiB, source: app, from: memoryMax, others: 203 * MiB, level: 512 * MiB}, false},
		{"v2 bad file pages in memory.stat: error, limit kept", headroomV2(100, map[string]string{
			"pod/memory.max": mibs(512), "pod/memory.current": mibs(300), "pod/memory.stat": "active_file x\ninactive_file 0\n",
		}), memLimit{}, true},
		// Issue 31, point 1 (readings measured with GODEBUG=madvdontneed=0 next
		// to a 200 MiB co-process): a 250 MiB heap freed with MADV_FREE sits
		// on total_inactive_file, charged as rss and not cache, and in
		// RssAnon; regrown to 200 MiB, 200 of them are written again: not
		// LazyFree any more, on the file list still, and not reclaimable.
		{"v1 lazily freed heap next to a co-process", withLazyFree(headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 250), memLimit{bytes: 311 * MiB, source: v1app, from: limitInBytes, others: 201 * MiB, level: 512 * MiB}, false},
		{"v1 lazily freed heap written again, next to a co-process", withLazyFree(headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 50), memLimit{bytes: 311 * MiB, source: v1app, from: limitInBytes, others: 201 * MiB, level: 512 * MiB}, false},
		{"v1 lazily freed heap written again, and 150 MiB outside Go", withLazyFree(headroomV1(402, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(403),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 402) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), 50), memLimit{bytes: 512 * MiB, source: v1app, from: limitInBytes, others: 1 * MiB, level: 512 * MiB}, false},
		{"v2 a co-process's lazily freed pages are the others'", withLazyFree(headroomV2(100, map[string]string{
			"pod/app/memory.max": mibs(512), "pod/app/memory.current": mibs(410),
			"pod/app/memory.stat": stat("anon", 400) + stat("file", 10) + stat("shmem", 0) + stat("inactive_file", 210),
		}), 0), memLimit{bytes: 212 * MiB, source: app, from: memoryMax, others: 300 * MiB, level: 512 * MiB}, false},
		{"v1 lazily freed pages, no smaps_rollup: all held", headroomV1(252, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.usage_in_bytes": mibs(453),
			"pod/app/memory.stat": stat("total_cache", 0) + stat("total_rss", 452) + stat("total_shmem", 0) + stat("total_inactive_file", 250),
		}), memLimit{bytes: 311 * MiB, source: v1app, from: limitInBytes, others: 201 * MiB, level: 512 * MiB}, false},
		{"v1 no usage file", headroomV1(100, map[string]string{
			"pod/app/memory.limit_in_bytes": mibs(512), "pod/app/memory.stat": "total_inactive_file 0\n",
		}), memLimit{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := cgroup.ReadFS(tc.fsys)
			require.NoError(t, err, "headroom problems do not fail the reading")
			assert.Equal(t, tc.err, lim.Memory.UsageErr != nil, "%v", lim.Memory.UsageErr)
			r := &rule{headroom: true}
			got, ok := r.others(lim.Memory, 1<<62)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want != memLimit{}, ok)
			assert.NotZero(t, lim.Memory.MaxSource+lim.Memory.HighSource, "the limits are read as before")
			w, err := cgroup.NewWatcher(tc.fsys)
			require.NoError(t, err)
			defer w.Close()
			wl, _ := w.Read()
			wgot, _ := r.others(wl.Memory, 1<<62)
			assert.Equal(t, got, wgot, "the Watcher agrees")
		})
	}
}

// TestOthersLevelByTheCountApplied: the level chosen is the one that leaves
// the least by the count that is applied, memory outside Go included. Under
// a 1000 MiB app and a 1010 MiB pod, with 100 MiB of RssAnon of which the
// runtime holds 90, the others hold 41 MiB at app (31 without the memory
// outside Go, within app's margin) and 50 at pod (40, beyond pod's): app
// leaves 959 MiB, pod 960. Choosing by the count without the memory outside
// Go took pod.
func TestOthersLevelByTheCountApplied(t *testing.T) {
	fsys := headroomV2(100, map[string]string{
		"pod/app/memory.max": mibs(1000), "pod/app/memory.current": mibs(131), "pod/app/memory.stat": "inactive_file 0\n",
		"pod/memory.max": mibs(1010), "pod/memory.current": mibs(140), "pod/memory.stat": "inactive_file 0\n",
	})
	te := newTestEnv(&fakeKnob{value: noLimit}, fsys)
	te.resident = func() int64 { return 90 * MiB }
	r, err := Plan(te.opts(Options{}))
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/pod/app", r.Source)
	assert.Equal(t, 959*MiB, r.Limit)
	assert.Equal(t, 41*MiB, r.Others)
	assert.Equal(t, 10*MiB, r.NonGo)
}
