package cgroup

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFailFS is a MapFS whose Open of one name fails with err the first
// failures times, and that records at which Watcher read count (clock) each
// Open of that name happened.
type openFailFS struct {
	fstest.MapFS
	name     string
	err      error
	failures int
	clock    *int
	opens    []int
}

func (f *openFailFS) Open(name string) (fs.File, error) {
	if name == f.name {
		f.opens = append(f.opens, *f.clock)
		if len(f.opens) <= f.failures {
			return nil, &fs.PathError{Op: "open", Path: name, Err: f.err}
		}
	}
	return f.MapFS.Open(name)
}

var errTooManyFiles = errors.New("too many open files")

// TestWatcherRetriesFailedOpen: a limit file that could not be opened (here:
// too many open files) is opened again after 1, 2, 4, ... 32 Reads, its error
// is the controller's Err until then, and the limit is found once it opens.
func TestWatcherRetriesFailedOpen(t *testing.T) {
	reads := 0
	fsys := &openFailFS{MapFS: mapFS(v2Base), name: "sys/fs/cgroup/app/memory.max", err: errTooManyFiles, failures: 5, clock: &reads}
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	for reads = 1; reads <= 130; reads++ {
		lim, err := w.Read()
		assert.NoError(t, lim.CPU.Err, "read %d: the CPU limit is not affected", reads)
		cores, _ := lim.CPUQuota()
		assert.Equal(t, 2.0, cores, "read %d", reads)
		max, ok := lim.MemoryMax()
		if reads < 31 {
			require.ErrorIs(t, err, errTooManyFiles, "read %d", reads)
			require.ErrorIs(t, lim.Memory.Err, errTooManyFiles, "read %d", reads)
			assert.Contains(t, err.Error(), "/sys/fs/cgroup/app/memory.max")
			assert.False(t, ok, "read %d: no limit while a level cannot be read", reads)
		} else {
			require.NoError(t, err, "read %d", reads)
			assert.True(t, ok, "read %d", reads)
			assert.Equal(t, int64(gib), max, "read %d", reads)
		}
	}
	assert.Equal(t, []int{0, 1, 3, 7, 15, 31}, fsys.opens, "the read counts at which it was opened")

	// Failing for good: the wait grows to 32 Reads and stays there.
	reads = 0
	fsys = &openFailFS{MapFS: mapFS(v2Base), name: "sys/fs/cgroup/app/memory.max", err: fs.ErrPermission, failures: 1 << 30, clock: &reads}
	w, err = NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	for reads = 1; reads <= 130; reads++ {
		_, err := w.Read()
		require.ErrorIs(t, err, fs.ErrPermission)
	}
	assert.Equal(t, []int{0, 1, 3, 7, 15, 31, 63, 95, 127}, fsys.opens)
}

// TestWatcherRetriesDiscovery: when mountinfo cannot be opened, the
// hierarchy is looked for again on the same schedule.
func TestWatcherRetriesDiscovery(t *testing.T) {
	reads := 0
	fsys := &openFailFS{MapFS: mapFS(v1Base), name: "proc/self/mountinfo", err: errTooManyFiles, failures: 2, clock: &reads}
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	for reads = 1; reads <= 8; reads++ {
		lim, err := w.Read()
		if reads < 3 {
			require.ErrorIs(t, err, errTooManyFiles, "read %d", reads)
			assert.ErrorIs(t, lim.CPU.Err, errTooManyFiles)
			assert.ErrorIs(t, lim.Memory.Err, errTooManyFiles)
			continue
		}
		require.NoError(t, err, "read %d", reads)
		cores, _ := lim.CPUQuota()
		assert.Equal(t, 0.5, cores)
		max, _ := lim.MemoryMax()
		assert.Equal(t, int64(300*mib), max)
	}
	assert.Equal(t, []int{0, 1, 3}, fsys.opens)
}

