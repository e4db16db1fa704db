package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Watcher keeps the limit files of the process's cgroup hierarchy open and
// re-reads them without allocating, for callers that follow limit changes
// (Kubernetes in-place pod resize rewrites cpu.max and memory.max of a running
// container) by polling.
//
// NewWatcher finds the cgroup directories once, like ReadFS, and opens the
// limit files of every level that ReadFS reads, from the process's cgroup up
// to the mount point.
// Each Read then reads those same files again: a file that did not exist when
// the Watcher was made is taken as "no limit at that level" for the
// Watcher's life, and if the process moves to another cgroup the Watcher
// keeps reading the old one. Make a new Watcher in those cases.
//
// A Watcher must be used by one goroutine at a time; Close releases its
// files.
type Watcher struct {
	fsys    fs.FS
	lim     Limits // hierarchy, plus errors found while discovering or opening
	walks   walks
	cpu     []watchLevel
	mem     []watchLevel
	memStat watchFile // v1: memory.stat of Memory.Dir
	buf     []byte
	closed  bool
}

var errWatcherClosed = fmt.Errorf("cgroup: Watcher.Read after Close: %w", fs.ErrClosed)

// watchLevel holds the open limit files of one directory: for CPU, cpu.max
// (v2) or cpu.cfs_quota_us and cpu.cfs_period_us (v1); for memory,
// memory.max and memory.high (v2) or memory.limit_in_bytes (v1).
type watchLevel struct {
	files [2]watchFile
}

// watchFile is one open file. exists is false when the file did not exist
// when the Watcher was made.
type watchFile struct {
	name   string // fs.FS name, to reopen
	exists bool
	f      fs.File // nil only while a reopen has failed, or after Close
	ra     io.ReaderAt
	sk     io.Seeker
}

// NewWatcher finds the process's cgroups in fsys (rooted at "/") like
// ReadFS, opens their limit files and reads them once. It fails only when
// there is no cgroup information at all (the error wraps ErrNoCgroup); any
// other problem shows in the Limits and error of every Read, as it would in
// ReadFS.
func NewWatcher(fsys fs.FS) (*Watcher, error) {
	r := fsReader{fsys: fsys, buf: make([]byte, 0, 4096)}
	w := &Watcher{fsys: fsys}
	var err error
	if w.walks, err = discover(&r, &w.lim); err != nil {
		return nil, err
	}
	if c := &w.lim.CPU; c.Err == nil && c.Version != 0 {
		names := [2]string{fileCPUMax}
		if c.Version == V1 {
			names = [2]string{fileCFSQuota, fileCFSPeriod}
		}
		w.cpu, c.Err = w.openLevels(c.Dir, c.Mount, w.walks.cpuSkipsTop, names)
	}
	if m := &w.lim.Memory; m.Err == nil && m.Version != 0 {
		names := [2]string{fileMemoryMax, fileMemoryHigh}
		if m.Version == V1 {
			names = [2]string{fileMemoryLimit}
		}
		w.mem, m.Err = w.openLevels(m.Dir, m.Mount, w.walks.memSkipsTop, names)
		if m.Err == nil && m.Version == V1 && m.MountRoot != "/" {
			w.memStat, m.Err = w.open(m.Dir, fileMemoryStat)
		}
	}
	// The first Read sizes the buffer for the largest file, so that later ones
	// do not allocate.
	w.buf = make([]byte, 512)
	_, _ = w.Read() // its errors are those of every later Read
	return w, nil
}

// openLevels opens the files of every level that evalCPU or evalMemory reads
// with the same skipTop.
func (w *Watcher) openLevels(dir, mount string, skipTop bool, names [2]string) ([]watchLevel, error) {
	var levels []watchLevel
	for ; ; dir = parentDir(dir) {
		top := isTop(dir, mount)
		if top && skipTop {
			return levels, nil
		}
		var l watchLevel
		for i, name := range names {
			if name == "" {
				continue
			}
			var err error
			if l.files[i], err = w.open(dir, name); err != nil {
				return append(levels, l), err // Close closes what did open
			}
		}
		levels = append(levels, l)
		if top {
			return levels, nil
		}
	}
}

