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
	pre, post, ok := cutSeparator(line)
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
	if _, ok := parseUint(f[0]); !ok {
		return mountInfo{}, false
	}
	if _, ok := parseUint(f[1]); !ok {
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

// cutSeparator is bytes.Cut(line, []byte(" - ")), faster on mountinfo lines:
// it looks for the rare '-' and checks the spaces around it, where
// bytes.Index would stop at every one of the many spaces.
func cutSeparator(line []byte) (before, after []byte, found bool) {
	for i := 0; ; {
		j := bytes.IndexByte(line[i:], '-')
		if j < 0 {
			return line, nil, false
		}
		i += j
		if i > 0 && i+1 < len(line) && line[i-1] == ' ' && line[i+1] == ' ' {
			return line[:i-1], line[i+2:], true
		}
		i++
	}
}

// unescapeAppend appends s to dst, decoding the kernel's octal escapes
// (backslash and three octal digits, as in "\040" for a space). A backslash
// that does not start such an escape is kept as it is.
func unescapeAppend(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && '0' <= s[i+1] && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			c = (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			i += 3
		}
		dst = append(dst, c)
	}
	return dst
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// unescape returns s decoded, without copying when it has no backslash.
func unescape(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	return string(unescapeAppend(make([]byte, 0, len(s)), s))
}

// isAncestorOrSelf reports whether the cgroup path root is cgPath or one of its
// ancestors. Both are absolute slash-separated paths.
func isAncestorOrSelf(root []byte, cgPath string) bool {
	if len(root) == 1 && root[0] == '/' {
		return len(cgPath) > 0 && cgPath[0] == '/'
	}
	return len(cgPath) >= len(root) && cgPath[:len(root)] == string(root) &&
		(len(cgPath) == len(root) || cgPath[len(root)] == '/')
}

// mountQuery asks findMounts for the mount of one hierarchy.
type mountQuery struct {
	version Version // V1: a "cgroup" mount carrying ctrl; V2: a "cgroup2" mount; 0: skip
	ctrl    string
	path    string // the process's cgroup path, clean and inside the namespace
	conv    string // the conventional mount point of the hierarchy, or ""

	found     bool
	point     string // mount point, unescaped and cleaned
	root      string // mount root, unescaped
	dir       string // the process's cgroup directory, when already known
	bestPoint []byte // escaped, while scanning
	bestRoot  []byte
	bestLen   int  // length of the unescaped bestRoot
	convSeen  bool // a mount at conv with root "/" is listed
}

// findMounts finds, in one pass over mountinfo, the mount of the hierarchy
// that holds each query's cgroup path: for V1 a "cgroup" mount whose super
// options name the controller, for V2 a "cgroup2" mount. Only mounts whose
// root is the path or one of its ancestors can show the process's cgroup.
// Among those, a mount at the query's conventional mount point (conv) with
// root "/" wins: it shows the whole hierarchy (or cgroup namespace), and it
// is the mount that discover's conventional proves without mountinfo, so
// that both ways give the same answer. Otherwise the one with the longest
// root wins (the closest view of the process's cgroup), and of equally long
// roots the last one listed, which is the one on top when mounts are
// stacked. Lines that are not well formed are skipped.
//
// To stay cheap on hosts with hundreds of mounts, only lines that contain
// " - cgroup" are parsed at all.
func findMounts(mountinfo []byte, qs []mountQuery) {
	for i := range qs {
		qs[i].bestLen = -1
	}
	var scratch [256]byte
	// The needle leaves out the separator's leading space: spaces are
	// everywhere in mountinfo and make a poor first byte to search for
	// (bytes.Index scans for it), while a '-' is rare. The space is checked
	// by hand.
	needle := []byte("- cgroup")
	for data := mountinfo; ; {
		i := bytes.Index(data, needle)
		if i < 0 {
			break
		}
		if i == 0 || data[i-1] != ' ' {
			data = data[i+len(needle):]
			continue
		}
		start := bytes.LastIndexByte(data[:i], '\n') + 1
		line, rest := nextLine(data[start:])
		data = rest
		m, ok := parseMountInfoLine(line)
		if !ok || len(m.point) == 0 || m.point[0] != '/' {
			continue
		}
		var v Version
		switch string(m.fstype) {
		case "cgroup":
			v = V1
		case "cgroup2":
			v = V2
		default:
			continue
		}
		r := m.root
		if bytes.IndexByte(r, '\\') >= 0 {
			r = unescapeAppend(scratch[:0], r)
		}
		for j := range qs {
			q := &qs[j]
			if q.version != v || (v == V1 && !hasController(m.superOpts, q.ctrl)) || !isAncestorOrSelf(r, q.path) {
				continue
			}
			if q.conv != "" && len(r) == 1 && string(m.point) == q.conv {
				q.convSeen = true
			}
			if len(r) >= q.bestLen {
				q.bestPoint, q.bestRoot, q.bestLen = m.point, m.root, len(r)
			}
		}
	}
	for i := range qs {
		q := &qs[i]
		switch {
		case q.convSeen:
			q.found, q.point, q.root = true, q.conv, "/"
		case q.bestLen >= 0:
			q.found, q.point, q.root = true, path.Clean(unescape(q.bestPoint)), unescape(q.bestRoot)
		}
		q.bestPoint, q.bestRoot = nil, nil
	}
}

// findMount is findMounts for one hierarchy.
func findMount(mountinfo []byte, version Version, ctrl, cgPath string) (point, root string, ok bool) {
	qs := [1]mountQuery{{version: version, ctrl: ctrl, path: cgPath}}
	findMounts(mountinfo, qs[:])
	return qs[0].point, qs[0].root, qs[0].found
}

// outsideNamespace reports whether a cgroup path from /proc/self/cgroup lies
// outside the process's cgroup namespace: the kernel then shows it relative to
// the namespace root, starting with "/..".
func outsideNamespace(cgPath string) bool {
	for p := cgPath; p != ""; {
		var elem string
		elem, p, _ = strings.Cut(p, "/")
		if elem == ".." {
			return true
		}
	}
	return false
}

// cgroupDir returns the directory of cgroup cgPath in a hierarchy mounted at
// point with mount root root (which isAncestorOrSelf of cgPath).
func cgroupDir(point, root, cgPath string) string {
	rel := cgPath
	if root != "/" {
		rel = cgPath[len(root):]
	}
	if rel == "" || rel == "/" {
		return point
	}
	if point == "/" {
		return rel
	}
	return point + rel
}
