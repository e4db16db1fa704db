package memlimit

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/cgroup"
)

// The OOM capture (Options.OOMProfile, FITGO=oomprofile=DIR). At a refresh
// reading where the memory held (as the headroom counts it) at the level
// whose limit binds first passes oomPercent of that limit, or a level's Hits
// rose with at least half of it held, a goroutine writes a heap profile and a
// one-screen breakdown of who holds the memory into the directory (step).
// It sees only the cgroup levels, not an UpperLimit or FITGO_MEMORY_LIMIT,
// and a limit hit between two readings leaves none. docs/observability.md
// says the rest.
const (
	// oomPercent: past 90 % of the limit the Go heap alone is over the
	// policy's GOMEMLIMIT (0.9 of the limit), so the GC cannot hold it: a
	// leak, memory outside Go or the others; the last 10 % leave a reading or
	// two for the capture at tens of MiB/s under a limit of hundreds of MiB.
	oomPercent = 90
	// oomEvery: at most one capture per 10 minutes, so that a process that
	// hovers at the threshold writes one, not one per reading.
	oomEvery = 10 * time.Minute
	// oomKeep: the last 3 captures, those of a crash loop's latest kills.
	oomKeep = 3
	// oomMaxBytes bounds the captures on disk at 64 MiB: an emptyDir counts
	// against the pod's ephemeral storage. A heap profile is tens of KiB.
	oomMaxBytes = 64 << 20
	// oomCost is what a capture may allocate, above the 1.1 MiB measured at
	// a 200 MiB heap (TestOOMCaptureCost): with less than this left under
	// the limit a capture is skipped, lest it cause the kill.
	oomCost = 4 << 20
)

// oomCapture is a Fit's OOM capture. dir ("": off), log and pid do not
// change; busy is set while a capture is written (wg); the rest is the
// refresh goroutine's.
type oomCapture struct {
	dir     string
	log     *slog.Logger
	pid     int
	busy    atomic.Bool
	written atomic.Int64 // Result.OOMCapture.Written
	wg      sync.WaitGroup
	armed   bool      // below the threshold since the last trigger
	last    time.Time // the last capture's start
	skipped bool      // the skip's Warn line was logged
	hits    uint64    // the levels' Hits at the last reading
	levels  int       // and their number: another is no rise
}

// oomReading is what a capture's breakdown takes from a reading.
type oomReading struct {
	at              time.Time
	level           cgroup.Level
	from            limitFile
	limit, held     int64
	rssAnon, lazy   int64 // lazy: the level's lazily freed pages (levelOf)
	guardSteps      int
	gomemlimitOfFit int64
	rose            uint64 // the rise of the Hits that started it; 0: the threshold did
}

// startOOM checks dir at Apply and looks there for an earlier process's
// capture; the capture is off, with the error in r.OOMCapture.Err and
// r.SettingErr, when dir is not a writable directory or there is no refresh.
func (f *Fit) startOOM(dir string, refresh time.Duration, r *Result) {
	if dir == "" {
		return
	}
	c := &f.oom
	r.OOMCapture.Dir, c.log, c.pid, c.armed = dir, f.log, os.Getpid(), true
	err := checkDir(dir)
	if err == nil && refresh <= 0 {
		err = errors.New("memlimit: OOM capture: no refresh, at whose readings it is taken")
	}
	if r.OOMCapture.Err = err; err != nil {
		r.SettingErr = errors.Join(r.SettingErr, err)
		return
	}
	c.dir = dir
	for _, p := range captures(dir) { // an earlier process's: another pid, or ours (a container's pid 1) before now
		if p.pid != c.pid || p.unix <= time.Now().Unix() {
			r.OOMCapture.Previous, r.OOMCapture.At = filepath.Join(dir, p.base+".txt"), time.Unix(p.unix, 0)
			break
		}
	}
}