// open opens dir/name; a missing file gives a watchFile with exists false.
func (w *Watcher) open(dir, name string) (watchFile, error) {
	abs := joinPath(dir, name)
	wf := watchFile{name: fsName(abs)}
	f, err := w.fsys.Open(wf.name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return wf, nil
		}
		return wf, pathError("open", abs, err)
	}
	wf.f, wf.exists = f, true
	wf.ra, _ = f.(io.ReaderAt)
	wf.sk, _ = f.(io.Seeker)
	return wf, nil
}

// Read re-reads the open files and returns the same Limits and error as
// ReadFS would for the same files. It does not allocate unless it returns an
// error (or a file has grown beyond every earlier size). After Close, Read
// returns an error wrapping fs.ErrClosed.
func (w *Watcher) Read() (Limits, error) {
	if w.closed {
		return Limits{}, errWatcherClosed
	}
	lim := w.lim
	evalCPU(w, &lim.CPU, w.walks.cpuSkipsTop)
	evalMemory(w, &lim.Memory, w.walks.memSkipsTop)
	return lim, joinErrs(lim.CPU.Err, lim.Memory.Err)
}

// file implements fileSource over the open files.
func (w *Watcher) file(level int, dir, name string) ([]byte, bool, error) {
	var wf *watchFile
	switch name {
	case fileCPUMax, fileCFSQuota:
		wf = &w.cpu[level].files[0]
	case fileCFSPeriod:
		wf = &w.cpu[level].files[1]
	case fileMemoryMax, fileMemoryLimit:
		wf = &w.mem[level].files[0]
	case fileMemoryHigh:
		wf = &w.mem[level].files[1]
	case fileMemoryStat:
		wf = &w.memStat
	default:
		return nil, false, nil
	}
	if !wf.exists {
		return nil, false, nil
	}
	for {
		n, err := w.readAt0(wf, w.buf)
		if err != nil {
			return nil, false, pathError("read", joinPath(dir, name), err)
		}
		if n < len(w.buf) {
			return w.buf[:n], true, nil
		}
		if len(w.buf) >= maxFileSize {
			return nil, false, pathError("read", joinPath(dir, name), errTooLarge)
		}
		// Full buffer: the file may be longer. Grow and read again.
		w.buf = make([]byte, 2*len(w.buf))
	}
}

// readAt0 reads the file from its start into b: with ReadAt when the file
// has it (*os.File, fstest.MapFS), else by seeking back to the start, else by
// opening it again.
func (w *Watcher) readAt0(wf *watchFile, b []byte) (int, error) {
	if wf.ra != nil {
		n, err := wf.ra.ReadAt(b, 0)
		if err == io.EOF {
			err = nil
		}
		return n, err
	}
	if wf.sk != nil {
		if _, err := wf.sk.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
	} else {
		// Neither: open the file again (this allocates). The old one is
		// closed first; if opening fails, the next Read tries again.
		if wf.f != nil {
			wf.f.Close()
			wf.f = nil
		}
		f, err := w.fsys.Open(wf.name)
		if err != nil {
			return 0, err
		}
		wf.f = f
	}
	n, zeros := 0, 0
	for n < len(b) {
		m, err := wf.f.Read(b[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		if m > 0 {
			zeros = 0
		} else if zeros++; zeros >= maxEmptyReads {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// Close closes the files. It returns the first error from closing them;
// calling it again does nothing.
func (w *Watcher) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	var first error
	closeFile := func(wf *watchFile) {
		if wf.f != nil {
			if err := wf.f.Close(); err != nil && first == nil {
				first = err
			}
			*wf = watchFile{}
		}
	}
	for _, levels := range [][]watchLevel{w.cpu, w.mem} {
		for i := range levels {
			closeFile(&levels[i].files[0])
			closeFile(&levels[i].files[1])
		}
	}
	closeFile(&w.memStat)
	w.cpu, w.mem = nil, nil
	return first
}
