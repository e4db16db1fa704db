package local

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

func TestSharedAndLeakSettings(t *testing.T) {
	names := func(vs []variant.Variant) (out []string) {
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	o, err := parseFlags([]string{"-scenario", "shared"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"untuned", "runtime", "env", "automaxprocs+automemlimit", "fitgo", "oracle-headroom"}, names(o.Variants))
	sets, err := o.settings()
	require.NoError(t, err)
	// 0.6 × (512 − 200) MiB = 187 MiB live: GOGC's goal, 374 MiB, is above
	// the 312 MiB the sidecar leaves; 0.9 × 312 MiB is not.
	assert.Equal(t, []setting{
		{scenario: "shared", memory: 512 << 20, heapMiB: 187, layout: LayoutSibling, sidecar: 200 << 20},
		{scenario: "shared", memory: 512 << 20, heapMiB: 187, layout: LayoutCoprocess, sidecar: 200 << 20},
	}, sets)
	assert.Equal(t, "shared: no CPU quota, memory limit 512 MiB on the parent, shared with a 200 MiB sidecar in a sibling cgroup", sets[0].String())

	o, err = parseFlags([]string{"-scenario", "shared", "-memory", "128Mi", "-sidecar", "48Mi", "-layout", "coprocess", "-variants", "untuned"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"untuned"}, names(o.Variants))
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{{scenario: "shared", memory: 128 << 20, heapMiB: 48, layout: LayoutCoprocess, sidecar: 48 << 20}}, sets)
	assert.Zero(t, o.SidecarCache)

	o, err = parseFlags([]string{"-scenario", "shared", "-layout", "inprocess-cgo, inprocess-mmap"}, io.Discard)
	require.NoError(t, err)
	sets, err = o.settings()
	require.NoError(t, err)
	require.Len(t, sets, 2)
	assert.Equal(t, []string{LayoutCgo, LayoutMmap}, []string{sets[0].layout, sets[1].layout})
	assert.Equal(t, "shared: no CPU quota, memory limit 512 MiB, 200 MiB of it held by the workload outside the Go runtime (inprocess-cgo)", sets[0].String())

	o, err = parseFlags([]string{"-scenario", "shared", "-sidecar-cache", "300Mi"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(300<<20), o.SidecarCache)

	o, err = parseFlags([]string{"-scenario", "leak"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"untuned", "runtime", "env", "automaxprocs+automemlimit", "fitgo", "fitgo-noguard"}, names(o.Variants))
	assert.Equal(t, []string{"FITGO=leakguard=off"}, o.Variants[5].Env)
	assert.False(t, o.DurationSet)
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{{scenario: "leak", memory: 512 << 20, heapMiB: 256, growMiB: 4, duration: DefaultLeakDuration}}, sets,
		"from half the limit, 4 MiB/s, for longer than the default window")

	o, err = parseFlags([]string{"-scenario", "leak,shared", "-duration", "30s", "-grow-mib", "8", "-memory", "1Gi"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.DurationSet)
	assert.Equal(t, []string{"untuned", "runtime", "env", "automaxprocs+automemlimit", "fitgo", "fitgo-noguard", "oracle-headroom"}, names(o.Variants), "the union")
	sets, err = o.settings()
	require.NoError(t, err)
	require.Len(t, sets, 3)
	assert.Equal(t, setting{scenario: "leak", memory: 1 << 30, heapMiB: 512, growMiB: 8}, sets[0], "-duration applies")

	o, err = parseFlags([]string{"-scenario", "shared,cpu"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, names(variant.All), names(o.Variants), "with other scenarios, the common default")

	for _, bad := range [][]string{
		{"-layout", "sidecar"}, {"-layout", ","}, {"-sidecar", "x"}, {"-sidecar", "1Mi,2Mi"}, {"-grow-mib", "0"}, {"-sidecar-free-after", "-1s"},
		{"-sidecar-cache", "x"}, {"-sidecar-cache", "1Mi,2Mi"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%q", bad)
	}
	o, err = parseFlags([]string{"-scenario", "shared", "-memory", "128Mi", "-sidecar", "128Mi"}, io.Discard)
	require.NoError(t, err)
	_, err = o.settings()
	assert.ErrorContains(t, err, "must hold less than the memory limit")
}

// TestGCSettings: the gc scenario runs the heavy workload at two quotas,
// the light one at one, and the burst case on the heavy one at its largest
// quota, each after a warm-up; the flags override every workload's figures.
func TestGCSettings(t *testing.T) {
	names := func(vs []variant.Variant) (out []string) {
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	o, err := parseFlags([]string{"-scenario", "gc"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"fitgo", "fitgo-gc", "gogc-off", "gctuner", "automaxprocs+automemlimit", "runtime"}, names(o.Variants))
	sets, err := o.settings()
	require.NoError(t, err)
	heavy := setting{scenario: "gc", memory: 1 << 30, heapMiB: 100, allocMiB: 100, duration: DefaultGCDuration, warmup: 3 * time.Second,
		workload: "heavy (100 MiB live, 100 MiB/s)"}
	at := func(st setting, cpus float64, burst int64) setting {
		st.cpus, st.burst = cpus, burst
		return st
	}
	light := setting{scenario: "gc", cpus: 1, memory: 1 << 30, heapMiB: 30, allocMiB: 5, duration: DefaultGCDuration, warmup: 3 * time.Second,
		workload: "light (30 MiB live, 5 MiB/s)"}
	assert.Equal(t, []setting{at(heavy, 0.5, 0), at(heavy, 1, 0), light, at(heavy, 1, 1<<30/5)}, sets)
	assert.Equal(t, "gc, heavy (100 MiB live, 100 MiB/s): CPU quota 1 CPU, memory limit 1024 MiB, burst: a co-process grows by 205 MiB (20 %)", sets[3].String())
	assert.Equal(t, 10*time.Second, burstAt(DefaultGCDuration))

	o, err = parseFlags([]string{"-scenario", "gc", "-cpus", "2,1.5", "-memory", "2Gi", "-heap-mib", "200", "-duration", "8s", "-warmup", "5s",
		"-burst", "0.25", "-variants", "fitgo,gogc-off"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"GOGC=off"}, o.Variants[1].Env)
	assert.True(t, o.Variants[1].HeadroomOracle, "GOMEMLIMIT = 0.9 × the limit from the runner")
	sets, err = o.settings()
	require.NoError(t, err)
	heavy = setting{scenario: "gc", memory: 2 << 30, heapMiB: 200, allocMiB: 100, warmup: 5 * time.Second, workload: "heavy (200 MiB live, 100 MiB/s)"}
	light = setting{scenario: "gc", memory: 2 << 30, heapMiB: 200, allocMiB: 5, warmup: 5 * time.Second, workload: "light (200 MiB live, 5 MiB/s)"}
	assert.Equal(t, []setting{at(heavy, 2, 0), at(heavy, 1.5, 0), at(light, 2, 0), at(light, 1.5, 0), at(heavy, 2, 2<<30/4)}, sets,
		"the flags apply to every workload; the burst at the largest quota")
	assert.Equal(t, 4*time.Second, burstAt(8*time.Second), "half a short window")

	o, err = parseFlags([]string{"-scenario", "gc", "-heap-mib", "50", "-alloc-mib", "40", "-burst", "0", "-warmup", "0"}, io.Discard)
	require.NoError(t, err)
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Equal(t, []setting{
		{scenario: "gc", cpus: 0.5, memory: 1 << 30, heapMiB: 50, allocMiB: 40, duration: DefaultGCDuration, workload: "heavy (50 MiB live, 40 MiB/s)"},
		{scenario: "gc", cpus: 1, memory: 1 << 30, heapMiB: 50, allocMiB: 40, duration: DefaultGCDuration, workload: "heavy (50 MiB live, 40 MiB/s)"},
	}, sets, "two workloads made the same run once; no burst; no warm-up")

	o, err = parseFlags([]string{"-scenario", "cpu", "-cpus", "1"}, io.Discard)
	require.NoError(t, err)
	sets, err = o.settings()
	require.NoError(t, err)
	assert.Zero(t, sets[0].warmup, "no warm-up outside the gc scenario unless asked")

	for _, bad := range [][]string{{"-burst", "1"}, {"-burst", "-0.1"}, {"-burst", "x"}, {"-warmup", "-1s"}} {
		_, err := parseFlags(append([]string{"-scenario", "gc"}, bad...), io.Discard)
		assert.Error(t, err, "%q", bad)
	}
}

// TestParseCounter: the one counter of a flat-keyed file that the runner
// reads itself (under_oom, oom_kill); the rest is cgroup.ReadStatsDir's.
func TestParseCounter(t *testing.T) {
	for _, tc := range []struct {
		name, in, key string
		want          uint64
		err           bool
	}{
		{name: "v2 memory.events", in: "low 0\nhigh 12\nmax 340\noom 2\noom_kill 1\noom_group_kill 0\n", key: "oom_kill", want: 1},
		{name: "v1 memory.oom_control", in: "oom_kill_disable 0\nunder_oom 1\noom_kill 3\n", key: "under_oom", want: 1},
		{name: "no final newline, blank lines", in: "\nmax 1\n\noom 2", key: "oom", want: 2},
		{name: "empty", in: "", key: "max", err: true},
		{name: "three fields", in: "max 1 2\n", key: "max", err: true},
		{name: "negative", in: "max -1\n", key: "max", err: true},
		{name: "not a number", in: "max lots\n", key: "max", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCounter(tc.in, tc.key)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestV1Sibling(t *testing.T) {
	k := newFakeV1(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	const top = "/sys/fs/cgroup/memory/user/fitgo-bench-1-4-x"
	var hierarchyWritten bool
	k.put("/sys/fs/cgroup/memory/user/memory.use_hierarchy", "0\n")
	h.fs.onMkdir = func(p string) error {
		k.mkdir(p)
		if p == top { // an old kernel under a parent without hierarchy
			k.put(top+"/memory.use_hierarchy", "0\n")
		}
		return nil
	}
	h.fs.onWrite = func(p, v string) (bool, error) {
		if p == top+"/memory.use_hierarchy" {
			assert.False(t, k.exists(top+"/workload"), "use_hierarchy is set before the children exist")
			hierarchyWritten = v == "1"
		}
		return k.write(p, v)
	}
	g, err := h.NewGroup("fitgo-bench-1-4-x", Spec{Memory: 128 << 20, Sibling: true})
	require.NoError(t, err)
	assert.True(t, hierarchyWritten)
	assert.Equal(t, "134217728", k.get(top+"/memory.limit_in_bytes"))
	assert.Equal(t, "9223372036854771712\n", k.get(top+"/sidecar/memory.limit_in_bytes"), "the children have no limits")
	assert.Equal(t, top, g.MemoryDir)
	assert.Equal(t, top+"/workload", g.MemoryLeaf)
	assert.Equal(t, top+"/sidecar", g.SidecarMemoryLeaf)
	assert.Equal(t, []string{"/sys/fs/cgroup/cpu/fitgo-bench-1-4-x/workload/cgroup.procs", top + "/workload/cgroup.procs"}, g.Procs)
	assert.Equal(t, []string{"/sys/fs/cgroup/cpu/fitgo-bench-1-4-x/sidecar/cgroup.procs", top + "/sidecar/cgroup.procs"}, g.SidecarProcs)

	// v1 counts an OOM kill only in the victim's own cgroup.
	k.put(top+"/workload/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	n, err := g.OOMKills()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), n)
	n, err = g.SidecarOOMKills()
	require.NoError(t, err)
	assert.Zero(t, n)

	k.put(top+"/memory.failcnt", "42\n")
	k.put(top+"/memory.memsw.failcnt", "7\n")
	k.put(top+"/memory.max_usage_in_bytes", "134217728\n")
	k.put(top+"/memory.usage_in_bytes", "52428800\n")
	ev, peak, err := g.MemoryEvents()
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"failcnt": 42, "memsw_failcnt": 7, "oom_kill": 0, "under_oom": 0}, ev, "the limited parent's")
	assert.Equal(t, int64(128<<20), peak)
	u, err := g.MemoryUsage()
	require.NoError(t, err)
	assert.Equal(t, int64(50<<20), u)

	require.NoError(t, g.Remove())
	assert.False(t, k.exists(top))
	assert.False(t, k.exists("/sys/fs/cgroup/cpu/fitgo-bench-1-4-x"))

	// A kernel that refuses hierarchical accounting fails the group.
	h.fs.onWrite = func(p, v string) (bool, error) {
		if p == "/sys/fs/cgroup/memory/user/fitgo-bench-1-5-x/memory.use_hierarchy" {
			return true, io.ErrUnexpectedEOF
		}
		return k.write(p, v)
	}
	h.fs.onMkdir = func(p string) error {
		k.mkdir(p)
		k.put(p+"/memory.use_hierarchy", "0\n")
		return nil
	}
	_, err = h.NewGroup("fitgo-bench-1-5-x", Spec{Memory: 128 << 20, Sibling: true})
	require.ErrorContains(t, err, "hierarchical memory accounting")
	assert.False(t, k.exists("/sys/fs/cgroup/memory/user/fitgo-bench-1-5-x"), "cleaned up")
}

func TestV2Sibling(t *testing.T) {
	k := newFakeV2(t)
	h, err := open(k.sysfs(), "")
	require.NoError(t, err)
	const top = "/sys/fs/cgroup/fitgo-bench-1-6-x"
	g, err := h.NewGroup("fitgo-bench-1-6-x", Spec{Memory: 128 << 20, Sibling: true})
	require.NoError(t, err)
	assert.Equal(t, "134217728", k.get(top+"/memory.max"))
	assert.Equal(t, "cpu memory", k.get(top+"/cgroup.subtree_control"), "the children get the controllers")
	assert.Equal(t, []string{top + "/workload/cgroup.procs"}, g.Procs)
	assert.Equal(t, []string{top + "/sidecar/cgroup.procs"}, g.SidecarProcs)
	assert.Equal(t, top+"/workload", g.MemoryLeaf)

	k.put(top+"/memory.events", "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n")
	k.put(top+"/memory.peak", "134217728\n")
	k.put(top+"/memory.current", "1048576\n")
	ev, peak, err := g.MemoryEvents()
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"low": 0, "high": 0, "max": 17, "oom": 1, "oom_kill": 1, "oom_group_kill": 0}, ev)
	assert.Equal(t, int64(128<<20), peak)
	u, err := g.MemoryUsage()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), u)

	// Without memory.peak (kernels before 5.19) the peak is unknown.
	k.put(top+"/memory.events", "max 0\n")
	require.NoError(t, os.Remove(k.path(top+"/memory.peak")))
	_, peak, err = g.MemoryEvents()
	require.NoError(t, err)
	assert.Zero(t, peak)
	// A counter that is not a number (unknown lines are skipped: kernels
	// add counters).
	k.put(top+"/memory.events", "max lots\n")
	_, _, err = g.MemoryEvents()
	require.ErrorContains(t, err, "memory.events")
	require.NoError(t, g.Remove())
}

func TestLeakTracker(t *testing.T) {
	p := func(ms, gc, cpu float64, win bool) results.Progress {
		pr := results.Progress{ElapsedMS: ms, GCCPUSeconds: gc, CPUSeconds: cpu}
		if win {
			pr.LimitBound = true
			pr.Window = &results.Window{StartMS: 2000, Requests: uint64(ms)}
		}
		return pr
	}
	limit := func(pr results.Progress, mib int64) results.Progress { pr.GOMEMLIMIT = mib << 20; return pr }
	for _, tc := range []struct {
		name  string
		lines []results.Progress
		end   float64
		want  *results.LeakWindow
	}{
		{name: "never bound", lines: []results.Progress{p(1000, 0, 2, false), p(2000, 0.1, 4, false)}, end: 10000},
		{
			name: "bound, then a brown-out, then killed",
			lines: []results.Progress{
				p(1000, 0.1, 2, false),
				p(2000, 0.2, 4, true),  // the window starts
				p(3000, 0.4, 6, true),  // 10 % GC
				p(4000, 0.4, 6, true),  // no GC cycle ended: no new estimate
				p(5000, 3.4, 10, true), // 3 of 4 CPU-seconds since 3000: 2 s of brown-out
				p(6000, 5.2, 12, true), // 90 %: 1 s more
			},
			end: 6400,
			want: &results.LeakWindow{ReachedMS: 2000, EndMS: 6400, BrownoutMS: 3000,
				Window: &results.Window{StartMS: 2000, Requests: 6000}},
		},
		{
			name: "bound, then GOMEMLIMIT raised",
			lines: []results.Progress{
				limit(p(1000, 0.1, 2, false), 460), limit(p(2000, 0.2, 4, true), 460),
				limit(p(3000, 0.4, 6, true), 473), limit(p(4000, 0.6, 8, true), 486),
			},
			end: 4500,
			want: &results.LeakWindow{ReachedMS: 2000, EndMS: 4500, RaisedMS: 3000,
				Window: &results.Window{StartMS: 2000, Requests: 4000}},
		},
		{
			name:  "bound in the last line of a run killed at once",
			lines: []results.Progress{p(1000, 0, 2, false), p(2000, 0.5, 4, true)},
			end:   1500, // the process's wall time is measured apart from its age
			want:  &results.LeakWindow{ReachedMS: 2000, EndMS: 2000, Window: &results.Window{StartMS: 2000, Requests: 2000}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr leakTracker
			for _, l := range tc.lines {
				tr.add(l)
			}
			assert.Equal(t, tc.want, tr.result(tc.end))
		})
	}
}

func TestHeadroomOracleEnv(t *testing.T) {
	assert.Equal(t, []string{"GOMEMLIMIT=294440140"}, variant.Oracle.HeadroomEnv(512<<20, 200<<20), "0.9 × 312 MiB")
	assert.Nil(t, variant.Oracle.HeadroomEnv(0, 0))
	assert.Nil(t, variant.Oracle.HeadroomEnv(1<<20, 1<<20))
	v, ok := variant.Lookup("oracle-0.95")
	require.True(t, ok)
	assert.Equal(t, []string{"GOMEMLIMIT=310797926"}, v.HeadroomEnv(512<<20, 200<<20), "0.95 × 312 MiB")
	for _, bad := range []string{"oracle-0", "oracle-1.5", "oracle-0.950", "oracle-x", "oracle--1"} {
		_, ok := variant.Lookup(bad)
		assert.False(t, ok, bad)
	}
}
