package memlimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/cgroup"
)

// oomLimits is a v1 reading under a 256 MiB limit where usage MiB are
// charged, file MiB of them page cache, rss MiB the process's RssAnon.
func oomLimits(usage, file, rss int64) cgroup.Limits {
	l := memLimits(256*MiB, 0)
	l.Memory.Version = cgroup.V1
	l.Memory.Levels = []cgroup.Level{{Dir: "/sys/fs/cgroup/memory/app", Max: 256 * MiB, High: -1, Usage: usage * MiB, File: file * MiB}}
	l.Memory.RssAnon = rss * MiB
	return l
}

// newCapture is an OOM capture into a new directory, logging into buf.
func newCapture(t *testing.T) (*oomCapture, *bytes.Buffer) {
	buf := new(bytes.Buffer)
	return &oomCapture{dir: t.TempDir(), log: slog.New(slog.NewTextHandler(buf, nil)), pid: os.Getpid(), armed: true}, buf
}

// stepped steps c at now with a reading and returns the captures in its
// directory once the capture it may have started is written.
func stepped(c *oomCapture, now time.Time, lim cgroup.Limits) []capturedFile {
	c.step(now, &lim, 230*MiB, 0)
	c.wg.Wait()
	return captures(c.dir)
}

// TestOOMTrigger: sent readings. A capture starts when what the kernel
// cannot reclaim passes 90 % of the limit of the level with the least
// room, page cache aside.
func TestOOMTrigger(t *testing.T) {
	twoLevels := oomLimits(200, 0, 190)
	twoLevels.Memory.Levels = append(twoLevels.Memory.Levels, cgroup.Level{Dir: "/sys/fs/cgroup/memory/pod", Max: 1 << 30, High: -1, Usage: 1000 * MiB})
	high := oomLimits(200, 0, 190)
	high.Memory.Levels[0].High = 210 * MiB
	for name, c := range map[string]struct {
		lim  cgroup.Limits
		want bool
	}{
		"below 90 %":                   {oomLimits(230, 0, 220), false},
		"at 90 %":                      {oomLimits(231, 0, 220), true},
		"page cache is not held":       {oomLimits(250, 40, 200), false},
		"the parent binds first":       {twoLevels, true},
		"memory.high is the limit":     {high, true},
		"no levels (usage unreadable)": {memLimits(256*MiB, 0), false},
	} {
		t.Run(name, func(t *testing.T) {
			cap, _ := newCapture(t)
			assert.Equal(t, c.want, len(stepped(cap, time.Now(), c.lim)) == 1)
		})
	}
}

// TestOOMRearmAndRate: sent readings and times, no clock. Once triggered,
// the capture re-arms only below the threshold, and takes at most one per
// oomEvery; none while one is being written.
func TestOOMRearmAndRate(t *testing.T) {
	c, buf := newCapture(t)
	written := func() int { return strings.Count(buf.String(), "OOM capture written") }
	t0 := time.Unix(1_800_000_000, 0)
	over, under := oomLimits(240, 0, 230), oomLimits(100, 0, 90)
	for i, s := range []struct {
		at   time.Duration
		lim  cgroup.Limits
		want int
	}{
		{0, over, 1},
		{11 * time.Minute, over, 1}, // still over: not re-armed
		{12 * time.Minute, under, 1},
		{13 * time.Minute, over, 2},
		{14 * time.Minute, under, 2},
		{15 * time.Minute, over, 2}, // re-armed, but within oomEvery
		{16 * time.Minute, under, 2},
		{24 * time.Minute, over, 3},
	} {
		stepped(c, t0.Add(s.at), s.lim)
		assert.Equal(t, s.want, written(), "step %d", i)
	}
	c.step(t0.Add(30*time.Minute), &under, 0, 0)
	c.busy.Store(true)
	stepped(c, t0.Add(40*time.Minute), over)
	assert.Equal(t, 3, written(), "none while one is written")
	c.busy.Store(false)
	stepped(c, t0.Add(41*time.Minute), over)
	assert.Equal(t, 4, written(), "still armed: the busy reading disarmed nothing")
	assert.Len(t, captures(c.dir), oomKeep)
}

