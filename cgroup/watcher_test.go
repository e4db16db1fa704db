package cgroup

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameResult asserts that two Read results are equal, comparing errors by
// their text (they are different values with the same meaning).
func sameResult(t *testing.T, want Limits, wantErr error, got Limits, gotErr error) {
	t.Helper()
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	assert.Equal(t, errText(wantErr), errText(gotErr))
	assert.Equal(t, errText(want.CPU.Err), errText(got.CPU.Err))
	assert.Equal(t, errText(want.Memory.Err), errText(got.Memory.Err))
	want.CPU.Err, want.Memory.Err, got.CPU.Err, got.Memory.Err = nil, nil, nil, nil
	assert.Equal(t, want, got)
}

func TestWatcherMatchesReadFS(t *testing.T) {
	fsyss := map[string]fs.FS{}
	for _, tc := range fixtureTests {
		fsyss["testdata/"+tc.name] = os.DirFS(filepath.Join("testdata", tc.name))
	}
	fsyss["testdata/malformed-memory"] = os.DirFS(filepath.Join("testdata", "malformed-memory"))
	fsyss["v1Base"] = mapFS(v1Base)
	fsyss["v2Base"] = mapFS(v2Base)
	fsyss["mountinfo missing"] = mapFS(with(v2Base, map[string]string{"proc/self/mountinfo": ""}))
	fsyss["period missing"] = mapFS(with(v1Base, map[string]string{"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": ""}))
	fsyss["v1Container"] = mapFS(v1Container)
	fsyss["bad memory.stat"] = mapFS(with(v1Container, map[string]string{"sys/fs/cgroup/memory/memory.stat": "hierarchical_memory_limit x\n"}))
	fsyss["bad proc/self/cgroup"] = mapFS(with(v1Base, map[string]string{"proc/self/cgroup": "4:memory:app\n"}))
	for name, fsys := range fsyss {
		t.Run(name, func(t *testing.T) {
			want, wantErr := ReadFS(fsys)
			w, err := NewWatcher(fsys)
			require.NoError(t, err)
			defer w.Close()
			for i := 0; i < 3; i++ {
				got, gotErr := w.Read()
				sameResult(t, want, wantErr, got, gotErr)
			}
		})
	}
}

func TestWatcherNoCgroup(t *testing.T) {
	w, err := NewWatcher(fstest.MapFS{})
	require.ErrorIs(t, err, ErrNoCgroup)
	assert.Nil(t, w)
}

// setFile replaces the content of a MapFS file in place, as the kernel does
// when the kubelet writes a new limit.
func setFile(m fstest.MapFS, name, data string) {
	m[name].Data = []byte(data)
}

func TestWatcherFollowsChanges(t *testing.T) {
	for _, wrap := range fileWrappers {
		t.Run(wrap.name, func(t *testing.T) {
			m := mapFS(with(v2Base, map[string]string{
				"proc/self/cgroup":                   "0::/app/leaf\n",
				"sys/fs/cgroup/app/leaf/cpu.max":     "max 100000\n",
				"sys/fs/cgroup/app/leaf/memory.max":  "max\n",
				"sys/fs/cgroup/app/leaf/memory.high": "max\n",
			}))
			var open atomic.Int64
			w, err := NewWatcher(wrapFS{m, wrap.wrap, &open})
			require.NoError(t, err)

			read := func() Limits {
				t.Helper()
				l, err := w.Read()
				require.NoError(t, err)
				return l
			}
			l := read()
			cores, _ := l.CPUQuota()
			assert.Equal(t, 2.0, cores)
			assert.Equal(t, "/sys/fs/cgroup/app", l.CPU.Source)

			// In-place resize of the container: the leaf gets a tighter limit.
			setFile(m, "sys/fs/cgroup/app/leaf/cpu.max", "50000 100000\n")
			setFile(m, "sys/fs/cgroup/app/leaf/memory.max", "268435456\n")
			setFile(m, "sys/fs/cgroup/app/leaf/memory.high", "201326592\n")
			l = read()
			cores, _ = l.CPUQuota()
			assert.Equal(t, 0.5, cores)
			assert.Equal(t, "/sys/fs/cgroup/app/leaf", l.CPU.Source)
			mem, _ := l.MemoryMax()
			assert.Equal(t, int64(256*mib), mem)
			high, ok := l.MemoryHigh()
			assert.True(t, ok)
			assert.Equal(t, int64(192*mib), high)

			// A longer value than before, and back to no limit.
			setFile(m, "sys/fs/cgroup/app/leaf/cpu.max", "1234567 1000000\n")
			setFile(m, "sys/fs/cgroup/app/cpu.max", "max 100000\n")
			l = read()
			cores, _ = l.CPUQuota()
			assert.InDelta(t, 1.234567, cores, 1e-12)
			setFile(m, "sys/fs/cgroup/app/leaf/cpu.max", "max 100000\n")
			l = read()
			_, ok = l.CPUQuota()
			assert.False(t, ok)

			// A bad value is an error naming the file, then it recovers.
			setFile(m, "sys/fs/cgroup/app/memory.max", "garbage\n")
			l, err = w.Read()
			var pe *parseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "/sys/fs/cgroup/app/memory.max", pe.File)
			assert.NoError(t, l.CPU.Err)
			setFile(m, "sys/fs/cgroup/app/memory.max", "1073741824\n")
			l = read()
			mem, _ = l.MemoryMax()
			assert.Equal(t, int64(256*mib), mem)

			assert.Positive(t, open.Load())
			require.NoError(t, w.Close())
			assert.Zero(t, open.Load(), "Close must close every file")
			require.NoError(t, w.Close(), "a second Close does nothing")
			_, err = w.Read()
			assert.ErrorIs(t, err, fs.ErrClosed)
		})
	}
}

