package coexist

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/internal/rig/testprog"
	"github.com/fitgo/fitgo/internal/rig/vmtest"
)

// vmScript is the guest's suite (/scenarios/coexist.sh, sourced by the vm
// rig's /init) on a pure cgroup v2 host: each case runs prog in a cgroup of
// its own with 1.5 CPUs and 512 MiB, waits for the state it expects by
// polling the program's output (at most a minute), prints that line as
// "COEXIST-<case> <json>", resizes where the case says so, and removes the
// cgroup.
const vmScript = `# shellcheck shell=sh
cg=/sys/fs/cgroup
mount -t cgroup2 cgroup2 "$cg" || fail "mount cgroup2"
wr "$cg/cgroup.subtree_control" "+cpu +memory"

# wait_for NAME OUT PATTERN: prints the first line of OUT matching PATTERN as
# COEXIST-NAME, polling for up to a minute.
wait_for() {
	_i=0
	until grep -q -e "$3" "$2" 2>/dev/null; do
		_i=$((_i + 1))
		if [ "$_i" -gt 600 ]; then
			fail "$1: no line matching $3 in $2: $(cat "$2")"
			return 1
		fi
		usleep 100000
	done
	echo "COEXIST-$1 $(grep -e "$3" "$2" | head -n 1)"
}

# start NAME ENV...: starts prog in the cgroup $cg/NAME with 1.5 CPUs and
# 512 MiB, as $pid; its output goes to /tmp/NAME.out, its stdin stays open.
start() {
	_d=$cg/$1
	mk "$_d"
	wr "$_d/cpu.max" "150000 100000"
	wr "$_d/memory.max" 536870912
	_n=$1
	shift
	# shellcheck disable=SC2016 # $$ and $1 belong to the inner shell.
	sleep 300 | sh -c 'echo $$ >"$1/cgroup.procs" || exit 125; shift; exec env "$@" prog' start "$_d" "$@" >"/tmp/$_n.out" 2>"/tmp/$_n.err" &
	pid=$!
}

# stop NAME: ends prog and removes its cgroup once prog has left it (a wait
# would wait for the whole pipeline, sleep included).
stop() {
	kill "$pid" 2>/dev/null
	_i=0
	until rmdir "$cg/$1" 2>/dev/null; do
		_i=$((_i + 1))
		if [ "$_i" -gt 100 ]; then
			fail "rmdir $cg/$1: $(cat "$cg/$1/cgroup.procs")"
			break
		fi
		usleep 100000
	done
	echo "COEXIST-STDERR-$1 $(tr '\n' '|' <"/tmp/$1.err")"
}

step coexist/handover
start handover AUTOMEMLIMIT=0.8
wait_for handover /tmp/handover.out '"maxprocs_following":false.*"memlimit_following":false'
stop handover

step coexist/insist
start insist FITGO=insist=on AUTOMEMLIMIT=0.8
wait_for insist /tmp/insist.out '"gomaxprocs":2,"gomemlimit":483183820,.*put its value back.*put its value back'
wr "$cg/insist/cpu.max" "50000 100000"
wr "$cg/insist/memory.max" 268435456
wait_for insist-small /tmp/insist.out '"gomaxprocs":1,"gomemlimit":241591910,'
wr "$cg/insist/cpu.max" "150000 100000"
wr "$cg/insist/memory.max" 536870912
wait_for insist-back /tmp/insist.out '"gomaxprocs":2,"gomemlimit":483183820,.*"changed":false'
stop insist
`

// TestCoexistV2 is TestCoexistV1 on cgroup v2, in a qemu guest (this
// machine and CI have v1), with the vm rig of internal/rig/vmtest and its
// switches (vmtest.Require).
func TestCoexistV2(t *testing.T) {
	host := vmtest.Require(t)
	bin := t.TempDir()
	prog := filepath.Join(bin, "prog")
	require.NoError(t, vmtest.BuildStatic("", prog, "./prog"))
	console := vmtest.RunSuite(t, host, "coexist", vmScript, map[string]string{"prog": prog}, 4, 1024)

	states, stderr := map[string]testprog.State{}, map[string]string{}
	for _, l := range strings.Split(console, "\n") {
		k, v, _ := strings.Cut(strings.TrimRight(l, "\r"), " ")
		if name, ok := strings.CutPrefix(k, "COEXIST-STDERR-"); ok {
			stderr[name] = v
		} else if name, ok := strings.CutPrefix(k, "COEXIST-"); ok {
			var s testprog.State
			require.NoError(t, json.Unmarshal([]byte(v), &s), l)
			states[name] = s
		}
	}
	require.Len(t, states, 4, console)

	h := states["handover"]
	assert.Equal(t, 1, h.GOMAXPROCS, "automaxprocs' value stays")
	assert.Equal(t, int64(429496729), h.GOMEMLIMIT, "automemlimit's value stays")
	assert.Contains(t, h.MaxProcsReason, "GOMAXPROCS was changed from 2 to 1 by another library, matching automaxprocs' floor of 1.5 cores; no longer managed")
	assert.Contains(t, h.MemLimitReason, "by another library, matching automemlimit's 0.8 × 512 MiB; no longer managed")
	assert.Contains(t, stderr["handover"], `by="another library, matching automaxprocs' floor of 1.5 cores"`)

	for _, name := range []string{"insist", "insist-small", "insist-back"} {
		assert.True(t, states[name].MaxProcsFollowing, name)
		assert.True(t, states[name].MemLimitFollowing, name)
	}
	assert.Contains(t, states["insist"].MaxProcsReason, "matching automaxprocs' floor of 1.5 cores; fitgo put its value back")
	assert.Contains(t, states["insist"].MemLimitReason, "matching automemlimit's 0.8 × 512 MiB; fitgo put its value back")
	assert.Equal(t, 1, strings.Count(stderr["insist"], "GOMAXPROCS changed by someone else; fitgo puts its value back (insist)"), stderr["insist"])
	if t.Failed() {
		t.Logf("console:\n%s", console)
	}
}
