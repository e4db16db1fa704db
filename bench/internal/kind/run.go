package kind

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/bench/internal/settings"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

// Main is the kind runner's entry point: go run -C bench . kind [flags].
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := ParseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "kind: %v\n", err)
		return 2
	}
	r := &Runner{Exec: OSExecutor{Progress: stderr}, Stdout: stdout, Stderr: stderr}
	if err := r.Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "kind: %v\n", err)
		return 1
	}
	return 0
}

// ImageDir is where bench/Dockerfile puts the variants' binaries.
const ImageDir = "/bench"

// Runner runs the benchmark in a kind cluster through Exec.
type Runner struct {
	Exec           Executor
	Stdout, Stderr io.Writer
	// Now and Sleep default to the real clock; tests replace them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	cfg          Config
	createdNS    bool
	createdClust bool
	info         clusterInfo
	workIters    int
	failed       int // runs that failed for a reason other than an OOM kill
}

type clusterInfo struct {
	kindVersion   string
	serverVersion string
	minor         int
	node          string
	kernel        string
	runtime       string
	osImage       string
	allocCPU      float64
	allocMemory   int64
	cgroup        string
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.Stderr, "kind: "+format+"\n", args...)
}

func (r *Runner) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.Exec.Run(ctx, Cmd{Name: name, Args: args})
}

// kubectl runs kubectl against the cluster's context; ns adds -n.
func (r *Runner) kubectl(ctx context.Context, ns bool, args ...string) ([]byte, error) {
	return r.Exec.Run(ctx, r.kubectlCmd(ns, nil, args...))
}

func (r *Runner) kubectlCmd(ns bool, stdin []byte, args ...string) Cmd {
	a := []string{"--context", r.cfg.Context()}
	if ns {
		a = append(a, "-n", r.cfg.Namespace())
	}
	return Cmd{Name: "kubectl", Args: append(a, args...), Stdin: stdin}
}

