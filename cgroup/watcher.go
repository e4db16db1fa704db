package cgroup

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
)

// Watcher follows limit changes (a Kubernetes in-place resize rewrites
// cpu.max and memory.max of a running container) by polling: it keeps open
// each file it has read (ReadFS and ReadStatsDir keep none) and re-reads it
// from the start without allocating. Each Read re-reads proc/self/cgroup
// first, to follow the process to another cgroup, and each file once,
// however many parts need it; Stats right after a Read reads only the files
// that Read did not. A missing file is no limit until the process moves; a
// file that could not be opened for another reason (too many open files),
// and a hierarchy that could not be found, are tried again after 1, 2, 4 and
// so on up to 32 Reads. A Watcher must be used by one goroutine at a time.
type Watcher struct {
	fsys  fs.FS
	files []watchFile // /proc/self/cgroup, then each file read since it was; nil after Close
	seen  []byte      // its content when the hierarchy was found
	lim   Limits      // the hierarchy, with the errors of finding it
	buf   []byte
	reads int    // counts Reads: the clock of every retry
	retry retry  // of finding the hierarchy, while that fails
	gen   int    // counts readings (start, Read, a Stats on its own): each reads a file once
	last  Limits // what the last Read returned, for a Stats right after it
	fresh bool   // no Stats since that Read
}

// watchFile is one file to re-read; f is nil while it is missing or cannot
// be opened, as err says.
type watchFile struct {
	dir, name string
	f         fs.File
	err       error
	retry     retry
	data      []byte // its content as read in reading gen
	gen       int
}

// retry schedules the next attempt after a failure, 1, 2, 4 ... 32 Reads on;
// backoff is 0 while there is none.
type retry struct{ at, backoff int }

func (r *retry) after(now int, failed bool) {
	if r.backoff = min(max(1, 2*r.backoff), 32); !failed {
		r.backoff = 0
	}
	r.at = now + r.backoff
}

var errWatcherClosed = fmt.Errorf("cgroup: Watcher.Read after Close: %w", fs.ErrClosed)

// NewWatcher finds the process's cgroups in fsys (rooted at "/"; nil is the
// real root, opened as Read opens it) like ReadFS and reads their limit
// files. It fails only when the error wraps ErrNoCgroup; any other problem
// shows in every Read, as in ReadFS.
func NewWatcher(fsys fs.FS) (*Watcher, error) {
	w := &Watcher{fsys: cmp.Or(fsys, fs.FS(dirFS(""))), gen: 1}
	data, found, err := w.file("/proc/self", "cgroup")
	if !found {
		closeFiles(w.files)
		return nil, fmt.Errorf("%w: %w", ErrNoCgroup, cmp.Or(err, w.files[0].err)) // or it does not exist
	}
	w.find(data)
	eval(w, w.lim)
	return w, nil
}

// find finds the hierarchy of self, the content of proc/self/cgroup, and
// closes the files of the last one.
func (w *Watcher) find(self []byte) {
	closeFiles(w.files[1:])
	w.files = w.files[:1]
	w.seen = append(w.seen[:0], self...)
	w.lim = locate(w, w.seen)
	w.retry.after(w.reads, w.lim.CPU.Err != nil || w.lim.Memory.Err != nil)
}

// Read re-reads the files and returns what ReadFS would. It allocates only
// for an error, a move, a file read for the first time or grown beyond
// every earlier size. It reuses the array of Memory.Levels of the last. After
// Close, the error wraps fs.ErrClosed.
func (w *Watcher) Read() (Limits, error) {
	if w.files == nil {
		return Limits{}, errWatcherClosed
	}
	w.reads, w.gen = w.reads+1, w.gen+1
	// proc/self/cgroup that cannot be read now does not hide the limits.
	if self, found, err := w.file("/proc/self", "cgroup"); err == nil && found &&
		(!bytes.Equal(self, w.seen) || w.retry.backoff > 0 && w.reads >= w.retry.at) {
		w.find(self)
	}
	lim, err := eval(w, w.lim)
	w.last, w.fresh, w.lim.Memory.Levels = lim, true, lim.Memory.Levels[:0]
	return lim, err
}

// file opens dir/name on first use, and again when the retry of a failed
// open is due, and reads it from its start with ReadAt, or else by opening
// it again; once in a reading.
func (w *Watcher) file(dir, name string) ([]byte, bool, error) {
	i := slices.IndexFunc(w.files, func(f watchFile) bool { return f.dir == dir && f.name == name })
	if i < 0 {
		i, w.files = len(w.files), append(w.files, watchFile{dir: dir, name: name})
	}
	wf := &w.files[i]
	if wf.gen == w.gen {
		return wf.data, true, nil
	}
	if _, ok := wf.f.(io.ReaderAt); wf.f != nil && !ok {
		wf.f.Close()
		wf.f, wf.retry = nil, retry{}
	}
	if wf.f == nil && !errors.Is(wf.err, fs.ErrNotExist) && w.reads >= wf.retry.at {
		wf.f, wf.err = openFile(w.fsys, joinPath(dir, name))
		wf.retry.after(w.reads, wf.err != nil)
	}
	if wf.f == nil && errors.Is(wf.err, fs.ErrNotExist) { // no limit until the process moves
		return nil, false, nil
	} else if wf.f == nil {
		return nil, false, wf.err
	}
	data, err := readFile(wf.f, w.buf, sizeLimit(dir, name))
	if w.buf = data[:cap(data)]; err != nil {
		return nil, false, pathError("read", joinPath(dir, name), err)
	}
	wf.data, wf.gen = append(wf.data[:0], data...), w.gen
	return data, true, nil
}

// readAll reads the file at abs, which it does not keep open, into a buffer
// of its own: the Watcher keeps none of the size of mountinfo.
func (w *Watcher) readAll(abs string) ([]byte, error) { return readAll(w.fsys, nil, abs) }

// Close closes the files and returns the first error; again, it does nothing.
func (w *Watcher) Close() error {
	err := closeFiles(w.files)
	w.files = nil
	return err
}

// closeFiles closes the files and returns the first error.
func closeFiles(files []watchFile) error {
	var first error
	for _, wf := range files {
		if wf.f != nil {
			first = cmp.Or(first, wf.f.Close())
		}
	}
	return first
}
