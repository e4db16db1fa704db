package knob

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

// fakeSource is a Source whose readings the test sets.
type fakeSource struct {
	mu     sync.Mutex
	lim    cgroup.Limits
	err    error
	closed int
}

func (s *fakeSource) Read() (cgroup.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim, s.err
}

func (s *fakeSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	return nil
}

// recorder is a member that reports each reading on a channel and follows
// until stop is set.
type recorder struct {
	got  chan cgroup.Limits
	errs chan error
	stop atomic.Bool
}

func newRecorder() *recorder {
	return &recorder{got: make(chan cgroup.Limits, 100), errs: make(chan error, 100)}
}

func (r *recorder) step(_ time.Time, lim cgroup.Limits, err error) bool {
	r.got <- lim
	r.errs <- err
	return !r.stop.Load()
}

func (r *recorder) following() bool { return !r.stop.Load() }

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop's goroutine did not exit")
	}
}

func TestInterval(t *testing.T) {
	assert.Equal(t, minInterval, Interval(time.Nanosecond), "raised to the floor")
	assert.Equal(t, minInterval, Interval(0))
	assert.Equal(t, time.Second, Interval(time.Second))
	assert.Equal(t, minInterval, NewLoop(time.Nanosecond, nil, nil).every)
}

// TestLoopTicksAndExits drives the loop with ticks the test sends: each tick
// is one reading for every member; when the last member stops, the
// goroutine exits and closes the Source, and no reading follows.
func TestLoopTicksAndExits(t *testing.T) {
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 5}}}
	opens := 0
	ticks := make(chan time.Time, 10)
	l := NewLoop(time.Hour, func() (Source, error) { opens++; return src, nil }, ticks)
	a, b := newRecorder(), newRecorder()
	l.add(a.step, a.following)
	l.add(b.step, b.following)
	done := l.Done()
	require.NotNil(t, done)
	assert.Zero(t, opens, "nothing is opened before the first tick (off the start-up path)")

	ticks <- time.Now()
	assert.Equal(t, time.Duration(5), (<-a.got).CPU.Quota)
	assert.Equal(t, time.Duration(5), (<-b.got).CPU.Quota, "one reading for both")
	src.mu.Lock()
	src.lim.CPU.Quota = 7
	src.mu.Unlock()
	ticks <- time.Now()
	assert.Equal(t, time.Duration(7), (<-a.got).CPU.Quota)
	<-b.got

	a.stop.Store(true)
	l.wake()
	ticks <- time.Now()
	<-b.got // a may get this one reading, and leaves
	b.stop.Store(true)
	l.wake()
	waitDone(t, done)
	assert.Nil(t, l.Done())
	assert.Equal(t, 1, opens, "opened once, at the first tick")
	assert.Equal(t, 1, src.closed, "closed when the goroutine exits")
	ticks <- time.Now()
	assert.Empty(t, b.got, "no reading after the exit")

	// A new member starts a new run.
	c := newRecorder()
	l.add(c.step, c.following)
	ticks <- time.Now()
	<-c.got
	c.stop.Store(true)
	l.wake()
	waitDone(t, l.Done())
	assert.Equal(t, 2, opens)
}

