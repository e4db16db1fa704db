# shellcheck shell=sh
# Suite v2: cgroup v2 only, mounted at /sys/fs/cgroup, with the cpu and memory
# controllers enabled for the children of the root. Sourced by /init. Each
# scenario has its own cgroup, and its results carry its name.

cg=/sys/fs/cgroup
mount -t cgroup2 cgroup2 "$cg" || fail "mount cgroup2"
wr "$cg/cgroup.subtree_control" "+cpu +memory"
plain files -scenario v2/kernel /proc/sys/kernel/osrelease /proc/self/cgroup /proc/self/mountinfo "$cg/cgroup.controllers" "$cg/cgroup.subtree_control"

# 1. Limits on the process's own cgroup: 1.5 CPUs and 512 MiB.
s=v2/leaf d=$cg/leaf
step "$s"
mk "$d"
wr "$d/cpu.max" "150000 100000"
wr "$d/memory.max" 512M
run_in "$d" explicit read -scenario $s
run_in "$d" blank report -scenario $s
run_in "$d" explicit ceil -scenario $s
run_in "$d" plain runtime -scenario $s
# The blank import with the runtime's container support on, as in a program
# whose go.mod says go 1.25 or later: the runtime picks 2, fitgo sets 1.
run_in "$d" env GODEBUG=containermaxprocs=1,updatemaxprocs=1 blank report -scenario $s-godebug

# 2. Limits on the parent only: 1 CPU and 256 MiB; the leaf has none.
s=v2/parent d=$cg/parent
step "$s"
mk "$d"
wr "$d/cpu.max" "100000 100000"
wr "$d/memory.max" 256M
wr "$d/cgroup.subtree_control" "+cpu +memory"
mk "$d/leaf"
run_in "$d/leaf" plain files -scenario $s "$d/leaf/cpu.max" "$d/leaf/memory.max"
run_in "$d/leaf" explicit read -scenario $s
run_in "$d/leaf" blank report -scenario $s
run_in "$d/leaf" plain runtime -scenario $s

# 3. A private cgroup namespace, as containers get: 2.5 CPUs and 320 MiB on
# the cgroup that becomes the namespace's root (cgns/ns). cgns itself has only
# a memory.high of 400 MiB, which the namespace cannot see.
s=v2/cgns d=$cg/cgns
step "$s"
mk "$d"
wr "$d/memory.high" 400M
wr "$d/cgroup.subtree_control" "+cpu +memory"
mk "$d/ns"
wr "$d/ns/cpu.max" "250000 100000"
wr "$d/ns/memory.max" 320M
# 3a. cgroup2 mounted again inside the namespace (what container runtimes do).
run_in "$d/ns" plain cgns -remount "$cg" plain files -scenario $s-remount /proc/self/cgroup /proc/self/mountinfo
run_in "$d/ns" plain cgns -remount "$cg" explicit read -scenario $s-remount
run_in "$d/ns" plain cgns -remount "$cg" blank report -scenario $s-remount
run_in "$d/ns" plain cgns -remount "$cg" plain runtime -scenario $s-remount
# 3b. The mount made outside the namespace: its root lies outside the namespace.
run_in "$d/ns" plain cgns plain files -scenario $s-outer /proc/self/cgroup /proc/self/mountinfo
run_in "$d/ns" plain cgns explicit read -scenario $s-outer
run_in "$d/ns" plain cgns blank report -scenario $s-outer
run_in "$d/ns" plain cgns plain runtime -scenario $s-outer

# 4. memory.high below memory.max on the leaf: 300 MiB and 512 MiB.
s=v2/high d=$cg/high
step "$s"
mk "$d"
wr "$d/memory.max" 512M
wr "$d/memory.high" 300M
run_in "$d" explicit read -scenario $s
run_in "$d" blank report -scenario $s

# 5. Resize while the blank import's refresh loop runs: from 1 CPU and
# 512 MiB to 3 CPUs and 384 MiB, written one second after the probe started.
s=v2/resize d=$cg/resize
step "$s"
mk "$d"
wr "$d/cpu.max" "100000 100000"
wr "$d/memory.max" 512M
run_in "$d" blank watch -scenario $s -for 10s &
watcher=$!
sleep 1
plain write -scenario $s "$d/cpu.max" "300000 100000" "$d/memory.max" 384M
wait "$watcher" || fail "blank watch: exit status $?"

# 6. Throttling: two spinning threads for 2 s under 0.5 CPU.
s=v2/throttle d=$cg/throttle
step "$s"
mk "$d"
wr "$d/cpu.max" "50000 100000"
run_in "$d" explicit burn -scenario $s -threads 2 -for 2s

# 7. The Prometheus collector (fitgoprom) under 0.5 CPU and 256 MiB while two
# goroutines spin for 1.5 s.
s=v2/prom d=$cg/prom
step "$s"
mk "$d"
wr "$d/cpu.max" "50000 100000"
wr "$d/memory.max" 256M
run_in "$d" prom -scenario $s -threads 2 -for 1.5s

# 8. Headroom: a sidecar holding 200 MiB shares a 512 MiB limit with the
# blank import, in a sibling cgroup under the limited parent (hr-sibling) and
# in the program's own limited cgroup (hr-own). Two seconds into the watch it
# frees its memory: GOMEMLIMIT rises to 0.9 × 512 MiB. The watch lasts 12 s
# (GOMAXPROCS does not change): a cap for a slow emulated guest.
# headroom SCENARIO SIDECAR-DIR PROGRAM-DIR
headroom() {
	step "$1"
	rm -f /tmp/side.in /tmp/side.out
	mkfifo /tmp/side.in || fail "mkfifo"
	run_in "$2" sidecar 200 </tmp/side.in >/tmp/side.out &
	_side=$!
	exec 8>/tmp/side.in
	_i=0
	until grep -q held /tmp/side.out 2>/dev/null; do
		_i=$((_i + 1))
		[ "$_i" -lt 600 ] || {
			fail "$1: the sidecar does not hold its memory"
			break
		}
		sleep 0.1
	done
	run_in "$3" env FITGO=refresh=100ms blank watch -scenario "$1" -for 12s &
	_watch=$!
	sleep 2
	echo free >&8
	wait "$_watch" || fail "$1: blank watch: exit status $?"
	exec 8>&-
	wait "$_side" || fail "$1: sidecar: exit status $?"
}
d=$cg/hr-sibling
mk "$d"
wr "$d/memory.max" 512M
wr "$d/cgroup.subtree_control" "+memory"
mk "$d/app" "$d/side"
headroom v2/headroom-sibling "$d/side" "$d/app"
d=$cg/hr-own
mk "$d"
wr "$d/memory.max" 512M
headroom v2/headroom-own "$d" "$d"
