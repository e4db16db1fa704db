package maxprocs

import (
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
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
	set := func(n int) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		prev := f.value
		f.value, f.custom = n, true
		f.sets++
		return prev
	}
	return newKnob(
		func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.value },
		set,
		func(orig int) int {
			f.mu.Lock()
			if !f.modern {
				f.mu.Unlock()
				return set(orig)
			}
			defer f.mu.Unlock()
			prev := f.value
			f.value, f.custom = f.def, false
			f.setDefault++
			return prev
		},
	)
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

// fakeSource is a refresh Source whose readings the test sets.
type fakeSource struct {
	mu  sync.Mutex
	lim cgroup.Limits
	err error
}

func (s *fakeSource) Read() (cgroup.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim, s.err
}

func (s *fakeSource) Close() error { return nil }

func (s *fakeSource) set(lim cgroup.Limits, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim, s.err = lim, err
}

func (s *fakeSource) setQuota(cores float64, source string) { s.set(cpuLimits(cores, source), nil) }

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

// testEnv is an environment over fsys (or, when nil, the fake source), a
// fake knob and a refresh loop ticked by the test.
type testEnv struct {
	*env
	fk    *fakeKnob
	src   *fakeSource
	tickC chan time.Time
	ncpu  int
}

func newTestEnv(fk *fakeKnob, ncpu int, rt goRuntime, fsys fstest.MapFS) *testEnv {
	src := &fakeSource{}
	te := &testEnv{fk: fk, src: src, tickC: make(chan time.Time), ncpu: ncpu}
	te.env = &env{
		Env: knob.Env[int]{GOOS: "linux", Getenv: func(string) string { return "" }, Knob: fk.knob(),
			Read: src.Read, Open: func() (knob.Source, error) { return src, nil }, Ticks: te.tickC},
		numCPU: func() int { return te.ncpu },
		rt:     rt,
	}
	if fsys != nil {
		src.set(cgroup.ReadFS(fsys))
	}
	return te
}

// opts are Options over the test's environment.
func (te *testEnv) opts(o Options) Options {
	o.env = te.env
	return o
}

// tick makes the refresh loop take one reading, and returns once the loop
// has handled it.
func (te *testEnv) tick() {
	te.tickC <- time.Now()
	te.tickC <- time.Now() // received only once the first is done
}

// waitIdle waits until the refresh goroutine of f has exited.
func waitIdle(t *testing.T, done <-chan struct{}) {
	t.Helper()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("refresh goroutine still running")
	}
}

// stop ends the refresh of f, by Undo: the test is done with the value.
func stop(f *Fit) { f.Undo() }