func TestWatcherV1FollowsChanges(t *testing.T) {
	m := mapFS(v1Container)
	w, err := NewWatcher(m)
	require.NoError(t, err)
	defer w.Close()
	l, err := w.Read()
	require.NoError(t, err)
	_, ok := l.CPUQuota()
	assert.False(t, ok)

	setFile(m, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000\n")
	setFile(m, "sys/fs/cgroup/memory/memory.stat", "hierarchical_memory_limit 104857600\n")
	l, err = w.Read()
	require.NoError(t, err)
	cores, ok := l.CPUQuota()
	assert.True(t, ok)
	assert.Equal(t, 1.5, cores)
	mem, _ := l.MemoryMax()
	assert.Equal(t, int64(100*mib), mem)
	assert.Equal(t, "/sys/fs/cgroup/memory", l.Memory.MaxSource)

	setFile(m, "sys/fs/cgroup/memory/memory.limit_in_bytes", "52428800\n")
	l, err = w.Read()
	require.NoError(t, err)
	mem, _ = l.MemoryMax()
	assert.Equal(t, int64(50*mib), mem)
}

func TestWatcherGrowsBuffer(t *testing.T) {
	m := mapFS(v1Container)
	w, err := NewWatcher(m)
	require.NoError(t, err)
	defer w.Close()
	// A memory.stat far longer than at start (the buffer must grow).
	big := make([]byte, 0, 64*kib)
	for len(big) < 60*kib {
		big = append(big, "total_some_counter 123456789\n"...)
	}
	big = append(big, "hierarchical_memory_limit 52428800\n"...)
	m["sys/fs/cgroup/memory/memory.stat"].Data = big
	l, err := w.Read()
	require.NoError(t, err)
	mem, _ := l.MemoryMax()
	assert.Equal(t, int64(50*mib), mem)
}

func TestWatcherReadDoesNotAllocate(t *testing.T) {
	fsyss := map[string]fs.FS{
		"v1 MapFS":             mapFS(v1Base),
		"v2 MapFS":             mapFS(with(v2Base, map[string]string{"proc/self/cgroup": "0::/app/a/b\n"})),
		"v1-kubepods-host":     os.DirFS(filepath.Join("testdata", "v1-kubepods-host")),
		"v2-kubepods-host":     os.DirFS(filepath.Join("testdata", "v2-kubepods-host")),
		"live system (if any)": os.DirFS("/"),
		"live system, nil":     nil, // the real root, opened as Read opens it
	}
	for name, fsys := range fsyss {
		t.Run(name, func(t *testing.T) {
			w, err := NewWatcher(fsys)
			if strings.HasPrefix(name, "live system") && err != nil {
				t.Skipf("no cgroup here: %v", err)
			}
			require.NoError(t, err)
			defer w.Close()
			_, err = w.Read()
			require.NoError(t, err)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := w.Read(); err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// fileWrappers hide ReadAt or Seek from the files of a file system: the
// Watcher reads a file again with ReadAt, or else opens it again.
var fileWrappers = []struct {
	name string
	wrap func(fs.File) fs.File
}{
	{"ReaderAt", func(f fs.File) fs.File { return f }},
	{"Seeker only", func(f fs.File) fs.File {
		return struct {
			fs.File
			io.Seeker
		}{f, f.(io.Seeker)}
	}},
	{"neither: reopen", func(f fs.File) fs.File { return struct{ fs.File }{f} }},
}

// wrapFS wraps every file it opens and counts the open ones.
type wrapFS struct {
	fsys fs.FS
	wrap func(fs.File) fs.File
	open *atomic.Int64
}

func (w wrapFS) Open(name string) (fs.File, error) {
	f, err := w.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	w.open.Add(1)
	return w.wrap(countClose{f, w.open}), nil
}

// countClose is an fs.File that keeps ReadAt and Seek and counts Close.
type countClose struct {
	fs.File
	open *atomic.Int64
}

func (c countClose) Close() error {
	c.open.Add(-1)
	return c.File.Close()
}

func (c countClose) ReadAt(b []byte, off int64) (int, error) {
	return c.File.(io.ReaderAt).ReadAt(b, off)
}

func (c countClose) Seek(off int64, whence int) (int64, error) {
	return c.File.(io.Seeker).Seek(off, whence)
}

// stuckFile returns nothing and no error from every Read.
type stuckFile struct{ fs.File }

func (stuckFile) Read([]byte) (int, error) { return 0, nil }

func TestReaderWithoutProgress(t *testing.T) {
	var open atomic.Int64
	fsys := wrapFS{mapFS(v2Base), func(f fs.File) fs.File { return stuckFile{f} }, &open}
	_, err := ReadFS(fsys)
	require.ErrorIs(t, err, ErrNoCgroup, "proc/self/cgroup cannot be read")
	require.ErrorIs(t, err, io.ErrNoProgress)
	assert.Zero(t, open.Load(), "every file is closed")

	// A limit file that never ends reading: the Watcher reports it.
	m := mapFS(v2Base)
	w, err := NewWatcher(wrapFS{m, func(f fs.File) fs.File {
		if st, _ := f.Stat(); st != nil && st.Name() == "cpu.max" {
			return stuckFile{f}
		}
		return f
	}, &open})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Read()
	require.ErrorIs(t, err, io.ErrNoProgress)
	assert.Contains(t, err.Error(), "/sys/fs/cgroup/app/cpu.max")
}
