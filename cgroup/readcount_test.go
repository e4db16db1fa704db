package cgroup

import (
	"io"
	"io/fs"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countFS counts the readings of each file of an fs.FS: the calls of Read
// and ReadAt (a MapFS file gives its whole content to one call).
type countFS struct {
	fs.FS
	mu    sync.Mutex
	reads map[string]int
}

func (c *countFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countFile{File: f, c: c, name: name}, nil
}

func (c *countFS) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[name]++
}

// take returns the counts since the last take.
func (c *countFS) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = map[string]int{}
	return r
}

type countFile struct {
	fs.File
	c    *countFS
	name string
}

func (f *countFile) Read(p []byte) (int, error) { f.c.count(f.name); return f.File.Read(p) }

func (f *countFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.count(f.name)
	return f.File.(io.ReaderAt).ReadAt(p, off)
}

// twiceRead lists the files read more than once.
func twiceRead(counts map[string]int) []string {
	var names []string
	for name, n := range counts {
		if n > 1 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// v1Tick is a v1 process in /pod/app with limits at both levels, each with
// the files of the headroom and of the statistics.
var v1Tick = with(v1Base, map[string]string{
	"proc/self/cgroup": "4:memory:/pod/app\n3:cpu,cpuacct:/pod/app\n",
	"proc/self/status": statusOwn(100),
	"sys/fs/cgroup/cpu,cpuacct/pod/cpu.cfs_quota_us":         "100000\n",
	"sys/fs/cgroup/cpu,cpuacct/pod/cpu.cfs_period_us":        "100000\n",
	"sys/fs/cgroup/cpu,cpuacct/pod/app/cpu.cfs_quota_us":     "50000\n",
	"sys/fs/cgroup/cpu,cpuacct/pod/app/cpu.cfs_period_us":    "100000\n",
	"sys/fs/cgroup/cpu,cpuacct/pod/app/cpu.stat":             "nr_periods 7\nnr_throttled 2\nthrottled_time 3000\n",
	"sys/fs/cgroup/cpu,cpuacct/pod/app/cpuacct.usage":        "42000\n",
	"sys/fs/cgroup/memory/pod/memory.limit_in_bytes":         mibs(512),
	"sys/fs/cgroup/memory/pod/memory.usage_in_bytes":         mibs(300),
	"sys/fs/cgroup/memory/pod/memory.stat":                   "total_inactive_file 0\n",
	"sys/fs/cgroup/memory/pod/app/memory.limit_in_bytes":     mibs(400),
	"sys/fs/cgroup/memory/pod/app/memory.usage_in_bytes":     mibs(200),
	"sys/fs/cgroup/memory/pod/app/memory.stat":               "cache 1\nhierarchical_memory_limit 419430400\ntotal_inactive_file 0\n",
	"sys/fs/cgroup/memory/pod/app/memory.max_usage_in_bytes": mibs(250),
	"sys/fs/cgroup/memory/pod/app/memory.failcnt":            "3\n",
	"sys/fs/cgroup/memory/pod/app/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us":         "",
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us":        "",
	"sys/fs/cgroup/memory/app/memory.limit_in_bytes":         "",
	"sys/fs/cgroup/memory/app/memory.stat":                   "",
})

// TestWatcherReadsEachFileOncePerTick: a tick of the blank import (Read,
// then Stats for the throttling hint) reads each file once, on v1 (as a host
// shows it, and as a container whose mount roots are its own cgroup) and on
// v2. (Stats evaluated the limits again, and the headroom, the limits and
// the statistics each read memory.stat and the usage: up to three readings
// of a file per tick.)
func TestWatcherReadsEachFileOncePerTick(t *testing.T) {
	container := with(v1Tick, map[string]string{
		"proc/self/mountinfo": "30 26 0:27 /pod /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n" +
			"32 26 0:29 /pod /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
	})
	for k, v := range v1Tick {
		if rest, ok := cutPrefix(k, "sys/fs/cgroup/memory/pod/"); ok {
			container["sys/fs/cgroup/memory/"+rest] = v
		} else if rest, ok := cutPrefix(k, "sys/fs/cgroup/cpu,cpuacct/pod/"); ok {
			container["sys/fs/cgroup/cpu,cpuacct/"+rest] = v
		}
	}
	v2 := with(v2Base, map[string]string{
		"proc/self/cgroup":                     "0::/pod/app\n",
		"proc/self/status":                     statusOwn(100),
		"sys/fs/cgroup/pod/memory.max":         mibs(512),
		"sys/fs/cgroup/pod/memory.high":        mibs(480),
		"sys/fs/cgroup/pod/memory.current":     mibs(300),
		"sys/fs/cgroup/pod/memory.stat":        "inactive_file 0\n",
		"sys/fs/cgroup/pod/cpu.max":            "100000 100000\n",
		"sys/fs/cgroup/pod/app/cpu.max":        "50000 100000\n",
		"sys/fs/cgroup/pod/app/memory.max":     mibs(400),
		"sys/fs/cgroup/pod/app/memory.current": mibs(200),
		"sys/fs/cgroup/pod/app/memory.stat":    "inactive_file 0\n",
		"sys/fs/cgroup/pod/app/memory.peak":    mibs(250),
		"sys/fs/cgroup/pod/app/memory.events":  "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
		"sys/fs/cgroup/pod/app/cpu.stat":       "usage_usec 10\nnr_periods 7\nnr_throttled 2\nthrottled_usec 3\n",
		"sys/fs/cgroup/pod/app/cpu.pressure":   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"sys/fs/cgroup/app/cpu.max":            "",
		"sys/fs/cgroup/app/memory.max":         "",
		"sys/fs/cgroup/app/memory.high":        "",
		"sys/fs/cgroup/app/cpu.stat":           "",
	})
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{{"v1", v1Tick}, {"v1 container", container}, {"v2", v2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &countFS{FS: mapFS(tc.files), reads: map[string]int{}}
			w := watch(t, c)
			for tick := range 3 {
				c.take()
				lim, err := w.Read()
				require.NoError(t, err)
				st, err := w.Stats()
				require.NoError(t, err)
				counts := c.take()
				assert.Empty(t, twiceRead(counts), "tick %d: %v", tick, counts)
				// What the tick read is what it needs.
				assert.NotEmpty(t, lim.Memory.Levels)
				assert.NotEmpty(t, lim.CPU.Source)
				assert.Equal(t, lim.CPU.Source, st.CPU.Dir)
				assert.Equal(t, lim.Memory.MaxSource, st.Memory.Dir)
				assert.Positive(t, st.Memory.Usage)
			}
		})
	}
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

// TestReadOnlyReadsItsController: ReadOnly reads the files of its controller
// and gives its limits as ReadFS does, the other's left zero and unread;
// ReadEventsDir reads the memory events' files alone and gives the events
// ReadStatsDir gives.
func TestReadOnlyReadsItsController(t *testing.T) {
	full, err := ReadFS(mapFS(v1Tick))
	require.NoError(t, err)
	for _, tc := range []struct {
		controller, other string
		want              Limits
	}{
		{"cpu", "memory", Limits{CPU: full.CPU}},
		{"memory", "cpu", Limits{Memory: full.Memory}},
	} {
		t.Run(tc.controller, func(t *testing.T) {
			c := &countFS{FS: mapFS(v1Tick), reads: map[string]int{}}
			lim, err := ReadOnly(c, tc.controller)
			require.NoError(t, err)
			assert.Equal(t, tc.want, lim)
			for name := range c.take() {
				assert.NotContains(t, name, "/"+tc.other, "a file of the other controller")
			}
		})
	}
	const dir = "/sys/fs/cgroup/memory/pod/app"
	st, err := ReadStatsDir(mapFS(v1Tick), dir)
	require.NoError(t, err)
	c := &countFS{FS: mapFS(v1Tick), reads: map[string]int{}}
	ev, err := ReadEventsDir(c, dir)
	require.NoError(t, err)
	assert.True(t, ev.Memory.HasEvents)
	assert.Equal(t, st.Memory.Events, ev.Memory.Events)
	assert.Equal(t, map[string]int{"sys/fs/cgroup/memory/pod/app/memory.failcnt": 1, "sys/fs/cgroup/memory/pod/app/memory.oom_control": 1}, c.take())
}
