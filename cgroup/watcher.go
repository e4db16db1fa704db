package cgroup

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
)

// Watcher keeps the limit files of the process's cgroup hierarchy open and
// re-reads them without allocating, for callers that follow limit changes
// (Kubernetes in-place pod resize rewrites cpu.max and memory.max of a running
// container) by polling.
//
// NewWatcher finds the process's cgroups like ReadFS and opens the limit files
// of every level that ReadFS reads, and proc/self/cgroup. Each Read re-reads
// proc/self/cgroup first: when the process has moved to another cgroup, the
// Watcher finds the new hierarchy and opens its files. A limit file that does
// not exist is no limit at that level until the process moves. A file that
// could not be opened for another reason (too many open files, permission
// denied), and a hierarchy that could not be found, are tried again after 1,
// 2, 4 and so on up to 32 Reads; until then the error is the controller's Err.
//
// A Watcher must be used by one goroutine at a time; Close releases its
// files.
type Watcher struct {
	fsys    fs.FS
	self    watchFile // proc/self/cgroup
	seen    []byte    // its content when the hierarchy was found
	lim     Limits    // the hierarchy, with the errors of finding it
	cpu     []watchLevel
	mem     []watchLevel
	memStat watchFile // v1: memory.stat of Memory.Dir
	stats   statFiles // opened by Stats
	buf     []byte
	reads   int   // counts Reads: the clock of every retry
	find    retry // of finding the hierarchy, while that fails
	closed  bool
}

var errWatcherClosed = fmt.Errorf("cgroup: Watcher.Read after Close: %w", fs.ErrClosed)

// maxBackoff is the longest wait, in Reads, before a failed open is tried
// again.
const maxBackoff = 32

// retry schedules the next attempt after a failure: 1, 2, 4, ... maxBackoff
// Reads later.
type retry struct {
	at, backoff int
}

func (r *retry) failed(now int) {
	r.backoff = min(max(1, 2*r.backoff), maxBackoff)
	r.at = now + r.backoff
}

// watchLevel holds the limit files of one directory: for CPU, cpu.max (v2) or
// cpu.cfs_quota_us and cpu.cfs_period_us (v1); for memory, memory.max and
// memory.high (v2) or memory.limit_in_bytes (v1).
type watchLevel struct {
	files [2]watchFile
}

// watchFile is one file to re-read. f is nil when the file is missing, and
// while opening it fails (err says why).
type watchFile struct {
	abs     string
	limit   int // the most that is read of it
	f       fs.File
	ra      io.ReaderAt // f, when it has ReadAt (*os.File, fstest.MapFS)
	missing bool
	err     error
	retry   retry
}

// NewWatcher finds the process's cgroups in fsys (rooted at "/") like
// ReadFS, opens their limit files and reads them once. It fails only when
// there is no cgroup information at all (the error wraps ErrNoCgroup); any
// other problem shows in the Limits and error of every Read, as it would in
// ReadFS.
func NewWatcher(fsys fs.FS) (*Watcher, error) {
	w := &Watcher{fsys: fsys, buf: make([]byte, 512)}
	w.self = watchFile{abs: procSelfCgroup, limit: maxProcFile}
	w.open(&w.self)
	data, found, err := w.contents(&w.self)
	if !found {
		if err == nil {
			err = w.self.err // does not exist
		}
		w.Close()
		return nil, noCgroup(err)
	}
	w.discover(data)
	// Read once, so that the buffer has the size of the largest file and
	// later Reads do not allocate.
	_, _ = w.eval()
	return w, nil
}

// discover finds the hierarchy described by self, the content of
// proc/self/cgroup, and opens its limit files, closing those of the last one.
func (w *Watcher) discover(self []byte) {
	w.closeLimitFiles()
	w.seen = append(w.seen[:0], self...)
	w.lim = Limits{}
	discover(&fsReader{fsys: w.fsys}, w.seen, &w.lim)
	if w.lim.CPU.Err != nil || w.lim.Memory.Err != nil {
		w.find.failed(w.reads)
	} else {
		w.find = retry{}
	}
	if c := &w.lim.CPU; c.Err == nil && c.Version != 0 {
		names := [2]string{fileCPUMax}
		if c.Version == V1 {
			names = [2]string{fileCFSQuota, fileCFSPeriod}
		}
		w.cpu = w.openLevels(c.Dir, c.Mount, names)
	}
	if m := &w.lim.Memory; m.Err == nil && m.Version != 0 {
		names := [2]string{fileMemoryMax, fileMemoryHigh}
		if m.Version == V1 {
			names = [2]string{fileMemoryLimit}
		}
		w.mem = w.openLevels(m.Dir, m.Mount, names)
		if m.Version == V1 && m.MountRoot != "/" {
			w.memStat = w.newFile(joinPath(m.Dir, fileMemoryStat))
		}
	}
}

