// Package rootfs is the real root file system as an fs.FS for reading
// small proc and cgroup files cheaply.
//
// os.DirFS("/") opens files through package os, which on Linux registers
// every file that supports poll (sysfs and cgroupfs files do) with the
// runtime's network poller and unregisters it on close: eight system calls to
// read a one-line cgroup file. FS uses plain open, read, pread and close:
// four system calls, and a single pread to read an open file again. On the
// machines fitgo targets (VMs where a system call costs one to two
// microseconds) that halves the cost of reading the limits.
package rootfs

import "io/fs"

// FS returns the root file system, rooted at "/": names are slash-separated
// paths without the leading slash, as io/fs requires. On Linux its files
// implement io.ReaderAt; elsewhere it is os.DirFS("/").
func FS() fs.FS { return root }
