package local

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
	"github.com/fitgo/fitgo/cgroup"
)

// runOne runs variant v once in setting st.
func (r *runner) runOne(ctx context.Context, st setting, v variant.Variant, round int) results.Run {
	run := results.Run{Scenario: st.scenario, Variant: v.Name, CPUs: st.cpus, MemoryBytes: st.memory, Load: st.load,
		Layout: st.layout, SidecarBytes: st.sidecar, WorkloadName: st.workload, BurstBytes: st.burst, Round: round}
	fail := func(err error) results.Run {
		run.Err = err.Error()
		return run
	}
	o := r.opts
	iters, work := o.workIters(st, r.iters, r.hostCPU)
	duration := o.Duration
	if st.duration > 0 {
		duration = st.duration
	}
	args := []string{
		"-duration", duration.String(),
		"-heap-mib", strconv.FormatFloat(st.heapMiB, 'f', -1, 64),
		"-alloc-mib", strconv.FormatFloat(cmp.Or(st.allocMiB, o.AllocMiB), 'f', -1, 64),
		"-rate", strconv.FormatFloat(o.Rate, 'f', -1, 64),
		"-work", work.String(),
		"-work-iters", strconv.Itoa(iters),
		"-report-every", "1s",
	}
	if o.Ticker != "" {
		args = append(args, "-ticker", o.Ticker)
	}
	if st.warmup > 0 {
		args = append(args, "-warmup", st.warmup.String())
	}
	via, in := inProcess(st.layout)
	if in {
		args = append(args, "-outside-mib", strconv.FormatInt(st.sidecar>>20, 10), "-outside-via", via)
	}
	if st.growMiB > 0 {
		args = append(args, "-grow-mib", strconv.FormatFloat(st.growMiB, 'f', -1, 64))
	}
	env := cleanEnv(os.Environ())
	if v.DownwardAPI {
		env = append(env, variant.DownwardEnv(st.cpus, st.memory, r.hostCPU, r.hostMem)...)
	}
	if v.HeadroomOracle {
		env = append(env, v.HeadroomEnv(st.memory, st.sidecar)...)
	}
	env = append(env, v.Env...)
	if v.OOMProfile {
		dir, err := os.MkdirTemp("", "fitgo-oomprofile-")
		if err != nil {
			return fail(fmt.Errorf("the OOM capture's directory: %w", err))
		}
		defer os.RemoveAll(dir)
		run.OOMCaptures = new(int) // run is returned by value: count into its pointee
		defer func() { *run.OOMCaptures = countCaptures(dir) }()
		env = append(env, "FITGO=oomprofile="+dir)
	}
	bin := r.bins[v.Name]

	// A generous bound: the heap build under a small quota, the window, the drain.
	ctx, cancel := context.WithTimeout(ctx, 3*duration+st.warmup+3*time.Minute)
	defer cancel()

	var (
		cmd     *exec.Cmd
		group   *Group
		stat0   cgroup.Stats
		statErr error
		burst   *sidecar // the burst's co-process, until it is told to grow
	)
	if r.host != nil {
		r.seq++
		name := fmt.Sprintf("%s%d-%d-%s", NamePrefix, pid(), r.seq, strings.ReplaceAll(v.Binary(), "+", "-"))
		g, err := r.host.NewGroup(name, Spec{CPUs: st.cpus, Period: o.Period, Memory: st.memory, Nested: st.scenario == ScenarioNested,
			Sibling: st.sidecar > 0 && st.layout == LayoutSibling})
		if err != nil {
			return fail(fmt.Errorf("creating the run's cgroup: %w", err))
		}
		group = g
		defer func() {
			if err := g.Remove(); err != nil {
				r.logf("local: removing %s: %v", name, err)
			}
		}()
		self, err := os.Executable()
		if err != nil {
			return fail(err)
		}
		if st.sidecar > 0 && !in || st.burst > 0 {
			procs := g.Procs
			if st.layout == LayoutSibling {
				procs = g.SidecarProcs
			}
			sc, err := startSidecar(ctx, self, r.bins[variant.SidecarName], procs, sidecarSpec{size: st.sidecar, cache: o.SidecarCache,
				freeAfter: o.SidecarFreeAfter, grow: st.burst})
			if err != nil {
				return fail(fmt.Errorf("sidecar: %w", err))
			}
			defer sc.stop()
			if st.burst > 0 {
				burst = sc
				defer func() {
					if run.Burst == nil {
						return // never told to grow
					}
					if b, ok := sc.grownLine(5 * time.Second); ok {
						run.Burst.Grown, run.Burst.GrowMS = true, b.GrowMS
					}
				}()
			}
			run.Sidecar = &results.Sidecar{RSSBytes: sc.held.RSSBytes}
			if run.Sidecar.LimitedUsageBytes, err = g.MemoryUsage(); err != nil {
				return fail(fmt.Errorf("reading the limited cgroup's usage: %w", err))
			}
			// The point of the scenario: the limit must account for the
			// sidecar, hierarchically in the sibling layout.
			if st.sidecar > 0 && run.Sidecar.LimitedUsageBytes < sc.held.HeldBytes*9/10 {
				return fail(fmt.Errorf("the limited cgroup %s accounts %s with the sidecar holding %s: no (hierarchical) accounting of the sidecar",
					g.MemoryDir, report.MiB(float64(run.Sidecar.LimitedUsageBytes)), report.MiB(float64(sc.held.HeldBytes))))
			}
			defer func() {
				if sc.oomKilled() {
					run.Sidecar.OOMKilled = true
				}
			}()
		}
		procs, _ := json.Marshal(g.Procs)
		cmd = exec.CommandContext(ctx, self, append([]string{bin}, args...)...)
		cmd.Env = append(env, cgexecEnv+"="+string(procs))
		stat0, statErr = g.Stats()
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		stat0, statErr = readStats()
	}
	dieWithParent(cmd)
	cmd.WaitDelay = 10 * time.Second

	var stdout bytes.Buffer
	var (
		mu      sync.Mutex
		last    *results.Progress
		leak    leakTracker
		errTail []string
	)
	stderr := &lineWriter{fn: func(l []byte) {
		mu.Lock()
		defer mu.Unlock()
		if line, err := results.ParseLine(l); err == nil && line.Progress != nil {
			last = line.Progress
			leak.add(*line.Progress)
			if p := line.Progress; burst != nil && p.Phase == "run" && p.PhaseMS >= float64(burstAt(duration)/time.Millisecond) {
				if err := burst.grow(); err != nil {
					r.logf("local: telling the co-process to grow: %v", err)
				}
				run.Burst = &results.Burst{AtMS: p.PhaseMS, GOGC: p.GOGC, HeapGoalBytes: p.HeapGoalBytes}
				burst = nil
			}
			return
		}
		if s := strings.TrimSpace(string(l)); s != "" {
			errTail = append(errTail, s)
			if len(errTail) > 10 {
				errTail = errTail[1:]
			}
		}
	}}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr

	start := time.Now()
	runErr := cmd.Run()
	run.WallSeconds = time.Since(start).Seconds()
	if l := loadAvg(); l == l { // not NaN
		run.HostLoad = l
	}
	stderr.Flush()
	run.LastProgress = last
	run.Leak = leak.result(run.WallSeconds * 1000)

	if statErr == nil {
		var stat1 cgroup.Stats
		if group != nil {
			stat1, statErr = group.Stats()
		} else {
			stat1, statErr = readStats()
		}
		if statErr == nil {
			run.CPUStat = toResults(stat1, stat0)
			run.Pressure = results.NewPressure(stat1, stat0, time.Duration(run.WallSeconds*float64(time.Second)))
		}
	}

	ps := cmd.ProcessState
	killedBySIGKILL := false
	if ps != nil {
		run.ExitCode = ps.ExitCode()
		run.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			run.Signal = ws.Signal().String()
			killedBySIGKILL = ws.Signal() == syscall.SIGKILL
		}
	}
	run.Busy = othersLoad(run) > float64(r.hostCPU)/2
	ourKill := ctx.Err() != nil
	if st.memory > 0 && !ourKill {
		n, err := oomKills(group, killedBySIGKILL)
		if err != nil {
			r.logf("local: reading OOM kills: %v", err)
		}
		if (st.sidecar > 0 || st.burst > 0) && !killedBySIGKILL {
			// In the coprocess layout and the burst case the counter also
			// counts the sidecar's kill; the workload was not killed if it
			// exited by itself.
			n = 0
		}
		run.OOMKills = min(n, 1)
	}
	if group != nil && st.memory > 0 {
		ev, peak, err := group.MemoryEvents()
		if err != nil {
			r.logf("local: reading memory events: %v", err)
		}
		run.MemoryEvents, run.MemoryPeakBytes = ev, peak
	}

	res, _, perr := results.ParseOutput(stdout.Bytes())
	run.Workload = res
	switch {
	case run.Killed():
		// An expected outcome of the memory scenario, not a failure.
	case ourKill && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fail(fmt.Errorf("timed out after %v%s", time.Since(start).Round(time.Second), tail(errTail)))
	case ourKill:
		return fail(ctx.Err())
	case runErr != nil:
		return fail(fmt.Errorf("%v%s", runErr, tail(errTail)))
	case perr != nil:
		return fail(fmt.Errorf("%v%s", perr, tail(errTail)))
	}
	return run
}