// TestOOMHits: sent readings. A reading where a level's Hits rose since the
// last, with half the limit held or more, starts a capture below the
// threshold too, under the same bounds, and one over it that the threshold
// left disarmed; the first reading, one with another number of levels, or a
// rise with less than half held (the page cache filling the limit) is not.
// The breakdown says which started it.
func TestOOMHits(t *testing.T) {
	c, buf := newCapture(t)
	written := func() int { return strings.Count(buf.String(), "OOM capture written") }
	t0 := time.Unix(1_800_000_000, 0)
	hits := func(usage, rss int64, n ...uint64) cgroup.Limits {
		l := oomLimits(usage, 0, rss)
		l.Memory.Levels[0].Hits = n[0]
		for _, h := range n[1:] {
			l.Memory.Levels = append(l.Memory.Levels, cgroup.Level{Dir: "/sys/fs/cgroup/memory", Max: -1, High: -1, Usage: usage * MiB, Hits: h})
		}
		return l
	}
	for i, s := range []struct {
		at   time.Duration
		lim  cgroup.Limits
		want int
		why  string // of the newest capture
	}{
		{0, hits(150, 140, 5), 0, ""}, // the first reading: counts since the cgroup was made
		{time.Second, hits(150, 140, 5), 0, ""},
		{1500 * time.Millisecond, hits(120, 110, 6), 0, ""}, // 45 % held: page cache reclaimed
		{1600 * time.Millisecond, hits(150, 140, 6), 0, ""},
		{2 * time.Second, hits(150, 140, 8), 1, "150 MiB (58 %) held, a limit reached since the last reading (memory.failcnt +2)"},
		{3 * time.Second, hits(150, 140, 9), 1, ""},                // within oomEvery
		{11 * time.Minute, hits(150, 140, 9, 100), 1, ""},          // another level: no rise
		{12 * time.Minute, hits(240, 230, 9, 101), 2, "past 90 %"}, // over and armed: the threshold
		{23 * time.Minute, hits(240, 230, 9, 101), 2, ""},          // over, disarmed, no rise
		{24 * time.Minute, hits(240, 230, 10, 101), 3, "(memory.failcnt +1)"},
	} {
		stepped(c, t0.Add(s.at), s.lim)
		require.Equal(t, s.want, written(), "step %d", i)
		if s.why != "" {
			text, err := os.ReadFile(filepath.Join(c.dir, captures(c.dir)[0].base+".txt"))
			require.NoError(t, err)
			assert.Contains(t, string(text), s.why, "step %d", i)
		}
	}
	v2 := memLimits(256*MiB, 0)
	v2.Memory.Levels = []cgroup.Level{{Dir: "/sys/fs/cgroup/app", Max: 256 * MiB, High: -1, Usage: 140 * MiB, Hits: 1}}
	v2.Memory.RssAnon = 130 * MiB
	c, _ = newCapture(t)
	stepped(c, t0, v2)
	v2.Memory.Levels[0].Hits = 4
	require.Len(t, stepped(c, t0.Add(time.Second), v2), 1)
	text, err := os.ReadFile(filepath.Join(c.dir, captures(c.dir)[0].base+".txt"))
	require.NoError(t, err)
	t.Logf("%s", text)
	assert.Contains(t, string(text), "limit memory.max 256 MiB at /sys/fs/cgroup/app; 140 MiB (54 %) held, a limit reached since the last reading (memory.events.local high and max +3)")
}

// TestOOMSkip: with less than oomCost left under the limit, no capture,
// and one Warn line for any number of skips.
func TestOOMSkip(t *testing.T) {
	c, buf := newCapture(t)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		assert.Empty(t, stepped(c, t0.Add(time.Duration(i)*time.Hour), oomLimits(254, 0, 250)))
		stepped(c, t0.Add(time.Duration(i)*time.Hour+time.Minute), oomLimits(100, 0, 90))
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "too little left for an OOM capture"), buf.String())
}

// TestOOMCaptureFiles: a capture is a heap profile that go tool pprof
// reads and a breakdown that names the largest holder, written under their
// final names only, with a Warn line that says where.
func TestOOMCaptureFiles(t *testing.T) {
	c, buf := newCapture(t)
	now := time.Unix(1_800_000_000, 0)
	lim := oomLimits(245, 10, 30) // 205 MiB of others
	got := stepped(c, now, lim)
	require.Len(t, got, 1)
	base := fmt.Sprintf("oom-1800000000-%d", os.Getpid())
	assert.Equal(t, base, got[0].base)
	names, _ := filepath.Glob(filepath.Join(c.dir, "*"))
	assert.ElementsMatch(t, []string{filepath.Join(c.dir, base+".pb.gz"), filepath.Join(c.dir, base+".txt")}, names)
	text, err := os.ReadFile(filepath.Join(c.dir, base+".txt"))
	require.NoError(t, err)
	t.Logf("%s", text)
	assert.Contains(t, string(text), "largest holder: others (processes, tmpfs), 205 MiB")
	assert.Contains(t, string(text), "limit memory.limit_in_bytes 256 MiB at /sys/fs/cgroup/memory/app; 235 MiB (91 %) held")
	assert.Contains(t, buf.String(), "OOM capture written")
	assert.Contains(t, buf.String(), base+".pb.gz")
	if _, err := exec.LookPath("go"); err == nil && !testing.Short() {
		out, err := exec.Command("go", "tool", "pprof", "-top", filepath.Join(c.dir, base+".pb.gz")).CombinedOutput()
		assert.NoError(t, err, "%s", out)
	}
}