// checkDir reports whether dir is a directory where files can be made.
func checkDir(dir string) error {
	probe, err := os.CreateTemp(dir, ".oom-*.tmp")
	if err != nil {
		return fmt.Errorf("memlimit: OOM capture: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// step looks at a reading lim of the refresh at now, where the Fit's value
// is want and the leak guard has taken steps, and starts a capture when
// it is due. It allocates nothing unless it starts one or logs.
func (c *oomCapture) step(now time.Time, lim *cgroup.Limits, want int64, steps int) {
	if c.dir == "" {
		return
	}
	m := &lim.Memory
	var rd oomReading
	var hits uint64
	for _, lv := range m.Levels {
		l, from, held, lazy := levelOf(m, lv)
		if hits += lv.Hits; l > 0 && (rd.limit == 0 || l-held < rd.limit-rd.held) {
			rd = oomReading{at: now, level: lv, from: from, limit: l, held: held, lazy: lazy}
		}
	}
	over := rd.limit > 0 && rd.held >= rd.limit-rd.limit/100*(100-oomPercent)
	c.armed = c.armed || !over
	start := over && c.armed // the threshold, else a rise of the Hits
	if !start && len(m.Levels) == c.levels && hits > c.hits && rd.held >= rd.limit/2 && rd.limit > 0 {
		rd.rose, start = hits-c.hits, true
	}
	c.hits, c.levels = hits, len(m.Levels)
	if !start || !c.last.IsZero() && now.Sub(c.last) < oomEvery || c.busy.Load() {
		return
	}
	c.armed = false
	if rd.limit-rd.held < oomCost {
		if !c.skipped && c.log != nil {
			c.log.Warn("fitgo: memory near the limit, but too little left for an OOM capture; skipped",
				"held", logBytes(rd.held), "limit", logBytes(rd.limit), "needs", logBytes(oomCost))
		}
		c.skipped = true
		return
	}
	c.last = now
	c.busy.Store(true)
	rd.rssAnon, rd.guardSteps, rd.gomemlimitOfFit = m.RssAnon, steps, want
	c.wg.Add(1)
	go c.capture(rd)
}

// capture writes the heap profile and the breakdown of rd, then keeps the
// last captures.
func (c *oomCapture) capture(rd oomReading) {
	defer c.wg.Done()
	defer c.busy.Store(false)
	base := "oom-" + strconv.FormatInt(rd.at.Unix(), 10) + "-" + strconv.Itoa(c.pid)
	text, largest := breakdown(rd, base)
	err := writeFile(c.dir, base+".pb.gz", pprof.WriteHeapProfile)
	if err == nil {
		err = writeFile(c.dir, base+".txt", func(w io.Writer) error { _, err := io.WriteString(w, text); return err })
	}
	if err != nil { // no profile without its breakdown
		os.Remove(filepath.Join(c.dir, base+".pb.gz"))
	}
	if err = errors.Join(err, c.keep(base)); err == nil {
		c.written.Add(1)
	}
	switch {
	case c.log == nil:
	case err != nil:
		c.log.Warn("fitgo: OOM capture failed", "dir", c.dir, "err", err)
	default:
		c.log.Warn("fitgo: memory near the limit; OOM capture written", "profile", filepath.Join(c.dir, base+".pb.gz"),
			"breakdown", filepath.Join(c.dir, base+".txt"), "held", logBytes(rd.held), "limit", logBytes(rd.limit), "largest", largest)
	}
}

// writeFile writes name in dir by write, through a temporary file renamed.
func writeFile(dir, name string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(dir, ".oom-*.tmp")
	if err != nil {
		return err
	}
	err = errors.Join(write(f), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// keep deletes the captures in the directory beyond the newest oomKeep and
// oomMaxBytes (the newest of all, just written as base, too if it alone is
// over), and temporary files left by a killed process.
func (c *oomCapture) keep(base string) error {
	var total int64
	var errs []error
	for i, p := range captures(c.dir) {
		if total += p.size; i < oomKeep && total <= oomMaxBytes {
			continue
		}
		if p.base == base {
			errs = append(errs, fmt.Errorf("the capture (%s) is over %s: deleted", formatBytes(p.size), formatBytes(oomMaxBytes)))
		}
		for _, ext := range [...]string{".pb.gz", ".txt"} {
			if err := os.Remove(filepath.Join(c.dir, p.base+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	tmp, _ := filepath.Glob(filepath.Join(c.dir, ".oom-*.tmp"))
	for _, name := range tmp {
		os.Remove(name)
	}
	return errors.Join(errs...)
}

// capturedFile is a capture in the directory: its name without the
// extension, when and by which process it was written, its size in bytes.
type capturedFile struct {
	base       string
	unix, size int64
	pid        int
}

// captures lists the captures in dir, newest first, by their names.
func captures(dir string) []capturedFile {
	entries, _ := os.ReadDir(dir)
	var out []capturedFile
	for _, e := range entries {
		base, unix, pid, ok := parseCaptureName(e.Name())
		info, err := e.Info()
		if !ok || err != nil {
			continue
		}
		if n := len(out); n > 0 && out[n-1].base == base { // .pb.gz, then .txt
			out[n-1].size += info.Size()
		} else {
			out = append(out, capturedFile{base: base, unix: unix, pid: pid, size: info.Size()})
		}
	}
	slices.SortFunc(out, func(a, b capturedFile) int { return cmp.Or(cmp.Compare(b.unix, a.unix), cmp.Compare(b.base, a.base)) })
	return out
}

// parseCaptureName parses a capture's file name, oom-<unix>-<pid>.pb.gz or
// .txt, into its name without the extension and its time and pid.
func parseCaptureName(name string) (base string, unix int64, pid int, ok bool) {
	base, ok = strings.CutSuffix(name, ".pb.gz")
	if !ok {
		base, ok = strings.CutSuffix(name, ".txt")
	}
	u, p, _ := strings.Cut(strings.TrimPrefix(base, "oom-"), "-")
	unix, _ = strconv.ParseInt(u, 10, 64)
	pid, _ = strconv.Atoi(p)
	if !ok || pid <= 0 || base != "oom-"+strconv.FormatInt(unix, 10)+"-"+strconv.Itoa(pid) { // the one spelling of the name
		return "", 0, 0, false
	}
	return base, unix, pid, true
}

// breakdown is the text of a capture of rd, named base, and its largest
// holder, with the runtime's classes read now.
func breakdown(rd oomReading, base string) (string, string) {
	s := append(newSamples(), metrics.Sample{Name: "/memory/classes/heap/stacks:bytes"},
		metrics.Sample{Name: "/memory/classes/os-stacks:bytes"}) // at nMetrics
	metrics.Read(s)
	v := func(i int) int64 { return int64(min(u64(s[i]), 1<<62)) }
	total, inUse, free, released, stacks := v(mTotal), v(mObjects)+v(mUnused), v(mFree), v(mReleased), v(nMetrics)+v(nMetrics+1)
	resident, rt := total-released, gcOf(s)
	own := max(rd.rssAnon-rd.lazy, 0)
	goOwn := min(own, resident)
	names := [...]string{"the Go runtime", "outside Go (cgo, mmap)", "others (processes, tmpfs)"}
	held := [...]int64{goOwn, own - goOwn, max(rd.held-own, 0)}
	largest := slices.Index(held[:], slices.Max(held[:]))
	gcShare := 0.0
	if rt.cpu > 0 {
		gcShare = rt.forced() / rt.cpu * 100
	}
	gomemlimit := debug.SetMemoryLimit(-1)
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("fitgo OOM capture %s, pid %d, %s\n", base, os.Getpid(), rd.at.UTC().Format(time.RFC3339))
	why := fmt.Sprintf("past %d %%", oomPercent)
	if hits := "memory.events.local high and max"; rd.rose > 0 {
		if rd.from == limitInBytes {
			hits = "memory.failcnt"
		}
		why = fmt.Sprintf("a limit reached since the last reading (%s +%d)", hits, rd.rose)
	}
	p("limit %s %s at %s; %s (%d %%) held, %s\n", rd.from, formatBytes(rd.limit), rd.level.Dir,
		formatBytes(rd.held), rd.held*100/rd.limit, why)
	p("largest holder: %s, %s\n\n", names[largest], formatBytes(held[largest]))
	p("%-28s %10s\n", "usage", formatBytes(rd.level.Usage))
	p("%-28s %10s  (reclaimable, not held)\n", "page cache", formatBytes(rd.level.File))
	p("%-28s %10s  (MADV_FREE, not held)\n", "lazily freed", formatBytes(rd.lazy))
	p("%-28s %10s  = usage − page cache − lazily freed\n", "held", formatBytes(rd.held))
	for i, n := range names {
		p("  %-26s %10s\n", n, formatBytes(held[i]))
	}
	p("\nthe Go runtime (runtime/metrics /memory/classes)\n")
	p("  %-26s %10s\n  %-26s %10s\n  %-26s %10s\n  %-26s %10s\n  %-26s %10s\n", "heap in use", formatBytes(inUse),
		"heap free", formatBytes(free), "heap released", formatBytes(released), "stacks", formatBytes(stacks),
		"other", formatBytes(total-inUse-free-released-stacks))
	p("\nGOMEMLIMIT %s (fitgo's %s), GOGC %d, GC CPU %.1f %% since start, leak guard steps %d of %d\n",
		formatBytes(gomemlimit), formatBytes(rd.gomemlimitOfFit), rt.gogc, gcShare, rd.guardSteps, guardSteps)
	p("heap profile: %s.pb.gz (go tool pprof -top %s.pb.gz)\n", base, base)
	return b.String(), names[largest]
}
