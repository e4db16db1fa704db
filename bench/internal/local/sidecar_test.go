package local

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fitgo/fitgo/bench/internal/results"
)

// TestGrownLine: the burst's line once the co-process printed it, and
// none once its output ended without one.
func TestGrownLine(t *testing.T) {
	s := &sidecar{grown: make(chan struct{}), drained: make(chan struct{})}
	s.grownAt = results.SidecarLine{State: results.SidecarGrown, HeldBytes: 205 << 20, GrowMS: 80}
	close(s.grown)
	l, ok := s.grownLine(time.Hour)
	assert.True(t, ok)
	assert.Equal(t, 80.0, l.GrowMS)

	s = &sidecar{grown: make(chan struct{}), drained: make(chan struct{})}
	close(s.drained) // killed before it grew
	_, ok = s.grownLine(time.Hour)
	assert.False(t, ok)
}
