# shellcheck shell=sh
# Suite v1: pure cgroup v1, as on hosts before the unified hierarchy: a tmpfs at
# /sys/fs/cgroup with the cpu and cpuacct controllers mounted together (as
# systemd does, with cpu and cpuacct as links) and memory on its own; no cgroup2
# mount. At the end, cgroup2 is mounted at /sys/fs/cgroup/unified as on a
# systemd "hybrid" host, and the leaf scenario runs again. Sourced by /init.

cg=/sys/fs/cgroup
mount -t tmpfs -o mode=755 cgroup "$cg" || fail "mount tmpfs at $cg"
mk "$cg/cpu,cpuacct" "$cg/memory"
mount -t cgroup -o cpu,cpuacct cgroup "$cg/cpu,cpuacct" || fail "mount cgroup v1 cpu,cpuacct"
mount -t cgroup -o memory cgroup "$cg/memory" || fail "mount cgroup v1 memory"
ln -s cpu,cpuacct "$cg/cpu"
ln -s cpu,cpuacct "$cg/cpuacct"
plain files -scenario v1/kernel /proc/sys/kernel/osrelease /proc/self/cgroup /proc/self/mountinfo

# 1. Limits on the process's own cgroups: 1.5 CPUs and 512 MiB.
s=v1/leaf
step "$s"
mk "$cg/cpu/leaf" "$cg/memory/leaf"
wr "$cg/cpu/leaf/cpu.cfs_period_us" 100000
wr "$cg/cpu/leaf/cpu.cfs_quota_us" 150000
wr "$cg/memory/leaf/memory.limit_in_bytes" 512M
run_in "$cg/cpu/leaf $cg/memory/leaf" explicit read -scenario $s
run_in "$cg/cpu/leaf $cg/memory/leaf" blank report -scenario $s
run_in "$cg/cpu/leaf $cg/memory/leaf" explicit ceil -scenario $s
run_in "$cg/cpu/leaf $cg/memory/leaf" plain runtime -scenario $s

# 2. Limits on the parents only: 1 CPU and 256 MiB.
s=v1/parent
step "$s"
mk "$cg/cpu/parent/leaf" "$cg/memory/parent/leaf"
wr "$cg/cpu/parent/cpu.cfs_quota_us" 100000
wr "$cg/memory/parent/memory.limit_in_bytes" 256M
run_in "$cg/cpu/parent/leaf $cg/memory/parent/leaf" plain files -scenario $s \
	"$cg/cpu/parent/leaf/cpu.cfs_quota_us" "$cg/memory/parent/leaf/memory.limit_in_bytes" /proc/self/cgroup
run_in "$cg/cpu/parent/leaf $cg/memory/parent/leaf" explicit read -scenario $s
run_in "$cg/cpu/parent/leaf $cg/memory/parent/leaf" blank report -scenario $s
run_in "$cg/cpu/parent/leaf $cg/memory/parent/leaf" plain runtime -scenario $s

# Throttling under 0.5 CPU, read from v1's cpu.stat and cpuacct.usage.
s=v1/throttle
step "$s"
mk "$cg/cpu/throttle"
wr "$cg/cpu/throttle/cpu.cfs_quota_us" 50000
run_in "$cg/cpu/throttle" explicit burn -scenario $s -threads 2 -for 2s

# Hybrid: a cgroup2 hierarchy at /sys/fs/cgroup/unified as well, without
# controllers, where the process sits in its own cgroup as under systemd. The
# controllers stay on v1, where fitgo must keep reading them.
s=hybrid/leaf
step "$s"
mk "$cg/unified"
mount -t cgroup2 cgroup2 "$cg/unified" || fail "mount cgroup2 at $cg/unified"
mk "$cg/unified/leaf"
run_in "$cg/cpu/leaf $cg/memory/leaf $cg/unified/leaf" plain files -scenario $s /proc/self/cgroup /proc/self/mountinfo "$cg/unified/cgroup.controllers"
run_in "$cg/cpu/leaf $cg/memory/leaf $cg/unified/leaf" explicit read -scenario $s
run_in "$cg/cpu/leaf $cg/memory/leaf $cg/unified/leaf" blank report -scenario $s
