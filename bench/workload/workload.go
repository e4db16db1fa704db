// Package workload is the benchmark's workload: a latency-sensitive service under
// GC pressure. It keeps a live heap of small pointer-linked objects, replaces
// part of it at a paced allocation rate, and serves an open-loop stream of
// requests at a fixed rate, each doing a fixed slice of CPU work. Request
// latency is measured from each request's scheduled time, so stalls (GC,
// CFS throttling, a scheduler backlog) are not hidden by a slow generator
// (no coordinated omission).
//
// At the end it reports, as one JSON object (results.Workload), GOMAXPROCS and
// GOMEMLIMIT, GC cycles and stop-the-world pause percentiles, scheduling
// latency, GC CPU fraction, request latency percentiles, requests completed,
// peak RSS, and the cpu.stat delta of its CPU cgroup, read with fitgo's cgroup
// package.
//
// Each benchmark variant is a tiny main package (bench/cmd/<variant>) that
// differs only in its imports and //go:debug directives and calls Main.
package workload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/stats"
	"github.com/fitgo/fitgo/cgroup"
)

// Config configures a run. The zero value of a field means its default.
type Config struct {
	// Variant names the binary in the output.
	Variant string
	// Duration of the measured window (default 10s).
	Duration time.Duration
	// HeapMiB is the live heap to keep (default 100).
	HeapMiB float64
	// AllocMiBPerSec is the allocation rate, requests included (default 50).
	AllocMiBPerSec float64
	// Rate is the number of requests per second (default 1000).
	Rate float64
	// WorkIterations is the CPU work of a request in iterations of the work
	// loop; when zero, it is calibrated at start-up to take Work.
	WorkIterations int
	// Work is the CPU time of a request that calibration aims at (default 75µs).
	Work time.Duration
	// Ticker is how the request generator wakes up: TickerNetpoll (the
	// default) or TickerSleep.
	Ticker string
	// ReportEvery, when positive, writes a results.Progress line to Progress at
	// this interval, from process start.
	ReportEvery time.Duration
	// Progress receives the progress lines (Main: stderr).
	Progress io.Writer
	// GrowMiBPerSec, when positive, makes the live heap grow at this rate for
	// the measured window, from HeapMiB: a leak.
	GrowMiBPerSec float64
	// OutsideMiB, when positive, is memory the process holds outside the Go
	// runtime from the start, through OutsideVia: "cgo" (C's malloc) or
	// "mmap" (anonymous), every page written, as a service's C library or
	// mapped cache would.
	OutsideMiB float64
	OutsideVia string
	// DrainTimeout bounds the wait for in-flight requests after the window
	// (default 30s).
	DrainTimeout time.Duration
	// Warmup, when positive, runs the allocation at AllocMiBPerSec for this
	// long after the live heap is built and before the measured window, with
	// no requests: a GC policy has its first readings before measurement, as
	// in a long-running service.
	Warmup time.Duration
	// GCPolicy, when set, reads the fitting library's GC policy; the
	// workload calls it at the end of the window (Workload.GCPolicy).
	GCPolicy func() results.GCPolicy
}

// Defaults of Config.
const (
	DefaultDuration       = 10 * time.Second
	DefaultHeapMiB        = 100
	DefaultAllocMiBPerSec = 50
	DefaultRate           = 1000
	DefaultWork           = 75 * time.Microsecond
)

