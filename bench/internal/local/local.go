// Package local is the benchmark's local runner (go run -C bench . local): it
// builds the variants' workload binaries, creates a cgroup per run in a
// writable cgroup v1 or v2 hierarchy, sets the scenario's CPU quota and memory
// limit, starts the workload inside it, runs the variants interleaved for
// several rounds, removes its cgroups, and prints (and with -out writes) the
// medians.
package local

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/settings"
	"github.com/fitgo/fitgo/bench/internal/variant"
	"github.com/fitgo/fitgo/bench/workload"
	"github.com/fitgo/fitgo/cgroup"
)

// Scenarios.
const (
	ScenarioCPU     = "cpu"      // a CPU quota sweep
	ScenarioNested  = "nested"   // the quota on a parent cgroup only
	ScenarioMemory  = "memory"   // a memory limit below the untuned heap's peak
	ScenarioSweep   = "sweep"    // CPU quotas × load levels, with the static oracles
	ScenarioShared  = "shared"   // a memory limit shared with a sidecar process
	ScenarioLeak    = "leak"     // a live heap that grows until the limit kills it
	ScenarioGC      = "gc"       // a CPU quota with a roomy memory limit: GC policies
	ScenarioInPlace = "in-place" // -in-place: the current cgroup's limits
)

// Layouts of the shared scenario: where the sidecar runs.
const (
	// LayoutSibling: the limit on a parent cgroup, the workload and the
	// sidecar in two unlimited children of it (an ECS task, a systemd slice
	// with MemoryMax=, a pod whose containers have no limits of their own).
	LayoutSibling = "sibling"
	// LayoutCoprocess: both processes in the one limited cgroup (a service
	// that runs a helper binary in its container).
	LayoutCoprocess = "coprocess"
	// LayoutCgo and LayoutMmap: no sidecar; the workload itself holds its
	// memory outside the Go runtime, through C's malloc (a binary built
	// with cgo) or anonymous mmap (a service's C library or mapped cache).
	LayoutCgo  = "inprocess-cgo"
	LayoutMmap = "inprocess-mmap"
)

// inProcess reports whether the layout holds the sidecar's memory in the
// workload, and how: "cgo" or "mmap".
func inProcess(layout string) (via string, ok bool) {
	return strings.CutPrefix(layout, "inprocess-")
}

// Defaults. A 10s window holds about six GC cycles of the default workload;
// with fewer, whether a run's cycles happen to be throttled decides its p99,
// and runs of the same variant differ by a factor of ten.
const (
	DefaultCPUs = "0.5,1,1.5"
	// The default job (no -scenario): a short cpu pass at DefaultJobCPUs,
	// the memory scenario, and the shared scenario with a co-process, for
	// the DefaultJobVariants: about 10 minutes in all.
	DefaultJobScenarios = ScenarioCPU + "," + ScenarioMemory + "," + ScenarioShared
	DefaultJobCPUs      = "0.5,1.5"
	DefaultJobLayouts   = LayoutCoprocess
	DefaultJobVariants  = "runtime,env,automaxprocs+automemlimit,fitgo"
	DefaultNestedCPUs   = "1"
	DefaultMemory       = "256Mi"
	// The sweep's quotas and loads (fractions of the quota).
	DefaultSweepCPUs  = "0.5,1,1.25,1.5,1.75,1.95"
	DefaultSweepLoads = "0.1,0.7"
	DefaultRuns       = 3
	DefaultDuration   = 10 * time.Second
	// MemoryHeapFraction is the live heap of the memory scenario, as a fraction
	// of the limit: with GOGC=100 the heap peaks near twice the live heap, so
	// without a GOMEMLIMIT it outgrows the limit.
	MemoryHeapFraction = 0.6

	// The shared scenario: a 512 MiB limit with a sidecar holding 200 MiB.
	DefaultSharedMemory = "512Mi"
	DefaultSidecar      = "200Mi"
	DefaultLayouts      = LayoutSibling + "," + LayoutCoprocess
	// SharedHeapFraction is the shared scenario's live heap as a fraction of
	// the room the sidecar leaves (limit − sidecar), as the memory scenario's
	// is of the whole limit. At 512 MiB and 200 MiB: 187 MiB. A GOMEMLIMIT
	// that accounts for the sidecar, 0.9 × 312 = 281 MiB, holds the heap
	// below the 312 MiB left, with 94 MiB above the live heap for garbage (the
	// GC runs at about half of GOGC=100's heap growth: moderate GC CPU). Every
	// limit that ignores the sidecar lets the heap grow to GOGC's goal, twice
	// the live heap, 374 MiB, before it collects (0.9 × 512 = 461 MiB and
	// 512 MiB are above that, no limit is no bound): 62 MiB more than the room
	// left, so the cgroup is OOM-killed.
	SharedHeapFraction = MemoryHeapFraction

	// The leak scenario: the live heap starts at half of a 512 MiB limit and
	// grows 4 MiB/s; 100 s is enough for it to pass the limit (64 s of
	// growth), with time to spare for a GC that slows the process down.
	DefaultLeakMemory   = "512Mi"
	LeakStartFraction   = 0.5
	DefaultLeakGrowMiB  = 4
	DefaultLeakDuration = 100 * time.Second

	// The gc scenario: a memory limit of ten times the heavy workload's
	// live heap, the room a GC policy may spend, and its workloads
	// (GCWorkloads) at their CPU quotas; each run warms up for
	// DefaultGCWarmup (the policy has its first readings) before a 30 s
	// window. With twice the default allocation rate, a heap goal near 0.9
	// × 1 GiB runs a GC cycle every 8 s, several in the window.
	DefaultGCMemory   = "1Gi"
	DefaultGCDuration = 30 * time.Second
	DefaultGCWarmup   = 3 * time.Second
	// DefaultGCBurst is the burst case's growth as a fraction of the limit:
	// the heavy workload at its largest quota, and a co-process in the same
	// cgroup that grows by that much at once GCBurstAt into the window
	// (half the window when it is shorter than twice that) and holds it.
	DefaultGCBurst = 0.2
	GCBurstAt      = 10 * time.Second
)

