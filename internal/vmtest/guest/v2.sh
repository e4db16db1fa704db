# shellcheck shell=sh
# Suite v2: cgroup v2 only, mounted at /sys/fs/cgroup, with the cpu and memory
# controllers enabled for the children of the root. Sourced by /init.

cg=/sys/fs/cgroup
mount -t cgroup2 cgroup2 "$cg" || fail "mount cgroup2"
wr "$cg/cgroup.subtree_control" "+cpu +memory"
plain files -scenario v2/kernel /proc/self/cgroup /proc/self/mountinfo "$cg/cgroup.controllers" "$cg/cgroup.subtree_control"

# 1. Limits on the process's own cgroup: 1.5 CPUs and 512 MiB.
s=v2/leaf d=$cg/leaf
mk "$d"
wr "$d/cpu.max" "150000 100000"
wr "$d/memory.max" 512M
run_in "$d" plain runtime -scenario $s

# 2. Limits on the parent only: 1 CPU and 256 MiB; the leaf has none.
s=v2/parent d=$cg/parent
mk "$d"
wr "$d/cpu.max" "100000 100000"
wr "$d/memory.max" 256M
wr "$d/cgroup.subtree_control" "+cpu +memory"
mk "$d/leaf"
run_in "$d/leaf" plain files -scenario $s "$d/leaf/cpu.max" "$d/leaf/memory.max"
run_in "$d/leaf" plain runtime -scenario $s
