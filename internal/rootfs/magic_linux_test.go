//go:build linux

package rootfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rootfs"
)

// TestReadFileIntoMagic: the content is ReadFileInto's and the magic is
// statfs(2)'s f_type for the file.
func TestReadFileIntoMagic(t *testing.T) {
	mfs := rootfs.FS().(rootfs.MagicFS)
	for _, p := range []string{"/proc/self/cgroup", "/proc/self/mountinfo", "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/cpu/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil {
			continue // not on this machine
		}
		want, err := os.ReadFile(p)
		require.NoError(t, err)
		got, magic, err := mfs.ReadFileIntoMagic(name(p), make([]byte, 0, 64), false)
		require.NoError(t, err, p)
		assert.Equal(t, int64(st.Type), magic, p)
		if !strings.HasSuffix(p, "cgroup.procs") { // the test's own threads come and go
			assert.Equal(t, string(want), string(got), p)
		}
	}
	_, _, err := mfs.ReadFileIntoMagic(name(filepath.Join(t.TempDir(), "missing")), nil, true)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, _, err = mfs.ReadFileIntoMagic("/abs", nil, true)
	assert.Error(t, err)
}
