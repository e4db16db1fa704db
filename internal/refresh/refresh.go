// Package refresh runs the loop that follows cgroup limit changes for fitgo's
// knobs: one goroutine per Loop re-reads one cgroup.Watcher (files opened
// once, re-read without allocating) and hands each reading to the
// subscribers, GOMAXPROCS and GOMEMLIMIT.
//
// A Loop starts its goroutine when the first subscriber arrives and stops it,
// closing the files, when the last one leaves, so that a program that stops
// following changes is left with no goroutine and no open file. Both knobs of
// the blank import share Default, hence one goroutine and one set of files.
package refresh

import (
	"context"
	"os"
	"sync"
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

	mu      sync.Mutex
	src     Source   // open while running
	subs    []*entry // current subscribers
	running bool
	kick    chan struct{} // subscribers changed
	done    chan struct{} // closed when the goroutine of this run exits

	readMu sync.Mutex // serialises Source.Read between the goroutine and Subscribe
	snap   []*entry   // the goroutine's copy of subs, reused across ticks
}

type entry struct {
	sub      Subscriber
	interval time.Duration
	stopCtx  func() bool
}

// New returns a Loop that opens its Source with open when it starts.
func New(open func() (Source, error)) *Loop {
	return &Loop{open: open, kick: make(chan struct{}, 1)}
}

// Default is the Loop over the process's own cgroup files.
var Default = New(func() (Source, error) {
	w, err := cgroup.NewWatcher(os.DirFS("/"))
	if err != nil {
		return nil, err
	}
	return w, nil
})

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
	if l.src == nil {
		src, err := l.open()
		if err != nil {
			l.mu.Unlock()
			return nil, cgroup.Limits{}, err
		}
		l.src = src
	}
	l.readMu.Lock()
	lim, err := l.src.Read()
	l.readMu.Unlock()
	e := &entry{sub: sub, interval: interval}
	l.subs = append(l.subs, e)
	if !l.running {
		l.running = true
		l.done = make(chan struct{})
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

// stopIfIdle ends the run when no subscriber is left. It reports whether the
// goroutine must exit; the caller then closes src.
func (l *Loop) stopIfIdle(done chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) > 0 {
		return false
	}
	l.running = false
	l.src = nil
	l.done = nil
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
				src.Close()
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
				src.Close()
				return
			}
		}
	}
}

// tick reads the Source once and hands the reading to every subscriber. It
// does not allocate when the Source does not.
func (l *Loop) tick(src Source, now time.Time) {
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
