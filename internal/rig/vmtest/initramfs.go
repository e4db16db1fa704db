package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Initramfs is an in-memory list of files, directories, symbolic links and
// device nodes, written as a cpio archive in the "newc" format that the Linux
// kernel unpacks into its initial root file system. The zero value is empty and
// ready to use.
//
// Names are slash-separated paths relative to the root, such as "bin/busybox";
// a leading "/" is dropped. Missing parent directories are added with mode 0755.
// Adding a name twice keeps the last entry at the position of the first.
type Initramfs struct {
	entries []entry
	index   map[string]int
}

type entry struct {
	name  string
	mode  uint32 // file type and permission bits, as in st_mode
	data  []byte // file content or link target
	major uint32 // device number of a device node
	minor uint32
}

// File type bits of st_mode.
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// AddDir adds a directory.
func (r *Initramfs) AddDir(name string, perm fs.FileMode) {
	r.add(entry{name: name, mode: modeDir | uint32(perm.Perm())})
}

// AddFile adds a regular file with the given content.
func (r *Initramfs) AddFile(name string, perm fs.FileMode, data []byte) {
	r.add(entry{name: name, mode: modeRegular | uint32(perm.Perm()), data: data})
}

// AddFileFrom adds a regular file with the content of the host file src.
func (r *Initramfs) AddFileFrom(name string, perm fs.FileMode, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	r.AddFile(name, perm, data)
	return nil
}

// AddSymlink adds a symbolic link to target.
func (r *Initramfs) AddSymlink(name, target string) {
	r.add(entry{name: name, mode: modeSymlink | 0o777, data: []byte(target)})
}

// AddCharDev adds a character device node.
func (r *Initramfs) AddCharDev(name string, perm fs.FileMode, major, minor uint32) {
	r.add(entry{name: name, mode: modeCharDev | uint32(perm.Perm()), major: major, minor: minor})
}

func (r *Initramfs) add(e entry) {
	e.name = path.Clean(strings.TrimPrefix(e.name, "/"))
	if e.name == "." || e.name == ".." || strings.HasPrefix(e.name, "../") {
		panic(fmt.Sprintf("vmtest: bad initramfs name %q", e.name))
	}
	if r.index == nil {
		r.index = make(map[string]int)
	}
	if dir := path.Dir(e.name); dir != "." {
		if _, ok := r.index[dir]; !ok {
			r.AddDir(dir, 0o755)
		}
	}
	if i, ok := r.index[e.name]; ok {
		r.entries[i] = e
		return
	}
	r.index[e.name] = len(r.entries)
	r.entries = append(r.entries, e)
}

// WriteTo writes the archive to w, ending with the trailer entry.
func (r *Initramfs) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	for i, e := range r.entries {
		writeEntry(bw, uint32(i+1), e)
	}
	writeEntry(bw, 0, entry{name: "TRAILER!!!"})
	err := bw.Flush()
	return cw.n, err
}

// writeEntry writes one newc header, the name and the data, each padded to a
// multiple of four bytes. Errors are left in bw (bufio.Writer keeps the first).
func writeEntry(bw *bufio.Writer, ino uint32, e entry) {
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	// Magic, then ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize (with the NUL) and check, each
	// as eight hexadecimal digits. mtime 0 keeps the archive reproducible.
	fmt.Fprintf(bw, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, e.major, e.minor, len(e.name)+1, 0)
	bw.WriteString(e.name)
	bw.WriteByte(0)
	pad(bw, cpioHeaderSize+len(e.name)+1)
	bw.Write(e.data)
	pad(bw, len(e.data))
}

const cpioHeaderSize = 110

func pad(bw *bufio.Writer, n int) {
	for ; n%4 != 0; n++ {
		bw.WriteByte(0)
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
