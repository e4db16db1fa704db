package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
)

// RunFromPod turns a finished pod and its log into a results.Run (without the
// scenario fields).
func RunFromPod(pod *corev1.Pod, logs []byte) results.Run {
	p := podState{*pod}
	var run results.Run
	res, last, perr := results.ParseOutput(logs)
	run.Workload, run.LastProgress = res, last
	c := p.workload()
	if c == nil || c.State.Terminated == nil {
		run.Err = "the pod ended without a terminated container: " + p.describe()
		return run
	}
	t := c.State.Terminated
	run.ExitCode = int(t.ExitCode)
	if t.ExitCode > 128 {
		run.ExitCode, run.Signal = -1, signalName(int(t.ExitCode-128))
	}
	if !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt.Time) {
		run.WallSeconds = t.FinishedAt.Sub(t.StartedAt.Time).Seconds()
	}
	run.Sidecar = sidecarFromLogs(logs)
	if sc := p.sidecar(); sc != nil && (oomKilled(sc.State) || oomKilled(sc.LastTerminationState)) {
		// The pod-level layout's sidecar container was OOM-killed (and, a
		// native sidecar, restarted; a restart for another reason, a
		// failed startup probe, is not counted).
		if run.Sidecar == nil {
			run.Sidecar = &results.Sidecar{}
		}
		run.Sidecar.OOMKilled = true
	}
	switch {
	case t.Reason == "OOMKilled" && t.ExitCode == 0 && res != nil && run.Sidecar != nil:
		// The container's main process exited by itself, with its result:
		// the kill the runtime saw in the container was another process's,
		// the coprocess layout's sidecar (the workload was not killed, as
		// the local runner counts it).
		run.Sidecar.OOMKilled = true
	case t.Reason == "OOMKilled":
		run.OOMKills = 1
	case p.Status.Phase != corev1.PodSucceeded || t.ExitCode != 0:
		run.Err = fmt.Sprintf("%s, exit code %d: %s", t.Reason, t.ExitCode, lastLines(strings.TrimSpace(string(logs)), 5))
	case perr != nil:
		run.Err = perr.Error()
	}
	return run
}

func oomKilled(s corev1.ContainerState) bool {
	return s.Terminated != nil && s.Terminated.Reason == "OOMKilled"
}

// sidecarFromLogs reads the sidecar's lines in a log: its RSS once it held
// its memory, and the coprocess launcher's line for a sidecar killed by
// SIGKILL. nil when there are none.
func sidecarFromLogs(logs []byte) *results.Sidecar {
	var sc *results.Sidecar
	for _, l := range strings.Split(string(logs), "\n") {
		if i := strings.IndexByte(l, '{'); i > 0 {
			l = l[i:]
		}
		line, err := results.ParseSidecarLine([]byte(l))
		if err != nil {
			continue
		}
		if sc == nil {
			sc = &results.Sidecar{}
		}
		switch line.State {
		case "held":
			if sc.RSSBytes == 0 {
				sc.RSSBytes = line.RSSBytes
			}
		case results.SidecarKilled:
			sc.OOMKilled = true
		}
	}
	return sc
}

