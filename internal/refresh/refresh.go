// Package refresh reads the process's cgroup limits for fitgo's knobs and
// runs the loop that follows their changes.
//
// A Loop owns one Source, normally a cgroup.Watcher: the cgroup hierarchy is
// discovered once and the limit files stay open, so that every later reading
// is one pread per file and allocates nothing. One goroutine per Loop re-reads
// the Source at each tick and hands the reading to the subscribers (the
// GOMAXPROCS and GOMEMLIMIT managers); one-shot readers (Apply without
// refresh) use Read and share the same open files.
//
// The goroutine starts with the first subscriber and exits when the last one
// leaves. The Source is closed when nothing has used it for the Loop's idle
// time (Default: IdleClose), so a program that stops following changes is
// left with no goroutine and, shortly after, no open file. Both knobs of the
// blank import share Default: one goroutine, one set of files.
package refresh

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/rootfs"
)

// DefaultInterval is the refresh interval when none is given: the cadence at
// which the Go runtime (1.25 and later) itself re-reads the CPU limit, so that
// fitgo and the runtime react to a resize in the same time frame. A tick
// costs a few microseconds and no allocation.
const DefaultInterval = time.Second

// MinInterval is the shortest interval a Loop ticks at; shorter requests are
// raised to it.
const MinInterval = 10 * time.Millisecond

// IdleClose is how long Default keeps its files open after their last use
// when no refresh loop runs: long enough for the usual sequence of one
// maxprocs.Apply and one memlimit.Apply to share them, short enough that a
// program applying once holds no file for long.
const IdleClose = 5 * time.Second

// Source gives the current limits; *cgroup.Watcher is one.
type Source interface {
	Read() (cgroup.Limits, error)
	Close() error
}

// Subscriber receives every reading. Tick returns false to stop receiving.
// Tick runs on the Loop's goroutine, never concurrently with itself for one
// subscriber; it must not call into the Loop.
type Subscriber interface {
	Tick(now time.Time, lim cgroup.Limits, err error) bool
}

// Loop reads a Source periodically and hands the readings to subscribers.
type Loop struct {
	open func() (Source, error)
	idle time.Duration // how long an unused Source stays open

	mu      sync.Mutex
	src     Source   // open while running, and for idle after the last use
	subs    []*entry // current subscribers
	running bool
	kick    chan struct{} // subscribers changed
	done    chan struct{} // closed when the goroutine of this run exits
	lastUse time.Time     // of src by Read
	timer   *time.Timer   // closes src when idle

	readMu sync.Mutex // serialises Source.Read between the goroutine and Subscribe
	snap   []*entry   // the goroutine's copy of subs, reused across ticks
	ticks  atomic.Uint64
}

type entry struct {
	sub      Subscriber
	interval time.Duration
	stopCtx  func() bool
}

// New returns a Loop that opens its Source with open when first needed and
// closes it once unused for idle (at once when idle is 0).
func New(open func() (Source, error), idle time.Duration) *Loop {
	return &Loop{open: open, idle: idle, kick: make(chan struct{}, 1)}
}

// Default is the Loop over the process's own cgroup files.
var Default = New(func() (Source, error) { return OpenProcess(rootfs.FS()) }, IdleClose)

// acquire opens the Source if it is not open; l.mu is held.
func (l *Loop) acquire() error {
	if l.src != nil {
		return nil
	}
	src, err := l.open()
	if err != nil {
		return err
	}
	l.src = src
	return nil
}

// Read returns a reading of the Source, opening it if needed, for callers
// that do not subscribe.
func (l *Loop) Read() (cgroup.Limits, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.acquire(); err != nil {
		return cgroup.Limits{}, err
	}
	l.readMu.Lock()
	lim, err := l.src.Read()
	l.readMu.Unlock()
	l.lastUse = time.Now()
	l.release()
	return lim, err
}

// release closes the Source, or arranges for it to be closed after the idle
// time, when no goroutine uses it; l.mu is held.
func (l *Loop) release() {
	if l.running || len(l.subs) > 0 || l.src == nil {
		return
	}
	if l.idle <= 0 {
		l.closeSource()
		return
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(l.idle, l.closeIfIdle)
	} else {
		l.timer.Reset(l.idle)
	}
}

func (l *Loop) closeIfIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running || len(l.subs) > 0 || l.src == nil {
		return
	}
	if left := l.idle - time.Since(l.lastUse); left > 0 {
		l.timer.Reset(left)
		return
	}
	l.closeSource()
}

