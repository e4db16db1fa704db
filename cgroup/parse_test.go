package cgroup

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables below drive both the table tests and the seeds of the fuzz
// targets in fuzz_test.go.

var cpuMaxTests = []struct {
	in            string
	quota, period int64
	limited       bool
	errLine       int // -1: no error
}{
	{"max 100000\n", 0, 100000, false, -1},
	{"50000 100000\n", 50000, 100000, true, -1},
	{"150000 100000", 150000, 100000, true, -1},
	{"1000 1000000\n", 1000, 1000000, true, -1},
	{"  75000\t50000 \n", 75000, 50000, true, -1},
	{"max\n", 0, 0, false, -1},
	{"max 100000\n\n", 0, 100000, false, -1},
	{"", 0, 0, false, 0},
	{"\n", 0, 0, false, 0},
	{"max 0\n", 0, 0, false, 1},
	{"0 100000\n", 0, 0, false, 1},
	{"-1 100000\n", 0, 0, false, 1},
	{"50000\n", 0, 0, false, 1},
	{"50000 100000 1\n", 0, 0, false, 1},
	{"5e4 100000\n", 0, 0, false, 1},
	{"max max\n", 0, 0, false, 1},
	{"9223372036854775807 100000\n", 0, 0, false, 1},
	{"50000 100000\nmax 100000\n", 0, 0, false, 2},
}

func TestParseCPUMax(t *testing.T) {
	for _, tc := range cpuMaxTests {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			q, p, limited, err := parseCPUMax([]byte(tc.in))
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, tc.quota, q)
			assert.Equal(t, tc.period, p)
			assert.Equal(t, tc.limited, limited)
		})
	}
}

// checkErrLine asserts no error for line -1, else a *parseError on that line.
func checkErrLine(t *testing.T, err error, line int) {
	t.Helper()
	if line < 0 {
		require.NoError(t, err)
		return
	}
	var pe *parseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, line, pe.Line)
	assert.Empty(t, pe.File, "parsers leave File to the caller")
}

var cfsQuotaTests = []struct {
	in      string
	quota   int64
	limited bool
	errLine int
}{
	{"-1\n", 0, false, -1},
	{"50000\n", 50000, true, -1},
	{"1000", 1000, true, -1},
	{"17592186044415\n", 17592186044415, true, -1},
	{"0\n", 0, false, 1},
	{"-2\n", 0, false, 1},
	{"+5\n", 0, false, 1},
	{"x\n", 0, false, 1},
	{"\n", 0, false, 0},
	{"9223372036854776\n", 0, false, 1},
	{"1\n2\n", 0, false, 2},
}

var cfsPeriodTests = []struct {
	in      string
	period  int64
	errLine int
}{
	{"100000\n", 100000, -1},
	{"50000\n", 50000, -1},
	{"1000000", 1000000, -1},
	{"-1\n", 0, 1},
	{"0\n", 0, 1},
	{"", 0, 0},
	{"100000 \n", 100000, -1},
	{"100 000\n", 0, 1},
}

func TestParseCFS(t *testing.T) {
	for _, tc := range cfsQuotaTests {
		t.Run(fmt.Sprintf("quota %q", tc.in), func(t *testing.T) {
			q, limited, err := parseCFS([]byte(tc.in), "cpu.cfs_quota_us")
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, tc.quota, q)
			assert.Equal(t, tc.limited, limited)
		})
	}
	for _, tc := range cfsPeriodTests {
		t.Run(fmt.Sprintf("period %q", tc.in), func(t *testing.T) {
			p, limited, err := parseCFS([]byte(tc.in), "cpu.cfs_period_us")
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, tc.period, p)
			assert.Equal(t, err == nil, limited, "a period is always a limit")
		})
	}
}

var memoryValueTests = []struct {
	in      string
	bytes   int64
	limited bool
	errLine int
}{
	{"max\n", 0, false, -1},
	{"536870912\n", 512 * mib, true, -1},
	{"0\n", 0, true, -1},
	{"9223372036854771712\n", 0, false, -1}, // v1 "unlimited", 4 KiB pages
	{"9223372036854710272\n", 0, false, -1}, // 64 KiB pages
	{"9223372036854775807\n", 0, false, -1},
	{"18446744073709551615\n", 0, false, -1},
	{"4611686018427387903\n", 4611686018427387903, true, -1},
	{"4611686018427387904\n", 0, false, -1},
	{"18446744073709551616\n", 0, false, 1}, // overflows uint64
	{"-1\n", 0, false, 1},
	{"1G\n", 0, false, 1},
	{"", 0, false, 0},
	{"1\n2\n", 0, false, 2},
}

