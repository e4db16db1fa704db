package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
	"github.com/fitgo/fitgo/cgroup"
)

// runOne runs variant v once in setting st.
func (r *runner) runOne(ctx context.Context, st setting, v variant.Variant, round int) results.Run {
	run := results.Run{Scenario: st.scenario, Variant: v.Name, CPUs: st.cpus, MemoryBytes: st.memory, Load: st.load, Round: round}
	fail := func(err error) results.Run {
		run.Err = err.Error()
		return run
	}
	o := r.opts
	iters, work := o.workIters(st, r.iters, r.hostCPU)
	args := []string{
		"-duration", o.Duration.String(),
		"-heap-mib", strconv.FormatFloat(st.heapMiB, 'f', -1, 64),
		"-alloc-mib", strconv.FormatFloat(o.AllocMiB, 'f', -1, 64),
		"-rate", strconv.FormatFloat(o.Rate, 'f', -1, 64),
		"-work", work.String(),
		"-work-iters", strconv.Itoa(iters),
		"-report-every", "1s",
	}
	if o.Ticker != "" {
		args = append(args, "-ticker", o.Ticker)
	}
	env := cleanEnv(os.Environ())
	if v.DownwardAPI {
		env = append(env, variant.DownwardEnv(st.cpus, st.memory, r.hostCPU, r.hostMem)...)
	}
	env = append(env, v.Env...)
	bin := r.bins[v.Name]

	// A generous bound: the heap build under a small quota, the window, the drain.
	ctx, cancel := context.WithTimeout(ctx, 3*o.Duration+3*time.Minute)
	defer cancel()

	var (
		cmd     *exec.Cmd
		group   *Group
		stat0   cgroup.Stats
		statErr error
	)
	if r.host != nil {
		r.seq++
		name := fmt.Sprintf("%s%d-%d-%s", NamePrefix, pid(), r.seq, strings.ReplaceAll(v.Binary(), "+", "-"))
		g, err := r.host.NewGroup(name, Spec{CPUs: st.cpus, Period: o.Period, Memory: st.memory, Nested: st.scenario == ScenarioNested})
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
		errTail []string
	)
	stderr := &lineWriter{fn: func(l []byte) {
		mu.Lock()
		defer mu.Unlock()
		if line, err := results.ParseLine(l); err == nil && line.Progress != nil {
			last = line.Progress
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
		run.OOMKills = n
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