// TestWatcherMissingFileIsNoLimit: a file that does not exist is no limit
// and is not looked for again after NewWatcher's first look.
func TestWatcherMissingFileIsNoLimit(t *testing.T) {
	reads := 0
	fsys := &openFailFS{MapFS: mapFS(with(v2Base, map[string]string{"sys/fs/cgroup/app/memory.max": ""})),
		name: "sys/fs/cgroup/app/memory.max", clock: &reads}
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	for reads = 1; reads <= 40; reads++ {
		lim, err := w.Read()
		require.NoError(t, err)
		_, ok := lim.MemoryMax()
		assert.False(t, ok)
	}
	assert.Equal(t, []int{0}, fsys.opens, "looked for once, by NewWatcher")
}

// TestWatcherFollowsMove: when proc/self/cgroup changes (the process was
// moved to another cgroup), the Watcher finds the new cgroup, closes the old
// files, and reads again without allocating.
func TestWatcherFollowsMove(t *testing.T) {
	m := mapFS(with(v1Base, map[string]string{
		"sys/fs/cgroup/cpu,cpuacct/other/cpu.cfs_quota_us":  "300000\n",
		"sys/fs/cgroup/cpu,cpuacct/other/cpu.cfs_period_us": "100000\n",
	}))
	var open atomic.Int64
	w, err := NewWatcher(wrapFS{m, func(f fs.File) fs.File { return f }, &open})
	require.NoError(t, err)
	defer w.Close()
	lim, err := w.Read()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/app", lim.CPU.Source)
	assert.Zero(t, testing.AllocsPerRun(100, func() { w.Read() }), "no allocation while the process stays")

	setFile(m, "proc/self/cgroup", "4:memory:/app\n3:cpu,cpuacct:/other\n")
	lim, err = w.Read()
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/other", lim.CPU.Dir)
	assert.Equal(t, "/sys/fs/cgroup/cpu,cpuacct/other", lim.CPU.Source)
	cores, _ := lim.CPUQuota()
	assert.Equal(t, 3.0, cores)
	want, err := ReadFS(m)
	require.NoError(t, err)
	sameResult(t, want, nil, lim, nil)

	var fresh atomic.Int64
	w2, err := NewWatcher(wrapFS{m, func(f fs.File) fs.File { return f }, &fresh})
	require.NoError(t, err)
	defer w2.Close()
	assert.Equal(t, fresh.Load(), open.Load(), "the old cgroup's files are closed")
	assert.Zero(t, testing.AllocsPerRun(100, func() { w.Read() }), "no allocation after the move")
}

// recordFS is a MapFS that records the names of the files read.
type recordFS struct {
	fstest.MapFS
	read []string
}

func (f *recordFS) Open(name string) (fs.File, error) {
	file, err := f.MapFS.Open(name)
	if err != nil {
		return nil, err
	}
	return recordFile{file, func() { f.read = append(f.read, name) }}, nil
}

type recordFile struct {
	fs.File
	record func()
}

func (f recordFile) Read(p []byte) (int, error) { f.record(); return f.File.Read(p) }

func (f recordFile) ReadAt(p []byte, off int64) (int, error) {
	f.record()
	return f.File.(io.ReaderAt).ReadAt(p, off)
}

// TestNonRegularFilesAreNotRead: a FIFO or a device such as /dev/zero (which
// never ends) at the path of a limit or proc file is an error naming it,
// found with Stat on the open file before any read.
func TestNonRegularFilesAreNotRead(t *testing.T) {
	for _, mode := range []fs.FileMode{fs.ModeNamedPipe, fs.ModeDevice | fs.ModeCharDevice, fs.ModeSocket} {
		for _, name := range []string{"sys/fs/cgroup/app/cpu.max", "proc/self/mountinfo", "proc/self/cgroup"} {
			t.Run(mode.String()+" "+name, func(t *testing.T) {
				fsys := &recordFS{MapFS: mapFS(v2Base)}
				fsys.MapFS[name].Mode = mode
				check := func(lim Limits, err error) {
					t.Helper()
					require.ErrorIs(t, err, errNotRegular)
					assert.Contains(t, err.Error(), "/"+name)
					assert.NotContains(t, fsys.read, name)
					_, ok := lim.CPUQuota()
					assert.False(t, ok)
					if name == "sys/fs/cgroup/app/cpu.max" {
						assert.NoError(t, lim.Memory.Err, "the other controller is read")
						_, ok := lim.MemoryMax()
						assert.True(t, ok)
					}
				}
				lim, err := ReadFS(fsys)
				check(lim, err)
				w, err := NewWatcher(fsys)
				if name == "proc/self/cgroup" {
					require.ErrorIs(t, err, ErrNoCgroup)
					check(Limits{}, err)
					return
				}
				require.NoError(t, err)
				defer w.Close()
				lim, err = w.Read()
				check(lim, err)
			})
		}
	}
}

