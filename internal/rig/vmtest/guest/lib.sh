# shellcheck shell=sh
# Helpers for the scenario scripts, sourced by /init.

# step NAME: marks the start of a scenario on the console, with the guest's
# uptime in seconds, so that slow steps show in the test's log.
step() {
	read -r _up _ </proc/uptime
	echo "FITGO-STEP $1 $_up"
}

# fail MESSAGE...: reports a failed step on the console.
fail() {
	echo "FITGO-ERROR $*"
}

# wr FILE VALUE: writes a cgroup file, reporting a failure.
wr() {
	echo "$2" >"$1" || {
		fail "write '$2' to $1"
		return 1
	}
}

# mk DIR...: creates cgroups, reporting a failure.
mk() {
	mkdir -p "$@" || {
		fail "mkdir $*"
		return 1
	}
}

# run_in "DIR..." CMD [ARG]...: runs CMD in the cgroups DIR (one per v1
# hierarchy, or one v2 directory), reporting a failure.
run_in() {
	_dirs=$1
	shift
	# shellcheck disable=SC2016 # $$ and $1 belong to the inner shell.
	sh -c 'for d in $1; do echo $$ >"$d/cgroup.procs" || exit 125; done; shift; exec "$@"' run_in "$_dirs" "$@"
	_rc=$?
	[ "$_rc" = 0 ] || fail "exit status $_rc: $*"
	return "$_rc"
}