// leakTracker follows a run's progress lines for its limit window: when
// GOMEMLIMIT first set the heap goal, the workload's window figures in the
// last line, and the time spent with the GC above half of the CPU.
type leakTracker struct {
	reachedMS float64
	window    *results.Window
	// mark is the last line at which the runtime's CPU estimates changed
	// (they are updated at the end of each GC cycle), from the window on.
	mark     *results.Progress
	brownout float64
	// first is the first line's GOMEMLIMIT; raisedMS the age at the first
	// line with a higher one.
	first    int64
	raisedMS float64
}

// BrownoutGCFraction is the GC CPU fraction above which an interval counts as
// a brown-out.
const BrownoutGCFraction = 0.5

func (t *leakTracker) add(p results.Progress) {
	switch {
	case t.first == 0:
		t.first = p.GOMEMLIMIT
	case t.raisedMS == 0 && p.GOMEMLIMIT > t.first:
		t.raisedMS = p.ElapsedMS
	}
	if p.Window == nil {
		return
	}
	if t.reachedMS == 0 {
		t.reachedMS = p.Window.StartMS
	}
	t.window = p.Window
	switch {
	case t.mark == nil:
		t.mark = &p
	case p.CPUSeconds > t.mark.CPUSeconds:
		if (p.GCCPUSeconds-t.mark.GCCPUSeconds)/(p.CPUSeconds-t.mark.CPUSeconds) > BrownoutGCFraction {
			t.brownout += p.ElapsedMS - t.mark.ElapsedMS
		}
		t.mark = &p
	}
}

