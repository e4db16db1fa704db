package fitgo

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/refresh"
	"github.com/fitgo/fitgo/maxprocs"
	"github.com/fitgo/fitgo/memlimit"
)

// TestRefreshLoopAllocatesNothing runs the real refresh loop of both knobs
// on this machine at 10ms for a second and counts every heap allocation in
// the process meanwhile: the loop's ticks must not allocate.
func TestRefreshLoopAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a second")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mp, err := maxprocs.Apply(maxprocs.WithRefresh(ctx, 10*time.Millisecond))
	require.NoError(t, err)
	defer mp.Undo()
	ml, err := memlimit.Apply(memlimit.WithRefresh(ctx, 10*time.Millisecond))
	require.NoError(t, err)
	defer ml.Undo()
	if !mp.Status().Following {
		t.Skip("no refresh loop here:", mp.Reason)
	}
	time.Sleep(50 * time.Millisecond) // let the loop settle

	sample := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(sample)
	before, ticksBefore := sample[0].Value.Uint64(), refresh.Default.Ticks()
	time.Sleep(time.Second)
	metrics.Read(sample)
	allocs, ticks := sample[0].Value.Uint64()-before, int(refresh.Default.Ticks()-ticksBefore)
	require.Greater(t, ticks, 50, "the loop ticks every 10ms")
	t.Logf("%d heap allocations in the whole process during %d refresh ticks", allocs, ticks)
	assert.True(t, mp.Status().Following && ml.Status().Following)
	// A few allocations may come from the runtime or the test framework;
	// one per tick would be about 100.
	assert.Less(t, allocs, uint64(ticks/10))
	runtime.KeepAlive(mp)
}