// gcWorkload is a workload of the gc scenario: its live heap, allocation
// rate and CPU quotas.
type gcWorkload struct {
	name              string
	heapMiB, allocMiB float64
	cpus              string
}

// GCWorkloads are the gc scenario's workloads: a GC-heavy one, where a GC
// policy can buy CPU with memory, at two quotas, and a light one, whose GC
// is cheap and where a policy should leave the heap alone.
var GCWorkloads = []gcWorkload{
	{"heavy", 100, 100, "0.5,1"},
	{"light", 30, 5, "1"},
}

// Options configure a local benchmark.
type Options struct {
	Scenarios []string
	// CPUs overrides the CPU quotas of the cpu and nested scenarios, Memory the
	// memory limits of the memory scenario.
	CPUs   []float64
	Memory []int64
	// Sidecar is the memory the shared scenario's sidecar holds (0: the
	// default), Layouts where it runs (empty: both).
	Sidecar int64
	Layouts []string
	// SidecarFreeAfter, when positive, makes the sidecar free its memory
	// this long after it started holding it (the workload then has the room
	// to itself: a run can show a GOMEMLIMIT that follows).
	SidecarFreeAfter time.Duration
	// SidecarCache, when positive, makes the sidecar also keep this much
	// page cache, a file it reads in a loop (reclaimable memory next to the
	// memory it holds).
	SidecarCache int64
	// GrowMiB is the leak scenario's heap growth in MiB/s (0: the default).
	GrowMiB float64
	// DurationSet and AllocSet are true when Duration and AllocMiB were
	// given explicitly: the leak and gc scenarios have defaults of their own.
	DurationSet, AllocSet bool
	// Warmup is the warm-up of each run before its measured window, where
	// WarmupSet (the gc scenario's default: DefaultGCWarmup; none
	// elsewhere).
	Warmup    time.Duration
	WarmupSet bool
	// Burst is the gc scenario's burst as a fraction of the memory limit
	// (0: no burst case).
	Burst float64
	// Loads are request work levels as fractions of the CPU quota (e.g. 0.7:
	// requests take 0.7 × quota CPU-seconds per second); empty means the fixed
	// Work per request. The sweep defaults to DefaultSweepLoads.
	Loads []float64
	// Duration is each run's measured window.
	Duration time.Duration
	Runs     int
	Variants []variant.Variant
	// Out is the directory for results.json, report.md, the charts and
	// bench.txt; empty for a fresh directory under the bench module's out/.
	Out     string
	InPlace bool
	// CgroupParent is the v2 directory to create run cgroups in.
	CgroupParent string
	// Workload parameters; zero means the workload's default (HeapMiB: 100,
	// or MemoryHeapFraction of the limit in the memory scenario).
	HeapMiB, AllocMiB, Rate float64
	Work                    time.Duration
	WorkIters               int
	// Ticker is the workload's -ticker (empty: its default).
	Ticker string
	// Period is the CFS period of the quotas (default 100ms, as Kubernetes).
	Period time.Duration
	// Src is the bench module's directory (default: found from the working
	// directory).
	Src string
	// BinDir, when set, holds prebuilt workload binaries (named after
	// variant.Variant.Binary) to use instead of building them.
	BinDir string
	// Command is the command line, for the report.
	Command string
}

// setting is one scenario setting: the runs of every variant under the same limits.
type setting struct {
	scenario string
	cpus     float64
	memory   int64
	heapMiB  float64
	load     float64 // fraction of the quota; 0: the fixed work per request
	layout   string  // the shared scenario's layout
	sidecar  int64   // the memory the sidecar holds
	growMiB  float64 // the leak's heap growth, MiB/s
	allocMiB float64 // the allocation rate, MiB/s; 0: Options.AllocMiB
	duration time.Duration
	warmup   time.Duration
	workload string // the gc scenario's workload, named with its figures
	burst    int64  // the gc scenario's burst, bytes
}

func (s setting) String() string {
	return report.SettingTitle(s.results())
}

func (s setting) results() results.Setting {
	return results.Setting{Scenario: s.scenario, CPUs: s.cpus, MemoryBytes: s.memory, Load: s.load, Layout: s.layout, SidecarBytes: s.sidecar,
		WorkloadName: s.workload, BurstBytes: s.burst}
}

