package memlimit

import (
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
)

// v2FS is a cgroup v2 tree with the process in /sys/fs/cgroup/pod/app; each
// argument is the content of a file, "" for no file.
func v2FS(appMax, appHigh, podMax string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":              {Data: []byte("0::/pod/app\n")},
		"proc/self/mountinfo":           {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup/pod/app/cpu.max": {Data: []byte("max 100000\n")},
		"proc/meminfo":                  {Data: []byte("MemTotal:       24554808 kB\nMemFree: 1 kB\n")},
		"sys/fs/cgroup/pod/memory.high": {Data: []byte("max\n")},
	}
	for name, data := range map[string]string{
		"sys/fs/cgroup/pod/app/memory.max":  appMax,
		"sys/fs/cgroup/pod/app/memory.high": appHigh,
		"sys/fs/cgroup/pod/memory.max":      podMax,
	} {
		if data != "" {
			fsys[name] = &fstest.MapFile{Data: []byte(data + "\n")}
		}
	}
	return fsys
}

// v1FS is a cgroup v1 tree with the process in /sys/fs/cgroup/memory/app.
func v1FS(limit, hierarchical string) fstest.MapFS {
	return fstest.MapFS{
		"proc/self/cgroup":                               {Data: []byte("4:memory:/app\n1:cpu:/\n")},
		"proc/self/mountinfo":                            {Data: []byte("30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
		"sys/fs/cgroup/memory/memory.limit_in_bytes":     {Data: []byte("9223372036854771712\n")},
		"sys/fs/cgroup/memory/app/memory.limit_in_bytes": {Data: []byte(limit + "\n")},
		"sys/fs/cgroup/memory/app/memory.stat":           {Data: []byte("cache 0\nrss 0\nhierarchical_memory_limit " + hierarchical + "\n")},
	}
}

// fakeKnob is the runtime's memory limit in a pretend runtime.
type fakeKnob struct {
	mu    sync.Mutex
	value int64
	sets  int
}

func (f *fakeKnob) knob() *knob.Knob[int64] {
	set := func(n int64) int64 {
		f.mu.Lock()
		defer f.mu.Unlock()
		prev := f.value
		f.value = n
		f.sets++
		return prev
	}
	return newKnob(func() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.value }, set)
}

// appSet is the application calling debug.SetMemoryLimit.
func (f *fakeKnob) appSet(n int64) { f.mu.Lock(); defer f.mu.Unlock(); f.value = n }

func (f *fakeKnob) get() (value int64, sets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.value, f.sets
}

// fakeGOGC is GOGC in a pretend runtime.
type fakeGOGC struct {
	mu    sync.Mutex
	value int
	sets  int
}

func (g *fakeGOGC) set(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev := g.value
	g.value = max(int(int32(n)), -1) // as the runtime keeps it: an int32, negative for off
	g.sets++
	return prev
}

// appSet is the application calling debug.SetGCPercent.
func (g *fakeGOGC) appSet(n int) { g.mu.Lock(); defer g.mu.Unlock(); g.value = n }

func (g *fakeGOGC) get() (value int, sets int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.value, g.sets
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

func (s *fakeSource) setReading(lim cgroup.Limits, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim, s.err = lim, err
}

func (s *fakeSource) set(lim cgroup.Limits) { s.setReading(lim, nil) }

// memLimits is a v2 reading with memory.max max and memory.high high (0 for
// none), both imposed by /sys/fs/cgroup/app.
func memLimits(max, high int64) cgroup.Limits {
	var l cgroup.Limits
	l.Memory.Version = cgroup.V2
	l.Memory.Dir = "/sys/fs/cgroup/app"
	if max > 0 {
		l.Memory.Max, l.Memory.MaxSource = max, "/sys/fs/cgroup/app"
	}
	if high > 0 {
		l.Memory.High, l.Memory.HighSource = high, "/sys/fs/cgroup/app"
	}
	return l
}

type testEnv struct {
	*env
	fk   *fakeKnob
	gogc *fakeGOGC
	// setGOGC is the GOGC knob's setter: te.gogc.set unless a test wraps it.
	setGOGC func(int) int
	src     *fakeSource
	tickC   chan time.Time
}

func newTestEnv(fk *fakeKnob, fsys fstest.MapFS) *testEnv {
	src := &fakeSource{}
	te := &testEnv{fk: fk, src: src, tickC: make(chan time.Time), gogc: &fakeGOGC{value: 100}}
	te.env = &env{
		Env: knob.Env[int64]{GOOS: "linux", Getenv: func(string) string { return "" }, Knob: fk.knob(),
			Read: src.Read, Open: func() (knob.Source, error) { return src, nil }, Ticks: te.tickC},
		fsys: fsys, cgroups: fsys, // a nil MapFS is an empty tree: never the real root
		resident: func() int64 { return 1 << 62 }, // no memory outside Go
	}
	te.setGOGC = te.gogc.set
	set := func(n int) int { return te.setGOGC(n) }
	te.env.gogc = newGCKnob(func() int {
		if te.env.gc != nil { // GOGC as the runtime/metrics reading shows it
			return int(te.env.gc().gogc)
		}
		v, _ := te.gogc.get()
		return v
	}, set)
	if fsys != nil {
		src.setReading(cgroup.ReadFS(fsys))
	}
	return te
}

func (te *testEnv) opts(o Options) Options {
	o.env = te.env
	return o
}

// tick makes the refresh loop take one reading, and returns once the loop
// has handled it.
func (te *testEnv) tick() {
	te.tickC <- time.Now()
	te.tickC <- time.Now()
}

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
