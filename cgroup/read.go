package cgroup

import "io/fs"

// ReadFS returns the effective limits of the calling process, reading
// proc/self/cgroup, proc/self/mountinfo and the cgroup files they lead to
// from fsys, which is rooted at "/" (Read reads the real root, as
// os.DirFS("/") would, and proves the conventional mounts without
// mountinfo: see the package documentation). Tests and tools can pass an
// fstest.MapFS or a directory tree holding a copy of those files.
//
// The error wraps ErrNoCgroup when proc/self/cgroup cannot be read; the
// Limits are then zero. Otherwise it is the errors.Join of CPU.Err and
// Memory.Err: a controller whose files are bad does not hide the other, so a
// caller may use Limits.CPUQuota even when the memory files are malformed.
//
// Each call reads the files again; ReadFS may be called from several
// goroutines at once. To poll for changes, a Watcher is much cheaper.
func ReadFS(fsys fs.FS) (Limits, error) {
	r := fsReader{fsys: fsys, buf: make([]byte, 0, 4096)}
	var lim Limits
	w, err := discover(&r, &lim)
	if err != nil {
		return Limits{}, err
	}
	evalCPU(&r, &lim.CPU, w.cpuSkipsTop)
	evalMemory(&r, &lim.Memory, w.memSkipsTop)
	return lim, joinErrs(lim.CPU.Err, lim.Memory.Err)
}
