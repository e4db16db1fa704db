package maxprocs

import (
	"context"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/internal/knobtest"
)

func durUS(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// v2FS is a cgroup v2 tree with the process in /sys/fs/cgroup/app, its
// parent /sys/fs/cgroup/pod, and the given cpu.max contents ("" for no file).
func v2FS(appCPUMax, podCPUMax string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":                 {Data: []byte("0::/pod/app\n")},
		"proc/self/mountinfo":              {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup/pod/app/memory.max": {Data: []byte("max\n")},
	}
	if appCPUMax != "" {
		fsys["sys/fs/cgroup/pod/app/cpu.max"] = &fstest.MapFile{Data: []byte(appCPUMax + "\n")}
	}
	if podCPUMax != "" {
		fsys["sys/fs/cgroup/pod/cpu.max"] = &fstest.MapFile{Data: []byte(podCPUMax + "\n")}
	}
	return fsys
}

// fakeKnob is GOMAXPROCS of a pretend runtime. def is what the runtime's
// default would be (SetDefaultGOMAXPROCS). Calls are counted.
type fakeKnob struct {
	mu         sync.Mutex
	value      int
	def        int
	custom     bool // runtime.GOMAXPROCS was called: the runtime's updates are off
	sets       int
	setDefault int
	modern     bool // has SetDefaultGOMAXPROCS (Go 1.25+)
}

func (f *fakeKnob) knob() *knob.Knob[int] {
	return &knob.Knob[int]{
		Get: func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.value },
		Set: func(n int) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.value, f.custom = n, true
			f.sets++
		},
	}
}

// setDefaultGOMAXPROCS is the pretend runtime's SetDefaultGOMAXPROCS.
func (f *fakeKnob) setDefaultGOMAXPROCS() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.modern {
		return false
	}
	f.value, f.custom = f.def, false
	f.setDefault++
	return true
}

// runtimeUpdate is the runtime's own update: it changes the value unless
// runtime.GOMAXPROCS was called.
func (f *fakeKnob) runtimeUpdate(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.custom {
		return false
	}
	f.value, f.def = n, n
	return true
}

// appSet is the application calling runtime.GOMAXPROCS(n).
func (f *fakeKnob) appSet(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value, f.custom = n, true
}

func (f *fakeKnob) get() (value, sets, setDefault int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.value, f.sets, f.setDefault
}

// fakeSource is a refresh.Source with settable limits.
type fakeSource struct{ knobtest.Source }

func (s *fakeSource) setQuota(cores float64, source string) {
	s.SetLimits(cpuLimits(cores, source))
}

// cpuLimits is a reading with a CPU limit of cores imposed by source (no
// limit when source is ""); the process's cgroup is /sys/fs/cgroup/app.
func cpuLimits(cores float64, source string) cgroup.Limits {
	var l cgroup.Limits
	l.CPU.Version = cgroup.V2
	l.CPU.Dir = "/sys/fs/cgroup/app"
	l.CPU.Mount = "/sys/fs/cgroup"
	if source != "" {
		l.CPU.Period = 100 * time.Millisecond
		l.CPU.Quota = time.Duration(cores * float64(l.CPU.Period))
		l.CPU.Source = source
	}
	return l
}

// testEnv is an environment over fsys and a fake knob.
type testEnv struct {
	*env
	fk  *fakeKnob
	src *fakeSource
}

func newTestEnv(fk *fakeKnob, ncpu int, rt Runtime, fsys fstest.MapFS) *testEnv {
	src := &fakeSource{}
	te := &testEnv{fk: fk, src: src}
	te.env = &env{
		goos:   "linux",
		getenv: func(string) string { return "" },
		numCPU: ncpu,
		rt:     rt,
		read:   func() (cgroup.Limits, error) { return cgroup.ReadFS(fsys) },
		loop:   src.Loop(),
		knob:   fk.knob(),

		setDefault: fk.setDefaultGOMAXPROCS,
	}
	if fsys != nil {
		src.Set(cgroup.ReadFS(fsys))
	}
	return te
}

func (te *testEnv) opt() Option { return func(c *config) { c.env = te.env } }

// waitIdle waits until the test loop's goroutine has exited.
func (te *testEnv) waitIdle(t *testing.T) {
	t.Helper()
	knobtest.WaitIdle(t, te.loop)
}

var background = context.Background()
