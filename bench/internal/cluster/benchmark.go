package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

// workloadArgs are the workload flags of a run with the given live heap.
func (r *Runner) workloadArgs(heapMiB float64, extra ...string) []string {
	cfg := r.cfg
	args := []string{
		"-duration=" + cfg.Duration.String(),
		"-heap-mib=" + strconv.FormatFloat(heapMiB, 'f', -1, 64),
		"-alloc-mib=" + strconv.FormatFloat(cfg.AllocMiB, 'f', -1, 64),
		"-rate=" + strconv.FormatFloat(cfg.Rate, 'f', -1, 64),
		"-work-iters=" + strconv.Itoa(r.workIters),
	}
	return append(args, extra...)
}

func (r *Runner) workload(name string, v variant.Variant, cpus float64, mem int64, args []string) Workload {
	w := Workload{
		Name:            name,
		Namespace:       r.cfg.Namespace(),
		RunID:           r.cfg.RunID,
		Variant:         v.Name,
		Image:           r.image,
		Command:         []string{path.Join(ImageDir, v.Binary())},
		Args:            args,
		NodeSelector:    r.cfg.NodeSelector,
		CPUs:            cpus,
		MemoryBytes:     mem,
		DownwardEnv:     v.DownwardAPI,
		Env:             v.Env,
		DeadlineSeconds: int64((r.cfg.Timeout + time.Minute).Seconds()),
	}
	switch {
	case r.cfg.PullPolicy != "":
		w.PullPolicy = r.cfg.PullPolicy
	case !r.cfg.Kind() && !strings.Contains(r.image, "@"):
		// A tag in a registry may have moved since a node pulled it.
		w.PullPolicy = corev1.PullAlways
	}
	return w
}

// calibrate runs the untuned variant with -calibrate and no limits, once, as
// the local runner does, so that every variant does the same work per request.
func (r *Runner) calibrate(ctx context.Context) (int, error) {
	v, _ := variant.Lookup("untuned")
	w := r.workload("calibrate", v, 0, 0, []string{"-calibrate", "-work=" + r.cfg.Work.String()})
	w.DeadlineSeconds = int64((3 * time.Minute).Seconds())
	r.logf("calibrating the work per request in the cluster")
	p, logs, err := r.runJob(ctx, w, "calibration", 3*time.Minute)
	if err != nil {
		return 0, err
	}
	if p.Status.Phase != corev1.PodSucceeded {
		return 0, fmt.Errorf("calibration pod: %s: %s", p.describe(), lastLines(string(logs), 5))
	}
	n, err := calibration(logs)
	if err != nil {
		return 0, err
	}
	r.logf("work per request: %d iterations", n)
	return n, nil
}

// calibration reads the number of iterations, the last line of the log that
// is a number (the workload may log before it, and the runtime after it).
func calibration(logs []byte) (int, error) {
	lines := strings.Split(string(logs), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if n, err := strconv.Atoi(strings.TrimSpace(lines[i])); err == nil && n > 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("calibration printed %q, want a number of iterations", lastLines(strings.TrimSpace(string(logs)), 5))
}

// errImage is a pod whose image the node cannot get: every run shares the
// image, so the benchmark stops.
var errImage = errors.New("the node cannot get the image")

// runJob creates the Job for w, waits for its pod to finish (at most timeout)
// and returns the pod's final status and log.
func (r *Runner) runJob(ctx context.Context, w Workload, label string, timeout time.Duration) (podState, []byte, error) {
	manifest, err := JobManifest(w)
	if err != nil {
		return podState{}, nil, err
	}
	if _, err := r.Exec.Run(ctx, r.kubectlCmd(true, manifest, "create", "-f", "-")); err != nil {
		return podState{}, nil, err
	}
	r.createdObjs = true
	p, err := r.waitPod(ctx, label, timeout, func() (podState, bool, error) {
		out, err := r.read(ctx, true, "get", "pods", "-l", "batch.kubernetes.io/job-name="+w.Name, "-o", "json")
		if err != nil {
			return podState{}, false, err
		}
		pods, err := decodePods(out)
		if err != nil || len(pods) == 0 {
			return podState{}, false, err
		}
		return pods[0], pods[0].done(), nil
	})
	if err != nil {
		return p, nil, err
	}
	logs, err := r.read(ctx, true, "logs", p.Name, "-c", ContainerName)
	if err != nil {
		return p, nil, err
	}
	return p, logs, nil
}

// errTimeout is a run that did not finish in time.
var errTimeout = errors.New("timed out")

// waitPod polls get until it reports done, the pod is stuck, or timeout
// passes. It prints the pod's state on stderr when it changes.
func (r *Runner) waitPod(ctx context.Context, label string, timeout time.Duration, get func() (podState, bool, error)) (podState, error) {
	deadline := r.now().Add(timeout)
	var last podState
	lastDesc := ""
	for {
		p, done, err := get()
		if err != nil {
			return last, err
		}
		last = p
		if done {
			return p, nil
		}
		if why, image := p.stuck(); why != "" {
			err := fmt.Errorf("%s: pod %s cannot run: %s", label, p.Name, why)
			if image {
				err = fmt.Errorf("%w (%w)", err, errImage)
			}
			return p, err
		}
		if d := p.describe(); d != lastDesc {
			r.logf("  %s: %s", label, d)
			lastDesc = d
		}
		if !r.now().Before(deadline) {
			return p, fmt.Errorf("%s: %w after %v; last state: %s", label, errTimeout, timeout, p.describe())
		}
		if err := r.sleep(ctx, r.cfg.Poll); err != nil {
			return p, err
		}
	}
}

// fatal reports whether err ends the benchmark rather than one run: the
// user stopped it, or no run can get the image.
func fatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, errImage)
}

