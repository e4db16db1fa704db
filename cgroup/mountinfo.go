package cgroup

import (
	"bytes"
	"path"
	"strings"
)

// procSelfMountInfo is the path of the process's mount table.
const procSelfMountInfo = "/proc/self/mountinfo"

// mountInfo is one line of /proc/self/mountinfo. root and point are still
// escaped as the kernel writes them (a space is \040, a backslash \134).
//
// The format (proc(5)) is
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2) (3)   (4)   (5)      (6)      (7)   (8) (9)    (10)         (11)
//
// with zero or more optional fields (7) ended by a lone "-" (8). Fields up to
// the separator never contain raw spaces; the super options (11) may (WSL and
// Docker Desktop 9p mounts show Windows paths such as "C:\Program Files" raw).
type mountInfo struct {
	id        uint64 // (1)
	parent    uint64 // (2)
	root      []byte // (4) root of the mount within the file system
	point     []byte // (5) mount point
	fstype    []byte // (9)
	source    []byte // (10)
	superOpts []byte // (11) the rest of the line
}

// parseMountInfoLine parses one line of mountinfo (without its newline). ok is
// false when the line does not have the format above.
func parseMountInfoLine(line []byte) (m mountInfo, ok bool) {
	// " - " separates the optional fields from the file system type. No field
	// before it may contain a raw space or be a lone "-", so its first
	// occurrence is the separator.
	pre, post, ok := bytes.Cut(line, []byte(" - "))
	if !ok {
		return mountInfo{}, false
	}
	var f [6][]byte
	for i := range f {
		var more bool
		f[i], pre, more = bytes.Cut(pre, []byte{' '})
		if len(f[i]) == 0 || (!more && i < len(f)-1) {
			return mountInfo{}, false
		}
	}
	if m.id, ok = parseUint(f[0]); !ok {
		return mountInfo{}, false
	}
	if m.parent, ok = parseUint(f[1]); !ok {
		return mountInfo{}, false
	}
	if bytes.IndexByte(f[2], ':') < 0 {
		return mountInfo{}, false
	}
	m.root, m.point = f[3], f[4]
	var more bool
	m.fstype, post, more = bytes.Cut(post, []byte{' '})
	if len(m.fstype) == 0 || !more {
		return mountInfo{}, false
	}
	m.source, m.superOpts, _ = bytes.Cut(post, []byte{' '})
	return m, true
}

// unescape decodes the kernel's octal escapes (backslash and three octal
// digits, as in "\040" for a space). A backslash that does not start such an
// escape is kept as it is.
func unescape(s []byte) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && '0' <= s[i+1] && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			c = (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			i += 3
		}
		b = append(b, c)
	}
	return string(b)
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// isAncestorOrSelf reports whether the cgroup path root is cgPath or one of
// its ancestors, comparing the paths as they are, "/.." elements included.
func isAncestorOrSelf(root, cgPath string) bool {
	if root == "/" {
		return strings.HasPrefix(cgPath, "/")
	}
	return strings.HasPrefix(cgPath, root) && (len(cgPath) == len(root) || cgPath[len(root)] == '/')
}

// relPath returns cgPath relative to the mount root root, of which it is a
// descendant or itself: "" or a path that starts with "/".
func relPath(root, cgPath string) string {
	if root == "/" {
		return cgPath
	}
	return cgPath[len(root):]
}

// climbsOut reports whether the relative path rel leads above its start:
// the kernel shows a cgroup outside the process's cgroup namespace with
// leading "/.." elements, and a mount whose root lies below such a path
// cannot show that cgroup.
func climbsOut(rel string) bool {
	depth := 0
	for _, elem := range strings.Split(rel, "/") {
		switch elem {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// cgroupDir returns the directory of cgroup cgPath in a hierarchy mounted at
// point with mount root root (which shows cgPath: see findMounts).
func cgroupDir(point, root, cgPath string) string {
	return path.Join(point, relPath(root, cgPath))
}

// mountQuery asks findMounts for the mount of one hierarchy.
type mountQuery struct {
	version Version // V1: a "cgroup" mount carrying ctrl; V2: a "cgroup2" mount; 0: skip
	ctrl    string
	path    string // the process's cgroup path, as /proc/self/cgroup shows it

	found       bool
	point, root string // unescaped, point cleaned
}

// candidate is a mount that can show the cgroup of query q.
type candidate struct {
	q       int
	id      uint64
	point   []byte // escaped
	root    string
	covered bool
}

// findMounts finds, for each query, the mount of its hierarchy that shows
// the process's cgroup: for V1 a "cgroup" mount whose super options name
// the controller, for V2 a "cgroup2" mount, whose root is the cgroup path or
// one of its ancestors, and below which the path does not climb out (see
// climbsOut). A mount covered by another one stacked on the same mount point
// (whose parent it is) is hidden and left out. Of the others, the one with
// the shortest root wins: it shows the most ancestors, so the effective
// limit is the tightest that can be seen; of equally long roots, the last
// listed. Lines that are not well formed are skipped.
func findMounts(mountinfo []byte, qs []mountQuery) {
	var cands []candidate
	forEachMount(mountinfo, func(m mountInfo) {
		var v Version
		switch string(m.fstype) {
		case "cgroup":
			v = V1
		case "cgroup2":
			v = V2
		default:
			return
		}
		root := unescape(m.root)
		for i, q := range qs {
			if q.version == v && (v == V2 || hasController(m.superOpts, q.ctrl)) &&
				isAncestorOrSelf(root, q.path) && !climbsOut(relPath(root, q.path)) {
				cands = append(cands, candidate{q: i, id: m.id, point: m.point, root: root})
			}
		}
	})
	if len(cands) == 0 {
		return
	}
	forEachMount(mountinfo, func(m mountInfo) {
		for i := range cands {
			if c := &cands[i]; m.parent == c.id && m.id != c.id && bytes.Equal(m.point, c.point) {
				c.covered = true
			}
		}
	})
	for i := range qs {
		var best *candidate
		for j := range cands {
			if c := &cands[j]; c.q == i && !c.covered && (best == nil || len(c.root) <= len(best.root)) {
				best = c
			}
		}
		if best != nil {
			qs[i].found, qs[i].point, qs[i].root = true, path.Clean(unescape(best.point)), best.root
		}
	}
}

// forEachMount calls fn for every well-formed line of mountinfo whose mount
// point is absolute.
func forEachMount(mountinfo []byte, fn func(mountInfo)) {
	for data := mountinfo; len(data) > 0; {
		var line []byte
		line, data = nextLine(data)
		if m, ok := parseMountInfoLine(line); ok && m.point[0] == '/' {
			fn(m)
		}
	}
}

// findMount is findMounts for one hierarchy.
func findMount(mountinfo []byte, version Version, ctrl, cgPath string) (point, root string, ok bool) {
	qs := [1]mountQuery{{version: version, ctrl: ctrl, path: cgPath}}
	findMounts(mountinfo, qs[:])
	return qs[0].point, qs[0].root, qs[0].found
}
