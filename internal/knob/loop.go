package knob

import (
	"context"
	"sync"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

const minInterval = 10 * time.Millisecond

// Interval is the refresh interval for a requested d: at least 10ms.
func Interval(d time.Duration) time.Duration { return max(d, minInterval) }

// Source gives the current limits; *cgroup.Watcher is one.
type Source interface {
	Read() (cgroup.Limits, error)
	Close() error
}

// OpenProcess opens a Source over the process's own cgroup files.
func OpenProcess() (Source, error) { return cgroup.NewWatcher(nil) }

// Loop is a refresh goroutine: it reads its Source at every tick and gives
// the reading to its members, one Fit each (the blank import has two). The
// Source is opened at the first tick, off the caller's start-up path; when
// the open fails it is tried again at later ticks, at most every
// maxOpenWait ticks. The goroutine starts with the first member and exits,
// closing the Source, when no member follows any more.
type Loop struct {
	open  func() (Source, error)
	every time.Duration
	ticks <-chan time.Time // nil: a time.Ticker at every

	mu      sync.Mutex
	members []member
	wakeC   chan struct{}
	done    chan struct{} // of the running goroutine, nil when none runs
	snap    []member      // the goroutine's copy of members
}

type member struct {
	step      func(now time.Time, lim cgroup.Limits, err error) bool
	following func() bool
}

const maxOpenWait = 64

// NewLoop returns a Loop that ticks every interval (see Interval), or when
// ticks delivers if not nil (for tests), over the Source that open opens.
func NewLoop(interval time.Duration, open func() (Source, error), ticks <-chan time.Time) *Loop {
	return &Loop{open: open, every: Interval(interval), ticks: ticks, wakeC: make(chan struct{}, 1)}
}

// add makes a Fit a member, and starts the goroutine if it is not running:
// step gets every reading and reports whether it still follows; following
// reports it between readings.
func (l *Loop) add(step func(time.Time, cgroup.Limits, error) bool, following func() bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.members = append(l.members, member{step, following})
	if l.done == nil {
		l.done = make(chan struct{})
		go l.run(l.done)
	}
}

// wake tells the goroutine that a member stopped, so that it exits at once
// when none follows any more.
func (l *Loop) wake() {
	select {
	case l.wakeC <- struct{}{}:
	default:
	}
}

// Done returns a channel closed when the goroutine of the current run exits,
// nil when none runs.
func (l *Loop) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// prune drops the members that no longer follow and reports whether none is
// left: the run ends.
func (l *Loop) prune() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.members[:0]
	for _, m := range l.members {
		if m.following() {
			kept = append(kept, m)
		}
	}
	clear(l.members[len(kept):])
	l.members = kept
	if len(kept) > 0 {
		return false
	}
	l.done = nil
	return true
}

func (l *Loop) run(done chan struct{}) {
	ticks := l.ticks
	if ticks == nil {
		t := time.NewTicker(l.every)
		defer t.Stop()
		ticks = t.C
	}
	var src Source
	var openErr error
	fails, wait := 0, 0
	for {
		if l.prune() {
			if src != nil {
				src.Close()
			}
			close(done)
			return
		}
		select {
		case <-l.wakeC:
		case now := <-ticks:
			if src == nil && wait == 0 {
				if src, openErr = l.open(); openErr != nil {
					src = nil
					fails++
					wait = min(1<<min(fails, 6), maxOpenWait) - 1
				}
			} else if src == nil {
				wait--
			}
			var lim cgroup.Limits
			err := openErr
			if src != nil {
				lim, err = src.Read()
			}
			l.mu.Lock()
			l.snap = append(l.snap[:0], l.members...)
			l.mu.Unlock()
			for i, m := range l.snap {
				m.step(now, lim, err)
				l.snap[i] = member{}
			}
		}
	}
}

type loopKey struct{}

// WithLoop returns a context that makes the Applies given it join l instead
// of starting a loop of their own, as the blank import does.
func WithLoop(ctx context.Context, l *Loop) context.Context {
	return context.WithValue(ctx, loopKey{}, l)
}

// LoopOf returns the Loop of WithLoop, or nil.
func LoopOf(ctx context.Context) *Loop {
	if ctx == nil {
		return nil
	}
	l, _ := ctx.Value(loopKey{}).(*Loop)
	return l
}