// endlessFile yields 'a' bytes for ever and counts them.
type endlessFile struct {
	fs.File
	n *atomic.Int64
}

func (e endlessFile) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func (e endlessFile) ReadAt(p []byte, _ int64) (int, error) { return e.Read(p) }

// TestEndlessFilesAreCut: an endless file is rejected after a read of a size
// that fits the file, not after tens of megabytes.
func TestEndlessFilesAreCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
	}{
		{"cpu.max", maxLimitFile},
		{"cpu.stat", maxStatFile},
		{"mountinfo", maxProcFile},
		{"cgroup", maxProcFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n, open atomic.Int64
			fsys := wrapFS{mapFS(v2Base), func(f fs.File) fs.File {
				if st, _ := f.Stat(); st != nil && st.Name() == tc.name {
					return endlessFile{f, &n}
				}
				return f
			}, &open}
			var err error
			if tc.name == "cpu.stat" {
				_, err = ReadStatsDir(fsys, "/sys/fs/cgroup/app")
			} else {
				_, err = ReadFS(fsys)
			}
			require.ErrorIs(t, err, errTooLarge)
			assert.LessOrEqual(t, n.Load(), 2*tc.limit, "bytes read")
			if tc.name == "cpu.max" {
				w, err := NewWatcher(fsys)
				require.NoError(t, err)
				defer w.Close()
				n.Store(0)
				_, err = w.Read()
				require.ErrorIs(t, err, errTooLarge)
				assert.LessOrEqual(t, n.Load(), 4*tc.limit, "bytes read by the Watcher")
			}
		})
	}
}

// badCountFile returns a byte count outside [0, len(p)] from Read and
// ReadAt, as a broken fs.File could.
type badCountFile struct {
	fs.File
	n func(p []byte) int
}

func (b badCountFile) Read(p []byte) (int, error)            { return b.n(p), nil }
func (b badCountFile) ReadAt(p []byte, _ int64) (int, error) { return b.n(p), nil }

// readOnly hides ReadAt and Seek, so that a Watcher reads with Read.
type readOnly struct{ fs.File }