// closeSource closes the Source; l.mu is held.
func (l *Loop) closeSource() {
	l.readMu.Lock()
	l.src.Close()
	l.readMu.Unlock()
	l.src = nil
}

// Ticks returns the number of ticks the Loop has run.
func (l *Loop) Ticks() uint64 { return l.ticks.Load() }

// Open reports whether the Loop's Source is open.
func (l *Loop) Open() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src != nil
}

// Subscription is one subscriber's membership in a Loop.
type Subscription struct {
	l *Loop
	e *entry
}

// Subscribe opens the Loop's Source if needed, reads it once for the
// caller's initial decision, and adds sub, which from then on gets a reading
// every interval (DefaultInterval when zero; the Loop ticks at the shortest
// interval of its subscribers). The subscription ends when ctx is done, when
// Cancel is called or when sub.Tick returns false.
//
// When the Source cannot be opened (no cgroup at all), Subscribe returns the
// error and no subscription.
func (l *Loop) Subscribe(ctx context.Context, sub Subscriber, interval time.Duration) (*Subscription, cgroup.Limits, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	interval = max(interval, MinInterval)
	l.mu.Lock()
	if err := l.acquire(); err != nil {
		l.mu.Unlock()
		return nil, cgroup.Limits{}, err
	}
	l.readMu.Lock()
	lim, err := l.src.Read()
	l.readMu.Unlock()
	e := &entry{sub: sub, interval: interval}
	l.subs = append(l.subs, e)
	if !l.running {
		l.running = true
		l.done = make(chan struct{})
		l.lastUse = time.Now()
		go l.run(l.src, l.done)
	} else {
		l.poke()
	}
	l.mu.Unlock()
	s := &Subscription{l: l, e: e}
	if ctx != nil && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, s.Cancel)
		l.mu.Lock()
		e.stopCtx = stop
		l.mu.Unlock()
	}
	return s, lim, err
}

// Cancel ends the subscription; sub.Tick is not called after Cancel returns
// unless a tick is already under way. Calling it again does nothing.
func (s *Subscription) Cancel() {
	if s != nil {
		s.l.remove(s.e)
	}
}

// Running reports whether the Loop's goroutine is running, and a channel that
// is closed when it exits (nil when not running).
func (l *Loop) Running() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running, l.done
}

func (l *Loop) remove(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.subs {
		if x == e {
			copy(l.subs[i:], l.subs[i+1:])
			l.subs[len(l.subs)-1] = nil
			l.subs = l.subs[:len(l.subs)-1]
			if e.stopCtx != nil {
				e.stopCtx()
			}
			l.poke()
			return
		}
	}
}

// poke tells the goroutine that the subscribers changed. l.mu is held.
func (l *Loop) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// interval returns the shortest interval of the subscribers; l.mu is held.
func (l *Loop) interval() time.Duration {
	d := time.Duration(0)
	for _, e := range l.subs {
		if d == 0 || e.interval < d {
			d = e.interval
		}
	}
	return d
}

// stopIfIdle ends the run when no subscriber is left, and releases the
// Source. It reports whether the goroutine must exit.
func (l *Loop) stopIfIdle(done chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) > 0 {
		return false
	}
	l.running = false
	l.done = nil
	l.lastUse = time.Now()
	l.release()
	// Drain a stale kick so that the next run starts clean.
	select {
	case <-l.kick:
	default:
	}
	close(done)
	return true
}

func (l *Loop) run(src Source, done chan struct{}) {
	l.mu.Lock()
	iv := l.interval()
	l.mu.Unlock()
	if iv == 0 {
		iv = DefaultInterval
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-l.kick:
			if l.stopIfIdle(done) {
				return
			}
			l.mu.Lock()
			next := l.interval()
			l.mu.Unlock()
			if next != iv {
				iv = next
				t.Reset(iv)
			}
		case now := <-t.C:
			l.tick(src, now)
			if l.stopIfIdle(done) {
				return
			}
		}
	}
}

// tick reads the Source once and hands the reading to every subscriber. It
// does not allocate when the Source does not.
func (l *Loop) tick(src Source, now time.Time) {
	l.ticks.Add(1)
	l.readMu.Lock()
	lim, err := src.Read()
	l.readMu.Unlock()
	l.mu.Lock()
	l.snap = append(l.snap[:0], l.subs...)
	l.mu.Unlock()
	for i, e := range l.snap {
		if !e.sub.Tick(now, lim, err) {
			l.remove(e)
		}
		l.snap[i] = nil
	}
}
