package vmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpioEntry is an entry read back by readNewc.
type cpioEntry struct {
	ino, mode, nlink, rdevMajor, rdevMinor uint32
	name, data                             string
}

// readNewc parses a newc archive strictly: magic, hexadecimal fields, the
// NUL-terminated name, four-byte alignment and the trailer at the end.
func readNewc(b []byte) ([]cpioEntry, error) {
	var es []cpioEntry
	off := 0
	for {
		if len(b)-off < cpioHeaderSize {
			return nil, fmt.Errorf("offset %d: short header", off)
		}
		h := b[off : off+cpioHeaderSize]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("offset %d: magic %q", off, h[:6])
		}
		var f [13]uint32
		for i := range f {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("offset %d field %d: %w", off, i, err)
			}
			f[i] = uint32(v)
		}
		namesize, filesize := int(f[11]), int(f[6])
		start := off + cpioHeaderSize
		if namesize < 1 || start+namesize > len(b) || b[start+namesize-1] != 0 {
			return nil, fmt.Errorf("offset %d: bad name", off)
		}
		name := string(b[start : start+namesize-1])
		dataStart := start + namesize
		if dataStart%4 != 0 {
			dataStart += 4 - dataStart%4
		}
		if dataStart+filesize > len(b) {
			return nil, fmt.Errorf("%s: short data", name)
		}
		data := string(b[dataStart : dataStart+filesize])
		off = dataStart + filesize
		if off%4 != 0 {
			off += 4 - off%4
		}
		if name == "TRAILER!!!" {
			if off != len(b) {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return es, nil
		}
		if f[2] != 0 || f[3] != 0 || f[5] != 0 || f[12] != 0 {
			return nil, fmt.Errorf("%s: uid, gid, mtime or check not zero", name)
		}
		es = append(es, cpioEntry{ino: f[0], mode: f[1], nlink: f[4], rdevMajor: f[9], rdevMinor: f[10], name: name, data: data})
	}
}

func TestInitramfsWriteTo(t *testing.T) {
	var r Initramfs
	r.AddFile("/bin/sh", 0o755, []byte("#!x\n"))
	r.AddSymlink("bin/ls", "sh")
	r.AddCharDev("dev/console", 0o600, 5, 1)
	r.AddFile("init", 0o644, nil)
	r.AddFile("etc/a/b", 0o600, []byte("12345"))
	r.AddFile("init", 0o755, []byte("new")) // replaces, keeps its place
	r.AddDir("bin", 0o700)                  // replaces the implied directory

	var buf bytes.Buffer
	n, err := r.WriteTo(&buf)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)
	assert.Zero(t, buf.Len()%4)

	es, err := readNewc(buf.Bytes())
	require.NoError(t, err)
	want := []cpioEntry{
		{ino: 1, mode: 0o040700, nlink: 2, name: "bin"},
		{ino: 2, mode: 0o100755, nlink: 1, name: "bin/sh", data: "#!x\n"},
		{ino: 3, mode: 0o120777, nlink: 1, name: "bin/ls", data: "sh"},
		{ino: 4, mode: 0o040755, nlink: 2, name: "dev"},
		{ino: 5, mode: 0o020600, nlink: 1, name: "dev/console", rdevMajor: 5, rdevMinor: 1},
		{ino: 6, mode: 0o100755, nlink: 1, name: "init", data: "new"},
		{ino: 7, mode: 0o040755, nlink: 2, name: "etc"},
		{ino: 8, mode: 0o040755, nlink: 2, name: "etc/a"},
		{ino: 9, mode: 0o100600, nlink: 1, name: "etc/a/b", data: "12345"},
	}
	assert.Equal(t, want, es)

	// The first header, byte for byte.
	assert.Equal(t, "070701"+"00000001"+"000041C0"+"00000000"+"00000000"+"00000002"+"00000000"+
		"00000000"+"00000000"+"00000000"+"00000000"+"00000000"+"00000004"+"00000000"+"bin\x00",
		buf.String()[:cpioHeaderSize+4])
}

func TestInitramfsBadName(t *testing.T) {
	for _, name := range []string{"", "/", ".", "..", "../x", "/../x"} {
		assert.Panics(t, func() { new(Initramfs).AddDir(name, 0o755) }, "%q", name)
	}
}

// TestInitramfsBusyboxExtract checks the archive against another reader:
// busybox cpio unpacks it into the same tree.
func TestInitramfsBusyboxExtract(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (apt-get install busybox-static)")
	}
	var r Initramfs
	r.AddFile("bin/prog", 0o751, []byte("program"))
	r.AddSymlink("bin/alias", "prog")
	r.AddFile("a/b/c/odd", 0o640, []byte("x"))
	r.AddDir("empty", 0o700)
	var buf bytes.Buffer
	_, err = r.WriteTo(&buf)
	require.NoError(t, err)

	dir := t.TempDir()
	cmd := exec.Command(busybox, "cpio", "-i", "-d")
	cmd.Dir = dir
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	fi, err := os.Stat(filepath.Join(dir, "bin/prog"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o751), fi.Mode())
	b, err := os.ReadFile(filepath.Join(dir, "bin/alias"))
	require.NoError(t, err)
	assert.Equal(t, "program", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "a/b/c/odd"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
	fi, err = os.Stat(filepath.Join(dir, "empty"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
