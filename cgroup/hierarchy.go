package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/fitgo/fitgo/internal/rootfs"
)

// The magic numbers of the cgroup file systems (statfs(2)'s f_type).
const (
	cgroupSuperMagic  = 0x27e0eb
	cgroup2SuperMagic = 0x63677270
)

// conventionalMount is where systemd, Docker, containerd and Kubernetes
// mount cgroup2, and the directory that holds the v1 hierarchies, each at
// the name of its controller list ("cpu,cpuacct").
const conventionalMount = "/sys/fs/cgroup"

// conventional locates the hierarchy of every query (those with a version)
// at its conventional mount point without reading /proc/self/mountinfo,
// which costs the kernel a formatted line per mount of the namespace (about
// 15 µs for 20 mounts on a small VM, a third of a Read). It returns false, and
// leaves the queries untouched, when it cannot prove that for every query;
// discover then searches mountinfo.
//
// The proof, per query: the directory at the mount point plus the cgroup
// path is on a cgroup file system of the right version (statfs), and its
// cgroup.procs lists the process. A process is in exactly one cgroup per
// hierarchy, so that directory is the process's cgroup, the mount shows the
// hierarchy from the top of the process's cgroup namespace (mount root "/":
// any other root would put a different cgroup at that path), and the walk up
// to the mount point sees every level. On v1, the directory must also hold
// the controller's limit file (cpu.cfs_quota_us, memory.limit_in_bytes), the
// proof that the hierarchy mounted there carries the controller; it is read
// now and kept for evalCPU or evalMemory, which would read it first anyway.
//
// Only file systems with a ReadFileIntoMagic method (rootfs.FS, which Read
// uses) can give the proof. A process in the root cgroup of the initial
// namespace is left to mountinfo: that cgroup.procs lists every process that
// is in no other cgroup, possibly thousands, while no limit can apply there.
func (r *fsReader) conventional(qs []mountQuery) bool {
	mfs, ok := r.fsys.(rootfs.MagicFS)
	if !ok {
		return false
	}
	var points [2]string
	for i := range qs {
		q := &qs[i]
		if q.version == 0 {
			continue
		}
		if q.conv == "" || (q.path == "/" && r.initialCgroupNamespace()) {
			return false
		}
		points[i] = q.conv
	}
	pid := os.Getpid()
	var dirs [2]string
	for i := range qs {
		q := &qs[i]
		if q.version == 0 {
			continue
		}
		dir := cgroupDir(points[i], "/", q.path)
		shared := i > 0 && qs[0].version == q.version && points[0] == points[i] && qs[0].path == q.path
		if !shared && !r.holds(mfs, dir, q.version, pid) {
			r.stash = [2]stashed{}
			return false
		}
		dirs[i] = dir
		if q.version == V1 {
			name := fileCFSQuota
			if q.ctrl == "memory" {
				name = fileMemoryLimit
			}
			if !r.keep(i, joinPath(dir, name)) {
				r.stash = [2]stashed{}
				return false
			}
		}
	}
	for i := range qs {
		if qs[i].version != 0 {
			qs[i].found, qs[i].point, qs[i].root, qs[i].dir = true, points[i], "/", dirs[i]
		}
	}
	return true
}

// holds reports whether dir is on a cgroup file system of version v and its
// cgroup.procs lists pid. Any failure gives false. Only the first read is
// looked at (shortReadEnds): a cgroup with hundreds of processes may list pid
// further on, and false then only means that mountinfo is read.
func (r *fsReader) holds(mfs rootfs.MagicFS, dir string, v Version, pid int) bool {
	data, magic, err := mfs.ReadFileIntoMagic(fsName(joinPath(dir, fileCgroupProcs)), r.buf, true)
	if err != nil {
		return false
	}
	r.buf = data[:0]
	want := int64(cgroupSuperMagic)
	if v == V2 {
		want = cgroup2SuperMagic
	}
	return magic == want && listsPID(data, pid)
}

// fileCgroupProcs lists the processes of a cgroup, one PID per line.
const fileCgroupProcs = "cgroup.procs"

// listsPID reports whether the content of a cgroup.procs file has a line
// that is pid in decimal.
func listsPID(data []byte, pid int) bool {
	var b [20]byte
	want := strconv.AppendInt(b[:0], int64(pid), 10)
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		if bytes.Equal(line, want) {
			return true
		}
	}
	return false
}

// stashed is a short file read by conventional, given once to file.
type stashed struct {
	abs  string
	n    int
	data [32]byte // a limit file holds at most 21 bytes ("9223372036854771712\n")
}

// keep reads the file at abs into stash slot i; false when it cannot be read
// (or does not exist). A file too long to keep is proof enough; file reads it
// again.
func (r *fsReader) keep(i int, abs string) bool {
	data, err := r.read(abs, true)
	if err != nil {
		return false
	}
	if len(data) <= len(r.stash[i].data) {
		r.stash[i].abs = abs
		r.stash[i].n = copy(r.stash[i].data[:], data)
	}
	return true
}