func (c *Config) setDefaults() {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.HeapMiB <= 0 {
		c.HeapMiB = DefaultHeapMiB
	}
	if c.AllocMiBPerSec <= 0 {
		c.AllocMiBPerSec = DefaultAllocMiBPerSec
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Work <= 0 {
		c.Work = DefaultWork
	}
	if c.Ticker == "" {
		c.Ticker = TickerNetpoll
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
}

// processStart approximates the process's start: package initialisation.
var processStart = time.Now()

// Main is the variant binaries' main function: it parses the command line,
// runs the workload, prints the result as one JSON line on stdout and exits.
// With -calibrate it prints the work iterations for -work and exits.
func Main(variant string) {
	os.Exit(main1(Config{Variant: variant}, os.Args[1:], os.Stdout, os.Stderr))
}

// MainGC is Main for a binary whose fitting library has a GC policy: policy
// reads it at the end of the window, for the result.
func MainGC(variant string, policy func() results.GCPolicy) {
	os.Exit(main1(Config{Variant: variant, GCPolicy: policy}, os.Args[1:], os.Stdout, os.Stderr))
}

func main1(cfg Config, args []string, stdout, stderr io.Writer) int {
	variant := cfg.Variant
	fs := flag.NewFlagSet(variant, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Progress = stderr
	fs.DurationVar(&cfg.Duration, "duration", DefaultDuration, "length of the measured window")
	fs.Float64Var(&cfg.HeapMiB, "heap-mib", DefaultHeapMiB, "live heap to keep, MiB")
	fs.Float64Var(&cfg.AllocMiBPerSec, "alloc-mib", DefaultAllocMiBPerSec, "allocation rate, MiB/s (requests included)")
	fs.Float64Var(&cfg.Rate, "rate", DefaultRate, "requests per second (open loop)")
	fs.DurationVar(&cfg.Work, "work", DefaultWork, "CPU work per request, calibrated at start-up unless -work-iters is set")
	fs.IntVar(&cfg.WorkIterations, "work-iters", 0, "CPU work per request in loop iterations (0: calibrate for -work)")
	fs.StringVar(&cfg.Ticker, "ticker", TickerNetpoll, "how the request generator wakes up: netpoll (a timerfd in the network poller, like requests arriving on sockets) or sleep (runtime timers)")
	fs.Float64Var(&cfg.GrowMiBPerSec, "grow-mib", 0, "grow the live heap by this many MiB/s during the window, never freeing it (a leak; 0: a steady heap)")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "allocate at -alloc-mib for this long after the heap is built, before the measured window, with no requests (0: none)")
	fs.DurationVar(&cfg.ReportEvery, "report-every", 0, "write a JSON progress line (GOMAXPROCS, GOMEMLIMIT, requests, ...) to stderr at this interval (0: never)")
	fs.Float64Var(&cfg.OutsideMiB, "outside-mib", 0, "memory to hold outside the Go runtime from the start, MiB (0: none)")
	fs.StringVar(&cfg.OutsideVia, "outside-via", "mmap", "how to hold -outside-mib: cgo (C's malloc; a binary built with cgo) or mmap (anonymous)")
	calibrate := fs.Bool("calibrate", false, "print the -work-iters that take -work on this machine, and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags]\n\nThe fitgo benchmark workload (variant %q). Prints one JSON result on stdout.\n\n", variant, variant)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *calibrate {
		fmt.Fprintln(stdout, Calibrate(cfg.Work))
		return 0
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintf(stderr, "workload: %v\n", err)
		return 1
	}
	b, err := jsonMarshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "workload: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// node is an object of the live heap: 32 bytes, two pointers, like the nodes
// of the trees, lists and small structs that make up a service's heap.
type node struct {
	left, right *node
	key, val    uint64
}

// groupNodes is the number of nodes in a group, the unit of allocation: a
// binary tree of 32 nodes (1 KiB).
const (
	groupNodes = 32
	nodeBytes  = 32
	groupBytes = groupNodes * nodeBytes
)

func newGroup(seed uint64) *node {
	var ns [groupNodes]*node
	for i := range ns {
		ns[i] = &node{key: seed + uint64(i)}
	}
	for i := range ns {
		if l := 2*i + 1; l < groupNodes {
			ns[i].left = ns[l]
		}
		if r := 2*i + 2; r < groupNodes {
			ns[i].right = ns[r]
		}
	}
	return ns[0]
}

func walk(n *node) (sum uint64) {
	for n != nil {
		sum += n.key
		if n.right != nil {
			sum += walk(n.right)
		}
		n = n.left
	}
	return sum
}

// heap is the live set: a fixed number of groups, replaced at random.
type heap struct {
	groups []atomic.Pointer[node]
}

func newHeap(mib float64) *heap {
	n := max(int(mib*(1<<20)/groupBytes), 1)
	h := &heap{groups: make([]atomic.Pointer[node], n)}
	for i := range h.groups {
		h.groups[i].Store(newGroup(uint64(i)))
	}
	return h
}

// replace allocates a new group in place of a random one, which becomes garbage.
func (h *heap) replace(r uint64) {
	h.groups[r%uint64(len(h.groups))].Store(newGroup(r))
}

func (h *heap) read(r uint64) uint64 {
	return walk(h.groups[r%uint64(len(h.groups))].Load())
}

// spin is the request's CPU work: iters rounds of xorshift.
func spin(iters int, x uint64) uint64 {
	x |= 1
	for range iters {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sink atomic.Uint64

// Calibrate returns the number of spin iterations that take about target on
// this machine: the fastest of several trials, so that preemption and
// throttling during calibration bias it as little as possible.
func Calibrate(target time.Duration) int {
	const n = 200_000
	best := time.Duration(math.MaxInt64)
	for range 15 {
		t0 := time.Now()
		sink.Add(spin(n, uint64(t0.UnixNano())))
		best = min(best, time.Since(t0))
	}
	return max(int(float64(n)*float64(target)/float64(best)), 1)
}

// metricNames are the runtime/metrics the workload reads.
var metricNames = []string{
	"/gc/cycles/total:gc-cycles",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/gogc:percent",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
}

type snapshot struct {
	gcCycles     uint64
	pauses       *metrics.Float64Histogram
	sched        *metrics.Float64Histogram
	gcCPU, total float64
	heapLive     uint64
	heapGoal     uint64
	gogc         int64
	stacks       uint64
	globals      uint64
	gcIdle, idle float64 // idle marking, and idle CPU
}

func readMetrics() snapshot {
	s := make([]metrics.Sample, len(metricNames))
	for i, n := range metricNames {
		s[i].Name = n
	}
	metrics.Read(s)
	return snapshot{
		gcCycles: s[0].Value.Uint64(),
		pauses:   stats.CloneHistogram(s[1].Value.Float64Histogram()),
		sched:    stats.CloneHistogram(s[2].Value.Float64Histogram()),
		gcCPU:    s[3].Value.Float64(),
		total:    s[4].Value.Float64(),
		heapLive: s[5].Value.Uint64(),
		heapGoal: s[6].Value.Uint64(),
		gogc:     int64(s[7].Value.Uint64()),
		stacks:   s[8].Value.Uint64(),
		globals:  s[9].Value.Uint64(),
		gcIdle:   s[10].Value.Float64(),
		idle:     s[11].Value.Float64(),
	}
}

func histPercentiles(h *metrics.Float64Histogram) results.Percentiles {
	ms := func(v float64) results.Float { return results.Float(v * 1000) }
	return results.Percentiles{
		P50:  ms(stats.HistogramQuantile(h, 0.5)),
		P99:  ms(stats.HistogramQuantile(h, 0.99)),
		P999: ms(stats.HistogramQuantile(h, 0.999)),
		Max:  ms(stats.HistogramMax(h)),
	}
}

// histSum estimates the sum of a histogram's samples from bucket midpoints
// (finite boundaries only).
func histSum(h *metrics.Float64Histogram) float64 {
	var sum float64
	for i, c := range h.Counts {
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		switch {
		case c == 0:
		case math.IsInf(lo, -1):
			sum += float64(c) * hi
		case math.IsInf(hi, 1):
			sum += float64(c) * lo
		default:
			sum += float64(c) * (lo + hi) / 2
		}
	}
	return sum
}

func memLimit() int64 { return debug.SetMemoryLimit(-1) }

// Run runs the workload: it builds the live heap, then for cfg.Duration
// schedules requests at cfg.Rate while allocating at cfg.AllocMiBPerSec, waits
// for the last request, and returns the measurements. ctx cancels the run.
func Run(ctx context.Context, cfg Config) (*results.Workload, error) {
	cfg.setDefaults()
	if cfg.WorkIterations <= 0 {
		cfg.WorkIterations = Calibrate(cfg.Work)
	}
	res := &results.Workload{
		Type:      results.TypeResult,
		Variant:   cfg.Variant,
		GoVersion: runtime.Version(),
		Config: results.Config{
			HeapMiB:         cfg.HeapMiB,
			AllocMiBPerSec:  cfg.AllocMiBPerSec,
			RequestsPerSec:  cfg.Rate,
			WorkIterations:  cfg.WorkIterations,
			WorkMicros:      float64(cfg.Work) / float64(time.Microsecond),
			DurationSeconds: cfg.Duration.Seconds(),
			WarmupSeconds:   cfg.Warmup.Seconds(),
		},
	}

	var (
		phase     atomic.Value // a phaseAt
		completed atomic.Uint64
		latencies latHist // every request, for the limit window's p99
	)
	phase.Store(phaseAt{"setup", processStart})
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.ReportEvery > 0 && cfg.Progress != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			t := time.NewTicker(cfg.ReportEvery)
			defer t.Stop()
			var win *windowStart
			for {
				select {
				case <-progressDone:
					return
				case <-t.C:
				}
				snap := readMetrics()
				ph := phase.Load().(phaseAt)
				p := results.Progress{
					Type: results.TypeProgress, Variant: cfg.Variant,
					ElapsedMS: msSince(processStart),
					Phase:     ph.name, PhaseMS: msSince(ph.since),
					GOMAXPROCS: runtime.GOMAXPROCS(0), GOMEMLIMIT: memLimit(),
					Requests: completed.Load(), GCCycles: snap.gcCycles,
					HeapLiveBytes: int64(snap.heapLive), RSSBytes: rss(),
					HeapGoalBytes: int64(snap.heapGoal), GCCPUSeconds: snap.gcCPU, CPUSeconds: snap.total,
					GOGC: int(snap.gogc),
				}
				p.LimitBound = limitBound(snap.heapGoal, snap.heapLive, snap.stacks, snap.globals, snap.gogc, p.GOMEMLIMIT)
				if win == nil && p.LimitBound {
					win = &windowStart{ms: p.ElapsedMS, requests: p.Requests, gcCPU: snap.gcCPU, total: snap.total, lat: latencies.snapshot()}
				}
				if win != nil {
					p.Window = win.window(p.Requests, snap, latencies.snapshot())
				}
				if b, err := jsonMarshal(p); err == nil {
					fmt.Fprintf(cfg.Progress, "%s\n", b)
				}
			}
		}()
	}
	defer func() {
		close(progressDone)
		progressWG.Wait()
	}()

	if cfg.OutsideMiB > 0 {
		release, err := holdOutside(cfg.OutsideVia, int(cfg.OutsideMiB*(1<<20)))
		if err != nil {
			return nil, fmt.Errorf("holding %v MiB through %s: %w", cfg.OutsideMiB, cfg.OutsideVia, err)
		}
		defer release()
	}
	h := newHeap(cfg.HeapMiB)
	runtime.GC() // start from a settled heap: the next goal follows the live heap
	if cfg.Warmup > 0 {
		t0 := time.Now()
		phase.Store(phaseAt{"warmup", t0})
		wctx, cancel := context.WithTimeout(ctx, cfg.Warmup)
		allocate(wctx, h, cfg.AllocMiBPerSec*(1<<20), t0)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res.WarmupMS = msSince(t0)
	}

	// The background allocator supplies the allocation rate less what the
	// requests allocate (one group each).
	bgRate := cfg.AllocMiBPerSec*(1<<20) - cfg.Rate*groupBytes
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	nreq := int(cfg.Duration / interval)
	lat := make([]time.Duration, nreq)
	done := make([]bool, nreq)

	res.GOMAXPROCSStart, res.GOMEMLIMITStart = runtime.GOMAXPROCS(0), memLimit()
	cg, cpuErr := cgroup.NewWatcher(os.DirFS("/"))
	var cpu0, cpu1 cgroup.Stats
	if cpuErr == nil {
		defer cg.Close()
		cpu0, cpuErr = cg.Stats()
	}
	m0 := readMetrics()
	start := time.Now()
	res.SetupMS = float64(start.Sub(processStart)) / float64(time.Millisecond)
	phase.Store(phaseAt{"run", start})

	runCtx, stop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	var goalMax atomic.Uint64
	bg.Add(1)
	go func() {
		defer bg.Done()
		heapGoalMax(runCtx, &goalMax)
	}()
	if bgRate > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			allocate(runCtx, h, bgRate, start)
		}()
	}
	if cfg.GrowMiBPerSec > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			grow(runCtx, cfg.GrowMiBPerSec*(1<<20), start)
		}()
	}

	tk, kind, err := newTicker(cfg.Ticker, start.Add(interval), interval)
	if err != nil {
		stop()
		bg.Wait()
		return nil, err
	}
	res.Config.Ticker = kind
	go func() {
		<-runCtx.Done()
		tk.Close()
	}()
	var reqs sync.WaitGroup
	for i := 0; i < nreq; {
		// Dispatch every request that is due, each at its scheduled time: a
		// late wake-up delays them, and their latency shows it.
		for now := time.Now(); i < nreq; i++ {
			sched := start.Add(time.Duration(i) * interval)
			if sched.After(now) {
				break
			}
			reqs.Add(1)
			go func(i int, sched time.Time) {
				defer reqs.Done()
				r := uint64(sched.UnixNano()) * 0x9e3779b97f4a7c15
				sink.Add(spin(cfg.WorkIterations, r) + h.read(r>>7))
				h.replace(r >> 11)
				lat[i] = time.Since(sched)
				latencies.add(lat[i])
				done[i] = true
				completed.Add(1)
			}(i, sched)
		}
		if i == nreq || tk.Wait() != nil {
			break
		}
	}
	drained := make(chan struct{})
	go func() { reqs.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(cfg.DrainTimeout):
	case <-ctx.Done():
	}
	end := time.Now()
	m1 := readMetrics()
	stop()
	if cfg.GCPolicy != nil {
		p := cfg.GCPolicy()
		res.GCPolicy = &p
	}
	var cpuErr1 error
	if cpuErr == nil {
		cpu1, cpuErr1 = cg.Stats()
	}
	bg.Wait()

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-drained:
	default:
		return nil, fmt.Errorf("%d of %d requests still running after the drain timeout %v", uint64(nreq)-completed.Load(), nreq, cfg.DrainTimeout)
	}

	res.GOMAXPROCS, res.GOMEMLIMIT = runtime.GOMAXPROCS(0), memLimit()
	res.DurationMS = float64(end.Sub(start)) / float64(time.Millisecond)
	res.RequestsScheduled = uint64(nreq)
	var sorted []time.Duration
	for i, d := range lat {
		if done[i] {
			sorted = append(sorted, d)
		}
	}
	slices.Sort(sorted)
	res.Requests = uint64(len(sorted))
	toMS := func(d time.Duration) results.Float {
		if len(sorted) == 0 {
			return results.Float(math.NaN())
		}
		return results.Float(float64(d) / float64(time.Millisecond))
	}
	res.Latency = results.Percentiles{
		P50:  toMS(stats.Quantile(sorted, 0.5)),
		P99:  toMS(stats.Quantile(sorted, 0.99)),
		P999: toMS(stats.Quantile(sorted, 0.999)),
		Max:  toMS(stats.Quantile(sorted, 1)),
	}
	res.GCCycles = m1.gcCycles - m0.gcCycles
	pauses := stats.HistogramSub(m1.pauses, m0.pauses)
	res.GCPause = histPercentiles(pauses)
	res.GCPauseTotalMS = histSum(pauses) * 1000
	res.SchedLatency = histPercentiles(stats.HistogramSub(m1.sched, m0.sched))
	res.GCCPUSeconds = m1.gcCPU - m0.gcCPU
	res.GCIdleCPUSeconds = m1.gcIdle - m0.gcIdle
	res.UsedCPUSeconds = (m1.total - m1.idle) - (m0.total - m0.idle)
	res.GCCPUFraction = results.Float(math.NaN())
	if tot := m1.total - m0.total; tot > 0 && res.GCCycles > 0 {
		res.GCCPUFraction = results.Float(res.GCCPUSeconds / tot)
	}
	res.HeapLiveBytes = int64(m1.heapLive)
	res.GOGC = int(m1.gogc)
	res.HeapGoalMaxBytes = int64(max(goalMax.Load(), m0.heapGoal, m1.heapGoal))
	res.PeakRSSBytes = peakRSS()
	switch {
	case cpuErr != nil:
		res.CPUStatError = cpuErr.Error()
	case cpuErr1 != nil:
		res.CPUStatError = cpuErr1.Error()
	case cpu0.CPU.Dir == "" || cpu1.CPU.Dir == "":
		res.CPUStatError = "no cpu.stat in the process's CPU cgroup"
	default:
		res.Pressure = results.NewPressure(cpu1, cpu0, end.Sub(start))
		res.CPUStat = &results.CPUStat{
			Periods:          cpu1.CPU.Periods - cpu0.CPU.Periods,
			ThrottledPeriods: cpu1.CPU.ThrottledPeriods - cpu0.CPU.ThrottledPeriods,
			ThrottledMS:      float64(cpu1.CPU.ThrottledTime-cpu0.CPU.ThrottledTime) / float64(time.Millisecond),
		}
	}
	return res, nil
}

