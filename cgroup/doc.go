// Package cgroup reads the effective CPU and memory limits of the calling
// process from Linux control groups, v1, v2 and hybrid, and the statistics
// of its cgroup ([Stats]: CPU throttling, memory usage and events, pressure).
//
// [ReadFS] finds the process's cgroup of each controller through
// /proc/self/cgroup and /proc/self/mountinfo, walks from it up to the mount
// point and takes the tightest limit at any level, with the directory that
// imposed it: a pod or slice limit on a parent counts, where the Go runtime
// reads only the leaf. CPU is the smallest quota/period, memory the smallest
// memory.max (on v1 also hierarchical_memory_limit, which covers ancestors
// above the mount root), and memory.high. A v1 hierarchy that carries a
// controller wins over v2, as in the kernel; of the mounts that show the
// cgroup, one covered by another on the same mount point is hidden, and the
// shortest root wins.
//
// What the process cannot see, no reader can: limits above the root of its
// mount (a private cgroup namespace, a v1 container's own-cgroup mount), and
// a cgroup that no mount shows; that is no limit and no error. So are a
// missing limit file and a value meaning none ("max", -1, 2^62 bytes or
// more); 0 is a limit of 0 bytes. Errors are per controller (CPU.Err,
// Memory.Err; a malformed file names file and line), and a controller with
// one has no limit. A [Watcher] keeps the files open and re-reads them
// without allocating.
//
// The README's [comparison] shows which limits the Go runtime, automaxprocs
// and automemlimit read; its [metrics] section exports these statistics to
// Prometheus.
//
// [comparison]: https://github.com/fitgo/fitgo#how-it-compares
// [metrics]: https://github.com/fitgo/fitgo#metrics
package cgroup
