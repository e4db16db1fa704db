package refresh

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// fakeSource returns settable limits and counts reads and closes.
type fakeSource struct {
	mu     sync.Mutex
	lim    cgroup.Limits
	err    error
	reads  int
	closed int
}

func (f *fakeSource) Read() (cgroup.Limits, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.lim, f.err
}

func (f *fakeSource) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

func (f *fakeSource) counts() (reads, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads, f.closed
}

// recorder counts ticks and can ask to leave.
type recorder struct {
	ticks atomic.Int64
	quit  atomic.Bool
	last  atomic.Int64 // Quota of the last reading
}

func (r *recorder) Tick(_ time.Time, lim cgroup.Limits, _ error) bool {
	r.ticks.Add(1)
	r.last.Store(int64(lim.CPU.Quota))
	return !r.quit.Load()
}

func newFakeLoop(src *fakeSource) (*Loop, *atomic.Int64) {
	var opens atomic.Int64
	return New(func() (Source, error) {
		opens.Add(1)
		return src, nil
	}, 0), &opens
}

// waitStopped waits for the loop's goroutine to exit.
func waitStopped(t *testing.T, l *Loop) {
	t.Helper()
	running, done := l.Running()
	if !running {
		return
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the refresh goroutine did not exit")
	}
	running, _ = l.Running()
	require.False(t, running)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSubscribeTicksAndCancel(t *testing.T) {
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 5}}}
	l, opens := newFakeLoop(src)
	rec := &recorder{}
	sub, lim, err := l.Subscribe(context.Background(), rec, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(5), lim.CPU.Quota, "initial reading")
	running, _ := l.Running()
	assert.True(t, running)

	eventually(t, "three ticks", func() bool { return rec.ticks.Load() >= 3 })
	src.mu.Lock()
	src.lim.CPU.Quota = 7
	src.mu.Unlock()
	eventually(t, "the new reading", func() bool { return rec.last.Load() == 7 })

	sub.Cancel()
	waitStopped(t, l)
	n := rec.ticks.Load()
	time.Sleep(60 * time.Millisecond)
	assert.Equal(t, n, rec.ticks.Load(), "no tick after Cancel and exit")
	_, closed := src.counts()
	assert.Equal(t, 1, closed, "source closed when idle")
	assert.Equal(t, int64(1), opens.Load())
	sub.Cancel() // again: nothing
}

func TestSharedGoroutineAndShortestInterval(t *testing.T) {
	src := &fakeSource{}
	l, opens := newFakeLoop(src)
	slow, fast := &recorder{}, &recorder{}
	s1, _, err := l.Subscribe(nil, slow, time.Hour, MaxProcs)
	require.NoError(t, err)
	s2, _, err := l.Subscribe(nil, fast, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, int64(1), opens.Load(), "one source for both")
	// Both are ticked at the shorter interval.
	eventually(t, "ticks for both", func() bool { return slow.ticks.Load() >= 2 && fast.ticks.Load() >= 2 })

	s2.Cancel()
	running, _ := l.Running()
	assert.True(t, running, "still one subscriber")
	s1.Cancel()
	waitStopped(t, l)

	// A new subscriber starts a new run with a fresh source.
	s3, _, err := l.Subscribe(nil, fast, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, int64(2), opens.Load())
	s3.Cancel()
	waitStopped(t, l)
	_, closed := src.counts()
	assert.Equal(t, 2, closed)
}

func TestContextEndsSubscription(t *testing.T) {
	src := &fakeSource{}
	l, _ := newFakeLoop(src)
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	_, _, err := l.Subscribe(ctx, rec, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	eventually(t, "a tick", func() bool { return rec.ticks.Load() >= 1 })
	cancel()
	waitStopped(t, l)
}

func TestAlreadyDoneContext(t *testing.T) {
	src := &fakeSource{}
	l, _ := newFakeLoop(src)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := l.Subscribe(ctx, &recorder{}, time.Hour, MaxProcs)
	require.NoError(t, err)
	waitStopped(t, l)
}

func TestSubscriberLeaves(t *testing.T) {
	src := &fakeSource{}
	l, _ := newFakeLoop(src)
	rec := &recorder{}
	rec.quit.Store(true)
	_, _, err := l.Subscribe(nil, rec, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	waitStopped(t, l)
	assert.Equal(t, int64(1), rec.ticks.Load(), "one tick, then it left")
}

func TestOpenError(t *testing.T) {
	l := New(func() (Source, error) { return nil, cgroup.ErrNoCgroup }, 0)
	sub, _, err := l.Subscribe(nil, &recorder{}, time.Second, MaxProcs)
	assert.ErrorIs(t, err, cgroup.ErrNoCgroup)
	assert.Nil(t, sub)
	running, _ := l.Running()
	assert.False(t, running)
	sub.Cancel() // nil subscription: nothing
}

func TestReadErrorReachesSubscribers(t *testing.T) {
	boom := errors.New("boom")
	src := &fakeSource{err: boom}
	l, _ := newFakeLoop(src)
	var got atomic.Value
	sub, _, err := l.Subscribe(nil, tickFunc(func(_ time.Time, _ cgroup.Limits, err error) bool {
		if err != nil {
			got.Store(err)
		}
		return true
	}), 20*time.Millisecond, MaxProcs)
	assert.ErrorIs(t, err, boom, "initial reading")
	eventually(t, "an error tick", func() bool { return got.Load() != nil })
	sub.Cancel()
	waitStopped(t, l)
}

type tickFunc func(time.Time, cgroup.Limits, error) bool

func (f tickFunc) Tick(now time.Time, lim cgroup.Limits, err error) bool { return f(now, lim, err) }

func TestIntervalFloor(t *testing.T) {
	src := &fakeSource{}
	l, _ := newFakeLoop(src)
	rec := &recorder{}
	sub, _, err := l.Subscribe(nil, rec, time.Nanosecond, MaxProcs)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	sub.Cancel()
	waitStopped(t, l)
	// 100ms at a 10ms floor: about 10 ticks, never thousands.
	assert.LessOrEqual(t, rec.ticks.Load(), int64(12))
}

// writeV1Tree makes a cgroup v1 tree on disk: cpu and memory hierarchies at
// /sys/fs/cgroup/{cpu,memory} with the process in /app.
func writeV1Tree(t testing.TB, quota string) string {
	root := t.TempDir()
	files := map[string]string{
		"proc/self/cgroup": "5:memory:/app\n4:cpu:/app\n",
		"proc/self/mountinfo": "30 25 0:26 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu\n" +
			"31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n",
		"sys/fs/cgroup/cpu/cpu.cfs_quota_us":             "-1\n",
		"sys/fs/cgroup/cpu/cpu.cfs_period_us":            "100000\n",
		"sys/fs/cgroup/cpu/app/cpu.cfs_quota_us":         quota + "\n",
		"sys/fs/cgroup/cpu/app/cpu.cfs_period_us":        "100000\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n",
		"sys/fs/cgroup/memory/app/memory.limit_in_bytes": "536870912\n",
		"sys/fs/cgroup/memory/app/memory.stat":           "cache 0\nrss 0\nhierarchical_memory_limit 536870912\n",
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	return root
}

// TestWatcherTickFollowsFiles runs the loop over a real cgroup.Watcher on
// files that change under it.
func TestWatcherTickFollowsFiles(t *testing.T) {
	root := writeV1Tree(t, "50000")
	l := New(func() (Source, error) { return cgroup.NewWatcher(os.DirFS(root)) }, 0)
	rec := &recorder{}
	sub, lim, err := l.Subscribe(nil, rec, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	cores, ok := lim.CPUQuota()
	require.True(t, ok)
	assert.Equal(t, 0.5, cores)
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cpu/app/cpu.cfs_quota_us"), []byte("200000\n"), 0o644))
	eventually(t, "the new quota", func() bool { return rec.last.Load() == int64(200*time.Millisecond) })
	sub.Cancel()
	waitStopped(t, l)
}

type nopSub struct{}

func (nopSub) Tick(time.Time, cgroup.Limits, error) bool { return true }

// TestTickAllocs proves that a tick over a cgroup.Watcher allocates nothing.
func TestTickAllocs(t *testing.T) {
	root := writeV1Tree(t, "50000")
	w, err := cgroup.NewWatcher(os.DirFS(root))
	require.NoError(t, err)
	defer w.Close()
	l := New(nil, 0)
	l.src = w
	l.subs = []*entry{{sub: nopSub{}}, {sub: nopSub{}}}
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() { l.tick(now) })
	assert.Zero(t, allocs)
}

// TestTickAllocsLive does the same on this machine's own cgroup files.
func TestTickAllocsLive(t *testing.T) {
	w, err := cgroup.NewWatcher(os.DirFS("/"))
	if errors.Is(err, cgroup.ErrNoCgroup) {
		t.Skip("no cgroup information on this machine:", err)
	}
	require.NoError(t, err)
	defer w.Close()
	l := New(nil, 0)
	l.src = w
	l.subs = []*entry{{sub: nopSub{}}}
	allocs := testing.AllocsPerRun(1000, func() { l.tick(time.Now()) })
	assert.Zero(t, allocs)
}

func BenchmarkTick(b *testing.B) {
	for _, bc := range []struct {
		name string
		root func(b *testing.B) string
	}{
		{"fixture", func(b *testing.B) string { return writeV1Tree(b, "50000") }},
		{"live", func(*testing.B) string { return "/" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fsys := os.DirFS(bc.root(b))
			if bc.name == "live" {
				fsys = os.DirFS("/")
			}
			w, err := OpenProcess(fsys)
			if err != nil {
				b.Skip(err)
			}
			defer w.Close()
			l := New(nil, 0)
			l.src = w
			l.subs = []*entry{{sub: nopSub{}}, {sub: nopSub{}}}
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.tick(now)
			}
		})
	}
}

func TestReadIdleClose(t *testing.T) {
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 3}}}
	var opens atomic.Int64
	l := New(func() (Source, error) { opens.Add(1); return src, nil }, 50*time.Millisecond)
	lim, err := l.Read(MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(3), lim.CPU.Quota)
	_, err = l.Read(MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, int64(1), opens.Load(), "the second Read shares the open Source")
	assert.True(t, l.Open())
	eventually(t, "the idle close", func() bool { return !l.Open() })
	_, closed := src.counts()
	assert.Equal(t, 1, closed)

	// A subscriber keeps it open past the idle time; after it leaves, the
	// idle time runs again.
	sub, _, err := l.Subscribe(nil, &recorder{}, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	time.Sleep(120 * time.Millisecond)
	assert.True(t, l.Open())
	sub.Cancel()
	waitStopped(t, l)
	assert.True(t, l.Open(), "open for the idle time after the loop stops")
	eventually(t, "the idle close", func() bool { return !l.Open() })
	assert.Equal(t, int64(2), opens.Load())
}

