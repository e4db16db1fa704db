package cgroup

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets check that every parser, on any input, neither panics nor
// makes up a number: it returns either a valid value or a *parseError. They
// are seeded from the tables of the unit tests.

// requireParseError fails unless err is nil or a *parseError with a sane line.
func requireParseError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var pe *parseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *parseError", err, err)
	}
	if pe.Line < 0 || pe.Err == nil {
		t.Fatalf("bad parseError %#v", pe)
	}
}

func FuzzCPUMax(f *testing.F) {
	for _, tc := range cpuMaxTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, p, limited, err := parseCPUMax([]byte(in))
		requireParseError(t, err)
		if err != nil || !limited {
			if q != 0 || limited {
				t.Fatalf("%q: quota %d limited %v with err %v", in, q, limited, err)
			}
			return
		}
		if q <= 0 || p <= 0 || q > maxMicros || p > maxMicros {
			t.Fatalf("%q: out of range %d %d", in, q, p)
		}
		q2, p2, limited2, err := parseCPUMax([]byte(strconv.FormatInt(q, 10) + " " + strconv.FormatInt(p, 10) + "\n"))
		if err != nil || q2 != q || p2 != p || !limited2 {
			t.Fatalf("%q: no round trip: %d %d %v %v", in, q2, p2, limited2, err)
		}
	})
}

func FuzzCFS(f *testing.F) {
	for i, tc := range cfsQuotaTests {
		f.Add(tc.in, cfsPeriodTests[i%len(cfsPeriodTests)].in)
	}
	f.Fuzz(func(t *testing.T, quota, period string) {
		q, limited, err := parseCFS([]byte(quota), "cpu.cfs_quota_us")
		requireParseError(t, err)
		if err == nil && limited && (q <= 0 || q > maxMicros) {
			t.Fatalf("%q: quota %d", quota, q)
		}
		if (err != nil || !limited) && q != 0 {
			t.Fatalf("%q: quota %d without a limit", quota, q)
		}
		p, limited, err := parseCFS([]byte(period), "cpu.cfs_period_us")
		requireParseError(t, err)
		if limited != (err == nil) {
			t.Fatalf("%q: period limited %v with err %v", period, limited, err)
		}
		if err == nil && (p <= 0 || p > maxMicros) {
			t.Fatalf("%q: period %d", period, p)
		}
		if err != nil && p != 0 {
			t.Fatalf("%q: period %d with an error", period, p)
		}
	})
}

func FuzzMemoryValue(f *testing.F) {
	for _, tc := range memoryValueTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, limited, err := parseMemoryValue([]byte(in))
		requireParseError(t, err)
		if !limited {
			if v != 0 {
				t.Fatalf("%q: %d without a limit", in, v)
			}
			return
		}
		if v < 0 || v >= unlimitedMemory {
			t.Fatalf("%q: %d", in, v)
		}
		v2, limited2, err := parseMemoryValue([]byte(strconv.FormatInt(v, 10)))
		if err != nil || v2 != v || !limited2 {
			t.Fatalf("%q: no round trip", in)
		}
	})
}

func FuzzMemoryStat(f *testing.F) {
	for _, tc := range memoryStatTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, limited, err := parseMemoryStatLimit([]byte(in))
		requireParseError(t, err)
		if err != nil {
			var pe *parseError
			errors.As(err, &pe)
			if pe.Line < 1 || pe.Line > strings.Count(in, "\n")+1 {
				t.Fatalf("%q: line %d", in, pe.Line)
			}
		}
		if (!limited && v != 0) || (limited && (v < 0 || v >= unlimitedMemory)) {
			t.Fatalf("%q: %d %v", in, v, limited)
		}
	})
}

