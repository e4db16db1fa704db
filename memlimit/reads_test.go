package memlimit

import (
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
)

// openedFS records the names opened in an fs.FS.
type openedFS struct {
	fs.FS
	mu     sync.Mutex
	opened []string
}

func (o *openedFS) Open(name string) (fs.File, error) {
	o.mu.Lock()
	o.opened = append(o.opened, name)
	o.mu.Unlock()
	return o.FS.Open(name)
}

// count returns how many times a name ending in suffix was opened.
func (o *openedFS) count(suffix string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, name := range o.opened {
		if strings.HasSuffix(name, suffix) {
			n++
		}
	}
	return n
}

// v1Startup is a v1 process in /app with a CPU quota and a memory limit,
// the headroom's files and the memory events.
var v1Startup = fstest.MapFS{
	"proc/self/cgroup": {Data: []byte("4:memory:/app\n3:cpu,cpuacct:/app\n")},
	"proc/self/mountinfo": {Data: []byte("30 26 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
		"32 26 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
	"proc/self/status": {Data: []byte("RssAnon:\t102400 kB\nRssFile:\t5000 kB\nRssShmem:\t0 kB\n")},
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us":  {Data: []byte("50000\n")},
	"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": {Data: []byte("100000\n")},
	"sys/fs/cgroup/memory/app/memory.limit_in_bytes":  {Data: []byte("536870912\n")},
	"sys/fs/cgroup/memory/app/memory.usage_in_bytes":  {Data: []byte("209715200\n")},
	"sys/fs/cgroup/memory/app/memory.stat":            {Data: []byte("total_active_file 0\ntotal_inactive_file 0\n")},
	"sys/fs/cgroup/memory/app/memory.failcnt":         {Data: []byte("3\n")},
	"sys/fs/cgroup/memory/app/memory.oom_control":     {Data: []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")},
}

// TestStartupReadsMemoryStatOnce: the blank import's start-up (one reading
// shared by both knobs, memlimit's Apply, then Status for the start-up line)
// reads memory.stat and memory.usage_in_bytes once: Status reads the events'
// files only. (It read all the statistics, memory.stat and the usage again.)
func TestStartupReadsMemoryStatOnce(t *testing.T) {
	fsys := &openedFS{FS: v1Startup}
	te := newTestEnv(&fakeKnob{value: noLimit}, nil)
	te.fsys, te.cgroups = fsys, fsys
	lim, err := cgroup.ReadFS(fsys)
	require.NoError(t, err)
	fit, err := Apply(te.opts(Options{Limits: &lim}))
	require.NoError(t, err)
	defer fit.Undo()
	st := fit.Status()
	require.True(t, st.Changed)
	assert.Equal(t, events{Max: 3, OOMKill: 1}, st.Events, "Status still reads the events")
	// memory.failcnt: the reading's (the level's Hits), then Status'.
	for name, n := range map[string]int{"memory.stat": 1, "memory.usage_in_bytes": 1, "memory.failcnt": 2, "memory.oom_control": 1} {
		assert.Equal(t, n, fsys.count("/"+name), "%s read at start-up", name)
	}
	assert.Zero(t, fsys.count("memory.max_usage_in_bytes"), "the peak is not an event")
}

// TestApplyReadsOnlyMemory: memlimit's Apply in the process's Env reads the
// memory controller's files, none of the CPU controller's.
func TestApplyReadsOnlyMemory(t *testing.T) {
	fsys := &openedFS{FS: v1Startup}
	te := newTestEnv(&fakeKnob{value: noLimit}, nil)
	e := knob.Process(te.Knob, fsys, "memory")
	te.Read, te.fsys, te.cgroups = e.Read, fsys, fsys
	fit, err := Apply(te.opts(Options{}))
	require.NoError(t, err)
	defer fit.Undo()
	assert.True(t, fit.Status().Changed)
	assert.Equal(t, 1, fsys.count("app/memory.limit_in_bytes"))
	assert.Zero(t, fsys.count("/cpu.cfs_quota_us")+fsys.count("/cpu.cfs_period_us"), "the CPU controller's files")
}
