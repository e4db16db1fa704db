package workload

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTicker(t *testing.T) {
	for _, kind := range []string{TickerNetpoll, TickerSleep} {
		t.Run(kind, func(t *testing.T) {
			first := time.Now().Add(20 * time.Millisecond)
			tk, got, err := newTicker(kind, first, 5*time.Millisecond)
			require.NoError(t, err)
			if runtime.GOOS == "linux" {
				assert.Equal(t, kind, got)
			}
			require.NoError(t, tk.Wait())
			assert.False(t, time.Now().Before(first), "never before the first tick")
			for range 4 {
				require.NoError(t, tk.Wait())
			}
			// Five ticks: 20ms + 4×5ms at the earliest.
			assert.GreaterOrEqual(t, time.Since(first), 20*time.Millisecond-time.Millisecond)

			go func() {
				time.Sleep(20 * time.Millisecond)
				tk.Close()
			}()
			for tk.Wait() == nil {
			}
		})
	}
	_, _, err := newTicker("bell", time.Now(), time.Millisecond)
	require.ErrorContains(t, err, `unknown ticker "bell"`)
}

func TestRunSleepTicker(t *testing.T) {
	res, err := Run(context.Background(), Config{Duration: 200 * time.Millisecond, HeapMiB: 2, Rate: 500, WorkIterations: 10, Ticker: TickerSleep})
	require.NoError(t, err)
	assert.Equal(t, TickerSleep, res.Config.Ticker)
	assert.Equal(t, uint64(100), res.Requests)
	_, err = Run(context.Background(), Config{Duration: 100 * time.Millisecond, HeapMiB: 1, WorkIterations: 10, Ticker: "bell"})
	require.Error(t, err)
}
