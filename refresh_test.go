package fitgo

import (
	"context"
	"math"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/knob"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// TestRefreshLoopAllocatesNothing runs the blank import's refresh loop (one
// loop, both knobs, over this machine's own cgroup files) for 200 ticks sent
// by the test, and counts every heap allocation in the process meanwhile:
// the ticks must not allocate.
func TestRefreshLoopAllocatesNothing(t *testing.T) {
	ticks := make(chan time.Time)
	loop := knob.NewLoop(time.Hour, knob.OpenProcess, ticks)
	ctx, cancel := context.WithCancel(knob.WithLoop(context.Background(), loop))
	defer cancel()
	lim, _ := cgroup.Read()
	mp, _ := maxprocs.Apply(maxprocs.Options{Refresh: time.Hour, Context: ctx, Limits: &lim})
	defer mp.Undo()
	ml, _ := memlimit.Apply(memlimit.Options{Refresh: time.Hour, Context: ctx, Limits: &lim})
	defer ml.Undo()
	if !mp.Status().Following || !ml.Status().Following {
		t.Skip("no refresh loop here: ", mp.Status().Reason, "; ", ml.Status().Reason)
	}
	now := time.Now()
	for i := 0; i < 10; i++ { // the first tick opens the files
		ticks <- now
	}
	// The count is the whole process's: another goroutine of the test binary
	// (an earlier test's child-process pipes, the runtime) may allocate
	// meanwhile. So take the fewest of three rounds: a tick that allocates
	// shows in every round (at least n), noise in some.
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	const n = 200
	fewest := uint64(math.MaxUint64)
	for round := 0; round < 3; round++ {
		metrics.Read(sample)
		before := sample[0].Value.Uint64()
		for i := 0; i < n; i++ {
			ticks <- now
		}
		ticks <- now // the last one is handled once this is received
		metrics.Read(sample)
		allocs := sample[0].Value.Uint64() - before
		t.Logf("round %d: %d heap allocations in the whole process during %d refresh ticks", round+1, allocs, n)
		fewest = min(fewest, allocs)
	}
	require.True(t, mp.Status().Following && ml.Status().Following)
	// A few allocations may come from the runtime or the test framework;
	// one per tick would be 200.
	assert.Less(t, fewest, uint64(n/10))
}