// Run runs the whole benchmark: cluster, image, namespace, runs, report,
// cleanup. Cleanup runs even when ctx is cancelled (with its own time limit).
func (r *Runner) Run(ctx context.Context, cfg Config) (err error) {
	r.cfg = cfg
	start := r.now()
	defer func() {
		if cerr := r.cleanup(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()
	if err := r.setUp(ctx); err != nil {
		return err
	}
	if cfg.Resize() {
		return r.resizeScenario(ctx, start)
	}
	return r.benchmark(ctx, start)
}

func (r *Runner) setUp(ctx context.Context) error {
	cfg := r.cfg
	if err := r.preflight(ctx); err != nil {
		return err
	}
	out, err := r.run(ctx, "kind", "get", "clusters")
	if err != nil {
		return err
	}
	exists := false
	for _, l := range strings.Split(string(out), "\n") {
		exists = exists || strings.TrimSpace(l) == cfg.Cluster
	}
	if exists {
		r.logf("using the existing cluster %s (kept at the end)", cfg.Cluster)
	} else {
		r.logf("creating the cluster %s from %s", cfg.Cluster, cfg.KindConfig)
		args := []string{"create", "cluster", "--name", cfg.Cluster, "--config", cfg.KindConfig, "--wait", "5m"}
		if cfg.NodeImage != "" {
			args = append(args, "--image", cfg.NodeImage)
		}
		r.createdClust = true // kind removes a half-created cluster itself, but delete it anyway
		if _, err := r.Exec.Run(ctx, Cmd{Name: "kind", Args: args, Stream: true}); err != nil {
			return err
		}
	}
	if err := r.inspectCluster(ctx); err != nil {
		return err
	}
	if cfg.Build {
		r.logf("building %s from %s", cfg.Image, path.Join(cfg.RepoRoot, "bench", "Dockerfile"))
		if _, err := r.Exec.Run(ctx, Cmd{Name: "docker", Args: []string{"build", "-f", path.Join("bench", "Dockerfile"), "-t", cfg.Image, "."}, Dir: cfg.RepoRoot, Stream: true}); err != nil {
			return err
		}
	}
	r.logf("loading %s into the cluster", cfg.Image)
	if _, err := r.Exec.Run(ctx, Cmd{Name: "kind", Args: []string{"load", "docker-image", cfg.Image, "--name", cfg.Cluster}, Stream: true}); err != nil {
		return err
	}
	if _, err := r.kubectl(ctx, false, "create", "namespace", cfg.Namespace()); err != nil {
		return err
	}
	r.createdNS = true
	r.logf("namespace %s", cfg.Namespace())
	r.workIters = cfg.WorkIters
	if r.workIters <= 0 {
		n, err := r.calibrate(ctx)
		if err != nil {
			return fmt.Errorf("calibrating the work per request: %w", err)
		}
		r.workIters = n
	}
	return nil
}

// inspectCluster reads the server version and the node, for the report and
// to check that the scenario fits.
func (r *Runner) inspectCluster(ctx context.Context) error {
	out, err := r.kubectl(ctx, false, "version", "-o", "json")
	if err != nil {
		return err
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil || v.ServerVersion == nil {
		return fmt.Errorf("kubectl version: no server version in %q", strings.TrimSpace(string(out)))
	}
	r.info.serverVersion = v.ServerVersion.GitVersion
	r.info.minor, _ = strconv.Atoi(strings.TrimRight(v.ServerVersion.Minor, "+"))
	if r.cfg.Resize() && v.ServerVersion.Major == "1" && r.info.minor < 33 {
		return fmt.Errorf("-scenario resize needs in-place pod resize: Kubernetes 1.33 or later (GA in 1.35); the cluster runs %s: recreate it with a newer node image (-node-image)", r.info.serverVersion)
	}
	out, err = r.kubectl(ctx, false, "get", "nodes", "-o", "json")
	if err != nil {
		return err
	}
	var nodes nodeList
	if err := json.Unmarshal(out, &nodes); err != nil {
		return fmt.Errorf("decoding nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return errors.New("the cluster has no nodes")
	}
	n := nodes.Items[0]
	r.info.node = n.Metadata.Name
	r.info.kernel = n.Status.NodeInfo.KernelVersion
	r.info.runtime = n.Status.NodeInfo.ContainerRuntimeVersion
	r.info.osImage = n.Status.NodeInfo.OSImage
	r.info.allocCPU, _ = parseCPUQuantity(n.Status.Allocatable["cpu"])
	r.info.allocMemory, _ = settings.ParseBytes(n.Status.Allocatable["memory"])
	if !r.cfg.Resize() {
		for _, st := range r.cfg.Settings() {
			if r.info.allocCPU > 0 && st.CPUs > r.info.allocCPU {
				return fmt.Errorf("%s: the node %s has %v CPUs allocatable, and the pods request their limits", st, r.info.node, r.info.allocCPU)
			}
			if r.info.allocMemory > 0 && st.Memory > r.info.allocMemory {
				return fmt.Errorf("%s: the node %s has %s allocatable, and the pods request their limits", st, r.info.node, report.MiB(float64(r.info.allocMemory)))
			}
		}
	}
	return nil
}

// preflight checks the three tools before anything is created.
func (r *Runner) preflight(ctx context.Context) error {
	out, err := r.run(ctx, "docker", "info", "--format", "{{.CgroupVersion}} {{.CgroupDriver}}")
	if err != nil {
		return fmt.Errorf("Docker is needed, with a running engine: %w", err)
	}
	if f := strings.Fields(string(out)); len(f) == 2 {
		r.info.cgroup = "v" + f[0] + " (" + f[1] + " driver, Docker host)"
	}
	out, err = r.run(ctx, "kind", "version")
	if err != nil {
		return fmt.Errorf("kind is needed (https://kind.sigs.k8s.io/docs/user/quick-start/#installation): %w", err)
	}
	r.info.kindVersion = strings.TrimSpace(string(out))
	out, err = r.run(ctx, "kubectl", "version", "--client", "-o", "json")
	if err != nil {
		return fmt.Errorf("kubectl is needed (https://kubernetes.io/docs/tasks/tools/): %w", err)
	}
	var v struct {
		ClientVersion *struct {
			Major, Minor, GitVersion string
		} `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err == nil && v.ClientVersion != nil && r.cfg.Resize() {
		minor, _ := strconv.Atoi(strings.TrimRight(v.ClientVersion.Minor, "+"))
		if v.ClientVersion.Major == "1" && minor < 32 {
			return fmt.Errorf("-scenario resize needs kubectl 1.32 or later (patch --subresource resize); this one is %s", v.ClientVersion.GitVersion)
		}
	}
	return nil
}

// parseCPUQuantity parses a Kubernetes CPU quantity: "8", "7500m".
func parseCPUQuantity(s string) (float64, error) {
	if m, ok := strings.CutSuffix(s, "m"); ok {
		v, err := strconv.ParseFloat(m, 64)
		return v / 1000, err
	}
	return strconv.ParseFloat(s, 64)
}

// cleanup deletes what the runner created, unless -keep.
func (r *Runner) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cfg := r.cfg
	if cfg.Keep {
		if r.createdNS {
			r.logf("kept the namespace %s: kubectl --context %s delete namespace %s", cfg.Namespace(), cfg.Context(), cfg.Namespace())
		}
		if r.createdClust {
			r.logf("kept the cluster %s: kind delete cluster --name %s", cfg.Cluster, cfg.Cluster)
		}
		return nil
	}
	if r.createdClust {
		r.logf("deleting the cluster %s", cfg.Cluster)
		_, err := r.run(ctx, "kind", "delete", "cluster", "--name", cfg.Cluster)
		return err
	}
	if r.createdNS {
		r.logf("deleting the namespace %s", cfg.Namespace())
		_, err := r.kubectl(ctx, false, "delete", "namespace", cfg.Namespace(), "--ignore-not-found", "--timeout=2m")
		return err
	}
	return nil
}

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
	return Workload{
		Name:            name,
		Namespace:       r.cfg.Namespace(),
		RunID:           r.cfg.RunID,
		Variant:         v.Name,
		Image:           r.cfg.Image,
		Command:         []string{path.Join(ImageDir, v.Binary())},
		Args:            args,
		CPUs:            cpus,
		MemoryBytes:     mem,
		DownwardEnv:     v.DownwardAPI,
		Env:             v.Env,
		DeadlineSeconds: int64((r.cfg.Timeout + time.Minute).Seconds()),
	}
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
	if p.Status.Phase != "Succeeded" {
		return 0, fmt.Errorf("calibration pod: %s: %s", p.describe(), lastLines(string(logs), 5))
	}
	n, err := strconv.Atoi(strings.TrimSpace(lastLines(string(logs), 1)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("calibration printed %q, want a number of iterations", strings.TrimSpace(string(logs)))
	}
	r.logf("work per request: %d iterations", n)
	return n, nil
}

// runJob creates the Job for w, waits for its pod to finish (at most timeout)
// and returns the pod's final status and log.
func (r *Runner) runJob(ctx context.Context, w Workload, label string, timeout time.Duration) (podStatusObject, []byte, error) {
	manifest, err := JobManifest(w)
	if err != nil {
		return podStatusObject{}, nil, err
	}
	if _, err := r.Exec.Run(ctx, r.kubectlCmd(true, manifest, "create", "-f", "-")); err != nil {
		return podStatusObject{}, nil, err
	}
	p, err := r.waitPod(ctx, label, timeout, func() (podStatusObject, bool, error) {
		out, err := r.kubectl(ctx, true, "get", "pods", "-l", "batch.kubernetes.io/job-name="+w.Name, "-o", "json")
		if err != nil {
			return podStatusObject{}, false, err
		}
		pods, err := decodePods(out)
		if err != nil || len(pods) == 0 {
			return podStatusObject{}, false, err
		}
		return pods[0], pods[0].done(), nil
	})
	if err != nil {
		return p, nil, err
	}
	logs, err := r.kubectl(ctx, true, "logs", p.Metadata.Name, "-c", ContainerName)
	if err != nil {
		return p, nil, err
	}
	return p, logs, nil
}

// errTimeout is a run that did not finish in time.
var errTimeout = errors.New("timed out")

// waitPod polls get until it reports done, the pod is stuck, or timeout
// passes. It prints the pod's state on stderr when it changes.
func (r *Runner) waitPod(ctx context.Context, label string, timeout time.Duration, get func() (podStatusObject, bool, error)) (podStatusObject, error) {
	deadline := r.now().Add(timeout)
	var last podStatusObject
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
		if why := p.stuck(); why != "" {
			return p, fmt.Errorf("%s: pod %s cannot run: %s", label, p.Metadata.Name, why)
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

func (s Setting) slug() string {
	out := "c" + CPUQuantity(s.CPUs)
	if s.CPUs == 0 {
		out = "cnone"
	}
	if s.Memory > 0 {
		out += "-m" + MemoryQuantity(s.Memory)
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
	return s.Scenario + " " + cpu + mem
}

// slug makes a variant name usable in an object name.
func slug(name string) string {
	return strings.NewReplacer("+", "-", ".", "-", "_", "-").Replace(strings.ToLower(name))
}

// benchmark runs the cpu and memory scenarios, round by round, each round
// every setting and variant in turn as the local runner does, and writes the
// report.
func (r *Runner) benchmark(ctx context.Context, start time.Time) error {
	cfg := r.cfg
	settings := cfg.Settings()
	total := len(settings) * cfg.Runs * len(cfg.Variants)
	var runs []results.Run
	begun := r.now()
	i := 0
	for round := 1; round <= cfg.Runs; round++ {
		for _, st := range settings {
			for _, v := range cfg.Variants {
				i++
				eta := ""
				if i > 1 {
					perRun := r.now().Sub(begun) / time.Duration(i-1)
					eta = fmt.Sprintf(" · ETA %v", (perRun * time.Duration(total-i+1)).Round(time.Second))
				}
				label := fmt.Sprintf("[%d/%d] %s · %s round %d/%d", i, total, st, v.Name, round, cfg.Runs)
				r.logf("%s%s", label, eta)
				name := fmt.Sprintf("%s-%s-%s-r%d", st.Scenario, slug(v.Name), st.slug(), round)
				run, err := r.benchRun(ctx, name, label, v, st, round)
				if err != nil {
					return err
				}
				runs = append(runs, run)
			}
		}
	}
	return r.writeReport(start, runs)
}

// benchRun runs one variant once. A pod that fails is a recorded run (an OOM
// kill is a result); a timeout or an error talking to the cluster is an error.
func (r *Runner) benchRun(ctx context.Context, name, label string, v variant.Variant, st Setting, round int) (results.Run, error) {
	w := r.workload(name, v, st.CPUs, st.Memory, r.workloadArgs(st.HeapMiB))
	p, logs, err := r.runJob(ctx, w, label, r.cfg.Timeout)
	if err != nil {
		return results.Run{}, err
	}
	run := RunFromPod(p, logs)
	run.Scenario, run.Variant, run.CPUs, run.MemoryBytes, run.Round = st.Scenario, v.Name, st.CPUs, st.Memory, round
	switch {
	case run.Killed():
		r.logf("  %s: OOM-killed", label)
	case run.Err != "":
		r.failed++
		r.logf("  %s: FAILED: %s", label, run.Err)
	case run.Workload != nil:
		r.logf("  %s: GOMAXPROCS %d, p99 %.1f ms", label, run.Workload.GOMAXPROCS, run.Workload.Latency.P99)
	}
	return run, nil
}

// RunFromPod turns a finished pod and its log into a results.Run (without the
// scenario fields).
func RunFromPod(p podStatusObject, logs []byte) results.Run {
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
	if !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt) {
		run.WallSeconds = t.FinishedAt.Sub(t.StartedAt).Seconds()
	}
	switch {
	case t.Reason == "OOMKilled":
		run.OOMKills = 1
	case p.Status.Phase != "Succeeded" || t.ExitCode != 0:
		run.Err = fmt.Sprintf("%s, exit code %d: %s", t.Reason, t.ExitCode, lastLines(strings.TrimSpace(string(logs)), 5))
	case perr != nil:
		run.Err = perr.Error()
	}
	return run
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
	m := report.Meta{
		Runner:    "kind",
		Command:   strings.TrimSpace("go run -C bench . kind " + strings.Join(cfg.Args, " ")),
		Started:   start,
		Elapsed:   r.now().Sub(start),
		Machine:   fmt.Sprintf("kind node %s (%s), %v CPUs and %s allocatable, Kubernetes %s, %s, %s", r.info.node, r.info.osImage, r.info.allocCPU, report.MiB(float64(r.info.allocMemory)), r.info.serverVersion, r.info.runtime, r.info.kindVersion),
		CPUModel:  host.CPUModel,
		Kernel:    r.info.kernel,
		Cgroup:    r.info.cgroup,
		GoVersion: goVersion,
		Workload:  r.workloadDesc(),
	}
	var vs strings.Builder
	vs.WriteString("Variants:\n")
	for _, v := range cfg.Variants {
		fmt.Fprintf(&vs, "\n- `%s`: %s", v.Name, v.Doc)
	}
	m.Notes = append(m.Notes, vs.String(),
		"Each run is a Kubernetes Job (one pod, no retry) with requests equal to its limits. Throttling is the workload's own reading of its container's cpu.stat over the measured window; an OOM kill is the container's OOMKilled termination.",
		"The env variant's GOMAXPROCS and GOMEMLIMIT come from the downward API (resourceFieldRef limits.cpu, limits.memory): CPU rounded up to whole cores, and without a limit the node's allocatable CPUs and memory.")
	return m
}

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

func (r *Runner) writeReport(start time.Time, runs []results.Run) error {
	goVersion := ""
	for _, run := range runs {
		if run.Workload != nil {
			goVersion = run.Workload.GoVersion
			break
		}
	}
	meta := r.meta(start, goVersion)
	if err := report.Table(r.Stdout, results.Summarize(runs)); err != nil {
		return err
	}
	if r.cfg.Out != "" {
		if _, err := report.Write(r.cfg.Out, meta, runs); err != nil {
			return err
		}
		r.logf("wrote %s", r.cfg.Out)
	}
	if r.failed > 0 {
		return fmt.Errorf("%d run(s) failed (the errors are above, and in %s with -out)", r.failed, report.RunsFile)
	}
	return nil
}
