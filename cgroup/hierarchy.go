package cgroup

import (
	"bytes"
	"strings"
)

// mountQuery is the cgroup of one controller in /proc/self/cgroup (version
// 0: none), then the mount that findMounts finds for it (point "": none).
type mountQuery struct {
	version     Version
	ctrl, path  string
	err         error  // an unusable line for the controller
	std         bool   // the mount is under /sys/fs/cgroup
	point, root string // the mount point (cleaned) and root, unescaped
	dir         string // the cgroup's directory under point
}

// parseProcCgroup finds the cgroup of controller ctrl in /proc/self/cgroup,
// lines "ID:controllers:path": a v1 line naming ctrl wins, else the v2 line
// "0::path". Other lines are skipped; a relative path there is an error.
func parseProcCgroup(data []byte, ctrl string) mountQuery {
	var v2 mountQuery
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		id, rest, ok1 := bytes.Cut(line, []byte{':'})
		ctrls, p, ok2 := bytes.Cut(rest, []byte{':'})
		if _, ok := parseUint(id); !ok || !ok1 || !ok2 {
			continue
		}
		var err error
		if len(p) == 0 || p[0] != '/' {
			err = invalid(n, "cgroup path", p)
		}
		switch {
		case hasController(ctrls, ctrl):
			return mountQuery{version: V1, ctrl: ctrl, path: string(p), err: err}
		case len(ctrls) == 0 && string(id) == "0" && v2.version == 0:
			v2 = mountQuery{version: V2, ctrl: ctrl, path: string(p), err: err}
		}
	}
	return v2
}

// hasController reports whether the comma-separated list names ctrl.
func hasController(list []byte, ctrl string) bool {
	for len(list) > 0 {
		var c []byte
		c, list, _ = bytes.Cut(list, []byte{','})
		if string(c) == ctrl {
			return true
		}
	}
	return false
}

// locate returns the hierarchy and Err of CPU and Memory from self,
// /proc/self/cgroup, and the mountinfo that w reads.
func locate(w files, self []byte) (lim Limits) {
	qs := [2]mountQuery{parseProcCgroup(self, "cpu"), parseProcCgroup(self, "memory")}
	if qs[0].version != 0 || qs[1].version != 0 {
		mountinfo, err := w.readAll("/proc/self/mountinfo")
		for i := range qs {
			if qs[i].err = withFile(qs[i].err, "/proc/self", "cgroup"); qs[i].err == nil && qs[i].version != 0 {
				qs[i].err = err // one value for both, reported once
			}
		}
		findMounts(mountinfo, qs[:])
	}
	c, m, qc, qm := &lim.CPU, &lim.Memory, &qs[0], &qs[1]
	c.Version, c.Path, c.Mount, c.MountRoot, c.Dir, c.Err = qc.version, qc.path, qc.point, qc.root, qc.dir, qc.err
	m.Version, m.Path, m.Mount, m.MountRoot, m.Dir, m.Err = qm.version, qm.path, qm.point, qm.root, qm.dir, qm.err
	return lim
}

// up returns the parent of dir, a level whose limits count, and false when
// dir is mount (or "/"), the last such level.
func up(dir, mount string) (string, bool) {
	if dir == mount || dir == "/" {
		return "", false
	}
	return dir[:max(strings.LastIndexByte(dir, '/'), 1)], true
}