func signalName(n int) string {
	names := map[int]string{1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
	if s, ok := names[n]; ok {
		return s
	}
	return "signal " + strconv.Itoa(n)
}

func (r *Runner) meta(start time.Time, goVersion string) report.Meta {
	cfg := r.cfg
	host := report.HostMeta()
	where := "kind node"
	tail := ", " + r.info.kindVersion
	if !cfg.Kind() {
		where = "node"
		tail = fmt.Sprintf(" (context %s)", cfg.Context())
	}
	m := report.Meta{
		Runner:    "kind",
		Command:   strings.TrimSpace("go run -C bench . kind " + strings.Join(cfg.Args, " ")),
		Started:   start,
		Elapsed:   r.now().Sub(start),
		Machine:   fmt.Sprintf("%s %s (%s), %v CPUs and %s allocatable, Kubernetes %s, %s%s", where, r.info.node, r.info.osImage, r.info.allocCPU, report.MiB(float64(r.info.allocMemory)), r.info.serverVersion, r.info.runtime, tail),
		CPUModel:  host.CPUModel,
		Kernel:    r.info.kernel,
		Cgroup:    r.info.cgroup,
		GoVersion: goVersion,
		Workload:  r.workloadDesc(),
		Emulated:  cfg.Emulated,
	}
	var vs strings.Builder
	vs.WriteString("Variants:\n")
	for _, v := range cfg.Variants {
		fmt.Fprintf(&vs, "\n- `%s`: %s", v.Name, v.Doc)
	}
	m.Notes = append(m.Notes, vs.String(),
		"Each run is a Kubernetes Job (one pod, no retry) with requests equal to its limits. Throttling is the workload's own reading of its container's cpu.stat over the measured window; an OOM kill is the container's OOMKilled termination.",
		"The env variant's GOMAXPROCS and GOMEMLIMIT come from the downward API (resourceFieldRef limits.cpu, limits.memory): CPU rounded up to whole cores, and without a limit the node's allocatable CPUs and memory.")
	if slices.Contains(cfg.Scenarios, ScenarioShared) {
		m.Notes = append(m.Notes, sharedNote)
	}
	m.Notes = append(m.Notes, r.notes...)
	return m
}

const sharedNote = "Shared: the sidecar (`bench/cmd/sidecar`) allocates and touches its memory and holds it; the workload starts once it does. " +
	"In the coprocess layout `bench/cmd/coprocess` runs the sidecar and then the workload in the one container, under its memory limit. " +
	"In the pod-level layout the pod has `resources.limits.memory` and its two containers none: the sidecar is a native sidecar (an init container with restartPolicy Always) whose startup probe passes once it holds its memory, and the fitgo variant gets `FITGO_MEMORY_LIMIT` from the downward API (`limits.memory` of its container, which is the pod's limit), the README's recipe; the env variant's GOMEMLIMIT is that value too. " +
	"An OOM kill is the workload container's OOMKilled termination with the workload's own exit by SIGKILL; a kill of the sidecar alone (the launcher's line, or the sidecar container's OOMKilled state) is counted apart. " +
	"`oracle-headroom` is given GOMEMLIMIT = 0.9 × (limit − sidecar) by the runner: what a limit that accounts for the others would set."

func (r *Runner) workloadDesc() string {
	cfg := r.cfg
	var heaps []string
	for _, st := range cfg.Settings() {
		h := strconv.FormatFloat(st.HeapMiB, 'f', -1, 64) + " MiB"
		if !slices.Contains(heaps, h) {
			heaps = append(heaps, h)
		}
	}
	return fmt.Sprintf("live heap %s, %g MiB/s allocation, %g requests/s each %d work-loop iterations (%v CPU, calibrated in the cluster), %v measured per run, CFS period 100ms (Kubernetes)",
		strings.Join(heaps, " / "), cfg.AllocMiB, cfg.Rate, r.workIters, cfg.Work, cfg.Duration)
}

// writeFiles writes the report files to -out (if set).
func (r *Runner) writeFiles(start time.Time, runs []results.Run) error {
	if r.cfg.Out == "" {
		return nil
	}
	_, err := report.Write(r.cfg.Out, r.meta(start, goVersion(runs)), runs)
	return err
}

func goVersion(runs []results.Run) string {
	for _, run := range runs {
		if run.Workload != nil {
			return run.Workload.GoVersion
		}
	}
	return ""
}

// writeReport prints the table and writes the files at the end of the
// benchmark; stopped: it ended early (the caller has the error).
func (r *Runner) writeReport(start time.Time, runs []results.Run, stopped bool) error {
	sums := results.Summarize(runs)
	if err := report.WriteVerdict(r.Stdout, sums, 0); err != nil {
		return err
	}
	if err := report.Table(r.Stdout, sums); err != nil {
		return err
	}
	if err := r.writeFiles(start, runs); err != nil {
		return err
	}
	if r.cfg.Out != "" {
		r.logf("wrote %s", r.cfg.Out)
	}
	if r.failed > 0 && !stopped {
		return fmt.Errorf("%d run(s) failed (the errors are above, and in %s with -out): %w", r.failed, report.RunsFile, errors.Join(r.errs...))
	}
	return nil
}
