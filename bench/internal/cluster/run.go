package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
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