func (s Setting) slug() string {
	out := "c" + CPUQuantity(s.CPUs)
	if s.CPUs == 0 {
		out = "cnone"
	}
	if s.Memory > 0 {
		out += "-m" + MemoryQuantity(s.Memory)
	}
	if s.Layout != "" {
		out += "-" + s.Layout
	}
	return strings.ToLower(out)
}

func (s Setting) String() string {
	cpu := "no CPU limit"
	if s.CPUs > 0 {
		cpu = "cpus=" + CPUQuantity(s.CPUs)
	}
	mem := ""
	if s.Memory > 0 {
		mem = " memory=" + MemoryQuantity(s.Memory)
	}
	if s.Layout != "" {
		mem += " " + s.Layout + " sidecar=" + MemoryQuantity(s.Sidecar)
	}
	return s.Scenario + " " + cpu + mem
}

// slug makes a variant name usable in an object name.
func slug(name string) string {
	return strings.NewReplacer("+", "-", ".", "-", "_", "-").Replace(strings.ToLower(name))
}

// planned is one run of the schedule.
type planned struct {
	label, name string
	v           variant.Variant
	st          Setting
	round       int
}

func (p planned) run(err string) results.Run {
	return results.Run{Scenario: p.st.Scenario, Variant: p.v.Name, CPUs: p.st.CPUs, MemoryBytes: p.st.Memory,
		Layout: p.st.Layout, SidecarBytes: p.st.Sidecar, Round: p.round, Err: err}
}

// benchmark runs the cpu, memory and shared scenarios, round by round, each
// round every setting and variant in turn as the local runner does, and
// writes the report: after every run (with what has not run yet marked), and
// whatever ends the benchmark. A setting the cluster cannot run (a node too
// small, no pod-level resources) is skipped with the reason.
func (r *Runner) benchmark(ctx context.Context, start time.Time) error {
	cfg := r.cfg
	var fitting []Setting
	var runs []results.Run
	for _, st := range cfg.Settings() {
		why := r.fit(st.CPUs, st.Memory)
		if why == "" && st.Layout == LayoutPodLevel {
			var err error
			if why, err = r.podLevelSupport(ctx); err != nil {
				return err
			}
		}
		if why == "" {
			fitting = append(fitting, st)
			continue
		}
		r.logf("skipping %s: %s", st, why)
		r.notes = append(r.notes, fmt.Sprintf("Skipped %s: %s.", st, why))
		for round := 1; round <= cfg.Runs; round++ {
			for _, v := range cfg.Variants {
				runs = append(runs, planned{v: v, st: st, round: round}.run("skipped: "+why))
			}
		}
	}
	if len(fitting) == 0 {
		return fmt.Errorf("no setting fits the cluster: %s", strings.Join(r.notes, " "))
	}
	var todo []planned
	total := len(fitting) * cfg.Runs * len(cfg.Variants)
	for round := 1; round <= cfg.Runs; round++ {
		for _, st := range fitting {
			for _, v := range cfg.Variants {
				label := fmt.Sprintf("[%d/%d] %s · %s round %d/%d", len(todo)+1, total, st, v.Name, round, cfg.Runs)
				name := fmt.Sprintf("%s-%s-%s-r%d", st.Scenario, slug(v.Name), st.slug(), round)
				todo = append(todo, planned{label: label, name: name, v: v, st: st, round: round})
			}
		}
	}
	begun := r.now()
	for i, pl := range todo {
		eta := ""
		if i > 0 {
			perRun := r.now().Sub(begun) / time.Duration(i)
			eta = fmt.Sprintf(" · ETA %v", (perRun * time.Duration(total-i)).Round(time.Second))
		}
		r.logf("%s%s", pl.label, eta)
		run, err := r.benchRun(ctx, pl)
		if err != nil {
			why := fmt.Sprintf("not run: the benchmark stopped after %d of %d runs: %v", i, total, err)
			r.notes = append(r.notes, fmt.Sprintf("Incomplete: the benchmark stopped after %d of %d runs (%v); the runs after it are marked \"not run\".", i, total, err))
			for _, rest := range todo[i:] {
				runs = append(runs, rest.run(why))
			}
			return errors.Join(err, r.writeReport(start, runs, true))
		}
		runs = append(runs, run)
		if i < len(todo)-1 {
			var pending []results.Run
			for _, rest := range todo[i+1:] {
				pending = append(pending, rest.run("not run yet: the benchmark was still running when this was written"))
			}
			if err := r.writeFiles(start, append(slices.Clip(runs), pending...)); err != nil {
				return err
			}
		}
	}
	return r.writeReport(start, runs, false)
}