// TestBadByteCounts: a reader that returns more bytes than asked for, or a
// negative count, is an error naming the file, never a panic.
func TestBadByteCounts(t *testing.T) {
	counts := map[string]func(p []byte) int{
		"more than asked": func(p []byte) int { return len(p) + 1 },
		"negative":        func([]byte) int { return -1 },
	}
	for cname, count := range counts {
		for _, name := range []string{"cgroup", "mountinfo", "cpu.max"} {
			for _, readAt := range []bool{true, false} {
				t.Run(cname+" "+name+map[bool]string{true: " ReadAt", false: " Read"}[readAt], func(t *testing.T) {
					var open atomic.Int64
					fsys := wrapFS{mapFS(v2Base), func(f fs.File) fs.File {
						if st, _ := f.Stat(); st != nil && st.Name() == name {
							if readAt {
								return badCountFile{f, count}
							}
							return readOnly{badCountFile{f, count}}
						}
						return f
					}, &open}
					_, err := ReadFS(fsys)
					require.ErrorIs(t, err, errBadCount)
					assert.True(t, strings.Contains(err.Error(), "/"+name), err.Error())
					w, err := NewWatcher(fsys)
					if name == "cgroup" {
						require.ErrorIs(t, err, ErrNoCgroup)
						require.ErrorIs(t, err, errBadCount)
						return
					}
					require.NoError(t, err)
					defer w.Close()
					_, err = w.Read()
					require.ErrorIs(t, err, errBadCount)
				})
			}
		}
	}
	// The Watcher's re-read of proc/self/cgroup with a broken ReadAt after
	// a good start: the move check is skipped, the limits are still read.
	var open atomic.Int64
	var broken atomic.Bool
	fsys := wrapFS{mapFS(v2Base), func(f fs.File) fs.File {
		if st, _ := f.Stat(); st != nil && st.Name() == "cgroup" {
			return badCountFile{f, func(p []byte) int {
				if broken.Load() {
					return -1
				}
				n, _ := f.(io.ReaderAt).ReadAt(p, 0)
				return n
			}}
		}
		return f
	}, &open}
	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	broken.Store(true)
	lim, err := w.Read()
	require.NoError(t, err)
	cores, _ := lim.CPUQuota()
	assert.Equal(t, 2.0, cores)
}

// nilStat is a file whose Stat returns neither information nor an error.
type nilStat struct{ fs.File }

func (nilStat) Stat() (fs.FileInfo, error) { return nil, nil }

// TestNilFileOrInfo: an Open that returns no file, or a Stat no
// information, and no error is an error naming the file, never a panic.
func TestNilFileOrInfo(t *testing.T) {
	broken := map[string]func(fs.File) fs.File{
		"Open": func(fs.File) fs.File { return nil },
		"Stat": func(f fs.File) fs.File { return nilStat{f} },
	}
	for call, wrap := range broken {
		for _, name := range []string{"cgroup", "mountinfo", "cpu.max"} {
			t.Run(call+" "+name, func(t *testing.T) {
				var open atomic.Int64
				fsys := wrapFS{mapFS(v2Base), func(f fs.File) fs.File {
					if st, _ := f.Stat(); st.Name() == name {
						return wrap(f)
					}
					return f
				}, &open}
				_, err := ReadFS(fsys)
				require.ErrorIs(t, err, errNil)
				assert.Contains(t, err.Error(), "/"+name)
				w, err := NewWatcher(fsys)
				if name == "cgroup" {
					require.ErrorIs(t, err, ErrNoCgroup)
					require.ErrorIs(t, err, errNil)
					return
				}
				require.NoError(t, err)
				defer w.Close()
				_, err = w.Read()
				require.ErrorIs(t, err, errNil)
			})
		}
	}
}

// TestReadFSOpensOneFileAtATime: ReadFS and ReadStatsDir close each file
// once read, so that a process with few free descriptors can still read its
// limits; a Watcher keeps its files open.
func TestReadFSOpensOneFileAtATime(t *testing.T) {
	var open, most atomic.Int64
	files := with(v2Base, map[string]string{"proc/self/status": statusOwn(100),
		"sys/fs/cgroup/app/memory.current": "4096\n", "sys/fs/cgroup/app/memory.stat": "inactive_file 0\n"})
	fsys := wrapFS{mapFS(files), func(f fs.File) fs.File {
		most.Store(max(most.Load(), open.Load()))
		return f
	}, &open}
	lim, err := ReadFS(fsys)
	require.NoError(t, err)
	assert.NotEmpty(t, lim.Memory.Levels, "the usage files were read too")
	assert.Equal(t, int64(1), most.Load())
	assert.Zero(t, open.Load())
	_, err = ReadStatsDir(fsys, "/sys/fs/cgroup/app")
	require.NoError(t, err)
	assert.Equal(t, int64(1), most.Load())
	assert.Zero(t, open.Load())

	w, err := NewWatcher(fsys)
	require.NoError(t, err)
	defer w.Close()
	assert.Greater(t, open.Load(), int64(1))
}
