package cgroup

import "bytes"

// procSelfCgroup is the path of the process's cgroup membership file.
const procSelfCgroup = "/proc/self/cgroup"

// procEntry is what /proc/self/cgroup says about one controller.
type procEntry struct {
	version Version // V1, V2, or 0 when the controller is in no listed hierarchy
	ctrls   string  // V1: the hierarchy's controller list, e.g. "cpu,cpuacct"
	path    string  // cgroup path relative to the cgroup namespace, e.g. "/kubepods/pod1/c1"
	err     error   // a *ParseError (File empty) when the controller's line is unusable
}

// parseProcCgroup finds the hierarchy of the cgroup v1 controller ctrl (such as
// "cpu" or "memory") in the content of /proc/self/cgroup. Each line is
// "hierarchy-ID:controller-list:cgroup-path"; the path may itself contain
// colons.
//
// A v1 line whose controller list names ctrl wins; otherwise the cgroup v2
// line "0::path" is used; otherwise the controller is not found (version 0).
// Lines that do not have the three fields are skipped, because one odd line
// must not hide the others; a line that does name the controller but has a
// path that is not absolute is an error on that line.
func parseProcCgroup(data []byte, ctrl string) procEntry {
	var v2 procEntry
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		id, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		ctrls, p, ok := bytes.Cut(rest, []byte{':'})
		if !ok {
			continue
		}
		if _, ok := parseUint(id); !ok {
			continue
		}
		switch {
		case hasController(ctrls, ctrl):
			return procEntry{version: V1, ctrls: string(ctrls), path: string(p), err: checkCgroupPath(n, p)}
		case len(ctrls) == 0 && len(id) == 1 && id[0] == '0' && v2.version == 0:
			v2 = procEntry{version: V2, path: string(p), err: checkCgroupPath(n, p)}
		}
	}
	return v2
}

// hasController reports whether the comma-separated list names ctrl exactly.
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

func checkCgroupPath(n int, p []byte) error {
	if len(p) == 0 || p[0] != '/' {
		return invalid(n, "cgroup path", p)
	}
	return nil
}
