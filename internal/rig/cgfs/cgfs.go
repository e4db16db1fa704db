// Package cgfs builds the fixture trees of the memory tests of cgroup and
// memlimit: a process's cgroup files and its /proc/self files in an
// fstest.MapFS rooted at "/", with sizes in MiB.
package cgfs

import (
	"strconv"
	"testing/fstest"
)

const mib = 1 << 20

// StatusOwn is a /proc/self/status whose RssAnon is own MiB.
func StatusOwn(own int64) string {
	return "Name:\tapp\nVmRSS:\t99999 kB\nRssAnon:\t" + strconv.FormatInt(own*1024, 10) + " kB\nRssFile:\t5000 kB\nRssShmem:\t0 kB\n"
}

// WithShmem is fsys with a /proc/self/status of own MiB of RssAnon and
// shmem MiB of RssShmem.
func WithShmem(fsys fstest.MapFS, own, shmem int64) fstest.MapFS {
	fsys["proc/self/status"] = &fstest.MapFile{Data: []byte("RssAnon:\t" + strconv.FormatInt(own*1024, 10) +
		" kB\nRssFile:\t5000 kB\nRssShmem:\t" + strconv.FormatInt(shmem*1024, 10) + " kB\n")}
	return fsys
}

// WithLazyFree is fsys with a /proc/self/smaps_rollup of lazy MiB of
// LazyFree.
func WithLazyFree(fsys fstest.MapFS, lazy int64) fstest.MapFS {
	fsys["proc/self/smaps_rollup"] = &fstest.MapFile{Data: []byte("Rss:\t99999 kB\nAnonymous:\t99999 kB\nLazyFree:\t" +
		strconv.FormatInt(lazy*1024, 10) + " kB\nAnonHugePages:\t0 kB\n")}
	return fsys
}

// Stat is a memory.stat line "key n MiB".
func Stat(key string, n int64) string { return key + " " + strconv.FormatInt(n*mib, 10) + "\n" }

// MiBs is the content of a file of n MiB in bytes, such as memory.current.
func MiBs(n int64) string { return strconv.FormatInt(n*mib, 10) + "\n" }

// V2 is a v2 tree, the process in /pod/app with own MiB of RssAnon (none
// when own < 0), with files given by name under sys/fs/cgroup ("" values
// are left out).
func V2(own int64, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":    {Data: []byte("0::/pod/app\n")},
		"proc/self/mountinfo": {Data: []byte("25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")},
	}
	if own >= 0 {
		fsys["proc/self/status"] = &fstest.MapFile{Data: []byte(StatusOwn(own))}
	}
	return add(fsys, "sys/fs/cgroup/", files)
}

// V1 is V2 on a v1 memory hierarchy at /sys/fs/cgroup/memory, whose root
// has no limit.
func V1(own int64, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/self/cgroup":                           {Data: []byte("4:memory:/pod/app\n")},
		"proc/self/mountinfo":                        {Data: []byte("30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")},
		"proc/self/status":                           {Data: []byte(StatusOwn(own))},
		"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
	}
	return add(fsys, "sys/fs/cgroup/memory/", files)
}

func add(fsys fstest.MapFS, dir string, files map[string]string) fstest.MapFS {
	for name, data := range files {
		if data != "" {
			fsys[dir+name] = &fstest.MapFile{Data: []byte(data)}
		}
	}
	return fsys
}
