#!/usr/bin/env bash
# Records the workload logs under testdata/logs/ the kind runner's tests parse:
# each variant's binary run as a pod would run it (stdout and stderr in one
# log, as kubectl logs shows them) in a cgroup v1 child with the limits of a
# pod with cpu: 1 and memory: 256Mi. oom-untuned.log is the untuned variant
# killed by the memory limit. The resize logs are the fitgo and
# automaxprocs+automemlimit variants with -report-every, whose cgroup limits
# change to 3 CPUs and 512Mi mid-run, as an in-place resize rewrites them.
#
# The shared scenario's logs (bash testdata/record.sh shared records only
# them) are bench/cmd/coprocess running the sidecar (200 MiB) and the fitgo
# and untuned variants with the scenario's live heap (187 MiB) in one cgroup
# with a 512 MiB limit and no CPU limit, as in a container of the coprocess
# layout: fitgo's headroom keeps it alive, untuned is OOM-killed.
#
# Needs root and cgroup v1 cpu and memory hierarchies (this project's CI
# machines). Run from bench/internal/cluster: bash testdata/record.sh [shared]
set -euo pipefail
cd "$(dirname "$0")"
out=logs
bin=$(mktemp -d)
name=fitgo-record-$$
cpu=/sys/fs/cgroup/cpu/$name
memparent=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
mem=$memparent/$name
cleanup() {
	for d in "$cpu" "$mem"; do
		if [ -d "$d" ]; then
			rmdir "$d" 2>/dev/null || true
		fi
	done
	rm -rf "$bin"
}
trap cleanup EXIT

(cd ../../.. && CGO_ENABLED=0 go build -trimpath -o "$bin/" ./cmd/...)
mkdir "$cpu" "$mem"
echo 100000 >"$cpu/cpu.cfs_period_us"
echo 100000 >"$cpu/cpu.cfs_quota_us"
echo $((256 << 20)) >"$mem/memory.limit_in_bytes"

# run NAME BINARY ARGS...: runs the binary inside the cgroups.
run() {
	local log=$1
	shift
	sh -c 'echo $$ >"$1"; echo $$ >"$2"; shift 2; exec "$@"' sh \
		"$cpu/cgroup.procs" "$mem/cgroup.procs" "$@" >"$out/$log" 2>&1 || true
}

iters=$("$bin/untuned" -calibrate)

# The shared scenario in the coprocess layout.
echo -1 >"$cpu/cpu.cfs_quota_us"
echo $((512 << 20)) >"$mem/memory.limit_in_bytes"
for v in fitgo untuned; do
	run "coprocess-$v.log" "$bin/coprocess" -sidecar "$bin/sidecar" -mib 200 -- \
		"$bin/$v" -duration=5s -heap-mib=187 -work-iters="$iters" -report-every=1s
done
echo 100000 >"$cpu/cpu.cfs_quota_us"
echo $((256 << 20)) >"$mem/memory.limit_in_bytes"
if [ "${1:-}" = shared ]; then
	ls -l "$out"/coprocess-*
	exit 0
fi
common=(-duration=3s -heap-mib=40 -work-iters="$iters")
for b in "$bin"/*; do
	v=$(basename "$b")
	if [ "$v" = env ]; then
		run "$v.log" env GOMAXPROCS=1 GOMEMLIMIT=$((256 << 20)) "$b" "${common[@]}"
	else
		run "$v.log" "$b" "${common[@]}"
	fi
done

# The memory scenario's untuned run: a live heap of 60 % of the limit and no
# GOMEMLIMIT; the kernel OOM-kills it (no CPU limit, as in that scenario).
echo -1 >"$cpu/cpu.cfs_quota_us"
run oom-untuned.log "$bin/untuned" -duration=5s -heap-mib=154 -work-iters="$iters" -report-every=500ms
echo 100000 >"$cpu/cpu.cfs_quota_us"

# The resize: the limits change 4 s into a 12 s run.
(
	sleep 4
	echo 300000 >"$cpu/cpu.cfs_quota_us"
	echo $((512 << 20)) >"$mem/memory.limit_in_bytes"
) &
run resize-fitgo.log "$bin/fitgo" -duration=12s -heap-mib=40 -work-iters="$iters" -report-every=1s
wait
echo 100000 >"$cpu/cpu.cfs_quota_us"
echo $((256 << 20)) >"$mem/memory.limit_in_bytes"
(
	sleep 4
	echo 300000 >"$cpu/cpu.cfs_quota_us"
	echo $((512 << 20)) >"$mem/memory.limit_in_bytes"
) &
run resize-automaxprocs-automemlimit.log "$bin/automaxprocs-automemlimit" -duration=12s -heap-mib=40 -work-iters="$iters" -report-every=1s
wait
ls -l "$out"