func TestParseMemoryValue(t *testing.T) {
	for _, tc := range memoryValueTests {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			v, limited, err := parseMemoryValue([]byte(tc.in))
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, tc.bytes, v)
			assert.Equal(t, tc.limited, limited)
		})
	}
}

var memoryStatTests = []struct {
	in      string
	bytes   int64
	limited bool
	errLine int
}{
	{"cache 1\nrss 2\nhierarchical_memory_limit 314572800\nhierarchical_memsw_limit 9223372036854771712\n", 300 * mib, true, -1},
	{"hierarchical_memory_limit 9223372036854771712\n", 0, false, -1},
	{"cache 1\nrss 2\n", 0, false, -1},
	{"", 0, false, -1},
	{"hierarchical_memsw_limit 1024\n", 0, false, -1},
	{"total_hierarchical_memory_limit 1024\n", 0, false, -1},
	{"hierarchical_memory_limit\t1048576", mib, true, -1},
	{"cache x\nhierarchical_memory_limit 1048576\n", mib, true, -1},
	{"cache 1\nhierarchical_memory_limit -1\n", 0, false, 2},
	{"a\nb\nc\nhierarchical_memory_limit\n", 0, false, 4},
	{"hierarchical_memory_limit 1 2\n", 0, false, 1},
}

func TestParseMemoryStatLimit(t *testing.T) {
	for _, tc := range memoryStatTests {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			v, limited, err := parseMemoryStatLimit([]byte(tc.in))
			checkErrLine(t, err, tc.errLine)
			assert.Equal(t, tc.bytes, v)
			assert.Equal(t, tc.limited, limited)
		})
	}
}