func TestReadOpenError(t *testing.T) {
	l := New(func() (Source, error) { return nil, cgroup.ErrNoCgroup }, time.Second)
	_, err := l.Read(MaxProcs)
	assert.ErrorIs(t, err, cgroup.ErrNoCgroup)
	assert.False(t, l.Open())
}

// TestProcessSourceFollowsMove: when /proc/self/cgroup changes (the process
// was moved), the source finds the new cgroup.
func TestProcessSourceFollowsMove(t *testing.T) {
	root := writeV1Tree(t, "50000")
	write := func(name, data string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write("sys/fs/cgroup/cpu/other/cpu.cfs_quota_us", "300000\n")
	write("sys/fs/cgroup/cpu/other/cpu.cfs_period_us", "100000\n")
	src, err := OpenProcess(os.DirFS(root))
	require.NoError(t, err)
	defer src.Close()
	lim, err := src.Read()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/cpu/app", lim.CPU.Source)

	write("proc/self/cgroup", "5:memory:/app\n4:cpu:/other\n")
	lim, err = src.Read()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/cpu/other", lim.CPU.Source)
	cores, _ := lim.CPUQuota()
	assert.Equal(t, 3.0, cores)

	// Steady state: no allocation.
	assert.Zero(t, testing.AllocsPerRun(100, func() { src.Read() }))
}

func TestOpenProcessNoCgroup(t *testing.T) {
	_, err := OpenProcess(os.DirFS(t.TempDir()))
	assert.ErrorIs(t, err, cgroup.ErrNoCgroup)
}

// TestDefaultLive reads this machine's limits through Default and checks
// them against cgroup.Read.
func TestDefaultLive(t *testing.T) {
	want, werr := cgroup.Read()
	if errors.Is(werr, cgroup.ErrNoCgroup) {
		t.Skip("no cgroup information on this machine:", werr)
	}
	got, err := Default.Read(MaxProcs)
	assert.Equal(t, werr, err)
	assert.Equal(t, want, got)
	src, err := OpenProcess(os.DirFS("/"))
	require.NoError(t, err)
	defer src.Close()
	assert.Zero(t, testing.AllocsPerRun(100, func() { src.Read() }))
}

// countingRead is a one-shot reader that counts its calls.
type countingRead struct {
	n   atomic.Int64
	lim cgroup.Limits
	err error
}

func (c *countingRead) read() (cgroup.Limits, error) {
	c.n.Add(1)
	return c.lim, c.err
}

func TestSharedReading(t *testing.T) {
	one := &countingRead{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 9}}}
	var opens atomic.Int64
	l := New(func() (Source, error) { opens.Add(1); return &fakeSource{}, nil }, 0, WithOneShot(one.read))

	// maxprocs then memlimit: one reading for both.
	lim, err := l.Read(MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(9), lim.CPU.Quota)
	lim, err = l.Read(MemLimit)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(9), lim.CPU.Quota)
	assert.Equal(t, int64(1), one.n.Load(), "the second knob shares the reading")

	// A knob never reuses a reading it had.
	_, _ = l.Read(MaxProcs)
	assert.Equal(t, int64(2), one.n.Load())
	_, _ = l.Read(MaxProcs)
	assert.Equal(t, int64(3), one.n.Load())

	// Too old to share.
	_, _ = l.Read(MaxProcs)
	time.Sleep(ShareWindow + 10*time.Millisecond)
	_, _ = l.Read(MemLimit)
	assert.Equal(t, int64(5), one.n.Load())

	assert.Zero(t, opens.Load(), "one-shot readings open no Source")
	assert.False(t, l.Open())
}

