package rootfs_test

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
	"github.com/fitgo/fitgo/internal/rootfs"
)

// name turns an absolute path into an fs.FS name.
func name(abs string) string { return strings.TrimPrefix(filepath.ToSlash(abs), "/") }

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	content := strings.Repeat("0123456789", 1000)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o640))

	got, err := fs.ReadFile(rootfs.FS(), name(p))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))

	f, err := rootfs.FS().Open(name(p))
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
	_, err := rootfs.FS().Open(name(filepath.Join(t.TempDir(), "missing")))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	for _, bad := range []string{"/etc/passwd", "a/../b", "", "a//b", "etc/passwd\x00x"} {
		_, err = rootfs.FS().Open(bad)
		assert.Error(t, err, bad)
	}
	var pe *fs.PathError
	_, err = rootfs.FS().Open("/abs")
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "open", pe.Op)
}

func TestDirectoryStat(t *testing.T) {
	dir := t.TempDir()
	f, err := rootfs.FS().Open(name(dir))
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	root, err := rootfs.FS().Open(".")
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
	got, err := cgroup.ReadFS(rootfs.FS())
	assert.Equal(t, werr == nil, err == nil, "%v / %v", werr, err)
	assert.Equal(t, want, got)
}

func TestReadFileInto(t *testing.T) {
	into, ok := rootfs.FS().(rootfs.ReadFileIntoFS)
	if runtime.GOOS != "linux" {
		assert.False(t, ok, "os.DirFS elsewhere")
		return
	}
	require.True(t, ok, "FS implements ReadFileIntoFS on Linux")

	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	content := strings.Repeat("0123456789", 1000)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
	for _, short := range []bool{false, true} {
		// A buffer too small grows; the result overwrites it from the start.
		buf := []byte("old content")
		got, err := into.ReadFileInto(name(p), buf[:4], short)
		require.NoError(t, err)
		assert.Equal(t, content, string(got), "shortReadEnds %v", short)
		// A large enough buffer is used as it is.
		buf = make([]byte, 3, 2*len(content))
		got, err = into.ReadFileInto(name(p), buf, short)
		require.NoError(t, err)
		assert.Equal(t, content, string(got))
		assert.Same(t, &buf[:1][0], &got[0], "read into buf's array")
		// A nil buffer works.
		got, err = into.ReadFileInto(name(p), nil, short)
		require.NoError(t, err)
		assert.Equal(t, content, string(got))
	}

	// mountinfo comes in pieces: read to the end it is the whole file.
	want, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	got, err := into.ReadFileInto("proc/self/mountinfo", make([]byte, 0, 64<<10), false)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	// A long path.
	long := dir
	for len(long) < 400 {
		long = filepath.Join(long, strings.Repeat("d", 60))
	}
	require.NoError(t, os.MkdirAll(long, 0o755))
	lp := filepath.Join(long, "g")
	require.NoError(t, os.WriteFile(lp, []byte("deep\n"), 0o644))
	got, err = into.ReadFileInto(name(lp), nil, true)
	require.NoError(t, err)
	assert.Equal(t, "deep\n", string(got))
	f, err := rootfs.FS().Open(name(lp))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var pe *fs.PathError
	_, err = into.ReadFileInto(name(filepath.Join(dir, "missing")), nil, true)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, name(filepath.Join(dir, "missing")), pe.Path)
	_, err = into.ReadFileInto("/abs", nil, true)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = into.ReadFileInto(name(p)+"\x00x", nil, true)
	assert.Error(t, err, "a name with a NUL byte")
	_, err = into.ReadFileInto(name(dir), nil, true)
	assert.Error(t, err, "a directory")
}

// TestReadFileIntoAllocs: reading into a large enough buffer allocates
// nothing (the path given to openat is built on the stack), the point of
// ReadFileInto.
func TestReadFileIntoAllocs(t *testing.T) {
	into, ok := rootfs.FS().(rootfs.ReadFileIntoFS)
	if !ok {
		t.Skip("skipped: FS has no ReadFileInto here (not Linux)")
	}
	buf := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(50, func() {
		var err error
		if buf, err = into.ReadFileInto("proc/self/mountinfo", buf, false); err != nil {
			t.Fatal(err)
		}
		if buf, err = into.ReadFileInto("proc/self/cgroup", buf, true); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestLongPath: a path too long for the buffer on the stack still works.
func TestLongPath(t *testing.T) {
	into, ok := rootfs.FS().(rootfs.ReadFileIntoFS)
	if !ok {
		t.Skip("skipped: FS has no ReadFileInto here (not Linux)")
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 200), strings.Repeat("e", 200))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("long\n"), 0o644))
	require.Greater(t, len(p), 400)
	got, err := into.ReadFileInto(name(p), nil, true)
	require.NoError(t, err)
	assert.Equal(t, "long\n", string(got))
	require.NoError(t, os.Symlink("target", p+".link"))
	target, err := rootfs.FS().(rootfs.ReadLinkFS).ReadLink(name(p + ".link"))
	require.NoError(t, err)
	assert.Equal(t, "target", target)
}

func TestReadLink(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("skipped: FS is os.DirFS here, not fitgo's reader")
	}
	rl := rootfs.FS().(rootfs.ReadLinkFS)
	dir := t.TempDir()
	link := filepath.Join(dir, "l")
	require.NoError(t, os.Symlink("some/where", link))
	got, err := rl.ReadLink(name(link))
	require.NoError(t, err)
	assert.Equal(t, "some/where", got)

	// A destination of 256 bytes or more does not fit the buffer and is
	// reported, not cut short.
	long := filepath.Join(dir, "long")
	require.NoError(t, os.Symlink(strings.Repeat("x", 300), long))
	_, err = rl.ReadLink(name(long))
	assert.ErrorIs(t, err, rootfs.ErrTooLarge)

	_, err = rl.ReadLink(name(filepath.Join(dir, "missing")))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "readlink", pe.Op)
	assert.Equal(t, name(filepath.Join(dir, "missing")), pe.Path)

	f := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err = rl.ReadLink(name(f))
	assert.Error(t, err, "not a link")

	for _, bad := range []string{"/abs", "a/../b", "", "a\x00b"} {
		_, err := rl.ReadLink(bad)
		assert.Error(t, err, "%q", bad)
	}

	// The link the cgroup package reads, and the same answer as package os.
	got, err = rl.ReadLink("proc/self/ns/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("skipped: no cgroup namespaces on this kernel")
	}
	require.NoError(t, err)
	want, err := os.Readlink("/proc/self/ns/cgroup")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.True(t, strings.HasPrefix(got, "cgroup:["), got)
}
