// Package cgroup reads the effective CPU and memory limits of the calling
// process from Linux control groups, v1, v2 and hybrid, and the CPU
// throttling statistics of its cgroup.
//
// # Effective limits
//
// A process is limited by its own cgroup and by every ancestor: a Kubernetes
// pod-level limit, a systemd slice or an ECS task limit sits on a parent of
// the container's cgroup, and the container's own files may say "max". The Go
// runtime and go.uber.org/automaxprocs read only the leaf and miss such
// limits. [ReadFS] walks from the process's cgroup directory up to the mount
// point of its hierarchy and takes the tightest value at any level:
//
//   - CPU: the smallest quota/period ratio, from cpu.max (v2, "$MAX
//     $PERIOD" in microseconds, "max" for none) or cpu.cfs_quota_us and
//     cpu.cfs_period_us (v1, quota -1 for none). Quota and Period are those
//     of the level that set the ratio, so a non-default period is kept.
//   - Memory: the smallest memory.max (v2) or memory.limit_in_bytes (v1),
//     and on v1 also hierarchical_memory_limit from the memory.stat of the
//     process's cgroup, which includes ancestors above the mount root that the
//     process cannot see (a container that sees only its own cgroup). When
//     the whole hierarchy is mounted (mount root "/"), the walk sees every
//     ancestor, memory.stat could not lower the result, and it is not read.
//   - memory.high (v2 only): the smallest, reported separately by
//     [Limits.MemoryHigh]; the kernel throttles and reclaims above it.
//
// Each value comes with the directory that imposed it (CPU.Source,
// Memory.MaxSource, Memory.HighSource), because a surprising number is only
// understood with its origin. When two levels have the same limit, the one
// nearest the process is named. A v1 memory limit that only
// hierarchical_memory_limit shows was set above the mount root, on a cgroup
// that is not visible; MaxSource is then the process's own directory, whose
// memory.stat reported it.
//
// The root cgroup of a whole hierarchy cannot carry a limit: cgroup v2 has no
// cpu.max, memory.max or memory.high there, and v1 refuses a quota or a
// memory limit written to it. So when the mount shows the hierarchy from its
// top (mount root "/") and the process is in the initial cgroup namespace
// (/proc/self/ns/cgroup, read through the file system's ReadLink method,
// names it), the walk stops below the mount point and saves a file or two
// per controller. In any other cgroup namespace the mount point shows the
// namespace's root, a container's own cgroup, and it is read like any level;
// so it is when the namespace cannot be told (a file system without
// ReadLink, such as os.DirFS before Go 1.25, or an error).
//
// A missing limit file means no limit at that level (v2 cgroups without the
// controller enabled have no files). "max", a v1 quota of -1, and memory
// values of 2^62 bytes or more (v1 shows "no limit" as the page-aligned
// MaxInt64, 9223372036854771712) mean no limit. Anything else that is not a
// valid number is an error: a [*ParseError] naming the absolute file path and
// the line, never a panic and never a made-up number.
//
// # Finding the cgroup
//
// /proc/self/cgroup gives, per hierarchy, the process's cgroup path relative
// to its cgroup namespace, and /proc/self/mountinfo where each hierarchy is
// mounted. For each controller
// (cpu, memory), a cgroup v1 hierarchy that carries it wins, as the kernel
// attaches a controller to one hierarchy only: on hybrid hosts (v1
// controllers plus cgroup2 at /sys/fs/cgroup/unified) the v1 files count.
// Otherwise the cgroup v2 line "0::path" and a cgroup2 mount are used.
//
// Of the mounts of the right hierarchy, only those whose root (field 4 of
// mountinfo) is the process's cgroup path or one of its ancestors can show
// the process's cgroup. The conventional mount wins when it shows the whole
// hierarchy (or cgroup namespace), that is when its root is "/": cgroup2 at
// /sys/fs/cgroup, a v1 hierarchy at /sys/fs/cgroup/<its controller list as
// /proc/self/cgroup names it>, such as /sys/fs/cgroup/cpu,cpuacct, where
// systemd, Docker, containerd and Kubernetes put them; it shows every
// ancestor of the process's cgroup. Otherwise the mount with the longest root
// wins, the closest view of the process's cgroup; of equally long roots the
// last listed, which is the one on top when mounts are stacked. The cgroup
// directory, Dir, is the mount point joined with the cgroup path less the
// mount root: for a Docker container on v1 the mount root is the container's
// own path, so Dir is the mount point itself.
//
// The conventional mount is found without reading mountinfo, which costs
// the kernel a formatted line per mount (a third of the time of a [Read]),
// when the file system can prove it (the real root that [Read] uses can;
// other fs.FS values given to [ReadFS] are searched through mountinfo): the
// directory at the conventional mount point joined with the cgroup path is on
// a cgroup file system of the right version (statfs), its cgroup.procs lists
// the process, and on v1 it holds the controller's limit file. A process is
// in one cgroup per hierarchy, so that directory is its cgroup and the mount
// there has root "/", the mount that mountinfo would have given. Anything
// else, such as a Docker container on v1 (mount root = its own path) or a
// process in the root cgroup of the initial namespace (whose cgroup.procs
// lists every process in no other cgroup), falls back to mountinfo.
//
// mountinfo is parsed as proc(5) describes it: any number of optional
// fields, octal escapes such as \040 for a space in the mount point and
// root, super options that contain raw spaces (WSL and Docker Desktop 9p
// mounts), lines of many kilobytes (overlayfs lower directories). Lines that
// are not well formed are skipped; only cgroup lines are parsed at all.
//
// When the process's cgroup cannot be seen, there is no limit to read and no
// error: the controller's Hierarchy has Version 0 and only Path set. That is
// the case when the path is outside the process's cgroup namespace (the
// kernel shows it starting with "/.."), when no mount's root is the path or
// one of its ancestors, and when the hierarchy is not mounted. A v1
// controller that is listed in /proc/self/cgroup but not mounted does not
// fall back to v2, whose files could not hold its limits.
//
// # Errors
//
// [ReadFS] returns an error wrapping [ErrNoCgroup] when /proc/self/cgroup
// cannot be read (not Linux, no /proc); [Read] returns ErrNoCgroup outside
// Linux. Otherwise each controller has its own error, CPU.Err and
// Memory.Err, and ReadFS returns their errors.Join: when only the memory
// files are bad, the CPU limit is still there to use. A controller with an
// error reports no limit, since the level it could not read might have been
// the tightest.
//
// # File systems and tests
//
// [ReadFS], [ReadCPUStatFS], [ReadCPUStatDir] and [NewWatcher] read from an
// [io/fs.FS] rooted at "/": proc/self/cgroup, proc/self/mountinfo and the
// cgroup files they lead to. [Read] and [ReadCPUStat] read the real root,
// as os.DirFS("/") would but with fewer system calls (see Cost). Tests pass
// an fstest.MapFS or a directory holding a copy of those files; the paths in
// the results are absolute paths in that file system. A file system that has
// a method ReadFileInto(name string, buf []byte, shortReadEnds bool) ([]byte,
// error), which reads the named file whole into buf, is read with it instead
// of Open, Read and Close; shortReadEnds is true for every file but
// /proc/self/mountinfo, which the kernel hands out a page at a time.
//
// # Following changes
//
// Kubernetes in-place pod resize rewrites the limit files of a running
// container. A [Watcher] keeps those files open (every level from the
// process's cgroup to the mount point) and re-reads them into a fixed buffer
// without allocating, so that polling every second costs a few system calls.
//
// # Throttling statistics
//
// [ReadCPUStat] reads cpu.stat of the cgroup whose quota is the effective
// limit, where throttling happens, normalised over v1 and v2 into [CPUStat]:
// periods, throttled periods, throttled time and, where available, CPU
// usage. [CPUStat.Sub] gives the activity between two readings.
// [ReadCPUStatDir] reads any cgroup directory.
//
// # Cost
//
// ReadFS reads /proc/self/cgroup and /proc/self/mountinfo once and each
// limit file once, into one reused buffer, with few allocations; see
// BenchmarkRead. [Read] reads each file with open, read and close system
// calls and no other: os.Open would also register the file with the
// runtime's poller and unregister it (epoll_ctl calls), and reading to the end
// would take one more read than files the kernel prints in one go. A
// [Watcher] over the real root reads each kept-open file with one pread. The
// parsers are pure functions over bytes, fuzzed; the package has no state and
// no init.
package cgroup