// Main runs the local subcommand with args (flags) and returns the exit code:
// 0 on success, 1 when runs failed or cgroups cannot be created, 2 for bad
// flags, 130 when interrupted.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "local: %v\n", err)
		return 2
	}
	return Run(ctx, opts, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (Options, error) {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o                                    Options
		scenario, cpus, memory, variantsFlag string
		loads                                string
	)
	fs.StringVar(&scenario, "scenario", "", "scenarios, comma-separated (default: a short cpu pass at "+DefaultJobCPUs+" CPU, memory, and shared with a co-process, for the variants "+DefaultJobVariants+": about 10 minutes): cpu (quotas), nested (quota on a parent cgroup only), memory (memory limit below the untuned heap peak), sweep (quotas × loads, with static GOMAXPROCS oracles), shared (a memory limit shared with a sidecar process), leak (a live heap that grows until the limit), gc (GC policies with a roomy memory limit: a heavy and a light workload, and a burst case; about 45 minutes), or all (cpu, nested, memory)")
	fs.StringVar(&cpus, "cpus", "", "CPU quotas of the cpu, nested, sweep and gc scenarios in cores or millicores (e.g. 0.5 or 500m), comma-separated; none for no quota (default "+DefaultCPUs+" for cpu, "+DefaultJobCPUs+" in the default job, "+DefaultNestedCPUs+" for nested, "+DefaultSweepCPUs+" for sweep; for gc "+GCWorkloads[0].cpus+" for the heavy workload and "+GCWorkloads[1].cpus+" for the light one)")
	fs.StringVar(&loads, "load", "", "request work as fractions of the CPU quota, comma-separated (0.7: requests take 0.7 × quota CPU-seconds per second; the host's CPUs without a quota); default: the fixed -work per request, or "+DefaultSweepLoads+" for sweep")
	fs.StringVar(&memory, "memory", "", "memory limits of the memory, shared, leak and gc scenarios, comma-separated (default "+DefaultMemory+" for memory, "+DefaultSharedMemory+" for shared and leak, "+DefaultGCMemory+" for gc)")
	var sidecar, sidecarCache, layouts string
	fs.StringVar(&sidecar, "sidecar", DefaultSidecar, "memory the shared scenario's sidecar holds resident")
	fs.StringVar(&layouts, "layout", DefaultLayouts, "where the shared scenario's sidecar runs, comma-separated: sibling (in a sibling cgroup under the limited parent) or coprocess (in the workload's own limited cgroup), or the workload itself holding that memory outside the Go runtime: inprocess-cgo (C's malloc) or inprocess-mmap (anonymous mmap); the default job runs coprocess only")
	fs.StringVar(&sidecarCache, "sidecar-cache", "", "page cache the shared scenario's sidecar also keeps: it reads a file of this size (e.g. 300Mi) twice before the workload starts, and then every second (default: none)")
	fs.DurationVar(&o.SidecarFreeAfter, "sidecar-free-after", 0, "make the shared scenario's sidecar free its memory this long after it holds it (0: it holds it to the end)")
	fs.Float64Var(&o.GrowMiB, "grow-mib", DefaultLeakGrowMiB, "the leak scenario's heap growth, MiB/s")
	fs.DurationVar(&o.Duration, "duration", DefaultDuration, "measured window of each run, after the live heap is built; the leak scenario's default is "+DefaultLeakDuration.String()+", the gc scenario's "+DefaultGCDuration.String())
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up of each run after the live heap is built and before the measured window: the allocation runs, no requests (default "+DefaultGCWarmup.String()+" in the gc scenario, none elsewhere)")
	fs.Float64Var(&o.Burst, "burst", DefaultGCBurst, fmt.Sprintf("the gc scenario's burst case: a co-process in the limited cgroup grows by this fraction of the limit at once, %v into the window, and holds it (0: no burst case)", GCBurstAt))
	fs.IntVar(&o.Runs, "runs", DefaultRuns, "rounds: each variant runs this many times per setting, interleaved (A B C A B C ...)")
	fs.StringVar(&variantsFlag, "variants", "", "variants, comma-separated: "+strings.Join(variant.Names(), ", ")+", GOMAXPROCS=n (a static value), static (GOMAXPROCS=1 to the CPU count), sweep (all of these); default all but the sweep's extra rules and statics, or sweep for the sweep scenario")
	fs.StringVar(&o.Out, "out", "", "directory to write results.json, runs.json, report.md, the charts and bench.txt to (default: a fresh directory under bench/out/)")
	fs.BoolVar(&o.InPlace, "in-place", false, "run in the current cgroup with its limits instead of creating cgroups (e.g. inside a pod)")
	fs.StringVar(&o.CgroupParent, "cgroup-parent", "", "cgroup v2 directory to create run cgroups in (default: the unified hierarchy's root, or the runner's own delegated cgroup)")
	fs.Float64Var(&o.HeapMiB, "heap-mib", 0, fmt.Sprintf("live heap, MiB (default %d; %.0f%% of the limit in the memory scenario, of the limit less the sidecar in shared; the leak's start, default %.0f%% of the limit; in gc, every workload's, default %g and %g)", workload.DefaultHeapMiB, MemoryHeapFraction*100, LeakStartFraction*100, GCWorkloads[0].heapMiB, GCWorkloads[1].heapMiB))
	fs.Float64Var(&o.AllocMiB, "alloc-mib", workload.DefaultAllocMiBPerSec, fmt.Sprintf("allocation rate, MiB/s (in gc, every workload's, default %g and %g)", GCWorkloads[0].allocMiB, GCWorkloads[1].allocMiB))
	fs.Float64Var(&o.Rate, "rate", workload.DefaultRate, "requests per second (open loop)")
	fs.DurationVar(&o.Work, "work", workload.DefaultWork, "CPU work per request (calibrated once, unthrottled, before the runs)")
	fs.StringVar(&o.Ticker, "ticker", workload.TickerNetpoll, "how the workload's request generator wakes up: netpoll (like socket arrivals) or sleep (runtime timers)")
	fs.IntVar(&o.WorkIters, "work-iters", 0, "CPU work per request in loop iterations, instead of calibrating -work")
	fs.DurationVar(&o.Period, "period", 100*time.Millisecond, "CFS period of the CPU quotas")
	fs.StringVar(&o.BinDir, "bin-dir", "", "use the prebuilt workload binaries in this directory (named as bench/cmd's directories) instead of building them with the go command")
	fs.StringVar(&o.Src, "src", "", "the bench module's directory (default: found from the working directory)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: go run -C bench . local [flags]

Runs the benchmark workload in real cgroups on this machine: each variant
(how a Go program is fitted to its container) in a cgroup of its own with the
scenario's CPU quota and memory limit, interleaved, for -runs rounds, and
prints the medians. Needs root or a delegated cgroup v2 subtree (or -in-place).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.DurationSet, o.AllocSet, o.WarmupSet = set["duration"], set["alloc-mib"], set["warmup"]
	if scenario == "" { // the default job
		scenario = DefaultJobScenarios
		if !set["cpus"] {
			cpus = DefaultJobCPUs
		}
		if !set["layout"] {
			layouts = DefaultJobLayouts
		}
		if !set["variants"] {
			variantsFlag = DefaultJobVariants
		}
	}
	o.Command = "go run -C bench . local"
	if len(args) > 0 {
		o.Command += " " + strings.Join(args, " ")
	}
	scenarios := []string{ScenarioCPU, ScenarioNested, ScenarioMemory}
	var err error
	if o.Scenarios, err = settings.ParseScenarios(scenario, append(scenarios, ScenarioSweep, ScenarioShared, ScenarioLeak, ScenarioGC), scenarios, "cpu, nested, memory, sweep, shared, leak, gc or all"); err != nil {
		return o, err
	}
	sizes, err := settings.ParseSizes(sidecar)
	if err != nil || len(sizes) != 1 {
		return o, fmt.Errorf("-sidecar: want one size, e.g. 200Mi (%v)", err)
	}
	o.Sidecar = sizes[0]
	if sidecarCache != "" {
		if sizes, err = settings.ParseSizes(sidecarCache); err != nil || len(sizes) != 1 {
			return o, fmt.Errorf("-sidecar-cache: want one size, e.g. 300Mi (%v)", err)
		}
		o.SidecarCache = sizes[0]
	}
	if o.Layouts, err = parseLayouts(layouts); err != nil {
		return o, err
	}
	if o.CPUs, o.Memory, err = settings.ParseLimits(cpus, memory, true); err != nil {
		return o, err
	}
	if loads != "" {
		if o.Loads, err = parseLoads(loads); err != nil {
			return o, fmt.Errorf("-load: %w", err)
		}
	}
	if variantsFlag == "" && slices.Contains(o.Scenarios, ScenarioSweep) {
		variantsFlag = "sweep"
	}
	if o.Variants, err = variant.Parse(variantsFlag, runtime.NumCPU()); err != nil {
		return o, err
	}
	if variantsFlag == "" {
		if vs := memoryVariants(o.Scenarios); vs != nil {
			o.Variants = vs
		}
	}
	switch {
	case o.Runs < 1:
		return o, errors.New("-runs must be at least 1")
	case o.Duration < 100*time.Millisecond:
		return o, errors.New("-duration must be at least 100ms")
	case o.Period < time.Millisecond || o.Period > time.Second:
		return o, errors.New("-period must be between 1ms and 1s")
	case o.SidecarFreeAfter < 0:
		return o, errors.New("-sidecar-free-after must not be negative")
	case o.Warmup < 0:
		return o, errors.New("-warmup must not be negative")
	case !(o.Burst >= 0 && o.Burst < 1):
		return o, errors.New("-burst must be a fraction of the limit, at least 0 and below 1")
	case o.HeapMiB < 0 || o.AllocMiB <= 0 || o.Rate <= 0 || o.Work <= 0 || o.GrowMiB <= 0:
		return o, errors.New("-heap-mib, -alloc-mib, -rate, -work and -grow-mib must be positive")
	case o.Ticker != workload.TickerNetpoll && o.Ticker != workload.TickerSleep:
		return o, fmt.Errorf("-ticker must be %s or %s", workload.TickerNetpoll, workload.TickerSleep)
	}
	return o, nil
}

// settings expands the scenarios into settings: one per CPU quota for cpu and
// nested (no memory limit), one per memory limit for memory (no CPU quota).
func (o Options) settings() ([]setting, error) {
	var out []setting
	for _, sc := range o.Scenarios {
		switch sc {
		case ScenarioCPU, ScenarioNested, ScenarioSweep:
			cpus, loads := o.CPUs, o.Loads
			def := map[string]string{ScenarioCPU: DefaultCPUs, ScenarioNested: DefaultNestedCPUs, ScenarioSweep: DefaultSweepCPUs}[sc]
			if len(cpus) == 0 {
				cpus, _ = settings.ParseCPUs(def, true)
			}
			if len(loads) == 0 {
				loads = []float64{0}
				if sc == ScenarioSweep {
					loads, _ = parseLoads(DefaultSweepLoads)
				}
			}
			heap := o.HeapMiB
			if heap == 0 {
				heap = workload.DefaultHeapMiB
			}
			for _, l := range loads {
				for _, c := range cpus {
					out = append(out, setting{scenario: sc, cpus: c, heapMiB: heap, load: l})
				}
			}
		case ScenarioGC:
			out = append(out, o.gcSettings()...)
		case ScenarioMemory:
			ms := o.Memory
			if len(ms) == 0 {
				ms, _ = settings.ParseSizes(DefaultMemory)
			}
			for _, m := range ms {
				heap := o.HeapMiB
				if heap == 0 {
					heap = math.Round(MemoryHeapFraction * float64(m) / (1 << 20))
				}
				loads := o.Loads
				if len(loads) == 0 {
					loads = []float64{0}
				}
				for _, l := range loads {
					out = append(out, setting{scenario: sc, memory: m, heapMiB: heap, load: l})
				}
			}
		case ScenarioShared, ScenarioLeak:
			ms := o.Memory
			if len(ms) == 0 {
				ms, _ = settings.ParseSizes(DefaultSharedMemory)
			}
			for _, m := range ms {
				if sc == ScenarioLeak {
					heap := o.HeapMiB
					if heap == 0 {
						heap = math.Round(LeakStartFraction * float64(m) / (1 << 20))
					}
					grow := o.GrowMiB
					if grow == 0 {
						grow = DefaultLeakGrowMiB
					}
					d := time.Duration(0)
					if !o.DurationSet {
						d = DefaultLeakDuration
					}
					out = append(out, setting{scenario: sc, memory: m, heapMiB: heap, growMiB: grow, duration: d})
					continue
				}
				side := o.Sidecar
				if side == 0 {
					ss, _ := settings.ParseSizes(DefaultSidecar)
					side = ss[0]
				}
				if side >= m {
					return nil, fmt.Errorf("the sidecar (%s) must hold less than the memory limit (%s)", report.MiB(float64(side)), report.MiB(float64(m)))
				}
				heap := o.HeapMiB
				if heap == 0 {
					heap = math.Round(SharedHeapFraction * float64(m-side) / (1 << 20))
				}
				layouts := o.Layouts
				if len(layouts) == 0 {
					layouts, _ = parseLayouts(DefaultLayouts)
				}
				for _, l := range layouts {
					out = append(out, setting{scenario: sc, memory: m, heapMiB: heap, layout: l, sidecar: side})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no scenario to run")
	}
	if o.WarmupSet {
		for i := range out {
			out[i].warmup = o.Warmup
		}
	}
	return out, nil
}

// gcSettings expands the gc scenario: each of GCWorkloads at each of its
// quotas and each memory limit (the flags override every workload's
// figures; two workloads they make the same run once), then the burst case,
// the first workload at its largest quota.
func (o Options) gcSettings() []setting {
	ms := o.Memory
	if len(ms) == 0 {
		ms, _ = settings.ParseSizes(DefaultGCMemory)
	}
	var out, burst []setting
	var seen [][2]float64
	for i, wl := range GCWorkloads {
		heap, alloc := cmp.Or(o.HeapMiB, wl.heapMiB), wl.allocMiB
		if o.AllocSet {
			alloc = o.AllocMiB
		}
		if slices.Contains(seen, [2]float64{heap, alloc}) {
			continue
		}
		seen = append(seen, [2]float64{heap, alloc})
		cpus := o.CPUs
		if len(cpus) == 0 {
			cpus, _ = settings.ParseCPUs(wl.cpus, true)
		}
		st := setting{scenario: ScenarioGC, heapMiB: heap, allocMiB: alloc, warmup: DefaultGCWarmup,
			workload: fmt.Sprintf("%s (%g MiB live, %g MiB/s)", wl.name, heap, alloc)}
		if !o.DurationSet {
			st.duration = DefaultGCDuration
		}
		for _, m := range ms {
			for _, c := range cpus {
				st.cpus, st.memory = c, m
				out = append(out, st)
			}
			if i == 0 && o.Burst > 0 {
				b := st
				b.cpus, b.burst = slices.Max(cpus), int64(o.Burst*float64(m))
				burst = append(burst, b)
			}
		}
	}
	return append(out, burst...)
}

// burstAt returns the window age at which the burst of a window d begins:
// GCBurstAt, or half the window when it is shorter than twice that.
func burstAt(d time.Duration) time.Duration {
	return min(GCBurstAt, d/2)
}

// memoryVariants returns the default variants when every scenario is shared,
// leak or gc: the union of their lists, in order; nil otherwise.
func memoryVariants(scenarios []string) []variant.Variant {
	var out []variant.Variant
	for _, sc := range scenarios {
		var vs []variant.Variant
		switch sc {
		case ScenarioShared:
			vs = variant.Shared
		case ScenarioLeak:
			vs = variant.Leak
		case ScenarioGC:
			vs = variant.GC
		default:
			return nil
		}
		for _, v := range vs {
			if !slices.ContainsFunc(out, func(o variant.Variant) bool { return o.Name == v.Name }) {
				out = append(out, v)
			}
		}
	}
	return out
}

// parseLayouts parses the -layout list.
func parseLayouts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case LayoutSibling, LayoutCoprocess, LayoutCgo, LayoutMmap:
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		default:
			return nil, fmt.Errorf("-layout: unknown layout %q (want %s, %s, %s or %s)", f, LayoutSibling, LayoutCoprocess, LayoutCgo, LayoutMmap)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-layout: no layout in %q", s)
	}
	return out, nil
}

// parseLoads parses a comma-separated list of loads: fractions of the CPU
// quota above 0 and at most 1.
func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v <= 1) {
			return nil, fmt.Errorf("bad load %q (want a fraction of the quota above 0 and at most 1, e.g. 0.7)", f)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no load in %q", s)
	}
	return out, nil
}

