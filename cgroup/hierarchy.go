package cgroup

import (
	"fmt"
	"strings"
)

// discover fills the Hierarchy of lim.CPU and lim.Memory from selfCgroup,
// the content of /proc/self/cgroup, and from /proc/self/mountinfo, read
// through r; and their Err when that fails for a controller. selfCgroup may
// share r's buffer: it is parsed before r reads again.
func discover(r *fsReader, selfCgroup []byte, lim *Limits) {
	cpu := parseProcCgroup(selfCgroup, "cpu")
	mem := parseProcCgroup(selfCgroup, "memory")
	cpu.err = withFile(cpu.err, "/proc/self", "cgroup")
	mem.err = withFile(mem.err, "/proc/self", "cgroup")

	qs := [2]mountQuery{query(cpu, "cpu"), query(mem, "memory")}
	if qs[0].version != 0 || qs[1].version != 0 {
		mountinfo, err := r.read(procSelfMountInfo, maxProcFile)
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
}

// noCgroup is the error of a /proc/self/cgroup that cannot be read.
func noCgroup(err error) error { return fmt.Errorf("%w: %w", ErrNoCgroup, err) }

// query returns the mount query for the process's cgroup e of controller
// ctrl, or one that is skipped (version 0).
func query(e procEntry, ctrl string) mountQuery {
	if e.err != nil || e.version == 0 {
		return mountQuery{}
	}
	return mountQuery{version: e.version, ctrl: ctrl, path: e.path}
}

// locate returns the Hierarchy of the process's cgroup e from the result of
// its mount query. A cgroup that no mount shows gives a Hierarchy with
// Version 0 and only Path set: there is no limit that the process could read.
func locate(e procEntry, q *mountQuery) (Hierarchy, error) {
	h := Hierarchy{Path: e.path}
	if e.err != nil || !q.found {
		return h, e.err
	}
	h.Version, h.Mount, h.MountRoot, h.Dir = q.version, q.point, q.root, cgroupDir(q.point, q.root, q.path)
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
