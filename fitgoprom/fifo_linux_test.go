package fitgoprom

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollectFIFO: a FIFO at cpu.stat of a tree read with os.DirFS, whose
// Open waits for a writer, is not opened: the scrape goes on without it and
// counts a read error. Any open of the FIFO fails the test: while the scrape
// runs, the test opens the FIFO's other end, which succeeds only once a
// reader has opened it.
func TestCollectFIFO(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join("..", "cgroup", "testdata", "stats-v2"))))
	fifo := filepath.Join(root, "sys/fs/cgroup/pod/cpu.stat")
	require.NoError(t, os.Remove(fifo))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(WithFS(os.DirFS(root))))
	done := make(chan error, 1)
	got := map[string]float64{}
	go func() {
		mfs, err := reg.Gather()
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
		}
		done <- err
	}()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			assert.NotContains(t, got, "fitgo_cpu_cfs_periods_total", "no CPU statistics without cpu.stat")
			assert.Equal(t, 1.0, got["fitgo_read_errors_total"])
			assert.Contains(t, got, "fitgo_memory_usage_bytes")
			return
		default:
		}
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // the scrape reads an empty file and ends
			t.Fatal("the scrape opened the FIFO, waiting for a writer")
		}
		time.Sleep(time.Millisecond)
	}
}
