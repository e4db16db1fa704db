package rootfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// name turns an absolute path into an fs.FS name.
func name(abs string) string { return strings.TrimPrefix(filepath.ToSlash(abs), "/") }

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	content := strings.Repeat("0123456789", 1000)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o640))

	got, err := fs.ReadFile(FS(), name(p))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))

	f, err := FS().Open(name(p))
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, "f", st.Name())
	assert.Equal(t, int64(len(content)), st.Size())
	assert.False(t, st.IsDir())
	assert.Equal(t, fs.FileMode(0o640), st.Mode().Perm())

	if runtime.GOOS == "linux" {
		ra, ok := f.(io.ReaderAt)
		require.True(t, ok, "files implement io.ReaderAt")
		b := make([]byte, 5)
		n, err := ra.ReadAt(b, 3)
		require.NoError(t, err)
		assert.Equal(t, "34567", string(b[:n]))
		b = make([]byte, 20)
		n, err = ra.ReadAt(b, int64(len(content)-4))
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, "6789", string(b[:n]))
		// A rewrite is seen by the next ReadAt of the open file.
		require.NoError(t, os.WriteFile(p, []byte("new"), 0o640))
		n, err = ra.ReadAt(b, 0)
		assert.Equal(t, io.EOF, err)
		assert.Equal(t, "new", string(b[:n]))
	}
	require.NoError(t, f.Close())
	_, err = f.Read(make([]byte, 1))
	assert.ErrorIs(t, err, fs.ErrClosed)
	assert.ErrorIs(t, f.Close(), fs.ErrClosed)
}

func TestOpenErrors(t *testing.T) {
	_, err := FS().Open(name(filepath.Join(t.TempDir(), "missing")))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	for _, bad := range []string{"/etc/passwd", "a/../b", "", "a//b"} {
		_, err = FS().Open(bad)
		assert.Error(t, err, bad)
	}
	var pe *fs.PathError
	_, err = FS().Open("/abs")
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "open", pe.Op)
}

func TestDirectoryStat(t *testing.T) {
	dir := t.TempDir()
	f, err := FS().Open(name(dir))
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	root, err := FS().Open(".")
	require.NoError(t, err)
	st, err = root.Stat()
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	root.Close()
}

// TestSameLimitsAsOS: cgroup.ReadFS gives the same limits over FS as over
// os.DirFS("/") on this machine.
func TestSameLimitsAsOS(t *testing.T) {
	want, werr := cgroup.ReadFS(os.DirFS("/"))
	got, err := cgroup.ReadFS(FS())
	assert.Equal(t, werr == nil, err == nil, "%v / %v", werr, err)
	assert.Equal(t, want, got)
}
