package maxprocs

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/knob"
)

// openedFS records the names opened in an fs.FS.
type openedFS struct {
	fs.FS
	opened []string
}

func (o *openedFS) Open(name string) (fs.File, error) {
	o.opened = append(o.opened, name)
	return o.FS.Open(name)
}

// TestApplyReadsOnlyCPU: Apply in the process's Env reads the CPU
// controller's files and none of the memory controller's: no memory limit,
// memory.stat, usage or /proc/self/status for the headroom. (It read both
// controllers, as cgroup.Read does.)
func TestApplyReadsOnlyCPU(t *testing.T) {
	fsys := &openedFS{FS: fstest.MapFS{
		"proc/self/cgroup":                 {Data: []byte("0::/app\n")},
		"proc/self/mountinfo":              {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")},
		"proc/self/status":                 {Data: []byte("RssAnon:\t102400 kB\nRssFile:\t0 kB\nRssShmem:\t0 kB\n")},
		"sys/fs/cgroup/app/cpu.max":        {Data: []byte("50000 100000\n")},
		"sys/fs/cgroup/app/memory.max":     {Data: []byte("536870912\n")},
		"sys/fs/cgroup/app/memory.current": {Data: []byte("209715200\n")},
		"sys/fs/cgroup/app/memory.stat":    {Data: []byte("active_file 0\ninactive_file 0\n")},
	}}
	te := newTestEnv(&fakeKnob{value: 8, def: 8}, 8, oldRT, nil)
	te.Read = knob.Process(te.Knob, fsys, "cpu").Read
	fit, err := Apply(te.opts(Options{}))
	require.NoError(t, err)
	defer fit.Undo()
	assert.Equal(t, 1, fit.Status().After)
	assert.Contains(t, fsys.opened, "sys/fs/cgroup/app/cpu.max")
	for _, name := range fsys.opened {
		assert.False(t, strings.Contains(name, "memory.") || name == "proc/self/status", "read %s", name)
	}
}
