// Package cgroup reads the effective CPU and memory limits of the calling
// process from Linux control groups, v1, v2 and hybrid, and the CPU
// throttling statistics of its cgroup.
//
// [ReadFS] reads /proc/self/cgroup, then /proc/self/mountinfo to find where
// the process's cgroup is mounted, then walks from that cgroup up to the
// mount point and takes the tightest limit at any level: a pod or slice limit
// on a parent counts, where the Go runtime reads only the leaf. CPU is the
// smallest quota/period (cpu.max; v1 cpu.cfs_quota_us and cpu.cfs_period_us),
// memory the smallest memory.max (v1 memory.limit_in_bytes, and
// hierarchical_memory_limit, which also covers ancestors above the mount
// root), and memory.high separately. Each value comes with the directory that
// imposed it. For each controller a v1 hierarchy that carries it wins, else
// v2, as in the kernel. Of the mounts that show the cgroup, one covered by
// another on the same mount point is hidden, and the shortest root wins.
//
// What a process cannot see, no reader can: limits above the root of its
// mount (a private cgroup namespace, or a v1 container's own-cgroup mount,
// except memory through hierarchical_memory_limit), and a cgroup that no
// mount shows; that is no limit and no error. A missing limit file is no
// limit at that level, and a value that means "none" ("max", -1, 2^62 bytes
// or more) is no limit; 0 is a limit of 0 bytes.
//
// Errors are per controller, in CPU.Err and Memory.Err; a malformed file is
// an error naming the file and line. A controller with an error has no
// limit, and ReadFS returns the errors.Join of both. [ErrNoCgroup] means
// there is no /proc/self/cgroup. Only regular files are read, each up to a
// size that fits it. A [Watcher] keeps the files open and re-reads them
// without allocating.
package cgroup
