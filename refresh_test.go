package fitgo

import (
	"context"
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
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	const n = 200
	for i := 0; i < n; i++ {
		ticks <- now
	}
	ticks <- now // the last one is handled once this is received
	metrics.Read(sample)
	allocs := sample[0].Value.Uint64() - before
	t.Logf("%d heap allocations in the whole process during %d refresh ticks", allocs, n)
	require.True(t, mp.Status().Following && ml.Status().Following)
	// A few allocations may come from the runtime or the test framework;
	// one per tick would be 200.
	assert.Less(t, allocs, uint64(n/10))
}