// touch makes a capture's two files, size bytes in all.
func touch(t *testing.T, dir string, unix int64, pid int, size int64) {
	for i, ext := range []string{".pb.gz", ".txt"} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("oom-%d-%d%s", unix, pid, ext)))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size/2+int64(i)*(size%2)))
		require.NoError(t, f.Close())
	}
}

// TestOOMKeep: after a capture, the newest oomKeep remain within
// oomMaxBytes; other files of the directory, and a capture's lone file, are
// left alone but counted; temporary files go.
func TestOOMKeep(t *testing.T) {
	for name, c := range map[string]struct {
		sizes []int64 // oldest first
		want  []int64 // the unix times kept
	}{
		"the last 3":                {[]int64{100, 100, 100, 100, 100}, []int64{5, 4, 3}},
		"within 64 MiB":             {[]int64{30 << 20, 30 << 20, 30 << 20}, []int64{3, 2}},
		"the newest alone over cap": {[]int64{100, 65 << 20}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			cap, _ := newCapture(t)
			for i, size := range c.sizes {
				touch(t, cap.dir, int64(i+1), 7, size)
			}
			require.NoError(t, os.WriteFile(filepath.Join(cap.dir, "notes.txt"), nil, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(cap.dir, ".oom-1.tmp"), nil, 0o644))
			err := cap.keep(fmt.Sprintf("oom-%d-7", len(c.sizes)))
			assert.Equal(t, c.want == nil, err != nil, "%v", err)
			var kept []int64
			for _, p := range captures(cap.dir) {
				kept = append(kept, p.unix)
			}
			assert.Equal(t, c.want, kept)
			assert.FileExists(t, filepath.Join(cap.dir, "notes.txt"))
			assert.NoFileExists(t, filepath.Join(cap.dir, ".oom-1.tmp"))
		})
	}
}

// TestOOMPrevious: Apply names the newest capture of an earlier process: of
// another pid, or of this one from before the Apply.
func TestOOMPrevious(t *testing.T) {
	for name, c := range map[string]struct {
		unix []int64
		pid  int
		want string
	}{
		"none":              {nil, 7, ""},
		"another process":   {[]int64{100, 200}, 7, "oom-200-7.txt"},
		"this pid, earlier": {[]int64{100}, os.Getpid(), fmt.Sprintf("oom-100-%d.txt", os.Getpid())},
		"this process's":    {[]int64{time.Now().Unix() + 1}, os.Getpid(), ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, u := range c.unix {
				touch(t, dir, u, c.pid, 10)
			}
			var f Fit
			f.startOOM(dir, time.Second, &f.res)
			require.NoError(t, f.res.OOMCapture.Err)
			if c.want == "" {
				assert.Empty(t, f.res.OOMCapture.Previous)
				return
			}
			assert.Equal(t, filepath.Join(dir, c.want), f.res.OOMCapture.Previous)
			assert.Contains(t, f.res.String(), "the previous process wrote an OOM capture at ")
		})
	}
}

// TestOOMBadDir: a directory that does not exist, a file, one where no
// file can be made (/proc, even for root), or no refresh: a Warn line, the
// error in the Result, no capture; GOMEMLIMIT is set as without the option.
func TestOOMBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, c := range map[string]struct {
		dir     string
		refresh time.Duration
		want    string
	}{
		"missing":      {filepath.Join(t.TempDir(), "none"), time.Hour, "no such file or directory"},
		"a file":       {file, time.Hour, "not a directory"},
		"not writable": {"/proc", time.Hour, "/proc/.oom-"},
		"no refresh":   {t.TempDir(), 0, "no refresh"},
	} {
		t.Run(name, func(t *testing.T) {
			fk := &fakeKnob{value: noLimit}
			te := newTestEnv(fk, nil)
			te.src.set(oomLimits(90, 0, 90))
			buf := new(bytes.Buffer)
			f, err := Apply(te.opts(Options{OOMProfile: c.dir, Refresh: c.refresh, Logger: slog.New(slog.NewTextHandler(buf, nil))}))
			require.NoError(t, err)
			t.Cleanup(func() { stop(f) })
			assert.ErrorContains(t, f.res.OOMCapture.Err, c.want)
			assert.ErrorIs(t, f.res.SettingErr, f.res.OOMCapture.Err)
			assert.Contains(t, buf.String(), "level=WARN msg=\"fitgo: memlimit: OOM capture: ")
			assert.Equal(t, soft(256), fk.value)
			assert.Empty(t, f.oom.dir, "off")
		})
	}
}