func FuzzProcCgroup(f *testing.F) {
	for _, tc := range procCgroupTests {
		f.Add(tc.in, tc.ctrl)
	}
	f.Fuzz(func(t *testing.T, in, ctrl string) {
		e := parseProcCgroup([]byte(in), ctrl)
		requireParseError(t, e.err)
		switch e.version {
		case 0:
			if e.path != "" || e.err != nil {
				t.Fatalf("%q: not found but %+v", in, e)
			}
		case V1, V2:
			if !strings.Contains(in, e.path) {
				t.Fatalf("%q: path %q is not from the input", in, e.path)
			}
			if e.err == nil && !strings.HasPrefix(e.path, "/") {
				t.Fatalf("%q: relative path %q without error", in, e.path)
			}
			if strings.Contains(e.path, "\n") {
				t.Fatalf("%q: path %q spans lines", in, e.path)
			}
		default:
			t.Fatalf("%q: version %d", in, e.version)
		}
	})
}

func FuzzMountInfoLine(f *testing.F) {
	for _, tc := range mountInfoLineTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, ok := parseMountInfoLine([]byte(in))
		if !ok {
			return
		}
		for _, field := range [][]byte{m.root, m.point, m.fstype} {
			if len(field) == 0 || bytes.IndexByte(field, ' ') >= 0 {
				t.Fatalf("%q: bad field %q", in, field)
			}
		}
		if !strings.HasSuffix(in, string(m.superOpts)) || !strings.Contains(in, " "+string(m.point)+" ") {
			t.Fatalf("%q: fields are not from the line: %+v", in, m)
		}
		if bytes.IndexByte(m.source, ' ') >= 0 {
			t.Fatalf("%q: source %q", in, m.source)
		}
		u := unescape(m.point)
		if len(u) > len(m.point) {
			t.Fatalf("%q: unescaping grew %q to %q", in, m.point, u)
		}
	})
}

func FuzzMountInfo(f *testing.F) {
	for _, tc := range findMountTests {
		f.Add(tc.mountinfo, tc.version == V2, tc.ctrl, tc.path)
	}
	for _, tc := range fixtureTests {
		data, err := os.ReadFile(filepath.Join("testdata", tc.name, "proc", "self", "mountinfo"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), tc.want.CPU.Version == V2, "cpu", tc.want.CPU.Path)
		f.Add(string(data), tc.want.Memory.Version == V2, "memory", tc.want.Memory.Path)
	}
	f.Fuzz(func(t *testing.T, mountinfo string, v2 bool, ctrl, cgPath string) {
		v := V1
		if v2 {
			v = V2
		}
		point, root, ok := findMount([]byte(mountinfo), v, ctrl, cgPath)
		if !ok {
			if point != "" || root != "" {
				t.Fatalf("not found but %q %q", point, root)
			}
			return
		}
		rel, shown := relPath(root, cgPath)
		if !strings.HasPrefix(point, "/") || !shown || climbsOut(rel) {
			t.Fatalf("point %q root %q path %q", point, root, cgPath)
		}
		dir := path.Join(point, rel)
		if !strings.HasPrefix(dir, point) || !strings.HasPrefix(dir, "/") || strings.Contains(dir, "/../") {
			t.Fatalf("dir %q is not under %q", dir, point)
		}
	})
}

