package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
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

// Runner runs the benchmark in a kind cluster, or an existing one, through
// Exec.
type Runner struct {
	Exec           Executor
	Stdout, Stderr io.Writer
	// Now and Sleep default to the real clock; tests replace them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// TempDir holds the kind cluster's kubeconfig and image archives; empty:
	// a new temporary directory, removed at the end.
	TempDir string

	cfg          Config
	tmp          string
	kubeconfig   string
	engine       engineInfo
	createdNS    bool
	createdClust bool
	createdObjs  bool // Jobs or Pods, in a namespace the runner did not create
	info         clusterInfo
	nodes        []nodeFree // the nodes the pods may run on
	image        string     // the image reference the pods use
	workIters    int
	failed       int     // runs that failed for a reason other than an OOM kill
	errs         []error // why
	notes        []string
	// podLevel is why the cluster cannot run the pod-level layout ("" when
	// it can), once podLevelChecked.
	podLevel        string
	podLevelChecked bool
}

type clusterInfo struct {
	kindVersion   string
	serverVersion string
	minor         int
	node          string
	kernel        string
	runtime       string
	osImage       string
	arch          string
	capCPU        float64
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

// kindCmd is a kind command for the configured provider.
func (r *Runner) kindCmd(args ...string) Cmd {
	c := Cmd{Name: "kind", Args: args}
	if r.cfg.Provider == ProviderPodman {
		c.Env = []string{"KIND_EXPERIMENTAL_PROVIDER=podman"}
	}
	return c
}

// kubectl runs kubectl against the cluster's context; ns adds -n.
func (r *Runner) kubectl(ctx context.Context, ns bool, args ...string) ([]byte, error) {
	return r.Exec.Run(ctx, r.kubectlCmd(ns, nil, args...))
}

// requestTimeout bounds each request of the runner's kubectl reads: a
// server that stopped answering is retried instead of waited for.
const requestTimeout = "--request-timeout=30s"

// Retries of a kubectl read: attempts in all, and the first back-off (it
// doubles).
const (
	readAttempts = 5
	readBackoff  = time.Second
)

// read runs a kubectl read (get, logs, version) with a request timeout, and
// retries it with back-off: "TLS handshake timeout" and "etcdserver: request
// timed out" are common on a loaded laptop and pass.
func (r *Runner) read(ctx context.Context, ns bool, args ...string) ([]byte, error) {
	args = append(args, requestTimeout)
	wait := readBackoff
	for attempt := 1; ; attempt++ {
		out, err := r.kubectl(ctx, ns, args...)
		if err == nil || ctx.Err() != nil || attempt == readAttempts || notFound(err) || forbidden(err) {
			return out, err
		}
		r.logf("  %v; retrying in %v (%d/%d)", err, wait, attempt+1, readAttempts)
		if err := r.sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait *= 2
	}
}

// notFound reports whether err is kubectl's NotFound, which waiting does not
// change for a read.
func notFound(err error) bool { return strings.Contains(err.Error(), "(NotFound)") }

// forbidden reports whether err is kubectl's Forbidden: RBAC does not change
// by waiting either.
func forbidden(err error) bool { return strings.Contains(err.Error(), "(Forbidden)") }

func (r *Runner) kubectlCmd(ns bool, stdin []byte, args ...string) Cmd {
	var a []string
	if r.kubeconfig != "" {
		a = append(a, "--kubeconfig", r.kubeconfig)
	}
	a = append(a, "--context", r.cfg.Context())
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
	r.tmp = r.TempDir
	if r.tmp == "" {
		if r.tmp, err = os.MkdirTemp("", "fitgo-kind-"); err != nil {
			return err
		}
		defer os.RemoveAll(r.tmp)
	}
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
	if cfg.Kind() {
		if err := r.kindCluster(ctx); err != nil {
			return err
		}
	} else {
		r.kubeconfig = cfg.Kubeconfig
		r.logf("using the cluster of the context %s", cfg.Context())
	}
	if err := r.inspectCluster(ctx); err != nil {
		return err
	}
	if err := r.provideImage(ctx); err != nil {
		return err
	}
	if cfg.NamespaceName == "" {
		if _, err := r.kubectl(ctx, false, "create", "namespace", cfg.Namespace()); err != nil {
			return err
		}
		r.createdNS = true
	}
	r.logf("namespace %s", cfg.Namespace())
	if err := r.waitServiceAccount(ctx); err != nil {
		return err
	}
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

// kindCluster creates the kind cluster unless it exists, and writes its
// kubeconfig for kubectl (the kind-<name> context may be missing from the
// user's kubeconfig: another machine created it, or it was exported
// elsewhere).
func (r *Runner) kindCluster(ctx context.Context) error {
	cfg := r.cfg
	out, err := r.Exec.Run(ctx, r.kindCmd("get", "clusters"))
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
		if err := r.checkNodeImage(); err != nil {
			return err
		}
		r.logf("creating the cluster %s from %s", cfg.Cluster, cfg.KindConfig)
		args := []string{"create", "cluster", "--name", cfg.Cluster, "--config", cfg.KindConfig, "--wait", "5m"}
		if cfg.NodeImage != "" {
			args = append(args, "--image", cfg.NodeImage)
		}
		r.createdClust = true // kind removes a half-created cluster itself, but delete it anyway
		c := r.kindCmd(args...)
		c.Stream = true
		if _, err := r.Exec.Run(ctx, c); err != nil {
			return err
		}
	}
	kc, err := r.Exec.Run(ctx, r.kindCmd("get", "kubeconfig", "--name", cfg.Cluster))
	if err != nil {
		return err
	}
	r.kubeconfig = filepath.Join(r.tmp, "kubeconfig")
	return os.WriteFile(r.kubeconfig, kc, 0o600)
}

// checkNodeImage fails before kind create cluster on a cgroup v1 host unless
// the node image runs a Kubernetes older than 1.35: from 1.35 the kubelet
// refuses cgroup v1 (failCgroupV1), and kind create cluster would fail only
// after kubeadm's four-minute wait.
func (r *Runner) checkNodeImage() error {
	if r.engine.cgroupVersion != "1" {
		return nil
	}
	cfg := r.cfg
	const advice = "; pass -node-image with a Kubernetes 1.34 (or older) image from the notes of your kind release, e.g. -node-image kindest/node:v1.34.3@sha256:<digest>, or run on a cgroup v2 host"
	if cfg.NodeImage == "" {
		if m, ok := kindMinor(r.info.kindVersion); ok && m < 31 {
			return nil // kind before v0.31 defaults to Kubernetes 1.34 or older
		}
		return fmt.Errorf("this host runs cgroup v1 (%s), and kind's default node image (%s) runs Kubernetes 1.35 or later, whose kubelet refuses cgroup v1%s",
			r.info.cgroup, r.info.kindVersion, advice)
	}
	if m, ok := nodeImageMinor(cfg.NodeImage); ok && m >= 35 {
		return fmt.Errorf("this host runs cgroup v1 (%s), and -node-image %s runs Kubernetes 1.%d, whose kubelet refuses cgroup v1%s",
			r.info.cgroup, cfg.NodeImage, m, advice)
	}
	return nil
}

// kindMinor returns the minor version in "kind v0.33.0 go1.26.8 linux/amd64".
func kindMinor(v string) (int, bool) {
	f := strings.Fields(v)
	if len(f) < 2 || !strings.HasPrefix(f[1], "v0.") {
		return 0, false
	}
	m, err := strconv.Atoi(strings.Split(f[1], ".")[1])
	return m, err == nil
}

// provideImage builds the image and gets it to the cluster: kind load for a
// kind cluster, a push for an existing one (-push), or nothing (the cluster
// pulls it).
func (r *Runner) provideImage(ctx context.Context) error {
	cfg := r.cfg
	tool := r.engine.tool
	r.image = cfg.Image
	if cfg.Kind() && tool == ProviderPodman && localImage(cfg.Image) {
		// Podman names a local build localhost/<name>, and so does the
		// archive it saves: the node knows it by that name.
		r.image = "localhost/" + cfg.Image
	}
	if cfg.Build {
		r.logf("building %s from %s", cfg.Image, path.Join(cfg.RepoRoot, "bench", "Dockerfile"))
		if _, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"build", "-f", path.Join("bench", "Dockerfile"), "-t", cfg.Image, "."}, Dir: cfg.RepoRoot, Stream: true}); err != nil {
			return err
		}
	}
	if !cfg.Kind() {
		if cfg.Push {
			r.logf("pushing %s", cfg.Image)
			if _, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"push", cfg.Image}, Stream: true}); err != nil {
				return err
			}
		}
		return nil
	}
	r.logf("loading %s into the cluster", r.image)
	if tool == ProviderDocker && !r.engine.containerdStore && cfg.Provider == ProviderDocker {
		c := r.kindCmd("load", "docker-image", cfg.Image, "--name", cfg.Cluster)
		c.Stream = true
		_, err := r.Exec.Run(ctx, c)
		return err
	}
	// Podman, or Docker's containerd image store, where kind load
	// docker-image fails ("content digest not found", kind#3795): save the
	// node's platform only, and load the archive.
	archive := filepath.Join(r.tmp, "image.tar")
	save := []string{"save", "-o", archive, r.image}
	if tool == ProviderDocker {
		save = []string{"save", "--platform", "linux/" + r.info.arch, "-o", archive, cfg.Image}
	}
	_, err := r.Exec.Run(ctx, Cmd{Name: tool, Args: save})
	if err != nil && tool == ProviderDocker && strings.Contains(err.Error(), "unknown flag: --platform") {
		// Docker before 28 saves one platform anyway.
		_, err = r.Exec.Run(ctx, Cmd{Name: tool, Args: []string{"save", "-o", archive, cfg.Image}})
	}
	if err != nil {
		return err
	}
	c := r.kindCmd("load", "image-archive", archive, "--name", cfg.Cluster)
	c.Stream = true
	_, err = r.Exec.Run(ctx, c)
	return err
}

