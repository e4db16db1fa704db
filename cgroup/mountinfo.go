package cgroup

import (
	"bytes"
	"path"
	"strings"
)

// mountInfo is one line of /proc/self/mountinfo (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2) (3)   (4)   (5)      (6)      (7)   (8) (9)    (10)         (11)
//
// with optional fields (7) ended by a lone "-". Only the super options (11)
// may hold raw spaces (WSL's 9p mounts); root and point are still escaped.
type mountInfo struct {
	id, parent                uint64 // (1), (2)
	root, point               []byte // (4), (5)
	fstype, source, superOpts []byte // (9), (10), (11): the rest of the line
}

// parseMountInfoLine parses one line of mountinfo without its newline.
func parseMountInfoLine(line []byte) (m mountInfo, ok bool) {
	// The first " - " is the separator: no field before it holds a space.
	pre, post, ok := bytes.Cut(line, []byte(" - "))
	var f [6][]byte
	for i := range f {
		var more bool
		f[i], pre, more = bytes.Cut(pre, []byte{' '})
		if len(f[i]) == 0 || (!more && i < len(f)-1) {
			return mountInfo{}, false
		}
	}
	id, ok1 := parseUint(f[0])
	parent, ok2 := parseUint(f[1])
	fstype, post, ok3 := bytes.Cut(post, []byte{' '})
	if !ok || !ok1 || !ok2 || !ok3 || len(fstype) == 0 || bytes.IndexByte(f[2], ':') < 0 {
		return mountInfo{}, false
	}
	m = mountInfo{id: id, parent: parent, root: f[3], point: f[4], fstype: fstype}
	m.source, m.superOpts, _ = bytes.Cut(post, []byte{' '})
	return m, true
}

// unescape decodes the kernel's octal escapes ("\040"), keeping other
// backslashes.
func unescape(s []byte) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && s[i+1]-'0' < 4 && s[i+2]-'0' < 8 && s[i+3]-'0' < 8 { // below '0' wraps
			c = (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			i += 3
		}
		b = append(b, c)
	}
	return string(b)
}

// relPath returns cgPath relative to the cgroup path root ("" or "/..."),
// and whether root is cgPath or one of its ancestors, comparing the raw
// paths, "/.." elements included.
func relPath(root, cgPath string) (rel string, ok bool) {
	if root == "/" {
		return cgPath, strings.HasPrefix(cgPath, "/")
	}
	rel, ok = strings.CutPrefix(cgPath, root)
	return rel, ok && (rel == "" || rel[0] == '/')
}

// climbsOut reports whether the relative path rel leads above its start: a
// cgroup outside the process's cgroup namespace is shown with leading "/.."
// elements, and a mount whose root lies below it cannot show it. Clean keeps
// a ".." that climbs out, and nothing after it can take it back.
func climbsOut(rel string) bool {
	c := path.Clean("./" + rel)
	return c == ".." || strings.HasPrefix(c, "../")
}

// findMounts finds the mount of each query without an error: a "cgroup"
// mount naming the controller (V1) or a "cgroup2" mount (V2), whose root is
// the cgroup path or an ancestor and below which the path does not climb
// out, and not covered by its child on the same mount point. The shortest
// root wins (the most ancestors shown), then one under /sys/fs/cgroup (where
// runc and systemd mount; the JDK's choice), then the first listed. A query
// left without a mount gets version 0.
func findMounts(mountinfo []byte, qs []mountQuery) {
	for i := range qs {
		q := &qs[i]
		fstype := [...]string{V1: "cgroup", V2: "cgroup2"}[q.version] // "" for version 0
		forEachMount(mountinfo, func(m mountInfo) {
			if q.err != nil || string(m.fstype) != fstype || q.version == 0 || q.version == V1 && !hasController(m.superOpts, q.ctrl) {
				return
			}
			root, point := unescape(m.root), path.Clean(unescape(m.point))
			rel, shown := relPath(root, q.path)
			std := strings.HasPrefix(point+"/", "/sys/fs/cgroup/")
			if shown && !climbsOut(rel) && (q.point == "" || len(root) < len(q.root) || len(root) == len(q.root) && std && !q.std) && !covered(mountinfo, m) {
				q.std, q.point, q.root, q.dir = std, point, root, path.Join(point, rel)
			}
		})
		if q.point == "" {
			q.version = 0
		}
	}
}

// covered reports whether a child of m is mounted on m's mount point.
func covered(mountinfo []byte, m mountInfo) (c bool) {
	forEachMount(mountinfo, func(o mountInfo) {
		c = c || o.parent == m.id && o.id != m.id && bytes.Equal(o.point, m.point)
	})
	return c
}

// forEachMount calls fn for each well-formed line with an absolute point.
func forEachMount(mountinfo []byte, fn func(mountInfo)) {
	for data := mountinfo; len(data) > 0; {
		var line []byte
		line, data = nextLine(data)
		if m, ok := parseMountInfoLine(line); ok && m.point[0] == '/' {
			fn(m)
		}
	}
}