// result returns the window of a run that ended at the process age endMS,
// or nil when its heap goal was never set by GOMEMLIMIT.
func (t *leakTracker) result(endMS float64) *results.LeakWindow {
	if t.reachedMS == 0 {
		return nil
	}
	return &results.LeakWindow{ReachedMS: t.reachedMS, EndMS: max(endMS, t.reachedMS), Window: t.window, BrownoutMS: t.brownout, RaisedMS: t.raisedMS}
}

// othersLoad estimates the load of other processes during run: the host's
// load average at its end less the run's own CPU use per wall second.
func othersLoad(run results.Run) float64 {
	own := 0.0
	if run.WallSeconds > 0 {
		own = run.CPUSeconds / run.WallSeconds
	}
	return run.HostLoad - own
}

// oomKills returns the OOM kills in the run's memory cgroup; without a
// readable counter (in place, or kernels before 4.13) a SIGKILL the runner did
// not send counts as one.
func oomKills(g *Group, sigkill bool) (uint64, error) {
	if g != nil {
		n, err := g.OOMKills()
		if err == nil {
			return n, nil
		}
		if sigkill {
			return 1, err
		}
		return 0, err
	}
	if sigkill {
		return 1, nil
	}
	return 0, nil
}

func tail(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return ": " + strings.Join(lines, " | ")
}

// readStats reads the statistics of the runner's own cgroups.
func readStats() (cgroup.Stats, error) {
	w, err := cgroup.NewWatcher(os.DirFS("/"))
	if err != nil {
		return cgroup.Stats{}, err
	}
	defer w.Close()
	return w.Stats()
}

// countCaptures returns the number of OOM captures (breakdowns, *.txt) in
// dir.
func countCaptures(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	return len(m)
}
