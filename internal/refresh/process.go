package refresh

import (
	"bytes"
	"io"
	"io/fs"

	"github.com/fitgo/fitgo/cgroup"
)

// processSource is a cgroup.Watcher that notices when the process moves to
// another cgroup: it keeps proc/self/cgroup open too, re-reads it with the
// limits, and makes a new Watcher when its content has changed. The check
// costs one pread and no allocation.
type processSource struct {
	fsys fs.FS
	w    *cgroup.Watcher
	self fs.File
	ra   io.ReaderAt // self, when it has ReadAt
	seen []byte      // content of proc/self/cgroup when w was made
	buf  []byte
}

// OpenProcess returns a Source over the cgroup files of the calling process
// in fsys, rooted at "/". It fails, with an error wrapping
// cgroup.ErrNoCgroup, when there is no cgroup information.
func OpenProcess(fsys fs.FS) (Source, error) {
	p := &processSource{fsys: fsys, buf: make([]byte, 1024)}
	self, err := fsys.Open("proc/self/cgroup")
	if err == nil {
		p.self = self
		p.ra, _ = self.(io.ReaderAt)
		if n, ok := p.readSelf(); ok {
			p.seen = append([]byte(nil), p.buf[:n]...)
		}
	}
	w, err := cgroup.NewWatcher(fsys)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.w = w
	return p, nil
}

// readSelf reads proc/self/cgroup into p.buf.
func (p *processSource) readSelf() (int, bool) {
	if p.ra == nil {
		return 0, false
	}
	for {
		n, err := p.ra.ReadAt(p.buf, 0)
		if err != nil && err != io.EOF {
			return 0, false
		}
		if n < len(p.buf) {
			return n, true
		}
		p.buf = make([]byte, 2*len(p.buf))
	}
}

func (p *processSource) Read() (cgroup.Limits, error) {
	if n, ok := p.readSelf(); ok && !bytes.Equal(p.buf[:n], p.seen) {
		// The process moved: find its new cgroup.
		if w, err := cgroup.NewWatcher(p.fsys); err == nil {
			p.w.Close()
			p.w = w
			p.seen = append(p.seen[:0], p.buf[:n]...)
		}
	}
	return p.w.Read()
}

func (p *processSource) Close() error {
	var err error
	if p.w != nil {
		err = p.w.Close()
		p.w = nil
	}
	if p.self != nil {
		p.self.Close()
		p.self = nil
	}
	return err
}