// benchRun runs one variant once. A pod that fails, times out or cannot be
// read is a failed run (an OOM kill is a result); only a cancelled context
// or an image the node cannot get is an error.
func (r *Runner) benchRun(ctx context.Context, pl planned) (results.Run, error) {
	w := r.workload(pl.name, pl.v, pl.st.CPUs, pl.st.Memory, r.workloadArgs(pl.st.HeapMiB))
	if pl.st.Layout != "" {
		r.shareWith(&w, pl.v, pl.st)
	}
	p, logs, err := r.runJob(ctx, w, pl.label, r.cfg.Timeout)
	if err != nil {
		if fatal(ctx, err) {
			return results.Run{}, err
		}
		r.failed++
		r.errs = append(r.errs, err)
		r.logf("  %s: FAILED: %v", pl.label, err)
		r.deleteJob(ctx, pl.name)
		return pl.run(err.Error()), nil
	}
	if pl.st.Layout == LayoutPodLevel {
		// The sidecar's own log: its held line.
		side, err := r.read(ctx, true, "logs", p.Name, "-c", SidecarContainerName)
		if err != nil {
			r.logf("  %s: the sidecar's log: %v", pl.label, err)
		}
		logs = append(append(slices.Clip(logs), '\n'), side...)
	}
	run := RunFromPod(&p.Pod, logs)
	run.Scenario, run.Variant, run.CPUs, run.MemoryBytes, run.Round = pl.st.Scenario, pl.v.Name, pl.st.CPUs, pl.st.Memory, pl.round
	run.Layout, run.SidecarBytes = pl.st.Layout, pl.st.Sidecar
	switch {
	case run.Killed():
		r.logf("  %s: OOM-killed", pl.label)
	case run.Sidecar != nil && run.Sidecar.OOMKilled:
		r.logf("  %s: the sidecar was OOM-killed, not the workload", pl.label)
	case run.Err != "":
		r.failed++
		r.errs = append(r.errs, fmt.Errorf("%s: %s", pl.label, run.Err))
		r.logf("  %s: FAILED: %s", pl.label, run.Err)
	case run.Workload != nil:
		r.logf("  %s: GOMAXPROCS %d, p99 %.1f ms", pl.label, run.Workload.GOMAXPROCS, run.Workload.Latency.P99)
	}
	return run, nil
}

// deleteJob deletes a Job that failed to finish, so that its pod does not
// hold the node's CPU and memory during the next runs.
func (r *Runner) deleteJob(ctx context.Context, name string) {
	if _, err := r.kubectl(ctx, true, "delete", "job", name, "--ignore-not-found", "--wait=false"); err != nil {
		r.logf("  deleting the Job %s: %v", name, err)
	}
}

// shareWith puts the shared scenario's sidecar next to w in st's layout, and
// gives the variant what its recipe takes: the oracle its GOMEMLIMIT, and in
// the pod-level layout fitgo FITGO_MEMORY_LIMIT from the downward API (the
// README's recipe: fitgo cannot see the pod's limit from inside its
// container). The env variant's GOMEMLIMIT is limits.memory there too: the
// pod's limit.
func (r *Runner) shareWith(w *Workload, v variant.Variant, st Setting) {
	w.Sidecar = &Sidecar{Layout: st.Layout, Bytes: st.Sidecar}
	if v.HeadroomOracle {
		w.Env = append(slices.Clip(w.Env), v.HeadroomEnv(st.Memory, st.Sidecar)...)
	}
	w.MemoryLimitEnv = st.Layout == LayoutPodLevel && v.Binary() == "fitgo"
}
