package cgroup

import (
	"io/fs"
	"os"
)

// Read returns the effective limits of the calling process: ReadFS of the
// real root, os.DirFS("/"). Outside Linux the error wraps ErrNoCgroup.
func Read() (Limits, error) { return ReadFS(os.DirFS("/")) }

// ReadFS returns the effective limits of the calling process, reading
// proc/self/cgroup, proc/self/mountinfo and the cgroup files they lead to
// from fsys, which is rooted at "/". Tests and tools can pass an
// fstest.MapFS or a directory tree holding a copy of those files.
//
// The error wraps ErrNoCgroup when proc/self/cgroup cannot be read; the
// Limits are then zero. Otherwise it is the errors.Join of CPU.Err and
// Memory.Err: a controller whose files are bad does not hide the other, so a
// caller may use Limits.CPUQuota even when the memory files are malformed.
//
// Each call reads the files again; ReadFS may be called from several
// goroutines at once. To poll for changes, a Watcher is cheaper.
func ReadFS(fsys fs.FS) (Limits, error) {
	r := fsReader{fsys: fsys}
	self, err := r.read(procSelfCgroup, maxProcFile)
	if err != nil {
		return Limits{}, noCgroup(err)
	}
	var lim Limits
	discover(&r, self, &lim)
	evalCPU(&r, &lim.CPU)
	evalMemory(&r, &lim.Memory)
	return lim, joinErrs(lim.CPU.Err, lim.Memory.Err)
}
