//go:build linux

package cgroup

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealFIFOAndDevZero: on a real directory tree opened as Read opens the
// root, a FIFO at cpu.max (whose blocking open would wait for a writer for
// ever) and a link to /dev/zero at memory.max (which never ends) are errors,
// returned at once.
func TestRealFIFOAndDevZero(t *testing.T) {
	root := t.TempDir()
	for name, data := range v2Base {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	cpuMax := filepath.Join(root, "sys/fs/cgroup/app/cpu.max")
	memMax := filepath.Join(root, "sys/fs/cgroup/app/memory.max")
	require.NoError(t, os.Remove(cpuMax))
	require.NoError(t, syscall.Mkfifo(cpuMax, 0o644))
	require.NoError(t, os.Remove(memMax))
	require.NoError(t, os.Symlink("/dev/zero", memMax))

	fsys := dirFS(root)
	lim, readErr := ReadFS(fsys)
	require.ErrorIs(t, readErr, errNotRegular)
	assert.ErrorIs(t, lim.CPU.Err, errNotRegular)
	assert.ErrorIs(t, lim.Memory.Err, errNotRegular)
	assert.Contains(t, readErr.Error(), "/sys/fs/cgroup/app/cpu.max")
	assert.Contains(t, readErr.Error(), "/sys/fs/cgroup/app/memory.max")

	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	got, gotErr := w.Read()
	sameResult(t, lim, readErr, got, gotErr)
}

// TestReadStatsDirRealRootFIFO: ReadStatsDir with a nil fsys opens the real
// files as Read does: a FIFO at memory.events is an error at once, and the
// other files are read all the same.
func TestReadStatsDirRealRootFIFO(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.current"), []byte("4096\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "memory.events"), 0o644))
	st, err := ReadStatsDir(nil, dir)
	require.ErrorIs(t, err, errNotRegular)
	assert.Contains(t, err.Error(), filepath.Join(dir, "memory.events"))
	assert.False(t, st.Memory.HasEvents)
	assert.Equal(t, dir, st.Memory.Dir)
	assert.Equal(t, int64(4096), st.Memory.Usage)
}