func TestSharedErrorReading(t *testing.T) {
	boom := errors.New("bad file")
	one := &countingRead{err: boom}
	l := New(nil, 0, WithOneShot(one.read))
	_, err := l.Read(MaxProcs)
	assert.ErrorIs(t, err, boom)
	_, err = l.Read(MemLimit)
	assert.ErrorIs(t, err, boom, "the error is shared too")
	assert.Equal(t, int64(1), one.n.Load())
}

// TestSubscribeOpensInGoroutine: with one-shot readings, Subscribe does not
// open the Source; the goroutine does, at its first tick.
func TestSubscribeOpensInGoroutine(t *testing.T) {
	one := &countingRead{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 4}}}
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 5}}}
	var opens atomic.Int64
	l := New(func() (Source, error) { opens.Add(1); return src, nil }, 0, WithOneShot(one.read))
	rec := &recorder{}
	sub, lim, err := l.Subscribe(nil, rec, 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(4), lim.CPU.Quota, "the initial reading is the one-shot one")
	assert.Zero(t, opens.Load(), "nothing opened on the caller's path")
	// The other knob shares the initial reading.
	sub2, lim, err := l.Subscribe(nil, &recorder{}, 20*time.Millisecond, MemLimit)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(4), lim.CPU.Quota)
	assert.Equal(t, int64(1), one.n.Load())

	eventually(t, "a tick from the Source", func() bool { return rec.last.Load() == 5 })
	assert.Equal(t, int64(1), opens.Load())
	sub.Cancel()
	sub2.Cancel()
	waitStopped(t, l)
	assert.False(t, l.Open(), "closed after the loop stops (idle 0)")
}

// TestOpenFailureInGoroutine: when the goroutine cannot open the Source, the
// subscribers get the error and the loop tries again at the next tick.
func TestOpenFailureInGoroutine(t *testing.T) {
	boom := errors.New("cannot open")
	var fail atomic.Bool
	fail.Store(true)
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 6}}}
	l := New(func() (Source, error) {
		if fail.Load() {
			return nil, boom
		}
		return src, nil
	}, 0, WithOneShot((&countingRead{}).read))
	var sawErr atomic.Bool
	var last atomic.Int64
	sub, _, err := l.Subscribe(nil, tickFunc(func(_ time.Time, lim cgroup.Limits, err error) bool {
		if errors.Is(err, boom) {
			sawErr.Store(true)
		}
		last.Store(int64(lim.CPU.Quota))
		return true
	}), 20*time.Millisecond, MaxProcs)
	require.NoError(t, err)
	eventually(t, "the open error", sawErr.Load)
	fail.Store(false)
	eventually(t, "a reading once the open works", func() bool { return last.Load() == 6 })
	sub.Cancel()
	waitStopped(t, l)
}

func TestSubscribeNoCgroup(t *testing.T) {
	l := New(func() (Source, error) { return nil, cgroup.ErrNoCgroup }, 0,
		WithOneShot(func() (cgroup.Limits, error) { return cgroup.Limits{}, cgroup.ErrNoCgroup }))
	sub, _, err := l.Subscribe(nil, &recorder{}, time.Second, MemLimit)
	assert.ErrorIs(t, err, cgroup.ErrNoCgroup)
	assert.Nil(t, sub)
	running, _ := l.Running()
	assert.False(t, running)
}

// TestChurnNeverStopsTheGoroutineWrongly subscribes and cancels from several
// goroutines at once. The loop's goroutine once read "is anyone left?" and
// "at what interval?" under two separate locks: when the last subscriber
// left in between, it reset its ticker to 0 and panicked, taking the
// program down.
func TestChurnNeverStopsTheGoroutineWrongly(t *testing.T) {
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 5}}}
	l, _ := newFakeLoop(src)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3000; i++ {
				sub, _, err := l.Subscribe(context.Background(), &recorder{}, MinInterval, MaxProcs)
				if !assert.NoError(t, err) {
					return
				}
				sub.Cancel()
			}
		}()
	}
	wg.Wait()
	waitStopped(t, l)

	// The loop still works after the churn.
	rec := &recorder{}
	sub, _, err := l.Subscribe(context.Background(), rec, MinInterval, MaxProcs)
	require.NoError(t, err)
	eventually(t, "a tick after the churn", func() bool { return rec.ticks.Load() >= 1 })
	sub.Cancel()
	waitStopped(t, l)
}
