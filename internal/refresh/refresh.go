// Package refresh reads the process's cgroup limits for fitgo's knobs and
// runs the loop that follows their changes.
//
// One-shot readings (Apply) come from cgroup.Read, which reads every file
// with plain open/read/close and keeps nothing open. When maxprocs.Apply and
// memlimit.Apply come one after the other, as in the blank import, the
// second uses the first's reading (see ShareWindow): the pair costs one
// discovery of the hierarchy.
//
// The refresh loop owns one Source, normally a cgroup.Watcher: the hierarchy
// is discovered once, by the loop's goroutine (off the start-up path), and
// the limit files stay open, so that every tick is one pread per file and
// allocates nothing. The goroutine hands each reading to the subscribers (the
// GOMAXPROCS and GOMEMLIMIT managers); it starts with the first subscriber and
// exits when the last one leaves, and the Source is closed when nothing has
// used it for the Loop's idle time. Both knobs of the blank import share
// Default: one goroutine, one set of open files.
package refresh

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// DefaultInterval is the refresh interval when none is given: the cadence at
// which the Go runtime (1.25 and later) itself re-reads the CPU limit, so that
// fitgo and the runtime react to a resize in the same time frame. A tick
// costs a few microseconds and no allocation.
const DefaultInterval = time.Second

// MinInterval is the shortest interval a Loop ticks at; shorter requests are
// raised to it.
const MinInterval = 10 * time.Millisecond

// IdleClose is how long Default keeps its files open after the refresh loop
// stops, in case another subscriber comes soon.
const IdleClose = 5 * time.Second

// ShareWindow is how recent a reading taken for one knob must be for the
// other knob to use it instead of reading the files again. A knob never
// reuses a reading it has had: a second Apply of the same knob reads afresh.
const ShareWindow = 100 * time.Millisecond

// Knob names the reader of a reading, for ShareWindow.
type Knob int

// The knobs.
const (
	MaxProcs Knob = iota
	MemLimit
	numKnobs
)

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
	open    func() (Source, error)
	idle    time.Duration                 // how long an unused Source stays open
	oneShot func() (cgroup.Limits, error) // reading without a Source; nil: open one

	mu      sync.Mutex
	src     Source   // written under mu and readMu
	openErr error    // why the goroutine could not open src
	subs    []*entry // current subscribers
	running bool
	kick    chan struct{} // subscribers changed
	done    chan struct{} // closed when the goroutine of this run exits
	lastUse time.Time     // of src
	timer   *time.Timer   // closes src when idle
	shared  sharedReading

	readMu sync.Mutex // serialises Source.Read
	snap   []*entry   // the goroutine's copy of subs, reused across ticks
	ticks  atomic.Uint64
}

// sharedReading is the last one-shot reading, for the other knob.
type sharedReading struct {
	at   time.Time
	lim  cgroup.Limits
	err  error
	used [numKnobs]bool
}

type entry struct {
	sub      Subscriber
	interval time.Duration
	stopCtx  func() bool
}

// An Option configures New.
type Option func(*Loop)

// WithOneShot makes one-shot readings (Read, and the initial reading of
// Subscribe) come from read, such as cgroup.Read, instead of a Source opened
// for the purpose.
func WithOneShot(read func() (cgroup.Limits, error)) Option {
	return func(l *Loop) { l.oneShot = read }
}

// New returns a Loop whose goroutine opens its Source with open, and closes it
// once unused for idle (at once when idle is 0).
func New(open func() (Source, error), idle time.Duration, opts ...Option) *Loop {
	l := &Loop{open: open, idle: idle, kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(l)
	}
	return l
}

// NewDefault returns a new Loop like Default: one-shot readings from
// cgroup.Read, a process Source (OpenProcess over the real file system) for
// the refresh loop, closed IdleClose after the loop stops.
func NewDefault() *Loop {
	return New(func() (Source, error) { return OpenProcess(os.DirFS("/")) }, IdleClose, WithOneShot(cgroup.Read))
}

// Default is the Loop over the process's own cgroup files.
var Default = NewDefault()