// openLevels opens the files of every level that evalCPU or evalMemory reads.
func (w *Watcher) openLevels(dir, mount string, names [2]string) []watchLevel {
	var levels []watchLevel
	for {
		var l watchLevel
		for i, name := range names {
			if name != "" {
				l.files[i] = w.newFile(joinPath(dir, name))
			}
		}
		levels = append(levels, l)
		if isTop(dir, mount) {
			return levels
		}
		dir = parentDir(dir)
	}
}

func (w *Watcher) newFile(abs string) watchFile {
	wf := watchFile{abs: abs, limit: sizeLimit(path.Base(abs))}
	w.open(&wf)
	return wf
}

// open opens wf. A missing file stays missing; any other failure is tried
// again later (see contents).
func (w *Watcher) open(wf *watchFile) {
	f, err := openFile(w.fsys, wf.abs)
	switch {
	case err == nil:
		wf.f, wf.err, wf.retry = f, nil, retry{}
		wf.ra, _ = f.(io.ReaderAt)
	case errors.Is(err, fs.ErrNotExist):
		wf.missing, wf.err = true, err
	default:
		wf.err = err
		wf.retry.failed(w.reads)
	}
}

// Read re-reads the open files and returns the same Limits and error as
// ReadFS would for the same files. It does not allocate unless it returns an
// error, the process has moved, or a file has grown beyond every earlier
// size. After Close, Read returns an error wrapping fs.ErrClosed.
func (w *Watcher) Read() (Limits, error) {
	if w.closed {
		return Limits{}, errWatcherClosed
	}
	w.reads++
	// proc/self/cgroup that cannot be read now does not hide the limits:
	// the check waits for the next Read.
	if self, found, err := w.contents(&w.self); err == nil && found {
		failed := w.lim.CPU.Err != nil || w.lim.Memory.Err != nil
		if !bytes.Equal(self, w.seen) || (failed && w.reads >= w.find.at) {
			w.discover(self)
		}
	}
	return w.eval()
}

func (w *Watcher) eval() (Limits, error) {
	lim := w.lim
	evalCPU(w, &lim.CPU)
	evalMemory(w, &lim.Memory)
	w.stats.want = statDirsOf(&lim)
	return lim, joinErrs(lim.CPU.Err, lim.Memory.Err)
}

// file implements fileSource over the open files.
func (w *Watcher) file(level int, _, name string) ([]byte, bool, error) {
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
	return w.contents(wf)
}

// contents reads wf from its start. A file whose open failed is opened again
// when its retry is due.
func (w *Watcher) contents(wf *watchFile) ([]byte, bool, error) {
	switch {
	case wf.f != nil && wf.ra == nil:
		// No ReadAt: open the file again, to read it from the start (this
		// allocates).
		wf.f.Close()
		wf.f = nil
		w.open(wf)
	case wf.f == nil && !wf.missing && w.reads >= wf.retry.at:
		w.open(wf)
	}
	switch {
	case wf.missing:
		return nil, false, nil
	case wf.f == nil:
		return nil, false, wf.err
	case wf.ra == nil:
		data, err := readAll(wf.f, w.buf[:0], wf.limit)
		w.buf = data[:cap(data)]
		if err != nil {
			return nil, false, pathError("read", wf.abs, err)
		}
		return data, true, nil
	}
	for {
		n, err := wf.ra.ReadAt(w.buf, 0)
		switch {
		case n < 0 || n > len(w.buf):
			err = errBadCount
		case err == io.EOF || err == nil:
			err = nil
			if n > wf.limit {
				err = errTooLarge
			}
		}
		if err != nil {
			return nil, false, pathError("read", wf.abs, err)
		}
		if n < len(w.buf) {
			return w.buf[:n], true, nil
		}
		// A full buffer: the file may be longer. Grow and read again.
		w.buf = make([]byte, min(2*len(w.buf), wf.limit+1))
	}
}

// Close closes the files. It returns the first error from closing them;
// calling it again does nothing.
func (w *Watcher) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	first := cmp.Or(w.closeLimitFiles(), w.stats.close())
	if err := closeFile(&w.self); first == nil {
		first = err
	}
	return first
}

// closeLimitFiles closes the limit files and forgets them.
func (w *Watcher) closeLimitFiles() error {
	var first error
	for _, levels := range [][]watchLevel{w.cpu, w.mem} {
		for i := range levels {
			for j := range levels[i].files {
				if err := closeFile(&levels[i].files[j]); first == nil {
					first = err
				}
			}
		}
	}
	if err := closeFile(&w.memStat); first == nil {
		first = err
	}
	w.cpu, w.mem = nil, nil
	return first
}

func closeFile(wf *watchFile) error {
	var err error
	if wf.f != nil {
		err = wf.f.Close()
	}
	*wf = watchFile{}
	return err
}