// waitServiceAccount waits for the namespace's default ServiceAccount: the
// API server rejects a Pod in a namespace whose ServiceAccount the
// controller manager has not created yet (a Job only retries).
func (r *Runner) waitServiceAccount(ctx context.Context) error {
	_, err := r.read(ctx, true, "get", "serviceaccount", "default", "-o", "name")
	for i := 0; err != nil && notFound(err) && i < 30; i++ {
		if err := r.sleep(ctx, time.Second); err != nil {
			return err
		}
		_, err = r.read(ctx, true, "get", "serviceaccount", "default", "-o", "name")
	}
	if err != nil {
		return fmt.Errorf("the namespace's default ServiceAccount: %w", err)
	}
	return nil
}

// inspectCluster reads the server version and the nodes, for the report and
// to check which settings fit.
func (r *Runner) inspectCluster(ctx context.Context) error {
	out, err := r.read(ctx, false, "version", "-o", "json")
	if err != nil {
		return err
	}
	v, err := serverVersion(out)
	if err != nil {
		return err
	}
	r.info.serverVersion = v.GitVersion
	r.info.minor, _ = strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if r.cfg.Resize() && v.Major == "1" && r.info.minor < 33 {
		return fmt.Errorf("-scenario resize needs in-place pod resize: Kubernetes 1.33 or later (GA in 1.35); the cluster runs %s: recreate it with a newer node image (-node-image)", r.info.serverVersion)
	}
	out, err = r.read(ctx, false, "get", "nodes", "-o", "json")
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := json.Unmarshal(out, &nodes); err != nil {
		return fmt.Errorf("decoding nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return errors.New("the cluster has no nodes")
	}
	var pods corev1.PodList
	out, err = r.read(ctx, false, "get", "pods", "--all-namespaces", "--field-selector=status.phase!=Succeeded,status.phase!=Failed", "-o", "json")
	switch {
	case err != nil && forbidden(err) && !r.cfg.Kind():
		// A namespace-scoped account in a shared cluster: the scheduler
		// still places the pods, but a setting that does not fit fails
		// instead of being skipped.
		r.logf("warning: cannot list the pods of every namespace (%v): checking the settings against the nodes' allocatable resources only", err)
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(out, &pods); err != nil {
			return fmt.Errorf("decoding pods: %w", err)
		}
	}
	var why []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if ok, reason := eligible(n, r.cfg.NodeSelector); !ok {
			why = append(why, n.Name+": "+reason)
			continue
		}
		r.nodes = append(r.nodes, freeOn(n, pods.Items))
	}
	if len(r.nodes) == 0 {
		return fmt.Errorf("no node can run the pods (%s)", strings.Join(why, "; "))
	}
	// The node with the most CPU free describes the cluster in the report.
	slices.SortStableFunc(r.nodes, func(a, b nodeFree) int { return b.freeCPU.Cmp(a.freeCPU) })
	n := r.nodes[0].node
	r.info.node = n.Name
	r.info.kernel = n.Status.NodeInfo.KernelVersion
	r.info.runtime = n.Status.NodeInfo.ContainerRuntimeVersion
	r.info.osImage = n.Status.NodeInfo.OSImage
	r.info.arch = n.Status.NodeInfo.Architecture
	if r.info.arch == "" {
		r.info.arch = runtime.GOARCH
	}
	r.info.capCPU = Cores(n.Status.Capacity[corev1.ResourceCPU])
	r.info.allocCPU = Cores(r.nodes[0].allocCPU)
	r.info.allocMemory = r.nodes[0].allocMem.Value()
	return nil
}

// fit returns "" when some node has room for a pod requesting cpus and mem,
// else why not (on the roomiest node).
func (r *Runner) fit(cpus float64, mem int64) string {
	why := ""
	for _, n := range r.nodes {
		w := n.fits(cpus, mem)
		if w == "" {
			return ""
		}
		if why == "" {
			why = w
		}
	}
	return why
}

// engineInfo is what the preflight learnt of the container engine.
type engineInfo struct {
	tool            string // docker or podman: builds, saves and pushes the image
	cgroupVersion   string // "1" or "2"; "" unknown
	containerdStore bool   // Docker with the containerd image store
}

// dockerInfo is the part of "docker info" or "podman info" (as JSON) the
// runner reads; podman-docker answers "docker info" with Podman's fields.
type dockerInfo struct {
	CgroupVersion string      `json:"CgroupVersion"`
	CgroupDriver  string      `json:"CgroupDriver"`
	DriverStatus  [][2]string `json:"DriverStatus"`
	Host          *struct {
		CgroupVersion string `json:"cgroupVersion"`
		CgroupManager string `json:"cgroupManager"`
	} `json:"host"`
}

// preflight checks the tools before anything is created.
func (r *Runner) preflight(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Kind() || cfg.Build {
		if err := r.inspectEngine(ctx); err != nil {
			return err
		}
	}
	if cfg.Kind() {
		out, err := r.Exec.Run(ctx, r.kindCmd("version"))
		if err != nil {
			return fmt.Errorf("kind is needed (https://kind.sigs.k8s.io/docs/user/quick-start/#installation): %w", err)
		}
		r.info.kindVersion = strings.TrimSpace(string(out))
	}
	out, err := r.run(ctx, "kubectl", "version", "--client", "-o", "json")
	if err != nil {
		return fmt.Errorf("kubectl is needed (https://kubernetes.io/docs/tasks/tools/): %w", err)
	}
	var v struct {
		ClientVersion *version.Info `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err == nil && v.ClientVersion != nil && cfg.Resize() {
		minor, _ := strconv.Atoi(strings.TrimRight(v.ClientVersion.Minor, "+"))
		if v.ClientVersion.Major == "1" && minor < 32 {
			return fmt.Errorf("-scenario resize needs kubectl 1.32 or later (patch --subresource resize); this one is %s", v.ClientVersion.GitVersion)
		}
	}
	return nil
}

// inspectEngine asks the provider's engine for its cgroup version and image
// store. The JSON template works for Docker (any version), Podman and
// podman-docker; Docker's own {{.CgroupVersion}} fails under Podman.
func (r *Runner) inspectEngine(ctx context.Context) error {
	tool := r.cfg.Provider
	name := map[string]string{ProviderDocker: "Docker", ProviderPodman: "Podman"}[tool]
	out, err := r.run(ctx, tool, "info", "--format", "{{json .}}")
	if err != nil {
		return fmt.Errorf("%s is needed, with a running engine (or -provider podman for Podman): %w", name, err)
	}
	var di dockerInfo
	if err := json.Unmarshal(out, &di); err != nil {
		return fmt.Errorf("%s info: %w", tool, err)
	}
	r.engine.tool = tool
	switch {
	case di.Host != nil && di.Host.CgroupVersion != "":
		if tool == ProviderDocker {
			// podman-docker: kind must be told, or it treats Podman as Docker.
			r.logf("docker is Podman here (podman-docker): using the podman provider")
			r.cfg.Provider = ProviderPodman
			r.engine.tool = ProviderPodman
		}
		r.engine.cgroupVersion = strings.TrimPrefix(di.Host.CgroupVersion, "v")
		r.info.cgroup = "v" + r.engine.cgroupVersion + " (" + di.Host.CgroupManager + " manager, Podman host)"
	case di.CgroupVersion != "":
		r.engine.cgroupVersion = di.CgroupVersion
		r.info.cgroup = "v" + di.CgroupVersion + " (" + di.CgroupDriver + " driver, Docker host)"
		for _, kv := range di.DriverStatus {
			if kv[0] == "driver-type" && kv[1] == "io.containerd.snapshotter.v1" {
				r.engine.containerdStore = true
			}
		}
	}
	return nil
}

// cleanup deletes what the runner created, unless -keep.
func (r *Runner) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cfg := r.cfg
	kubectl := "kubectl --context " + cfg.Context()
	if !cfg.Kind() && cfg.Kubeconfig != "" {
		kubectl = "kubectl --kubeconfig " + shellQuote(cfg.Kubeconfig) + " --context " + cfg.Context()
	}
	if cfg.Keep {
		if r.createdNS {
			r.logf("kept the namespace %s: %s delete namespace %s", cfg.Namespace(), kubectl, cfg.Namespace())
		} else if r.createdObjs {
			r.logf("kept the Jobs and Pods: %s -n %s delete jobs,pods -l %s=%s", kubectl, cfg.Namespace(), LabelRunID, cfg.RunID)
		}
		if r.createdClust {
			r.logf("kept the cluster %s: kind delete cluster --name %s", cfg.Cluster, cfg.Cluster)
		}
		return nil
	}
	if r.createdClust {
		r.logf("deleting the cluster %s", cfg.Cluster)
		_, err := r.Exec.Run(ctx, r.kindCmd("delete", "cluster", "--name", cfg.Cluster))
		return err
	}
	if r.createdNS {
		r.logf("deleting the namespace %s", cfg.Namespace())
		_, err := r.kubectl(ctx, false, "delete", "namespace", cfg.Namespace(), "--ignore-not-found", "--timeout=2m")
		return err
	}
	if cfg.NamespaceName != "" && r.createdObjs {
		r.logf("deleting the Jobs and Pods of this run in %s", cfg.Namespace())
		_, err := r.kubectl(ctx, true, "delete", "jobs,pods", "-l", LabelRunID+"="+cfg.RunID, "--ignore-not-found", "--timeout=2m")
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

// podLevelSupport returns "" when the cluster can run the pod-level layout,
// else why not: a Kubernetes before 1.34 (PodLevelResources is alpha and off
// in 1.32 and 1.33, and missing before), an API server that drops a pod's
// spec.resources in a dry run (the feature gate off), or nodes whose kubelet
// is older than 1.34 (which refuses such pods, PodLevelResourcesNotAdmitted).
// Only a cancelled context is an error.
func (r *Runner) podLevelSupport(ctx context.Context) (string, error) {
	if r.podLevelChecked {
		return r.podLevel, nil
	}
	why, err := r.checkPodLevel(ctx)
	if err != nil {
		return "", err
	}
	r.podLevelChecked, r.podLevel = true, why
	if why == "" {
		r.logf("pod-level resources: supported (a dry run kept spec.resources)")
	}
	return why, nil
}

func (r *Runner) checkPodLevel(ctx context.Context) (string, error) {
	const feature = "pod-level resources (the PodLevelResources feature, beta and on by default from Kubernetes 1.34)"
	if r.info.minor < 34 {
		return fmt.Sprintf("%s: the cluster runs %s", feature, r.info.serverVersion), nil
	}
	var old []string
	for _, n := range r.nodes {
		kv := n.node.Status.NodeInfo.KubeletVersion
		if m, ok := nodeImageMinor("node:" + kv); ok && m < 34 {
			old = append(old, n.node.Name+" "+kv)
		}
	}
	if len(old) == len(r.nodes) {
		return fmt.Sprintf("%s: the nodes' kubelets are older (%s) and refuse such pods", feature, strings.Join(old, ", ")), nil
	}
	v, _ := variant.Lookup("untuned")
	w := r.workload("pod-level-check", v, 0, 64<<20, nil)
	w.Sidecar = &Sidecar{Layout: LayoutPodLevel, Bytes: 1 << 20}
	manifest, err := PodManifest(w)
	if err != nil {
		return "", err
	}
	out, err := r.Exec.Run(ctx, r.kubectlCmd(true, manifest, "create", "--dry-run=server", "-f", "-", "-o", "json"))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("%s: the API server refused a pod with pod-level resources in a dry run: %v", feature, err), nil
	}
	p, err := decodePod(out)
	if err != nil {
		return fmt.Sprintf("%s: the dry run's answer: %v", feature, err), nil
	}
	if p.Spec.Resources == nil || len(p.Spec.Resources.Limits) == 0 {
		return fmt.Sprintf("%s: the API server (%s) drops a pod's spec.resources, so the feature gate is off", feature, r.info.serverVersion), nil
	}
	return "", nil
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