// Read returns a reading for a caller that does not subscribe: the other
// knob's reading when it is recent enough (ShareWindow), else a fresh one.
func (l *Loop) Read(k Knob) (cgroup.Limits, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readLocked(k, false)
}

// readLocked takes a one-shot reading for knob k; l.mu is held. A Source it
// opens stays open when keep is set (a subscriber is coming), else it is
// released.
func (l *Loop) readLocked(k Knob, keep bool) (cgroup.Limits, error) {
	now := time.Now()
	if sh := &l.shared; !sh.used[k] && !sh.at.IsZero() && now.Sub(sh.at) < ShareWindow {
		sh.used[k] = true
		return sh.lim, sh.err
	}
	var lim cgroup.Limits
	var err error
	switch {
	case l.src != nil:
		l.readMu.Lock()
		lim, err = l.src.Read()
		l.readMu.Unlock()
		l.lastUse = now
	case l.oneShot != nil:
		lim, err = l.oneShot()
	default:
		var src Source
		if src, err = l.open(); err != nil {
			return cgroup.Limits{}, err
		}
		l.readMu.Lock()
		l.src = src
		lim, err = src.Read()
		l.readMu.Unlock()
		l.lastUse = now
		if !keep {
			l.release()
		}
	}
	l.shared = sharedReading{at: now, lim: lim, err: err}
	l.shared.used[k] = true
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
	l.src = nil
	l.readMu.Unlock()
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

// Subscribe takes a one-shot reading for knob k (see Read), for the caller's
// initial decision, and adds sub, which from then on gets a reading every
// interval (DefaultInterval when zero; the Loop ticks at the shortest interval
// of its subscribers). The subscription ends when ctx is done, when Cancel is
// called or when sub.Tick returns false.
//
// When there is no cgroup at all (the reading fails with an error wrapping
// cgroup.ErrNoCgroup), Subscribe returns the error and no subscription.
func (l *Loop) Subscribe(ctx context.Context, sub Subscriber, interval time.Duration, k Knob) (*Subscription, cgroup.Limits, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	interval = max(interval, MinInterval)
	l.mu.Lock()
	lim, err := l.readLocked(k, true)
	if errors.Is(err, cgroup.ErrNoCgroup) {
		l.release()
		l.mu.Unlock()
		return nil, lim, err
	}
	e := &entry{sub: sub, interval: interval}
	l.subs = append(l.subs, e)
	if !l.running {
		l.running = true
		l.done = make(chan struct{})
		go l.run(l.done)
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
// Source. It reports whether the goroutine must exit and, when it need not,
// the subscribers' shortest interval, read under the same lock: read apart,
// the last subscriber could leave in between and the interval would be 0.
func (l *Loop) stopIfIdle(done chan struct{}) (next time.Duration, exit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) > 0 {
		return l.interval(), false
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
	return 0, true
}

func (l *Loop) run(done chan struct{}) {
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
			next, exit := l.stopIfIdle(done)
			if exit {
				return
			}
			if next != iv {
				iv = next
				t.Reset(iv)
			}
		case now := <-t.C:
			l.tick(now)
			if _, exit := l.stopIfIdle(done); exit {
				return
			}
		}
	}
}

// tick reads the Source once, opening it first if needed, and hands the
// reading to every subscriber. It does not allocate when the Source is open
// and does not.
func (l *Loop) tick(now time.Time) {
	l.ticks.Add(1)
	l.mu.Lock()
	if l.src == nil {
		// The first tick, or the open failed before: discover the
		// hierarchy and open its files, here rather than on the caller's
		// start-up path.
		src, err := l.open()
		l.readMu.Lock()
		l.src, l.openErr = src, err
		l.readMu.Unlock()
	}
	l.snap = append(l.snap[:0], l.subs...)
	l.mu.Unlock()

	var lim cgroup.Limits
	var err error
	l.readMu.Lock()
	if l.src != nil {
		lim, err = l.src.Read()
	} else {
		err = l.openErr
	}
	l.readMu.Unlock()
	for i, e := range l.snap {
		if !e.sub.Tick(now, lim, err) {
			l.remove(e)
		}
		l.snap[i] = nil
	}
}