// TestOOMFullDisk: on a full file system (a 1 MiB tmpfs mounted by the
// test, as root), a capture fails with a Warn line, leaves no file and is
// not counted; once there is room, a later one is written.
func TestOOMFullDisk(t *testing.T) {
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		t.Skip("mounting a tmpfs needs root on Linux")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	fill, _ := os.Create(filepath.Join(dir, "fill"))
	fill.Write(make([]byte, 2<<20)) // as much as fits
	fill.Close()
	c, buf := newCapture(t)
	c.dir = dir
	now := time.Now()
	assert.Empty(t, stepped(c, now, oomLimits(240, 0, 230)))
	assert.Contains(t, buf.String(), "OOM capture failed")
	assert.Zero(t, c.written.Load(), "not counted")
	tmp, _ := filepath.Glob(filepath.Join(dir, ".oom-*"))
	assert.Empty(t, tmp)
	// Room again: the next capture, re-armed and after oomEvery, is written.
	require.NoError(t, os.Remove(filepath.Join(dir, "fill")))
	stepped(c, now.Add(time.Minute), oomLimits(100, 0, 90))
	assert.Len(t, stepped(c, now.Add(11*time.Minute), oomLimits(240, 0, 230)), 1)
	assert.Equal(t, int64(1), c.written.Load())
}

// TestOOMTickAllocs: a tick with the capture on that starts none allocates
// nothing.
func TestOOMTickAllocs(t *testing.T) {
	fk := &fakeKnob{value: noLimit}
	te := newTestEnv(fk, nil)
	te.src.set(oomLimits(100, 0, 90))
	_, s := applyFollowing(t, te, Options{OOMProfile: t.TempDir()})
	require.NotEmpty(t, s.oom.dir)
	lim := oomLimits(100, 0, 90)
	now := time.Now()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.tick(s.f, now, lim, nil) }))
	over := oomLimits(245, 0, 90) // over, captured once, then over and not re-armed
	s.tick(s.f, now, over, nil)
	s.oom.wg.Wait()
	assert.Equal(t, 1, s.Status().OOMCapture.Written)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.tick(s.f, now, over, nil) }))
}

// TestOOMCaptureCost: a capture at a 200 MiB heap of 1 KiB objects
// allocates less than oomCost, which the skip rule leaves under the limit.
func TestOOMCaptureCost(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200 MiB heap")
	}
	keep := make([][]byte, 0, 200<<10)
	for range cap(keep) {
		keep = append(keep, make([]byte, 1<<10))
	}
	runtime.GC()
	c, _ := newCapture(t)
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before, start := s[0].Value.Uint64(), time.Now()
	c.wg.Add(1)
	c.capture(oomReading{at: time.Now(), level: cgroup.Level{Usage: 240 * MiB}, limit: 256 * MiB, held: 240 * MiB, rssAnon: 230 * MiB})
	took := time.Since(start)
	metrics.Read(s)
	got := int64(s[0].Value.Uint64() - before)
	t.Logf("a capture at a %d MiB heap allocated %s and took %v", len(keep)>>10, formatBytes(got), took)
	assert.Less(t, got, int64(oomCost))
	assert.Len(t, captures(c.dir), 1)
}

// FuzzParseCaptureName: a name that parses is the capture's name of its
// time and pid, with one of the two extensions.
func FuzzParseCaptureName(f *testing.F) {
	for _, s := range []string{"oom-1800000000-1.pb.gz", "oom-1-2.txt", "oom--1-2.txt", "oom-01-2.txt", "oom-1-2", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, unix, pid, ok := parseCaptureName(name)
		if !ok {
			return
		}
		assert.Equal(t, fmt.Sprintf("oom-%d-%d", unix, pid), base)
		assert.True(t, name == base+".txt" || name == base+".pb.gz", name)
	})
}