// TestLoopRetriesOpen: a failed open (the process at its file-descriptor
// limit, say) is tried again at later ticks with a growing wait, and its
// error reaches the members meanwhile; once it opens, readings flow.
func TestLoopRetriesOpen(t *testing.T) {
	emfile := errors.New("too many open files")
	src := &fakeSource{lim: cgroup.Limits{CPU: cgroup.CPU{Quota: 9}}}
	opens, failFor := 0, 3
	ticks := make(chan time.Time)
	l := NewLoop(time.Hour, func() (Source, error) {
		opens++
		if opens <= failFor {
			return nil, emfile
		}
		return src, nil
	}, ticks)
	r := newRecorder()
	l.add(r.step, r.following)
	var tries []int
	for i := 0; i < 10; i++ {
		ticks <- time.Now()
		lim := <-r.got
		err := <-r.errs
		tries = append(tries, opens)
		if opens <= failFor {
			assert.ErrorIs(t, err, emfile)
		} else {
			assert.NoError(t, err)
			assert.Equal(t, time.Duration(9), lim.CPU.Quota)
		}
	}
	// Tries at ticks 1, 3 and 7: the wait doubles after each failure.
	assert.Equal(t, []int{1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, tries)
	r.stop.Store(true)
	l.wake()
	waitDone(t, l.Done())
}

func TestLoopOf(t *testing.T) {
	assert.Nil(t, LoopOf(nil))
	assert.Nil(t, LoopOf(context.Background()))
	l := NewLoop(time.Second, nil, nil)
	assert.Same(t, l, LoopOf(WithLoop(context.Background(), l)))
}

// TestFitFollowsThroughLoop runs a Fit in a loop over a real Watcher of files
// on disk, ticked by the test, and stops it by its context.
func TestFitFollowsThroughLoop(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write("proc/self/cgroup", "0::/app\n")
	write("proc/self/mountinfo", "25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	write("sys/fs/cgroup/app/cpu.max", "200000 100000\n")
	fk := &fakeKnob{val: 8}
	k := fk.knob()
	f := apply(t, k, 2, nil)
	ticks := make(chan time.Time)
	l := NewLoop(time.Hour, func() (Source, error) { return cgroup.NewWatcher(os.DirFS(root)) }, ticks)
	ctx, cancel := context.WithCancel(context.Background())
	stepped := make(chan bool, 10)
	f.joinWith(WithLoop(ctx, l), 0, nil, nil, func(f *Fit[int, string], now time.Time, lim cgroup.Limits, err error) bool {
		q, _ := lim.CPUQuota()
		keep := f.Step(now, Reading[int, string]{Err: err, Want: int(q), Has: true})
		stepped <- keep
		return keep
	})

	ticks <- time.Now()
	<-stepped
	assert.Equal(t, 2, fk.val)
	write("sys/fs/cgroup/app/cpu.max", "300000 100000\n")
	ticks <- time.Now()
	<-stepped
	assert.Equal(t, 3, k.Current(), "followed the file")

	done := l.Done()
	cancel()
	waitDone(t, done)
	assert.Equal(t, "stopped: context canceled", f.State().Reason)
	write("sys/fs/cgroup/app/cpu.max", "100000 100000\n")
	assert.Equal(t, 3, k.Current(), "no change after the stop")
}

// TestInsistSetWhileRefreshing: insist is guarded by the knob's lock, so
// setting it while the refresh reads it is no data race (go test -race).
func TestInsistSetWhileRefreshing(t *testing.T) {
	fk := &fakeKnob{val: 8}
	f := apply(t, fk.knob(), 2, nil)
	ticks := make(chan time.Time)
	stepped := make(chan bool)
	ctx, cancel := context.WithCancel(context.Background())
	l := f.joinWith(ctx, time.Hour, func() (Source, error) { return &fakeSource{}, nil }, ticks, func(f *Fit[int, string], now time.Time, _ cgroup.Limits, _ error) bool {
		keep := f.Step(now, want(2))
		stepped <- keep
		return keep
	})
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		for range 100 {
			ticks <- time.Now()
			<-stepped
		}
	}()
	for i := range 100 {
		f.setInsist(i%2 == 0)
	}
	<-refreshed
	done := l.Done()
	cancel()
	waitDone(t, done)
	assert.True(t, f.State().Updates == 0 && f.State().Err == nil, "the value was fitgo's throughout")
}

// TestLoopTickAllocs: a tick over an open cgroup.Watcher whose members change
// nothing allocates nothing.
func TestLoopTickAllocs(t *testing.T) {
	root := t.TempDir()
	for name, data := range map[string]string{
		"proc/self/cgroup":          "0::/app\n",
		"proc/self/mountinfo":       "25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/app/cpu.max": "200000 100000\n",
	} {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	w, err := cgroup.NewWatcher(os.DirFS(root))
	require.NoError(t, err)
	defer w.Close()
	fk := &fakeKnob{val: 8}
	f := apply(t, fk.knob(), 2, nil)
	now := time.Now()
	step := func() {
		lim, err := w.Read()
		q, _ := lim.CPUQuota()
		f.Step(now, Reading[int, string]{Err: err, Want: int(q), Has: true})
	}
	step()
	assert.Zero(t, testing.AllocsPerRun(1000, step))
}

// TestAlreadyDoneContext: a Fit whose context is done when it joins stops at
// once, and its loop exits without a tick.
func TestAlreadyDoneContext(t *testing.T) {
	fk := &fakeKnob{val: 8}
	f := apply(t, fk.knob(), 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := f.joinWith(ctx, time.Hour, func() (Source, error) { t.Error("opened"); return nil, nil }, make(chan time.Time),
		func(*Fit[int, string], time.Time, cgroup.Limits, error) bool { return true })
	waitDone(t, l.Done())
	assert.False(t, f.following())
	assert.Equal(t, "stopped: context canceled", f.State().Reason)
}
