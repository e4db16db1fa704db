package workload

import (
	"fmt"
	"sync"
	"time"
)

// Tickers: how the request generator wakes up at the scheduled times.
const (
	// TickerNetpoll wakes the generator through the Go runtime's network
	// poller (a timerfd on Linux), as requests arriving on sockets wake a
	// server: an idle GC mark worker yields to it at its next poll, within
	// about 100µs of scan work.
	TickerNetpoll = "netpoll"
	// TickerSleep wakes the generator with a runtime timer (time.Sleep). The
	// runtime runs expired timers only when a P schedules, so with few Ps a
	// running GC mark worker delays them until it is preempted (up to 10ms),
	// a latency a server woken by the network does not see.
	TickerSleep = "sleep"
)

// ticker wakes the generator every interval from first on.
type ticker interface {
	// Wait blocks until the next tick, or returns an error after Close.
	Wait() error
	Close() error
}

// newTicker returns a ticker of the given kind; netpoll falls back to sleep
// where the system has no timerfd. It returns the kind it made.
func newTicker(kind string, first time.Time, interval time.Duration) (ticker, string, error) {
	switch kind {
	case TickerNetpoll:
		t, err := newNetpollTicker(first, interval)
		if err == nil {
			return t, TickerNetpoll, nil
		}
		if err != errNoTimerfd {
			return nil, "", err
		}
		fallthrough
	case TickerSleep:
		return newSleepTicker(first, interval), TickerSleep, nil
	}
	return nil, "", fmt.Errorf("unknown ticker %q (want %s or %s)", kind, TickerNetpoll, TickerSleep)
}

type sleepTicker struct {
	next     time.Time
	interval time.Duration
	once     sync.Once
	done     chan struct{}
}

func newSleepTicker(first time.Time, interval time.Duration) *sleepTicker {
	return &sleepTicker{next: first, interval: interval, done: make(chan struct{})}
}

func (t *sleepTicker) Wait() error {
	tm := time.NewTimer(time.Until(t.next))
	defer tm.Stop()
	select {
	case <-tm.C:
		t.next = t.next.Add(t.interval)
		return nil
	case <-t.done:
		return errTickerClosed
	}
}

func (t *sleepTicker) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

var errTickerClosed = fmt.Errorf("ticker closed")