// workIters returns the work-loop iterations of a request in setting st, given
// iters for the fixed -work: with a load, the request's CPU time is
// load × quota / rate (the host's CPUs without a quota).
func (o Options) workIters(st setting, iters, hostCPU int) (int, time.Duration) {
	if st.load <= 0 {
		return iters, o.Work
	}
	cpus := st.cpus
	if cpus <= 0 {
		cpus = float64(hostCPU)
	}
	work := time.Duration(st.load * cpus / o.Rate * float64(time.Second))
	return max(int(math.Round(float64(iters)*float64(work)/float64(o.Work))), 1), work
}

// Run runs the benchmark described by opts and returns the exit code.
func Run(ctx context.Context, opts Options, stdout, stderr io.Writer) int {
	r := &runner{opts: opts, stderr: stderr, meta: report.HostMeta()}
	r.meta.Runner = "local"
	r.meta.Command = opts.Command
	runs, err := r.run(ctx)
	r.meta.Elapsed = time.Since(r.meta.Started)
	var access *AccessError
	switch {
	case errors.As(err, &access):
		fmt.Fprintf(stderr, "local: %v\n\n%s\n", err, access.Help())
		return 1
	case err != nil && len(runs) == 0:
		fmt.Fprintf(stderr, "local: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "local: %v (reporting the %d completed runs)\n", err, len(runs))
		r.meta.Notes = append(r.meta.Notes, fmt.Sprintf("**Incomplete**: %v; %d runs completed.", err, len(runs)))
		code = 1
		if ctx.Err() != nil {
			code = 130
		}
	}
	fmt.Fprintln(stdout)
	sums := results.Summarize(runs)
	if err := report.WriteVerdict(stdout, sums, r.hostCPU); err != nil {
		fmt.Fprintf(stderr, "local: %v\n", err)
		return 1
	}
	if err := report.Table(stdout, sums); err != nil {
		fmt.Fprintf(stderr, "local: %v\n", err)
		return 1
	}
	out, err := outDir(opts, r.meta.Started)
	if err == nil {
		var files []string
		files, err = report.Write(out, r.meta, runs)
		if err == nil {
			fmt.Fprintf(stdout, "\nwrote:\n")
			for _, f := range files {
				fmt.Fprintf(stdout, "  %s\n", f)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "local: writing the report: %v\n", err)
		return 1
	}
	failed := 0
	for _, run := range runs {
		if run.Err != "" {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "local: %d of %d runs failed (see the errors above)\n", failed, len(runs))
		code = max(code, 1)
	}
	return code
}

// outDir returns opts.Out, or a fresh directory named after the start time and
// the scenarios under the bench module's out/ (git-ignored), or under the
// system's temporary directory when the module is not at hand.
func outDir(opts Options, started time.Time) (string, error) {
	if opts.Out != "" {
		return opts.Out, nil
	}
	base := os.TempDir()
	if mod, err := findModule(opts.Src); err == nil {
		base = filepath.Join(mod, "out")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, started.UTC().Format("20060102-150405")+"-"+strings.Join(opts.Scenarios, "-")+"-")
}

type runner struct {
	opts    Options
	stderr  io.Writer
	meta    report.Meta
	host    *Host
	bins    map[string]string // variant name -> binary path
	iters   int
	seq     int
	hostCPU int
	hostMem int64
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.stderr, format+"\n", args...) }

func (r *runner) run(ctx context.Context) ([]results.Run, error) {
	o := r.opts
	sets, err := o.settings()
	if err != nil {
		return nil, err
	}
	r.hostCPU, r.hostMem = runtime.NumCPU(), memTotal()
	if o.InPlace {
		lim, err := cgroup.Read()
		r.meta.Cgroup = "in place (" + describeLimits(lim, err) + ")"
		cpus, _ := lim.CPUQuota()
		mem, _ := lim.MemoryMax()
		heap := o.HeapMiB
		if heap == 0 {
			heap = workload.DefaultHeapMiB
		}
		sets = []setting{{scenario: ScenarioInPlace, cpus: cpus, memory: mem, heapMiB: heap}}
		r.logf("in place: %s", r.meta.Cgroup)
	} else {
		if runtime.GOOS != "linux" {
			return nil, fmt.Errorf("the local runner needs Linux cgroups (this is %s); use the kind runner, or -in-place", runtime.GOOS)
		}
		h, err := Open("/", o.CgroupParent)
		if err != nil {
			return nil, err
		}
		r.host = h
		defer func() {
			if err := h.Close(); err != nil {
				r.logf("local: restoring %s: %v", h.CPUParent, err)
			}
		}()
		r.meta.Cgroup = h.Describe()
		r.logf("cgroups: %s", r.meta.Cgroup)
	}

	bins := o.Variants
	if slices.ContainsFunc(sets, func(s setting) bool { _, in := inProcess(s.layout); return s.sidecar > 0 && !in || s.burst > 0 }) {
		bins = append(slices.Clone(bins), variant.Sidecar)
	}
	if o.BinDir != "" {
		if r.bins, err = prebuilt(o.BinDir, bins, o.WorkIters <= 0); err != nil {
			return nil, err
		}
	} else {
		tmp, err := os.MkdirTemp("", "fitgo-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		cgo := slices.ContainsFunc(sets, func(s setting) bool { return s.layout == LayoutCgo })
		if r.bins, err = build(ctx, o.Src, tmp, bins, cgo, r.stderr); err != nil {
			return nil, err
		}
	}
	r.meta.GoVersion = goVersion(ctx)
	r.iters = o.WorkIters
	if r.iters <= 0 {
		if r.iters, err = calibrate(ctx, r.bins["untuned"], o.Work); err != nil {
			return nil, err
		}
		r.logf("calibrated: %d iterations of the work loop take %v", r.iters, o.Work)
	}
	work := fmt.Sprintf("each %d work-loop iterations (%v CPU, calibrated)", r.iters, o.Work)
	if slices.ContainsFunc(sets, func(s setting) bool { return s.load > 0 }) {
		work += "; with a load L, each request's work is L × the quota / the rate (the host's CPUs without a quota), scaled from the calibration"
	}
	window := o.Duration.String()
	warmup := ""
	for _, st := range sets {
		if st.duration > 0 {
			window = st.duration.String() // the leak and gc scenarios' defaults
		}
		if st.warmup > 0 {
			warmup = " after a " + st.warmup.String() + " warm-up (the allocation, no requests)"
		}
	}
	r.meta.Workload = fmt.Sprintf("live heap %s of 32-byte two-pointer nodes, %s allocation, %g requests/s (open loop, generator woken by %s) %s, %s measured per run%s, CFS period %v",
		heapDesc(sets), allocDesc(sets, o.AllocMiB), o.Rate, o.Ticker, work, window, warmup, o.Period)
	r.meta.Notes = append(r.meta.Notes, variantNotes(o.Variants))

	load0 := loadAvg()
	if load0 > float64(r.hostCPU)/2 {
		r.logf("note: the machine is busy (load average %.1f on %d CPUs): other processes compete with the workload, expect noisy results", load0, r.hostCPU)
	}
	defer func() {
		r.meta.Notes = append(r.meta.Notes, fmt.Sprintf("Host load average (1 min) %.1f at the start and %.1f at the end, on %d CPUs: other processes compete with the workload for the CPUs when it is high.",
			load0, loadAvg(), r.hostCPU))
	}()

	total := len(sets) * len(o.Variants) * o.Runs
	if slices.ContainsFunc(sets, func(s setting) bool { return s.sidecar > 0 }) {
		note := sharedNote
		if o.SidecarFreeAfter > 0 {
			note += fmt.Sprintf(" The sidecar freed its memory %v after it held it.", o.SidecarFreeAfter)
		}
		if o.SidecarCache > 0 {
			note += fmt.Sprintf(" The sidecar also kept %s of page cache: it read a file of that size twice before the workload started (active file pages), and then every second; the kernel reclaims those pages, so `oracle-headroom` leaves them out.",
				report.MiB(float64(o.SidecarCache)))
		}
		r.meta.Notes = append(r.meta.Notes, note)
	}
	for _, st := range sets {
		if st.growMiB > 0 {
			d := o.Duration
			if st.duration > 0 {
				d = st.duration
			}
			r.meta.Notes = append(r.meta.Notes, fmt.Sprintf("Leak (%s): the live heap starts at %g MiB and grows %g MiB/s for %v, never freed, until the run ends or the cgroup is OOM-killed.",
				report.MiB(float64(st.memory)), st.heapMiB, st.growMiB, d))
		}
	}
	for _, st := range sets {
		if st.burst > 0 {
			d := cmp.Or(st.duration, o.Duration)
			r.meta.Notes = append(r.meta.Notes, fmt.Sprintf("Burst (%s): a co-process (`bench/cmd/sidecar`) in the limited cgroup, started before the workload and holding nothing, grows by %s (%.0f %% of the limit) at once when the workload's progress line shows %v of the window, and holds it to the end; the report says the GOGC and heap goal at that line, the OOM kills of the workload and of the co-process.",
				report.ShortTitle(st.results()), report.MiB(float64(st.burst)), 100*float64(st.burst)/float64(st.memory), burstAt(d)))
		}
	}
	var runs []results.Run
	started := time.Now()
	i := 0
	for round := 1; round <= o.Runs; round++ {
		for _, st := range sets {
			for _, v := range o.Variants {
				if err := ctx.Err(); err != nil {
					return runs, fmt.Errorf("interrupted: %w", err)
				}
				i++
				run := r.runOne(ctx, st, v, round)
				if ctx.Err() != nil {
					return runs, fmt.Errorf("interrupted: %w", ctx.Err())
				}
				runs = append(runs, run)
				eta := time.Duration(float64(time.Since(started)) / float64(i) * float64(total-i)).Round(time.Second)
				busy := ""
				if run.Busy {
					busy = fmt.Sprintf(" · busy host (load %.1f)", run.HostLoad)
				}
				r.logf("[%*d/%d] %s · %-25s round %d/%d: %s%s · ETA %v", len(strconv.Itoa(total)), i, total,
					report.ShortTitle(st.results()), v.Name, round, o.Runs, describeRun(run), busy, eta)
			}
		}
	}
	return runs, nil
}

const sharedNote = "Shared: the sidecar (`bench/cmd/sidecar`) allocates and touches its memory and holds it; the workload starts once it does. " +
	"In the sibling layout the limit is on a parent cgroup with the workload and the sidecar in two unlimited children; in the coprocess layout both run in the limited cgroup. " +
	"The memory events are the limited cgroup's (v1: memory.failcnt and memory.oom_control, where oom_kill counts only kills in that very cgroup, so 0 in the sibling layout; v2: memory.events, hierarchical). " +
	"`oracle-headroom` is given GOMEMLIMIT = 0.9 × (limit − sidecar) by the runner: what a limit that accounts for the others would set."

func heapDesc(sets []setting) string {
	var hs []string
	for _, s := range sets {
		h := strconv.FormatFloat(s.heapMiB, 'f', -1, 64) + " MiB"
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return strings.Join(hs, " / ")
}

// allocDesc lists the allocation rates of sets, def where a setting has
// none of its own.
func allocDesc(sets []setting, def float64) string {
	var as []string
	for _, s := range sets {
		a := strconv.FormatFloat(cmp.Or(s.allocMiB, def), 'f', -1, 64) + " MiB/s"
		if !slices.Contains(as, a) {
			as = append(as, a)
		}
	}
	return strings.Join(as, " / ")
}

func variantNotes(vs []variant.Variant) string {
	var b strings.Builder
	b.WriteString("Variants:\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "\n- `%s`: %s", v.Name, v.Doc)
	}
	return b.String()
}

func describeLimits(lim cgroup.Limits, err error) string {
	parts := []string{lim.CPU.Version.String()}
	if c, ok := lim.CPUQuota(); ok {
		parts = append(parts, fmt.Sprintf("CPU quota %g from %s", c, lim.CPU.Source))
	} else {
		parts = append(parts, "no CPU quota")
	}
	if m, ok := lim.MemoryMax(); ok {
		parts = append(parts, fmt.Sprintf("memory limit %s from %s", report.MiB(float64(m)), lim.Memory.MaxSource))
	} else {
		parts = append(parts, "no memory limit")
	}
	if err != nil {
		parts = append(parts, "error: "+err.Error())
	}
	return strings.Join(parts, ", ")
}

func describeRun(r results.Run) string {
	switch {
	case r.Killed():
		s := fmt.Sprintf("OOM-killed after %.1fs", r.WallSeconds)
		if r.LastProgress != nil {
			s += fmt.Sprintf(" (%d requests done)", r.LastProgress.Requests)
		}
		if l := r.Leak; l != nil && l.ReachedMS > 0 {
			s += fmt.Sprintf(", %.1fs after GOMEMLIMIT bound the heap", (l.EndMS-l.ReachedMS)/1000)
			if w := l.Window; w != nil && !math.IsNaN(float64(w.GCCPUFraction)) {
				s += fmt.Sprintf(" (GC CPU %.0f%% in that window)", 100*w.GCCPUFraction)
			}
		}
		return s
	case r.Err != "":
		return "FAILED: " + r.Err
	case r.Workload == nil:
		return "no result"
	}
	w := r.Workload
	s := fmt.Sprintf("GOMAXPROCS %d, p99 %.1f ms, p99.9 %.1f ms", w.GOMAXPROCS, w.Latency.P99, w.Latency.P999)
	if !math.IsNaN(float64(w.GCCPUFraction)) {
		s += fmt.Sprintf(", GC CPU %.1f%%", 100*w.GCCPUFraction)
	}
	if t := r.Throttling(); t != nil && t.Periods > 0 {
		s += fmt.Sprintf(", throttled %.1f%%", 100*t.ThrottledRatio())
	}
	if w.GOMEMLIMIT != math.MaxInt64 {
		s += ", GOMEMLIMIT " + report.MiB(float64(w.GOMEMLIMIT))
	}
	if r.Scenario == ScenarioGC {
		s += fmt.Sprintf(", GOGC %d, heap goal up to %s", w.GOGC, report.MiB(float64(w.HeapGoalMaxBytes)))
	}
	if b := r.Burst; b != nil {
		s += fmt.Sprintf(", burst at %.1fs (GOGC %d), grown %v", b.AtMS/1000, b.GOGC, b.Grown)
	}
	if r.Sidecar != nil && r.Sidecar.OOMKilled {
		s += ", co-process OOM-killed"
	}
	return s
}

// loadAvg returns the 1-minute load average, or NaN.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// memTotal returns MemTotal of /proc/meminfo in bytes, or 0.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("MemTotal:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
