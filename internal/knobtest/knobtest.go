// Package knobtest is test support shared by the tests of maxprocs and
// memlimit: a refresh Source whose readings the test sets, and a wait for a
// refresh Loop's goroutine to exit. It is imported by tests only.
package knobtest

import (
	"sync"
	"testing"
	"time"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/refresh"
)

// Source is a refresh.Source whose readings the test sets.
type Source struct {
	mu  sync.Mutex
	lim cgroup.Limits
	err error
}

// Read returns the reading last set.
func (s *Source) Read() (cgroup.Limits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim, s.err
}

// Close does nothing.
func (s *Source) Close() error { return nil }

// Set sets the reading: the limits and the error.
func (s *Source) Set(lim cgroup.Limits, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim, s.err = lim, err
}

// SetLimits sets the limits of the reading, keeping its error.
func (s *Source) SetLimits(lim cgroup.Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim = lim
}

// Loop returns a refresh Loop over s that releases it as soon as it is
// unused.
func (s *Source) Loop() *refresh.Loop {
	return refresh.New(func() (refresh.Source, error) { return s, nil }, 0)
}

// WaitIdle waits until loop's goroutine has exited, failing the test after
// five seconds.
func WaitIdle(t testing.TB, loop *refresh.Loop) {
	t.Helper()
	running, done := loop.Running()
	if !running {
		return
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("refresh goroutine still running")
	}
}
