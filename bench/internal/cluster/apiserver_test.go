package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/kuberig"
	"github.com/fitgo/fitgo/bench/internal/manifests"
)

// apiCheck sends every object the runner creates, and every resize patch, to
// a real API server before the fake cluster plays it: a server-side dry run
// (kubectl create --dry-run=server --validate=strict). A patch is sent to a
// stored copy of its Pod (dry run too), which is deleted after. The runner's
// own dry run (the pod-level resources check) gets the server's answer.
type apiCheck struct {
	*fakeCluster
	srv *kuberig.Server
	t   *testing.T

	mu       sync.Mutex
	pods     map[string][]byte // resize Pods by name, as created
	checked  map[string]int    // kind -> objects the server accepted
	patches  int
	dryRuns  int // the runner's own dry runs, answered by the server
	rejected []string
}

func (a *apiCheck) Run(ctx context.Context, c Cmd) ([]byte, error) {
	if c.Name == "kubectl" && slices.Contains(c.Args, "--dry-run=server") {
		a.fakeCluster.Run(ctx, c) // for the record of calls
		out, err := a.srv.DryRunObject(ctx, argAfter(c.Args, "-n"), c.Stdin)
		if err != nil {
			a.mu.Lock()
			a.rejected = append(a.rejected, fmt.Sprintf("%s: %v", c, err))
			a.mu.Unlock()
			return nil, &ExitError{Cmd: c.String(), Code: 1, Stderr: "Error from server: " + err.Error()}
		}
		a.mu.Lock()
		a.dryRuns++
		a.mu.Unlock()
		return out, nil
	}
	if c.Name == "kubectl" {
		if err := a.check(ctx, c); err != nil {
			a.mu.Lock()
			a.rejected = append(a.rejected, fmt.Sprintf("%s: %v", c, err))
			a.mu.Unlock()
			return nil, &ExitError{Cmd: c.String(), Code: 1, Stderr: "Error from server: " + err.Error()}
		}
	}
	return a.fakeCluster.Run(ctx, c)
}

// argAfter returns the argument after flag, or "".
func argAfter(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func (a *apiCheck) check(ctx context.Context, c Cmd) error {
	args := c.Args
	ns := argAfter(args, "-n")
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case c.Stdin != nil:
		if err := a.srv.DryRun(ctx, ns, c.Stdin); err != nil {
			return err
		}
		obj, err := manifests.Decode(c.Stdin)
		if err != nil {
			return err
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			a.pods[o.Name] = c.Stdin
			a.checked["Pod"]++
		case *batchv1.Job:
			a.checked["Job"]++
		}
	case slices.Contains(args, "patch"):
		name := args[slices.Index(args, "patch")+2]
		pod := a.pods[name]
		if pod == nil {
			return fmt.Errorf("patch of %s, which the runner did not create", name)
		}
		if err := a.srv.Create(ctx, ns, pod); err != nil {
			return fmt.Errorf("storing the Pod to patch: %w", err)
		}
		defer a.srv.DeletePod(ctx, ns, name)
		if err := a.srv.PatchPod(ctx, ns, name, "resize", []byte(args[len(args)-1]), true); err != nil {
			return err
		}
		a.patches++
	}
	return nil
}

// TestAPIServerRunnerManifests runs the runner, on the fake cluster, through
// every scenario and variant, in a kind cluster and an existing one, and has
// a real API server of the version bench/go.mod's k8s.io/api matches accept
// every Job, Pod and resize patch it generates. The shared scenario's
// pod-level layout runs only if the server keeps a pod's spec.resources in
// the runner's dry run: the test requires that it does (kube-apiserver 1.34
// and later have PodLevelResources on by default).
func TestAPIServerRunnerManifests(t *testing.T) {
	srv := kuberig.Start(t)
	t.Logf("kube-apiserver %s", srv.Version)
	ctx := context.Background()
	for _, ns := range []string{"fitgo-bench-test", "perf"} {
		require.NoError(t, srv.Namespace(ctx, ns))
	}
	for _, tc := range []struct {
		name string
		args []string
		jobs int
		pods int
		// patches are the resize patches, dryRuns the runner's own.
		patches, dryRuns int
	}{
		// Calibration, then every variant in every setting of cpu and memory.
		{"cpu and memory", []string{"-scenario=all", "-cpus=500m,1,1.5", "-memory=256Mi", "-runs=1"}, 1 + 6*6, 0, 0, 0},
		{"memory only", []string{"-scenario=memory", "-runs=1", "-work-iters=1000"}, 6, 0, 0, 0},
		{"resize", []string{"-scenario=resize", "-duration=12s", "-work-iters=1000"}, 0, 6, 6, 0},
		{"resize small limits", []string{"-scenario=resize", "-cpus=50m", "-memory=48Mi", "-duration=12s", "-work-iters=1000", "-variants=fitgo"}, 0, 1, 1, 0},
		{"existing cluster", []string{"-context=prod", "-image=registry.example.com/fitgo-bench:v1", "-namespace=perf", "-node-selector=pool=bench", "-cpus=1", "-runs=1", "-variants=fitgo,env", "-work-iters=1000"}, 2, 0, 0, 0},
		// Both layouts, every variant of the shared scenario (the oracle
		// too), after the dry run of the pod-level check.
		{"shared", []string{"-scenario=shared", "-runs=1", "-work-iters=1000"}, 2 * 6, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t)
			f.outcome = func(p *corev1.Pod) outcome {
				if strings.HasSuffix(p.Name, "-resize") {
					return outcome{reason: "Completed", logs: recordedLog(t, "resize-fitgo")}
				}
				return outcome{reason: "Completed", logs: recordedLog(t, "fitgo")}
			}
			if tc.name == "existing cluster" {
				n := kindNode("8")
				n.Labels["pool"] = "bench"
				f.nodes = []corev1.Node{n}
			}
			a := &apiCheck{fakeCluster: f, srv: srv, t: t, pods: map[string][]byte{}, checked: map[string]int{}}
			res := runWithExec(t, f, a, tc.args...)
			require.NoError(t, res.err, res.stderr)
			assert.Empty(t, a.rejected, "the API server rejected these")
			assert.Equal(t, tc.jobs, a.checked["Job"], "Jobs checked")
			assert.Equal(t, tc.pods, a.checked["Pod"], "Pods checked")
			assert.Equal(t, tc.patches, a.patches, "resize patches checked")
			assert.Equal(t, tc.dryRuns, a.dryRuns, "the runner's dry runs")
			if tc.dryRuns > 0 {
				assert.Contains(t, res.stderr, "pod-level resources: supported", "the server keeps spec.resources")
			}
		})
	}
}