// walks says, for each controller, which directories hold limits: from the
// process's cgroup directory up to the mount point, less the mount point
// itself when it is the root of the whole hierarchy (see showsWholeHierarchy).
type walks struct {
	cpuSkipsTop, memSkipsTop bool
}

// discover fills the Hierarchy of lim.CPU and lim.Memory from
// /proc/self/cgroup and /proc/self/mountinfo, and their Err when that fails
// for a controller. It returns an error wrapping ErrNoCgroup when
// /proc/self/cgroup cannot be read.
func discover(r *fsReader, lim *Limits) (walks, error) {
	data, err := r.read(procSelfCgroup, true)
	if err != nil {
		return walks{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	cpu := parseProcCgroup(data, "cpu")
	mem := parseProcCgroup(data, "memory")
	cpu.err = withFile(cpu.err, "/proc/self", "cgroup")
	mem.err = withFile(mem.err, "/proc/self", "cgroup")

	qs := [2]mountQuery{query(cpu, "cpu"), query(mem, "memory")}
	if (qs[0].version != 0 || qs[1].version != 0) && !r.conventional(qs[:]) {
		mountinfo, err := r.read(procSelfMountInfo, false)
		if err != nil {
			// One error value for both, so that ReadFS reports it once.
			for i, e := range []*procEntry{&cpu, &mem} {
				if qs[i].version != 0 {
					e.err = err
				}
			}
		} else {
			findMounts(mountinfo, qs[:])
		}
	}
	lim.CPU.Hierarchy, lim.CPU.Err = locate(cpu, &qs[0])
	lim.Memory.Hierarchy, lim.Memory.Err = locate(mem, &qs[1])

	var w walks
	if showsWholeHierarchy(lim.CPU.Hierarchy, lim.CPU.Err) || showsWholeHierarchy(lim.Memory.Hierarchy, lim.Memory.Err) {
		initial := r.initialCgroupNamespace()
		w.cpuSkipsTop = initial && showsWholeHierarchy(lim.CPU.Hierarchy, lim.CPU.Err)
		w.memSkipsTop = initial && showsWholeHierarchy(lim.Memory.Hierarchy, lim.Memory.Err)
	}
	return w, nil
}

// showsWholeHierarchy reports whether h's mount shows its hierarchy from the
// top of the process's cgroup namespace (mount root "/"). In the initial
// cgroup namespace that top is the root cgroup of the whole hierarchy, which
// cannot carry a limit: cgroup v2 has no cpu.max, memory.max or memory.high
// there, and v1 rejects a cpu.cfs_quota_us or memory.limit_in_bytes written
// to it (EINVAL), so it always reads "no limit". Reading it would cost a file
// or two per controller for nothing, so the walk stops below it. In any
// other cgroup namespace the top is the namespace's root, a container's own
// cgroup, often the very one with the limits, and it is read.
func showsWholeHierarchy(h Hierarchy, err error) bool {
	return err == nil && h.Version != 0 && h.MountRoot == "/"
}

// initialCgroupNS is what /proc/self/ns/cgroup links to in the initial
// cgroup namespace: its inode number is fixed by the kernel
// (PROC_CGROUP_INIT_INO, 0xEFFFFFFB, the same number since cgroup
// namespaces came in Linux 4.6).
const initialCgroupNS = "cgroup:[4026531835]"

// initialCgroupNamespace reports whether the process is known to be in the
// initial cgroup namespace: proc/self/ns/cgroup can be read as a link (the
// file system has a ReadLink method, as rootfs.FS and, from Go 1.25,
// os.DirFS have) and names it. Anything else, including an error, gives
// false, and the walk then reads every level, which is always right.
func (r *fsReader) initialCgroupNamespace() bool {
	if r.ns == 0 {
		r.ns = -1
		if rl, ok := r.fsys.(rootfs.ReadLinkFS); ok {
			if target, err := rl.ReadLink(procSelfNSCgroup[1:]); err == nil && target == initialCgroupNS {
				r.ns = 1
			}
		}
	}
	return r.ns == 1
}

// procSelfNSCgroup is the link to the process's cgroup namespace.
const procSelfNSCgroup = "/proc/self/ns/cgroup"

// query returns the mount query for the process's cgroup e of controller
// ctrl, or one that is skipped (version 0) when the cgroup cannot be seen.
func query(e procEntry, ctrl string) mountQuery {
	if e.err != nil || e.version == 0 || outsideNamespace(e.path) {
		return mountQuery{}
	}
	return mountQuery{version: e.version, ctrl: ctrl, path: path.Clean(e.path), conv: conventionalPoint(e)}
}

// conventionalPoint returns the conventional mount point of the hierarchy of
// e: conventionalMount for cgroup2, and for v1 the directory under it named
// by the hierarchy's controller list, or "" when that list cannot name one.
func conventionalPoint(e procEntry) string {
	switch {
	case e.version == V2:
		return conventionalMount
	case e.version == V1 && e.ctrls != "" && e.ctrls != "." && e.ctrls != ".." && !strings.ContainsAny(e.ctrls, "/\\ \t\n\x00"):
		return conventionalMount + "/" + e.ctrls
	}
	return ""
}

// locate returns the Hierarchy of the process's cgroup e from the result of
// its mount query. A cgroup that cannot be seen (outside the cgroup
// namespace, outside the root of every mount of its hierarchy, or not
// mounted at all) gives a Hierarchy with Version 0 and only Path set: there
// is no limit that the process could read.
func locate(e procEntry, q *mountQuery) (Hierarchy, error) {
	h := Hierarchy{Path: e.path}
	if e.err != nil || !q.found {
		return h, e.err
	}
	h.Version, h.Mount, h.MountRoot, h.Dir = q.version, q.point, q.root, q.dir
	if h.Dir == "" {
		h.Dir = cgroupDir(q.point, q.root, q.path)
	}
	return h, nil
}

// parentDir returns the parent of the clean absolute directory dir; the
// parent of "/" is "/".
func parentDir(dir string) string {
	i := strings.LastIndexByte(dir, '/')
	if i <= 0 {
		return "/"
	}
	return dir[:i]
}

// fileSource gives the content of the limit files. level counts directories
// from the process's cgroup directory (0) up towards the mount point, and dir
// is that directory's absolute path. found is false when the file does not
// exist, which means no limit at that level. The returned bytes are valid
// until the next call.
type fileSource interface {
	file(level int, dir, name string) (data []byte, found bool, err error)
}

// fsReader reads whole files of a file system rooted at "/" into one buffer
// reused for every file.
type fsReader struct {
	fsys  fs.FS
	buf   []byte
	stash [2]stashed // files that conventional read, by query
	ns    int8       // initialCgroupNamespace: 0 not asked yet, 1 yes, -1 no
}

// maxFileSize bounds what is read of one file, through any file system: the
// bound of rootfs.FS, which Read uses.
const maxFileSize = rootfs.MaxFileSize

var errTooLarge = rootfs.ErrTooLarge

// read returns the content of the file at the absolute path abs. The error
// wraps fs.ErrNotExist when the file does not exist. whole tells that the
// kernel prints the file in one go (not so /proc/self/mountinfo): a file
// system with ReadFileInto (rootfs.FS, which Read uses) then saves a system
// call.
func (r *fsReader) read(abs string, whole bool) ([]byte, error) {
	if into, ok := r.fsys.(rootfs.ReadFileIntoFS); ok {
		data, err := into.ReadFileInto(fsName(abs), r.buf, whole)
		if err != nil {
			return nil, pathError("read", abs, err)
		}
		r.buf = data[:0]
		return data, nil
	}
	f, err := r.fsys.Open(fsName(abs))
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	data, err := readAll(f, r.buf[:0])
	if data != nil {
		r.buf = data[:0]
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, pathError("read", abs, err)
	}
	return data, nil
}

func (r *fsReader) file(_ int, dir, name string) ([]byte, bool, error) {
	abs := joinPath(dir, name)
	for i := range r.stash {
		if s := &r.stash[i]; s.abs == abs {
			s.abs = ""
			return s.data[:s.n], true, nil
		}
	}
	data, err := r.read(abs, true)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// readAll appends everything rd yields to b, growing it as needed.
func readAll(rd io.Reader, b []byte) ([]byte, error) {
	if cap(b) == 0 {
		b = make([]byte, 0, 512)
	}
	zeros := 0
	for {
		if len(b) == cap(b) {
			if len(b) >= maxFileSize {
				return b, errTooLarge
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if n > 0 {
			zeros = 0
		} else if zeros++; zeros >= maxEmptyReads {
			return b, io.ErrNoProgress
		}
	}
}

// maxEmptyReads is how many reads in a row may return nothing and no error
// before a reader is taken as broken (as bufio does).
const maxEmptyReads = 100

// fsName turns an absolute slash-separated path into a name for fs.FS, which
// has no leading slash ("." is the root).
func fsName(abs string) string {
	name := strings.TrimLeft(abs, "/")
	if name == "" {
		return "."
	}
	return name
}

// pathError reports err about the absolute path abs, replacing the relative
// name that an fs.FS puts in its *fs.PathError.
func pathError(op, abs string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: abs, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: abs, Err: err}
}

// joinErrs combines two errors, keeping one when both are the same.
func joinErrs(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil || errors.Is(a, b):
		return a
	}
	return errors.Join(a, b)
}
