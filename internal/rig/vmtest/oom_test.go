package vmtest

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oomScript is the guest's suite of TestCgroupV2OOMHits (/scenarios/oom.sh,
// sourced by /init): the test program (testprog/blank) with the OOM capture
// and GODEBUG=madvdontneed=0, alone under memory.max 256M, grows its heap by
// 160 MiB and frees it: the pages stay charged, lazily freed (MADV_FREE).
// Then a 150 MiB co-process joins its cgroup: the charges reach memory.max,
// whose reclaim takes the lazily freed pages back (memory.events.local max
// rises), and what is held stays near two thirds of the limit, below the
// threshold. It prints the cgroup's files before and after, the capture's
// breakdown (its lines joined by "|"), the heap profile in base64 and the
// program's stderr, each on an "OOM-" line. The waits only cap a hung guest.
const oomScript = `# shellcheck shell=sh
cg=/sys/fs/cgroup
mount -t cgroup2 cgroup2 "$cg" || fail "mount cgroup2"
wr "$cg/cgroup.subtree_control" "+memory"
d=$cg/oom
mk "$d" /tmp/oom
wr "$d/memory.max" 256M

# wait_for FILE PATTERN: polls FILE for a line matching PATTERN, at most two minutes.
wait_for() {
	_i=0
	until grep -q -e "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		if [ "$_i" -gt 1200 ]; then
			fail "no line matching $2 in $1: $(cat "$1")"
			return 1
		fi
		usleep 100000
	done
}

# files NAME: prints the cgroup's memory events and usage as OOM-NAME.
files() {
	echo "OOM-$1 $(tr '\n' ' ' <"$d/memory.events.local")| $(grep -E '^(anon|file|active_file|inactive_file) ' "$d/memory.stat" | tr '\n' ' ')| current $(cat "$d/memory.current")"
}

step oom/heap
mkfifo /tmp/prog.in /tmp/side.in || fail mkfifo
run_in "$d" env FITGO=refresh=100ms,oomprofile=/tmp/oom GODEBUG=madvdontneed=0 prog </tmp/prog.in >/tmp/prog.out 2>/tmp/prog.err &
exec 8>/tmp/prog.in
wait_for /tmp/prog.out '"gomemlimit"'
echo "heap 160" >&8
wait_for /tmp/prog.out '"done":"heap"'
echo heapfree >&8
wait_for /tmp/prog.out '"done":"heapfree"'
usleep 500000
files BEFORE

step oom/co-process
run_in "$d" sidecar 150 </tmp/side.in >/tmp/side.out &
exec 9>/tmp/side.in
wait_for /tmp/side.out held
_i=0
until ls /tmp/oom/oom-*.txt >/dev/null 2>&1; do
	_i=$((_i + 1))
	if [ "$_i" -gt 600 ]; then
		fail "no capture in /tmp/oom: $(ls -a /tmp/oom)"
		break
	fi
	usleep 100000
done
usleep 500000
files AFTER
for f in /tmp/oom/oom-*.txt; do
	echo "OOM-BREAKDOWN $(tr '\n' '|' <"$f")"
	echo "OOM-PROFILE $(base64 <"${f%.txt}.pb.gz" | tr -d '\n')"
done
echo free >&9
exec 9>&- 8>&-
wait
echo "OOM-STDERR $(tr '\n' '|' </tmp/prog.err)"
`

// TestCgroupV2OOMHits: on cgroup v2, a rise of memory.events.local max at
// a reading starts an OOM capture where what is held stays below the
// threshold (90 % of the limit), once half of the limit is held: the
// breakdown says so, and the heap profile opens with go tool pprof -top.
func TestCgroupV2OOMHits(t *testing.T) {
	host := Require(t)
	bin := t.TempDir()
	require.NoError(t, BuildStatic("", filepath.Join(bin, "prog"), "../testprog/blank"))
	require.NoError(t, BuildStatic("", filepath.Join(bin, "sidecar"), "../testprog/sidecar"))
	console := RunSuite(t, host, "oom", oomScript, map[string]string{
		"prog": filepath.Join(bin, "prog"), "sidecar": filepath.Join(bin, "sidecar"),
	}, 4, 1024)

	lines := map[string][]string{}
	for _, l := range strings.Split(console, "\n") {
		k, v, _ := strings.Cut(strings.TrimRight(l, "\r"), " ")
		if name, ok := strings.CutPrefix(k, "OOM-"); ok {
			lines[name] = append(lines[name], v)
		}
	}
	for _, name := range []string{"BEFORE", "AFTER", "STDERR"} {
		require.Len(t, lines[name], 1, "%s\n%s", name, console)
	}
	require.Len(t, lines["BREAKDOWN"], 1, "one capture\n%s", console)
	t.Logf("memory.events.local | memory.stat | memory.current\nbefore the co-process: %s\nafter: %s", lines["BEFORE"][0], lines["AFTER"][0])
	breakdown := strings.ReplaceAll(lines["BREAKDOWN"][0], "|", "\n")
	t.Logf("the capture:\n%s", breakdown)
	assert.Contains(t, lines["BEFORE"][0], "max 0 ", "the limit not reached before")
	assert.NotContains(t, lines["AFTER"][0], "max 0 ", "reached with the co-process")
	assert.Regexp(t, `\(([5-8]\d) %\) held, a limit reached since the last reading \(memory.events.local high and max \+\d+\)`, breakdown)
	assert.Contains(t, breakdown, "largest holder: others (processes, tmpfs),")
	assert.Contains(t, lines["STDERR"][0], "OOM capture written")

	profile, err := base64.StdEncoding.DecodeString(lines["PROFILE"][0])
	require.NoError(t, err)
	file := filepath.Join(bin, "heap.pb.gz")
	require.NoError(t, os.WriteFile(file, profile, 0o644))
	out, err := exec.Command("go", "tool", "pprof", "-top", file).CombinedOutput()
	assert.NoError(t, err, "the heap profile opens: %s", out)
	t.Logf("go tool pprof -top: %s", firstLines(string(out), 6))
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}