var procCgroupTests = []struct {
	name    string
	in      string
	ctrl    string
	version Version
	path    string
	errLine int
}{
	{"v2 namespace root", "0::/\n", "cpu", V2, "/", -1},
	{"v2 host view", "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope\n", "memory", V2, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope", -1},
	{"v1 co-mounted", "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n", "cpu", V1, "/docker/abc", -1},
	{"v1 cpuacct is not cpu", "2:cpuacct:/a\n1:cpuset:/b\n0::/c\n", "cpu", V2, "/c", -1},
	{"hybrid: v1 wins over the 0:: line", "0::/u\n4:memory:/process_api/85b8\n1:cpu:/\n", "memory", V1, "/process_api/85b8", -1},
	{"hybrid cpu", "0::/u\n4:memory:/process_api/85b8\n1:cpu:/\n", "cpu", V1, "/", -1},
	{"named hierarchy is not a controller", "1:name=systemd:/x\n", "cpu", 0, "", -1},
	{"v1 only, controller absent", "5:pids:/x\n", "memory", 0, "", -1},
	{"path with colons", "0::/a:b:c\n", "cpu", V2, "/a:b:c", -1},
	{"outside the namespace is kept as is", "0::/../x\n", "cpu", V2, "/../x", -1},
	{"malformed lines skipped", "junk\n::\n:cpu:/x\nx:cpu:/y\n7:cpu:/z\n", "cpu", V1, "/z", -1},
	{"no final newline", "3:memory:/m", "memory", V1, "/m", -1},
	{"empty", "", "cpu", 0, "", -1},
	{"relative path on the controller's line", "1:name=systemd:/\n2:memory:relative\n", "memory", V1, "relative", 2},
	{"empty path", "0::\n", "memory", V2, "", 1},
	{"first v1 line wins", "1:cpu:/first\n2:cpu:/second\n", "cpu", V1, "/first", -1},
}

func TestParseProcCgroup(t *testing.T) {
	for _, tc := range procCgroupTests {
		t.Run(tc.name, func(t *testing.T) {
			e := parseProcCgroup([]byte(tc.in), tc.ctrl)
			checkErrLine(t, e.err, tc.errLine)
			assert.Equal(t, tc.version, e.version)
			assert.Equal(t, tc.path, e.path)
		})
	}
}

var mountInfoLineTests = []struct {
	name                                  string
	in                                    string
	ok                                    bool
	root, point, fstype, source, superOpt string
}{
	{"proc(5) example", "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
		true, "/mnt1", "/mnt2", "ext3", "/dev/root", "rw,errors=continue"},
	{"no optional field", "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
		true, "/", "/sys/fs/cgroup/cpu", "cgroup", "cgroup", "rw,cpu"},
	{"several optional fields", "35 24 0:30 / /sys/fs/cgroup rw shared:9 master:3 propagate_from:2 unbindable - cgroup2 cgroup2 rw,nsdelegate",
		true, "/", "/sys/fs/cgroup", "cgroup2", "cgroup2", "rw,nsdelegate"},
	{"escapes kept", `90 61 0:30 /my\040app /run/my\040cgroup rw - cgroup2 cgroup2 rw`,
		true, `/my\040app`, `/run/my\040cgroup`, "cgroup2", "cgroup2", "rw"},
	{"raw spaces in super options", `101 61 0:56 / /mnt/r rw,noatime - 9p drvfs rw,aname=drvfs;path=C:\Program Files\Docker;mmap`,
		true, "/", "/mnt/r", "9p", "drvfs", `rw,aname=drvfs;path=C:\Program Files\Docker;mmap`},
	{"decoy separator in super options", `102 61 0:57 / /mnt/d rw - 9p drvfs path=D:\odd - cgroup2 cgroup2 rw`,
		true, "/", "/mnt/d", "9p", "drvfs", `path=D:\odd - cgroup2 cgroup2 rw`},
	{"nsfs root", "600 25 0:4 net:[4026532385] /run/netns/x rw - nsfs nsfs rw",
		true, "net:[4026532385]", "/run/netns/x", "nsfs", "nsfs", "rw"},
	{"no super options", "1 2 0:3 / /x rw - tmpfs none", true, "/", "/x", "tmpfs", "none", ""},
	{"no separator", "this line is not a mount at all", false, "", "", "", "", ""},
	{"too few fields", "103 61 0:58 - cgroup2", false, "", "", "", "", ""},
	{"no source", "104 61 0:59 / /broken rw - cgroup2", false, "", "", "", "", ""},
	{"id not a number", "x 61 0:59 / /p rw - cgroup2 cgroup2 rw", false, "", "", "", "", ""},
	{"bad major:minor", "1 61 059 / /p rw - cgroup2 cgroup2 rw", false, "", "", "", "", ""},
	{"double space", "1 61 0:59  / /p rw - cgroup2 cgroup2 rw", false, "", "", "", "", ""},
	{"empty", "", false, "", "", "", "", ""},
}

func TestParseMountInfoLine(t *testing.T) {
	for _, tc := range mountInfoLineTests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := parseMountInfoLine([]byte(tc.in))
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tc.root, string(m.root))
			assert.Equal(t, tc.point, string(m.point))
			assert.Equal(t, tc.fstype, string(m.fstype))
			assert.Equal(t, tc.source, string(m.source))
			assert.Equal(t, tc.superOpt, string(m.superOpts))
		})
	}
}

func TestParseMountInfoLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("105 61 0:60 / /merged rw,relatime - overlay overlay rw,lowerdir=")
	for i := 0; b.Len() < 256*kib; i++ {
		fmt.Fprintf(&b, "/var/lib/docker/overlay2/l/%026d:", i)
	}
	b.WriteString("/last\n80 61 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	point, root, ok := findMount([]byte(b.String()), V2, "", "/")
	require.True(t, ok)
	assert.Equal(t, "/sys/fs/cgroup", point)
	assert.Equal(t, "/", root)
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:         "/plain",
		`/my\040cgroup`:  "/my cgroup",
		`/tab\011x`:      "/tab\tx",
		`/nl\012x`:       "/nl\nx",
		`/back\134slash`: `/back\slash`,
		`/trailing\`:     `/trailing\`,
		`/short\04`:      `/short\04`,
		`/not\08octal`:   `/not\08octal`,
		`/too\400big`:    `/too\400big`,
		`\040\040`:       "  ",
		`/\134040 stays`: `/\040 stays`,
		`/max\377`:       "/max\xff",
	} {
		assert.Equal(t, want, unescape([]byte(in)), "%q", in)
	}
}

var findMountTests = []struct {
	name        string
	mountinfo   string
	version     Version
	ctrl, path  string
	point, root string
	ok          bool
}{
	{"v2", v2Mounts, V2, "", "/app", "/sys/fs/cgroup", "/", true},
	{"v1 controller in super options", v1Mounts, V1, "memory", "/app", "/sys/fs/cgroup/memory", "/", true},
	{"v1 co-mounted", v1Mounts, V1, "cpu", "/app", "/sys/fs/cgroup/cpu,cpuacct", "/", true},
	{"v1 is not v2", v1Mounts, V2, "", "/app", "", "", false},
	{"v2 is not v1", v2Mounts, V1, "cpu", "/app", "", "", false},
	{"cpuacct does not carry cpu", "33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n", V1, "cpu", "/", "", "", false},
	{"root equals path", "1 0 0:1 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n", V1, "memory", "/docker/abc", "/sys/fs/cgroup/memory", "/docker/abc", true},
	{"root is an ancestor", "1 0 0:1 /docker /c ro - cgroup cgroup rw,memory\n", V1, "memory", "/docker/abc", "/c", "/docker", true},
	{"outside the root", "1 0 0:1 /docker/abc /c ro - cgroup cgroup rw,memory\n", V1, "memory", "/docker/other", "", "", false},
	{"root a mere prefix", "1 0 0:1 /doc /c ro - cgroup cgroup rw,memory\n", V1, "memory", "/docker", "", "", false},
	{"escaped mount point", `1 0 0:1 / /run/my\040cg rw - cgroup2 cgroup2 rw` + "\n", V2, "", "/", "/run/my cg", "/", true},
	{"escaped root", `1 0 0:1 /my\040app /x rw - cgroup2 cgroup2 rw` + "\n", V2, "", "/my app/w", "/x", "/my app", true},
	{"escaped root outside", `1 0 0:1 /my\040app /x rw - cgroup2 cgroup2 rw` + "\n", V2, "", "/my apple", "", "", false},
	{"relative mount point skipped", "1 0 0:1 / relative rw - cgroup2 cgroup2 rw\n", V2, "", "/", "", "", false},
	{"mount point cleaned", "1 0 0:1 / /sys/fs/cgroup/ rw - cgroup2 cgroup2 rw\n", V2, "", "/", "/sys/fs/cgroup", "/", true},
	{"no final newline", "1 0 0:1 / /cg rw - cgroup2 cgroup2 rw", V2, "", "/a", "/cg", "/", true},
	{"empty", "", V2, "", "/", "", "", false},
	{"no version", v2Mounts, 0, "", "/", "", "", false},
	// Of equal roots, the mount under /sys/fs/cgroup wins, as in the JDK,
	// then the first listed; a shorter root (more ancestors shown) wins
	// wherever it is.
	{"bedrock strata: the first of equal roots", "30 26 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
		"130 126 0:27 / /bedrock/strata/kde/sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
		"230 226 0:27 / /bedrock/strata/arch/sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		V1, "memory", "/app", "/sys/fs/cgroup/memory", "/", true},
	{"second cpu,cpuacct mount", v1Mounts + "40 1 0:28 / /cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
		V1, "cpu", "/app", "/sys/fs/cgroup/cpu,cpuacct", "/", true},
	{"cpu,cpuacct: /sys/fs/cgroup over the first listed", "40 1 0:28 / /cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" + v1Mounts,
		V1, "cpu", "/app", "/sys/fs/cgroup/cpu,cpuacct", "/", true},
	{"memory: /sys/fs/cgroup over the first listed", "40 1 0:29 / /memory rw - cgroup cgroup rw,memory\n" + v1Mounts,
		V1, "memory", "/app", "/sys/fs/cgroup/memory", "/", true},
	{"v2: /sys/fs/cgroup over the first listed", "40 1 0:30 / /cgroup-in rw - cgroup2 cgroup2 rw\n" + v2Mounts,
		V2, "", "/app", "/sys/fs/cgroup", "/", true},
	{"hybrid v2: /sys/fs/cgroup/unified over the first listed", "40 1 0:31 / /unified rw - cgroup2 cgroup2 rw\n" +
		"41 30 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", V2, "", "/app", "/sys/fs/cgroup/unified", "/", true},
	{"none under /sys/fs/cgroup: the first listed", "1 0 0:1 / /b ro - cgroup cgroup rw,memory\n" +
		"2 0 0:1 / /a ro - cgroup cgroup rw,memory\n", V1, "memory", "/app", "/b", "/", true},
	{"/sys/fs/cgroupfs is not under /sys/fs/cgroup", "1 0 0:1 / /b ro - cgroup cgroup rw,memory\n" +
		"2 0 0:1 / /sys/fs/cgroupfs ro - cgroup cgroup rw,memory\n", V1, "memory", "/app", "/b", "/", true},
	{"a shorter root wins over /sys/fs/cgroup", "1 0 0:1 /docker /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n" +
		"2 0 0:1 / /m ro - cgroup cgroup rw,memory\n", V1, "memory", "/docker/abc", "/m", "/", true},
	{"a covered mount under /sys/fs/cgroup loses", "1 0 0:1 / /m ro - cgroup cgroup rw,memory\n" +
		"2 0 0:1 / /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n" + "3 2 0:1 /x /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
		V1, "memory", "/x/y", "/m", "/", true},
	{"the most ancestors win over the first listed", "1 0 0:1 /docker /c ro - cgroup cgroup rw,memory\n" +
		"2 0 0:1 / /d ro - cgroup cgroup rw,memory\n" + "3 0 0:1 / /e ro - cgroup cgroup rw,memory\n",
		V1, "memory", "/docker/abc", "/d", "/", true},
}

func TestFindMount(t *testing.T) {
	for _, tc := range findMountTests {
		t.Run(tc.name, func(t *testing.T) {
			point, root, ok := findMount([]byte(tc.mountinfo), tc.version, tc.ctrl, tc.path)
			require.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.point, point)
			assert.Equal(t, tc.root, root)
		})
	}
}

// TestRelPath: the cgroup's directory under a mount is its path relative
// to the mount's root, below the mount point.
func TestRelPath(t *testing.T) {
	for _, tc := range []struct{ point, root, path, want string }{
		{"/sys/fs/cgroup", "/", "/", "/sys/fs/cgroup"},
		{"/sys/fs/cgroup", "/", "/a/b", "/sys/fs/cgroup/a/b"},
		{"/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc", "/sys/fs/cgroup/memory"},
		{"/sys/fs/cgroup/memory", "/docker", "/docker/abc", "/sys/fs/cgroup/memory/abc"},
		{"/", "/", "/a", "/a"},
		{"/", "/a", "/a", "/"},
	} {
		rel, ok := relPath(tc.root, tc.path)
		assert.True(t, ok, "%+v", tc)
		assert.Equal(t, tc.want, path.Join(tc.point, rel), "%+v", tc)
	}
	for _, tc := range [][2]string{{"/doc", "/docker"}, {"/a/b", "/a"}, {"/", ""}, {"/", "relative"}} {
		_, ok := relPath(tc[0], tc[1])
		assert.False(t, ok, "root %q is not an ancestor of %q", tc[0], tc[1])
	}
}

func TestClimbsOut(t *testing.T) {
	for p, want := range map[string]bool{
		"": false, "/": false, "/a/b": false, "/..": true, "/../x": true, "/../../x/y": true,
		"/a/../b": false, "/a/../../b": true, "/..foo": false, "/a..": false, "/./..": true,
	} {
		assert.Equal(t, want, climbsOut(p), p)
	}
}

func TestLessRatio(t *testing.T) {
	assert.True(t, lessRatio(50000, 100000, 75000, 100000))
	assert.True(t, lessRatio(75000, 100000, 75000, 50000))
	assert.False(t, lessRatio(50000, 100000, 25000, 50000), "equal ratios are not less")
	assert.False(t, lessRatio(maxMicros, 1, maxMicros-1, 1))
	assert.True(t, lessRatio(maxMicros-1, 1, maxMicros, 1), "no overflow")
	assert.True(t, lessRatio(maxMicros, maxMicros, maxMicros, maxMicros-1))
}

func TestParseUint(t *testing.T) {
	for in, want := range map[string]uint64{"0": 0, "42": 42, "18446744073709551615": 1<<64 - 1} {
		v, ok := parseUint([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, v, in)
	}
	for _, in := range []string{"", "-1", "+1", "1 ", "18446744073709551616", "99999999999999999999", "0x10"} {
		_, ok := parseUint([]byte(in))
		assert.False(t, ok, in)
	}
}

// findMount is findMounts for one hierarchy.
func findMount(mountinfo []byte, version Version, ctrl, cgPath string) (point, root string, ok bool) {
	qs := [1]mountQuery{{version: version, ctrl: ctrl, path: cgPath}}
	findMounts(mountinfo, qs[:])
	return qs[0].point, qs[0].root, qs[0].point != ""
}