// FuzzReadFS runs ReadFS and a Watcher on a file system made of fuzzed files
// and checks that they agree and keep the Limits invariants.
func FuzzReadFS(f *testing.F) {
	f.Add(v2Base["proc/self/cgroup"], v2Base["proc/self/mountinfo"], "50000 100000\n", "1024\n", "-1\n", "hierarchical_memory_limit 1\n")
	f.Add(v1Base["proc/self/cgroup"], v1Base["proc/self/mountinfo"], "max\n", "max\n", "50000\n", v1Base["sys/fs/cgroup/memory/app/memory.stat"])
	f.Add(v1Container["proc/self/cgroup"], v1Container["proc/self/mountinfo"], "max\n", "1048576\n", "20000\n", v1Container["sys/fs/cgroup/memory/memory.stat"])
	for _, tc := range fixtureTests {
		read := func(name string) string {
			data, err := os.ReadFile(filepath.Join("testdata", tc.name, "proc", "self", name))
			if err != nil {
				f.Fatal(err)
			}
			return string(data)
		}
		f.Add(read("cgroup"), read("mountinfo"), "100000 100000\n", "max\n", "100000\n", "")
	}
	f.Fuzz(func(t *testing.T, cgroupFile, mountinfo, cpuMax, memMax, cfsQuota, memStat string) {
		files := map[string]string{
			"proc/self/cgroup":                                cgroupFile,
			"proc/self/mountinfo":                             mountinfo,
			"sys/fs/cgroup/cpu.max":                           "200000 100000\n",
			"sys/fs/cgroup/app/cpu.max":                       cpuMax,
			"sys/fs/cgroup/app/memory.max":                    memMax,
			"sys/fs/cgroup/app/memory.high":                   memMax,
			"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us":  cfsQuota,
			"sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/memory/app/memory.limit_in_bytes":  memMax,
			"sys/fs/cgroup/memory/app/memory.stat":            memStat,
			"sys/fs/cgroup/memory/memory.stat":                memStat,
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":      cfsQuota,
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":     "50000\n",
		}
		fsys := mapFS(files)
		_, err := ReadFS(fsys)
		if errors.Is(err, ErrNoCgroup) {
			t.Fatalf("proc/self/cgroup exists: %v", err)
		}
		readAndWatchAgree(t, fsys)
	})
}

// readAndWatchAgree checks the Limits that ReadFS gives for fsys, and that a
// Watcher on fsys gives the same Limits and error.
func readAndWatchAgree(t *testing.T, fsys fs.FS) {
	t.Helper()
	lim, err := ReadFS(fsys)
	checkLimits(t, lim)
	w, werr := NewWatcher(fsys)
	if werr != nil {
		t.Fatalf("NewWatcher: %v", werr)
	}
	defer w.Close()
	wl, wErr := w.Read()
	sameResult(t, lim, err, wl, wErr)
}

// checkLimits checks what must hold of any Limits.
func checkLimits(t *testing.T, l Limits) {
	t.Helper()
	for _, h := range []hierarchy{l.CPU.where(), l.Memory.where()} {
		if h.Version == 0 && (h.Dir != "" || h.Mount != "") {
			t.Fatalf("no version but a directory: %+v", h)
		}
		if h.Version != 0 && (!strings.HasPrefix(h.Dir, h.Mount) || !strings.HasPrefix(h.Mount, "/")) {
			t.Fatalf("Dir %q not under Mount %q", h.Dir, h.Mount)
		}
	}
	if cores, ok := l.CPUQuota(); ok {
		if cores <= 0 || l.CPU.Quota <= 0 || l.CPU.Period <= 0 || !strings.HasPrefix(l.CPU.Dir, l.CPU.Source) {
			t.Fatalf("CPU %+v", l.CPU)
		}
	} else if l.CPU.Quota != 0 || l.CPU.Period != 0 || l.CPU.Source != "" {
		t.Fatalf("CPU without limit %+v", l.CPU)
	}
	if l.CPU.Err != nil && l.CPU.Source != "" {
		t.Fatalf("CPU limit with an error: %+v", l.CPU)
	}
	for _, v := range []struct {
		n   int64
		src string
	}{{l.Memory.Max, l.Memory.MaxSource}, {l.Memory.High, l.Memory.HighSource}} {
		if v.src == "" && v.n != 0 || v.src != "" && (v.n < 0 || v.n >= unlimitedMemory || !strings.HasPrefix(l.Memory.Dir, v.src)) {
			t.Fatalf("memory %+v", l.Memory)
		}
	}
	if l.Memory.Err != nil && (l.Memory.MaxSource != "" || l.Memory.HighSource != "") {
		t.Fatalf("memory limit with an error: %+v", l.Memory)
	}
}