// phaseAt is the workload's phase and when it began.
type phaseAt struct {
	name  string
	since time.Time
}

// heapGoalEvery is how often heapGoalMax samples the heap goal: a goal
// holds for a GC cycle, which at the gc scenario's rates lasts 100 ms or
// more.
const heapGoalEvery = 10 * time.Millisecond

// heapGoalMax keeps the largest /gc/heap/goal:bytes in top until ctx is done.
func heapGoalMax(ctx context.Context, top *atomic.Uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	t := time.NewTicker(heapGoalEvery)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > top.Load() {
			top.Store(v)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// windowStart is the state of the process when its heap goal was first set
// by GOMEMLIMIT.
type windowStart struct {
	ms           float64
	requests     uint64
	gcCPU, total float64
	lat          *metrics.Float64Histogram
}

// window returns the figures from w to now.
func (w *windowStart) window(requests uint64, now snapshot, lat *metrics.Float64Histogram) *results.Window {
	out := &results.Window{
		StartMS:       w.ms,
		Requests:      requests - w.requests,
		LatencyP99MS:  results.Float(stats.HistogramQuantile(stats.HistogramSub(lat, w.lat), 0.99) * 1000),
		GCCPUFraction: results.Float(math.NaN()),
	}
	if d := now.total - w.total; d > 0 {
		out.GCCPUFraction = results.Float((now.gcCPU - w.gcCPU) / d)
	}
	return out
}

// allocate replaces heap groups at rate bytes per second from start until ctx
// is done. It keeps to the schedule: after a stall it catches up (at most one
// second's worth), as incoming traffic would.
func allocate(ctx context.Context, h *heap, rate float64, start time.Time) {
	var allocated float64
	var seed uint64 = 0x2545f4914f6cdd1d
	for ctx.Err() == nil {
		due := rate * time.Since(start).Seconds()
		if due-allocated > rate {
			allocated = due - rate
		}
		for allocated < due {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			h.replace(seed)
			allocated += groupBytes
		}
		time.Sleep(time.Millisecond)
	}
}

func msSince(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }
