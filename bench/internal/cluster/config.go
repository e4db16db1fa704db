package cluster

import (
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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fitgo/fitgo/bench/internal/settings"
	"github.com/fitgo/fitgo/bench/internal/variant"
	"github.com/fitgo/fitgo/bench/workload"
)

// Scenarios the kind runner runs.
const (
	ScenarioCPU    = "cpu"
	ScenarioMemory = "memory"
	ScenarioResize = "resize"
	// ScenarioShared is a memory limit shared with a sidecar process, in the
	// layouts below.
	ScenarioShared = "shared"
	// ScenarioNested is the local runner's; see errNested.
	ScenarioNested = "nested"
	// ScenarioLeak is the local runner's; see errLeak.
	ScenarioLeak = "leak"
)

// Layouts of the shared scenario in a cluster: where the sidecar runs.
const (
	// LayoutCoprocess: the sidecar and the workload in the one container,
	// under its memory limit (bench/cmd/coprocess starts both).
	LayoutCoprocess = "coprocess"
	// LayoutPodLevel: a pod with pod-level resources.limits.memory and two
	// containers without limits, the sidecar (a native sidecar container)
	// and the workload. It needs the PodLevelResources feature (Kubernetes
	// 1.34 and later, beta and on by default).
	LayoutPodLevel = "pod-level"
)

var errLeak = errors.New(`-scenario leak runs only with the local runner (go run -C bench . local -scenario leak): its figures are the time between the heap reaching GOMEMLIMIT and the kill, which the local runner reads from the workload's progress lines and the cgroup's memory events`)

var errNested = errors.New(`-scenario nested cannot run in Kubernetes: a container has its own cgroup namespace, so a pod-level limit (on the pod's cgroup, the parent) is invisible from inside it, to fitgo as to everything else; run it with the local runner (go run -C bench . local -scenario nested)`)

// Config is the kind runner's configuration, from its flags. The flags and
// the scenario settings mirror the local runner's.
type Config struct {
	// Scenarios are cpu and/or memory, or resize alone.
	Scenarios []string
	// CPUs and Memory override the scenarios' defaults when set: the CPU
	// limits of the cpu sweep (or the one before a resize), the memory limits.
	CPUs     []float64
	Memory   []int64
	Duration time.Duration
	Runs     int
	Variants []variant.Variant
	Out      string

	// Workload parameters: HeapMiB 0 means the workload's default (or
	// MemoryHeapFraction of the limit in the memory scenario); WorkIters 0
	// means calibrating Work once in the cluster.
	HeapMiB, AllocMiB, Rate float64
	Work                    time.Duration
	WorkIters               int

	// Resize scenario: the limits to resize to, when, and how often the
	// workload reports its GOMAXPROCS and GOMEMLIMIT.
	ResizeCPUs   float64
	ResizeMemory int64
	ResizeAfter  time.Duration
	ReportEvery  time.Duration

	Cluster    string // kind cluster name
	KindConfig string // cluster config for kind create cluster
	NodeImage  string // kind create cluster --image; empty for kind's default
	// Provider is kind's node provider, docker or podman
	// (KIND_EXPERIMENTAL_PROVIDER); it also builds the image.
	Provider string
	Image    string // workload image
	Build    bool   // build the image with the provider
	RepoRoot string // build context
	Keep     bool   // keep what the runner created

	// An existing cluster instead of kind: KubeContext names its kubeconfig
	// context (and switches kind off), Kubeconfig its file (empty: kubectl's
	// default). Push builds Image and pushes it where the cluster pulls it.
	KubeContext  string
	Kubeconfig   string
	Push         bool
	NodeSelector map[string]string
	// NamespaceName is an existing namespace to run in (nothing but the
	// runner's Jobs and Pods is deleted there); empty: a new one.
	NamespaceName string
	// PullPolicy is the pods' imagePullPolicy; empty: Always for a tag in
	// an existing cluster (it may have moved), else IfNotPresent.
	PullPolicy corev1.PullPolicy
	// Emulated says what emulates the nodes (e.g. "qemu TCG"), for the
	// report's header: their latencies mean nothing. Empty: real nodes.
	Emulated string

	// The shared scenario: the memory the sidecar holds, and its layouts.
	Sidecar int64
	Layouts []string

	Timeout time.Duration
	Poll    time.Duration
	RunID   string // names the namespace; default from the start time

	// Args is the command line, for the report.
	Args []string
}

// Resize reports whether this is the resize scenario.
func (c Config) Resize() bool { return len(c.Scenarios) == 1 && c.Scenarios[0] == ScenarioResize }

// Kind reports whether the runner uses a kind cluster (the default), not an
// existing cluster named by -context.
func (c Config) Kind() bool { return c.KubeContext == "" }

// Context is the kubectl context of the cluster.
func (c Config) Context() string {
	if !c.Kind() {
		return c.KubeContext
	}
	return "kind-" + c.Cluster
}

// Namespace is where the runner creates its Jobs and Pods.
func (c Config) Namespace() string {
	if c.NamespaceName != "" {
		return c.NamespaceName
	}
	return "fitgo-bench-" + c.RunID
}

// Providers kind supports, and that build the image.
const (
	ProviderDocker = "docker"
	ProviderPodman = "podman"
)

// Defaults; the scenario ones are the local runner's.
const (
	DefaultCluster     = "fitgo-bench"
	DefaultImage       = "fitgo-bench:dev"
	DefaultCPUs        = "0.5,1,1.5"
	DefaultMemory      = "256Mi"
	DefaultDuration    = 5 * time.Second
	DefaultRuns        = 3
	DefaultResizeCPUs  = "1"
	DefaultResizeTo    = 3
	DefaultResizeMemTo = "512Mi"
	// The shared scenario, as the local runner's: a 512 MiB limit, a sidecar
	// holding 200 MiB, both layouts.
	DefaultSharedMemory = "512Mi"
	DefaultSidecar      = "200Mi"
	DefaultLayouts      = LayoutCoprocess + "," + LayoutPodLevel
	// SharedHeapFraction is the shared scenario's live heap as a fraction of
	// what the sidecar leaves of the limit, as the local runner chooses it:
	// 0.6 × (512 − 200) MiB = 187 MiB. GOGC's goal, twice that, is above the
	// 312 MiB the sidecar leaves, so a GOMEMLIMIT that ignores the sidecar
	// lets the container (or the pod) be OOM-killed; 0.9 × 312 MiB leaves
	// the heap about half its live size to grow, as in the memory scenario.
	SharedHeapFraction = MemoryHeapFraction
	// MemoryHeapFraction is the memory scenario's live heap as a fraction of
	// the limit: with GOGC=100 the heap peaks near twice the live heap, so
	// without a GOMEMLIMIT it outgrows the limit.
	MemoryHeapFraction = 0.6
)

// ParseFlags parses the kind runner's command line.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("kind", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c                          = Config{Args: args}
		scenario, cpus, mem        string
		variants, resizeMem        string
		sidecar, layouts           string
		nodeSelector, pullPolicy   string
		defaultRepo, defaultConfig = defaultPaths()
	)
	fs.StringVar(&scenario, "scenario", ScenarioCPU, "scenarios, comma-separated: cpu (CPU limit sweep), memory (memory limit below the untuned heap peak), shared (a memory limit shared with a sidecar process), all (cpu and memory); or resize alone (in-place resize of running pods)")
	fs.StringVar(&cpus, "cpus", "", "CPU limits in cores or millicores, comma-separated (default "+DefaultCPUs+" for cpu, none for memory and shared, "+DefaultResizeCPUs+" before a resize)")
	fs.StringVar(&mem, "memory", "", "memory limits, comma-separated, e.g. 256Mi (default "+DefaultMemory+" for memory and resize, "+DefaultSharedMemory+" for shared, none for cpu)")
	fs.StringVar(&sidecar, "sidecar", DefaultSidecar, "memory the shared scenario's sidecar holds resident")
	fs.StringVar(&layouts, "layout", DefaultLayouts, "where the shared scenario's sidecar runs, comma-separated: coprocess (in the workload's container, under its limit) or pod-level (a container of its own, under a pod-level memory limit; skipped where the cluster does not support it)")
	fs.DurationVar(&c.Duration, "duration", 0, "measured window of each run (default 5s; 30s for resize)")
	fs.IntVar(&c.Runs, "runs", DefaultRuns, "rounds: each variant runs this many times per setting, interleaved (A B C A B C ...)")
	fs.StringVar(&variants, "variants", "all", "variants, comma-separated: "+strings.Join(variant.Names(), ", ")+" (default for shared alone: "+names(variant.Shared)+")")
	fs.StringVar(&c.Out, "out", "", "directory to write results.json, runs.json, report.md, chart.png and bench.txt to (resize: resize.json and resize.md)")
	fs.Float64Var(&c.HeapMiB, "heap-mib", 0, fmt.Sprintf("live heap, MiB (default %d, or %.0f%% of the limit in the memory scenario)", workload.DefaultHeapMiB, MemoryHeapFraction*100))
	fs.Float64Var(&c.AllocMiB, "alloc-mib", workload.DefaultAllocMiBPerSec, "allocation rate, MiB/s")
	fs.Float64Var(&c.Rate, "rate", workload.DefaultRate, "requests per second (open loop)")
	fs.DurationVar(&c.Work, "work", workload.DefaultWork, "CPU work per request (calibrated once in the cluster, without limits, before the runs)")
	fs.IntVar(&c.WorkIters, "work-iters", 0, "CPU work per request in loop iterations, instead of calibrating -work")
	fs.Float64Var(&c.ResizeCPUs, "resize-cpus", DefaultResizeTo, "resize: the CPU limit to resize to")
	fs.StringVar(&resizeMem, "resize-memory", DefaultResizeMemTo, "resize: the memory limit to resize to")
	fs.DurationVar(&c.ResizeAfter, "resize-after", 0, "resize: when to resize, after the container starts (default a third of -duration)")
	fs.DurationVar(&c.ReportEvery, "report-every", time.Second, "resize: how often the workload reports its GOMAXPROCS and GOMEMLIMIT")
	fs.StringVar(&c.Cluster, "cluster", DefaultCluster, "kind cluster; created from -kind-config (and deleted at the end, unless -keep) when it does not exist")
	fs.StringVar(&c.KindConfig, "kind-config", defaultConfig, "kind cluster config for a new cluster")
	fs.StringVar(&c.NodeImage, "node-image", "", "kind node image for a new cluster (default: kind's), e.g. kindest/node:v1.35.8@sha256:<digest from your kind release's notes>")
	fs.StringVar(&c.Provider, "provider", defaultProvider(), "kind's node provider, docker or podman (default $KIND_EXPERIMENTAL_PROVIDER, else docker); it builds the image too")
	fs.StringVar(&c.Image, "image", DefaultImage, "workload image; with -context, a reference the cluster can pull")
	fs.BoolVar(&c.Build, "build", true, "build -image from bench/Dockerfile (-build=false: use the image already in the local Docker or Podman)")
	fs.StringVar(&c.RepoRoot, "repo", defaultRepo, "repository root: the image's build context")
	fs.BoolVar(&c.Keep, "keep", false, "keep what the runner created: the namespace with its Jobs and Pods, and the cluster if it created it")
	fs.StringVar(&c.KubeContext, "context", "", "run in an existing cluster: this kubeconfig context, instead of kind (needs -image)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "with -context: the kubeconfig file (default: kubectl's)")
	fs.BoolVar(&c.Push, "push", false, "with -context: build -image from bench/Dockerfile and push it (the cluster pulls it)")
	fs.StringVar(&c.NamespaceName, "namespace", "", "an existing namespace to run in (default: a new one, fitgo-bench-<run id>, deleted at the end)")
	fs.StringVar(&nodeSelector, "node-selector", "", "run the pods on nodes with these labels, comma-separated key=value")
	fs.StringVar(&pullPolicy, "pull-policy", "", "the pods' imagePullPolicy: Always, IfNotPresent or Never (default IfNotPresent in kind; with -context Always, or IfNotPresent for an image by digest); Never for an image loaded onto the nodes (kind load, ctr images import)")
	fs.StringVar(&c.Emulated, "emulated", "", "what emulates the nodes, e.g. \"qemu TCG\": the report's header says that latencies, throughputs and CPU times mean nothing there")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up on a run after this long (default 2 × duration + 3m)")
	fs.DurationVar(&c.Poll, "poll", 2*time.Second, "how often to poll the cluster")
	fs.StringVar(&c.RunID, "run-id", "", "names the namespace fitgo-bench-<run id> (default: the start time, yyyymmdd-hhmmss)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run -C bench . kind [flags]\n\n%s\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.NodeSelector, err = parseSelector(nodeSelector); err != nil {
		return c, err
	}
	if err := c.checkCluster(fs); err != nil {
		return c, err
	}
	switch p := corev1.PullPolicy(pullPolicy); p {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		c.PullPolicy = p
	default:
		return c, fmt.Errorf("-pull-policy %q: Always, IfNotPresent or Never", pullPolicy)
	}
	c.Scenarios, err = settings.ParseScenarios(scenario, []string{ScenarioCPU, ScenarioMemory, ScenarioShared, ScenarioResize},
		[]string{ScenarioCPU, ScenarioMemory}, "cpu, memory, shared, all, or resize")
	var unknown *settings.UnknownScenarioError
	if errors.As(err, &unknown) && unknown.Name == ScenarioNested {
		return c, errNested
	}
	if errors.As(err, &unknown) && unknown.Name == ScenarioLeak {
		return c, errLeak
	}
	if err != nil {
		return c, err
	}
	if slices.Contains(c.Scenarios, ScenarioResize) && len(c.Scenarios) > 1 {
		return c, errors.New("-scenario resize runs on its own")
	}
	if c.CPUs, c.Memory, err = settings.ParseLimits(cpus, mem, false); err != nil {
		return c, err
	}
	sizes, err := settings.ParseSizes(sidecar)
	if err != nil || len(sizes) != 1 {
		return c, fmt.Errorf("-sidecar: want one size, e.g. 200Mi (%v)", err)
	}
	c.Sidecar = sizes[0]
	if c.Layouts, err = parseLayouts(layouts); err != nil {
		return c, err
	}
	onlyShared := !slices.ContainsFunc(c.Scenarios, func(s string) bool { return s != ScenarioShared })
	if c.Variants, err = variant.Parse(variants, runtime.NumCPU()); err != nil {
		return c, err
	}
	if onlyShared && !flagSet(fs, "variants") {
		c.Variants = variant.Shared
	}
	for _, v := range c.Variants {
		if v.HeadroomOracle && !onlyShared {
			return c, fmt.Errorf("variant %s is for the shared scenario alone (-scenario shared): the other scenarios have no sidecar", v.Name)
		}
		if v.OOMProfile {
			return c, fmt.Errorf("variant %s runs only locally (go run -C bench . local): the runner makes its capture directory", v.Name)
		}
	}
	if slices.Contains(c.Scenarios, ScenarioShared) {
		for _, m := range c.sharedMemory() {
			if c.Sidecar >= m {
				return c, fmt.Errorf("the sidecar (%s) must hold less than the memory limit (%s)", MemoryQuantity(c.Sidecar), MemoryQuantity(m))
			}
		}
	}
	if c.Resize() {
		if len(c.CPUs) == 0 {
			c.CPUs, _ = settings.ParseCPUs(DefaultResizeCPUs, false)
		}
		if len(c.Memory) == 0 {
			c.Memory, _ = settings.ParseSizes(DefaultMemory)
		}
		if len(c.CPUs) != 1 || len(c.Memory) != 1 {
			return c, errors.New("-scenario resize takes one -cpus and one -memory: the limits before the resize")
		}
		if c.ResizeMemory, err = settings.ParseBytes(resizeMem); err != nil {
			return c, fmt.Errorf("-resize-memory: %w", err)
		}
		if err := settings.CheckCPU(c.ResizeCPUs); err != nil {
			return c, fmt.Errorf("-resize-cpus: %w", err)
		}
		if c.Duration <= 0 {
			c.Duration = 30 * time.Second
		}
		if c.ResizeAfter <= 0 {
			c.ResizeAfter = c.Duration / 3
		}
		if c.ReportEvery <= 0 || c.ReportEvery > c.Duration/4 {
			return c, errors.New("-report-every must be positive and at most a quarter of -duration")
		}
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	switch {
	case c.Runs < 1:
		return c, errors.New("-runs must be at least 1")
	case c.Duration < 100*time.Millisecond:
		return c, errors.New("-duration must be at least 100ms")
	case c.HeapMiB < 0 || c.AllocMiB <= 0 || c.Rate <= 0 || c.Work <= 0:
		return c, errors.New("-heap-mib, -alloc-mib, -rate and -work must be positive")
	case c.Poll <= 0:
		return c, errors.New("-poll must be positive")
	}
	if c.Timeout <= 0 {
		c.Timeout = 2*c.Duration + 3*time.Minute
	}
	if c.RunID == "" {
		c.RunID = time.Now().Format("20060102-150405")
	}
	if !validLabel(c.RunID) || len("fitgo-bench-"+c.RunID) > 63 {
		return c, fmt.Errorf("-run-id %q: lower-case letters, digits and '-' only, at most %d characters", c.RunID, 63-len("fitgo-bench-"))
	}
	if c.NamespaceName != "" && (!validLabel(c.NamespaceName) || len(c.NamespaceName) > 63) {
		return c, fmt.Errorf("-namespace %q: not a namespace name", c.NamespaceName)
	}
	return c, nil
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func names(vs []variant.Variant) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return strings.Join(out, ",")
}

// parseLayouts parses the -layout list.
func parseLayouts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case LayoutCoprocess, LayoutPodLevel:
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		case "sibling":
			return nil, errors.New("-layout sibling is the local runner's: in Kubernetes, sibling cgroups under one limit are the pod-level layout (pod-level)")
		default:
			return nil, fmt.Errorf("-layout: unknown layout %q (want %s or %s)", f, LayoutCoprocess, LayoutPodLevel)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-layout: no layout in %q", s)
	}
	return out, nil
}

// sharedMemory is the shared scenario's memory limits: -memory, or the
// default.
func (c Config) sharedMemory() []int64 {
	if len(c.Memory) > 0 {
		return c.Memory
	}
	ms, _ := settings.ParseSizes(DefaultSharedMemory)
	return ms
}

func defaultProvider() string {
	if p := os.Getenv("KIND_EXPERIMENTAL_PROVIDER"); p != "" {
		return p
	}
	return ProviderDocker
}

// checkCluster checks the flags that choose the cluster and the image.
func (c *Config) checkCluster(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.Provider != ProviderDocker && c.Provider != ProviderPodman {
		return fmt.Errorf("-provider %q: docker or podman", c.Provider)
	}
	if c.Kind() {
		for _, f := range []string{"kubeconfig", "push"} {
			if set[f] {
				return fmt.Errorf("-%s needs -context (an existing cluster); the kind cluster's kubeconfig comes from kind", f)
			}
		}
		return nil
	}
	for _, f := range []string{"cluster", "kind-config", "node-image"} {
		if set[f] {
			return fmt.Errorf("-%s is for a kind cluster; -context names an existing one", f)
		}
	}
	if !set["image"] {
		return errors.New("-context needs -image: a reference the cluster can pull, e.g. registry.example.com/fitgo-bench:v1 (-push builds and pushes it)")
	}
	if set["build"] && c.Build && !c.Push {
		return errors.New("-build with -context needs -push: the cluster pulls the image from a registry")
	}
	c.Build = c.Push
	return nil
}

// parseSelector parses key=value,key=value into a node selector.
func parseSelector(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-node-selector %q: want key=value pairs, comma-separated", s)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("-node-selector: label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("-node-selector: label value %q: %s", v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// nodeImageMinor returns the Kubernetes minor version in a kind node image's
// tag (kindest/node:v1.34.3@sha256:...), or false when it has none.
func nodeImageMinor(ref string) (int, bool) {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return 0, false
	}
	f := strings.Split(strings.TrimPrefix(ref[i+1:], "v"), ".")
	if len(f) < 2 || f[0] != "1" {
		return 0, false
	}
	m, err := strconv.Atoi(f[1])
	return m, err == nil
}

// Setting is one scenario setting: the runs of every variant under the same
// limits.
type Setting struct {
	Scenario string
	CPUs     float64 // 0: no CPU limit
	Memory   int64   // 0: no memory limit
	HeapMiB  float64
	// Layout and Sidecar: the shared scenario's layout and the memory its
	// sidecar holds.
	Layout  string
	Sidecar int64
}

// Settings expands the scenarios into settings, as the local runner does.
func (c Config) Settings() []Setting {
	var out []Setting
	mems := c.Memory
	if len(mems) == 0 {
		mems = []int64{0}
	}
	heap := c.HeapMiB
	if heap == 0 {
		heap = workload.DefaultHeapMiB
	}
	for _, sc := range c.Scenarios {
		switch sc {
		case ScenarioCPU:
			cpus := c.CPUs
			if len(cpus) == 0 {
				cpus, _ = settings.ParseCPUs(DefaultCPUs, false)
			}
			for _, cpu := range cpus {
				for _, m := range mems {
					out = append(out, Setting{Scenario: sc, CPUs: cpu, Memory: m, HeapMiB: heap})
				}
			}
		case ScenarioMemory:
			ms := c.Memory
			if len(ms) == 0 {
				ms, _ = settings.ParseSizes(DefaultMemory)
			}
			cpus := c.CPUs
			if len(cpus) == 0 {
				cpus = []float64{0}
			}
			for _, m := range ms {
				h := c.HeapMiB
				if h == 0 {
					h = math.Round(MemoryHeapFraction * float64(m) / (1 << 20))
				}
				for _, cpu := range cpus {
					out = append(out, Setting{Scenario: sc, CPUs: cpu, Memory: m, HeapMiB: h})
				}
			}
		case ScenarioShared:
			// No CPU limit, as the local runner's shared scenario.
			for _, m := range c.sharedMemory() {
				h := c.HeapMiB
				if h == 0 {
					h = math.Round(SharedHeapFraction * float64(m-c.Sidecar) / (1 << 20))
				}
				for _, l := range c.Layouts {
					out = append(out, Setting{Scenario: sc, Memory: m, HeapMiB: h, Layout: l, Sidecar: c.Sidecar})
				}
			}
		case ScenarioResize:
			out = append(out, Setting{Scenario: sc, CPUs: c.CPUs[0], Memory: c.Memory[0], HeapMiB: heap})
		}
	}
	return out
}

// defaultPaths returns the repository root and the cluster config: the
// first of the working directory and its ancestors that holds bench/Dockerfile
// (go run -C bench runs in bench/).
func defaultPaths() (repo, config string) {
	wd, err := os.Getwd()
	if err != nil {
		return "..", "kind-cluster.yaml"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "bench", "Dockerfile")); err == nil {
			return dir, filepath.Join(dir, "bench", "kind-cluster.yaml")
		}
		if filepath.Dir(dir) == dir {
			return filepath.Dir(wd), filepath.Join(wd, "kind-cluster.yaml")
		}
	}
}

func validLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

const usage = `Runs the benchmark's workload variants as Kubernetes Jobs in a kind cluster,
each with the scenario's resources.limits (requests equal to the limits),
interleaved for -runs rounds, collects their JSON results from the pod logs,
writes the same report as the local runner and deletes what it created.
Needs Docker or Podman, kind and kubectl in PATH.

With -context, it runs the same scenarios in an existing cluster instead:
the pods pull -image (which -push builds and pushes), in a new namespace or
-namespace, on the nodes -node-selector picks; only kubectl is needed (and
Docker or Podman for -push).

-scenario resize instead runs each variant in a Pod with -report-every,
resizes its CPU and memory limits in place (kubectl patch pod --subresource
resize) while it runs, and shows from its reports which variants follow.

-scenario shared runs each variant next to a sidecar holding -sidecar of
memory under one memory limit: in one container (-layout coprocess, through
/bench/coprocess), and in a pod with a pod-level memory limit and two
containers without limits (-layout pod-level; skipped, with the reason in
the report, where the cluster does not support pod-level resources).
`
