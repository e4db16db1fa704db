package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fitgo/fitgo/bench/internal/podspec"
	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
)

var update = flag.Bool("update", false, "rewrite the golden command lists in testdata")

// golden compares the commands a run issued with testdata/<name>.golden.
func golden(t *testing.T, name string, calls []string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got := strings.Join(calls, "\n") + "\n"
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), got, "commands differ from %s (go test -update rewrites it)", path)
}

type runResult struct {
	f              *fakeCluster
	err            error
	stdout, stderr string
	out            string
}

// runWith runs the runner on f with the given flags (plus a fixed run id,
// repository and output directory).
func runWith(t *testing.T, f *fakeCluster, args ...string) runResult {
	t.Helper()
	return runWithExec(t, f, f, args...)
}

// runWithExec is runWith with x in front of the fake cluster.
func runWithExec(t *testing.T, f *fakeCluster, x Executor, args ...string) runResult {
	t.Helper()
	out := t.TempDir()
	base := []string{"-run-id=test", "-repo=/repo", "-kind-config=/repo/bench/kind-cluster.yaml", "-out=" + out}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-context=") }) {
		base = slices.Delete(base, 2, 3) // no kind
	}
	args = append(base, args...)
	cfg, err := ParseFlags(args, os.Stderr)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	f.tmp = t.TempDir()
	r := &Runner{Exec: x, Stdout: &stdout, Stderr: &stderr, Now: f.Now, Sleep: f.Sleep, TempDir: f.tmp}
	err = r.Run(context.Background(), cfg)
	return runResult{f: f, err: err, stdout: stdout.String(), stderr: stderr.String(), out: out}
}

func readSummaries(t *testing.T, dir string) []results.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.ResultsFile))
	require.NoError(t, err)
	var sums []results.Summary
	require.NoError(t, json.Unmarshal(b, &sums))
	return sums
}

func TestRunCreatesClusterAndCleansUp(t *testing.T) {
	f := newFakeCluster(t)
	res := runWith(t, f, "-cpus=1", "-runs=2", "-variants=runtime,fitgo", "-duration=3s")
	require.NoError(t, res.err, res.stderr)
	golden(t, "cpu-create", f.Calls())
	assert.Empty(t, f.clusters, "the cluster it created is deleted")

	for _, file := range []string{report.ResultsFile, report.RunsFile, report.ReportFile, report.ChartFile, report.BenchFile} {
		assert.FileExists(t, filepath.Join(res.out, file))
	}
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 2)
	for _, s := range sums {
		assert.Equal(t, "cpu", s.Scenario)
		assert.InDelta(t, 1, s.CPUs, 0)
		assert.Equal(t, 2, s.Runs)
		assert.Equal(t, 2, s.CompletedRuns)
		assert.Zero(t, s.FailedRuns)
		assert.Greater(t, float64(s.LatencyP99MS), 0.0)
	}
	// GOMAXPROCS as the recorded logs say: the runtime keeps 2 on a 2-core
	// machine with a 1-CPU quota, fitgo sets 1.
	assert.InDelta(t, 2, float64(sums[0].GOMAXPROCS), 0, sums[0].Variant)
	assert.InDelta(t, 1, float64(sums[1].GOMAXPROCS), 0, sums[1].Variant)

	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "kind runner")
	assert.Contains(t, string(md), "Kubernetes v1.35.8")
	assert.Contains(t, string(md), "v2 (systemd driver")
	assert.Contains(t, res.stdout, "runtime", "the table goes to stdout")
	assert.Contains(t, res.stderr, "[4/4] cpu cpus=1 · fitgo round 2/2 · ETA", "progress with an ETA")
}

func TestRunWithoutOutWritesNoFiles(t *testing.T) {
	f := newFakeCluster(t)
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := ParseFlags([]string{"-run-id=test", "-repo=/repo", "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1"}, os.Stderr)
	require.NoError(t, err)
	var stdout bytes.Buffer
	r := &Runner{Exec: f, Stdout: &stdout, Stderr: &bytes.Buffer{}, Now: f.Now, Sleep: f.Sleep}
	require.NoError(t, r.Run(context.Background(), cfg))
	assert.Contains(t, stdout.String(), "p99 ms", "the table is printed")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestRunReusesClusterAndKeeps(t *testing.T) {
	f := newFakeCluster(t)
	f.clusters = []string{"other", "fitgo-bench"}
	res := runWith(t, f, "-cpus=500m", "-runs=1", "-variants=env", "-keep", "-build=false", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	golden(t, "cpu-reuse-keep", f.Calls())
	assert.Equal(t, []string{"other", "fitgo-bench"}, f.clusters)
	assert.Contains(t, res.stderr, "kept the namespace fitgo-bench-test: kubectl --context kind-fitgo-bench delete namespace fitgo-bench-test")
}

func TestRunReusesClusterDeletesNamespace(t *testing.T) {
	f := newFakeCluster(t)
	f.clusters = []string{"fitgo-bench"}
	res := runWith(t, f, "-cpus=1.5", "-runs=1", "-variants=untuned", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	calls := f.Calls()
	assert.Equal(t, "kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench delete namespace fitgo-bench-test --ignore-not-found --timeout=2m", calls[len(calls)-1])
	assert.Equal(t, []string{"fitgo-bench"}, f.clusters, "a cluster it did not create stays")
	for _, c := range calls {
		assert.NotContains(t, c, "kind delete")
	}
}

func TestRunJobFails(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		if p.Labels[LabelVariant] == "untuned" {
			return outcome{exitCode: 2, reason: "Error", logs: []byte("workload: flag provided but not defined: -bogus\n")}
		}
		return outcome{reason: "Completed"}
	}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=untuned,runtime", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "1 run(s) failed")
	assert.Contains(t, res.stderr, "FAILED: Error, exit code 2: workload: flag provided but not defined: -bogus")
	assert.Empty(t, f.clusters, "cleaned up after a failure")

	sums := readSummaries(t, res.out)
	require.Len(t, sums, 2)
	assert.Equal(t, 1, sums[0].FailedRuns)
	assert.Equal(t, 0, sums[0].CompletedRuns)
	assert.Equal(t, 1, sums[1].CompletedRuns, "the other variant still ran")
}

func TestRunMemoryOOMKillIsAResult(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		if p.Labels[LabelVariant] == "untuned" {
			return outcome{exitCode: 137, reason: "OOMKilled", logs: recordedLog(t, "oom-untuned")}
		}
		return outcome{reason: "Completed"}
	}
	res := runWith(t, f, "-scenario=memory", "-runs=1", "-variants=untuned,automaxprocs+automemlimit", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 2)
	assert.Equal(t, "memory", sums[0].Scenario)
	assert.Equal(t, int64(256<<20), sums[0].MemoryBytes)
	assert.Equal(t, uint64(1), sums[0].OOMKills)
	assert.Zero(t, sums[0].FailedRuns)
	assert.Greater(t, float64(sums[0].Requests), 0.0, "requests done before the kill, from the last progress line")
	assert.Equal(t, uint64(0), sums[1].OOMKills)

	// The memory scenario's live heap is 60 % of the limit, as locally, and
	// the pods have a memory limit but no CPU limit.
	for _, obj := range f.created {
		if j, ok := obj.(interface{ GetName() string }); ok && strings.HasPrefix(j.GetName(), "memory-") {
			assert.Contains(t, mustJSONString(t, obj), `"-heap-mib=154"`)
			assert.Contains(t, mustJSONString(t, obj), `"limits":{"memory":"256Mi"}`)
		}
	}
}

func mustJSONString(t *testing.T, v any) string { return string(mustJSON(t, v)) }

func TestRunTimeout(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome { return outcome{never: true} }
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000", "-timeout=1m", "-poll=5s")
	require.Error(t, res.err)
	assert.ErrorIs(t, res.err, errTimeout)
	assert.Contains(t, res.err.Error(), "after 1m0s; last state: phase Pending, container waiting: ContainerCreating")
	assert.Empty(t, f.clusters, "cleaned up after a timeout")
}

func TestRunStuckPodFailsFast(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome { return outcome{waiting: "ErrImageNeverPull"} }
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "cannot run: ErrImageNeverPull")
	assert.NotErrorIs(t, res.err, errTimeout)
}

func TestRunCommandFailureStillCleansUp(t *testing.T) {
	f := newFakeCluster(t)
	f.fail["(cd /repo) docker build"] = &ExitError{Cmd: "docker build", Code: 1, Stderr: "Cannot connect to the Docker daemon"}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "Cannot connect to the Docker daemon")
	calls := f.Calls()
	assert.Equal(t, "kind delete cluster --name fitgo-bench", calls[len(calls)-1])
}

func TestRunCancelledStillCleansUp(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome { return outcome{forever: true} }
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := ParseFlags([]string{"-run-id=test", "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1", "-out=" + t.TempDir()}, os.Stderr)
	require.NoError(t, err)
	var stderr bytes.Buffer
	polls := 0
	r := &Runner{Exec: f, Stdout: &bytes.Buffer{}, Stderr: &stderr, Now: f.Now, Sleep: func(ctx context.Context, d time.Duration) error {
		if polls++; polls == 3 {
			cancel() // Ctrl-C while waiting
		}
		return f.Sleep(ctx, d)
	}}
	err = r.Run(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	calls := f.Calls()
	assert.Equal(t, "kind delete cluster --name fitgo-bench", calls[len(calls)-1])
}

// A setting the node cannot hold is skipped, with the reason in the report,
// and the others run.
func TestRunSkipsWhatTheNodeCannotHold(t *testing.T) {
	f := newFakeCluster(t)
	f.allocCPU = "1900m"
	res := runWith(t, f, "-cpus=1,2", "-runs=1", "-variants=fitgo")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, res.stderr, "skipping cpu cpus=2: the node fitgo-bench-control-plane has 1.9 CPUs allocatable")
	assert.Empty(t, f.clusters)
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 2)
	slices.SortFunc(sums, func(a, b results.Summary) int { return int(a.CPUs - b.CPUs) })
	assert.InDelta(t, 1, sums[0].CPUs, 0)
	assert.Equal(t, 1, sums[0].CompletedRuns)
	assert.InDelta(t, 2, sums[1].CPUs, 0)
	assert.Equal(t, 0, sums[1].CompletedRuns, "skipped")
	for _, c := range f.Calls() {
		assert.NotContains(t, c, "Job cpu-fitgo-c2-r1", "no Job for a setting that cannot fit")
	}
	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Skipped cpu cpus=2: the node fitgo-bench-control-plane has 1.9 CPUs allocatable")
}

// Colima's default, a 2-CPU Docker Desktop VM, a small CI runner: kind's own
// pods request 950m of the 2 CPUs, so the 1.5-CPU setting cannot be
// scheduled. It is skipped (it used to stay Pending, and end the run).
func TestRunTwoCPUKindNode(t *testing.T) {
	f := newFakeCluster(t)
	f.allocCPU = "2"
	f.system = kindSystemPods("fitgo-bench-control-plane")
	res := runWith(t, f, "-runs=1", "-variants=runtime,fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, res.stderr, "skipping cpu cpus=1500m: the node fitgo-bench-control-plane has 2 CPUs allocatable, 0.95 of them requested by the pods already on it (1.05 free)")
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 6)
	for _, s := range sums {
		want := 1
		if s.CPUs == 1.5 {
			want = 0
		}
		assert.Equal(t, want, s.CompletedRuns, "%s %v", s.Variant, s.CPUs)
	}
}

func TestRunNothingFits(t *testing.T) {
	f := newFakeCluster(t)
	f.allocCPU = "2"
	f.system = kindSystemPods("fitgo-bench-control-plane")
	res := runWith(t, f, "-cpus=1.5,2", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "no setting fits the cluster")
	assert.Contains(t, res.err.Error(), "Skipped cpu cpus=2: the node fitgo-bench-control-plane has 2 CPUs allocatable")
	assert.Empty(t, f.clusters)
}

// A Pending pod the scheduler gives up on mid-run (another workload took the
// room) is a failed run, not the end of the benchmark.
func TestRunUnschedulableMidRunIsAFailedRun(t *testing.T) {
	f := newFakeCluster(t)
	f.allocCPU = "4"
	f.outcome = func(p *corev1.Pod) outcome {
		if p.Labels[LabelVariant] == "runtime" {
			f.system = kindSystemPods("fitgo-bench-control-plane")
			f.system[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
		} else {
			f.system = nil
		}
		return outcome{reason: "Completed"}
	}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=runtime,fitgo", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "1 run(s) failed")
	assert.Contains(t, res.err.Error(), "cannot run: unschedulable: 0/1 nodes are available")
	assert.Contains(t, f.deleted, "job/cpu-runtime-c1-r1", "the Pending Job is deleted")
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 2)
	assert.Equal(t, 1, sums[0].FailedRuns)
}

func TestResizeScenario(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		return outcome{reason: "Completed", logs: recordedLog(t, "resize-"+strings.ReplaceAll(p.Labels[LabelVariant], "+", "-"))}
	}
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo,automaxprocs+automemlimit", "-duration=12s", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	golden(t, "resize", f.Calls())

	b, err := os.ReadFile(filepath.Join(res.out, ResizeJSON))
	require.NoError(t, err)
	var rows []ResizeResult
	require.NoError(t, json.Unmarshal(b, &rows))
	require.Len(t, rows, 2)
	fit, amp := rows[0], rows[1]
	assert.Equal(t, "applied", fit.Status)
	assert.InDelta(t, 4, fit.ResizeAtS, 0.01, "resized -resize-after (a third of -duration) after the container started")
	assert.True(t, fit.FollowsCPU(), "fitgo follows the CPU limit")
	assert.True(t, fit.FollowsMemory(), "fitgo follows the memory limit")
	assert.Equal(t, 1, fit.GOMAXPROCSBefore)
	assert.Equal(t, 2, fit.GOMAXPROCSAfter, "3 CPUs capped at the 2 CPUs of the recording machine")
	assert.InDelta(t, 0.9*(256<<20), float64(fit.GOMEMLIMITBefore), 1<<20)
	assert.InDelta(t, 0.9*(512<<20), float64(fit.GOMEMLIMITAfter), 1<<20)
	assert.False(t, amp.FollowsCPU(), "automaxprocs applies once at start")
	assert.False(t, amp.FollowsMemory(), "automemlimit's blank import does not refresh")
	assert.Contains(t, res.stdout, "follows CPU")

	md, err := os.ReadFile(filepath.Join(res.out, ResizeMD))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| fitgo | 1 → 2 | yes")
}

func TestResizeNeedsANewEnoughCluster(t *testing.T) {
	f := newFakeCluster(t)
	f.minor = "32"
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "Kubernetes 1.33 or later")
	assert.Empty(t, f.clusters)
}

func TestResizeNeedsANewEnoughKubectl(t *testing.T) {
	f := newFakeCluster(t)
	f.clientMinor = "31"
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "kubectl 1.32 or later")
	assert.Equal(t, []string{
		"docker info --format '{{json .}}'",
		"kind version",
		"kubectl version --client -o json",
	}, f.Calls(), "nothing is created before the tools are checked")
}

func TestRunWithoutDockerCreatesNothing(t *testing.T) {
	f := newFakeCluster(t)
	f.fail["docker info"] = &ExitError{Cmd: "docker info", Code: 1, Stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "Docker is needed, with a running engine")
	assert.Len(t, f.Calls(), 1)
}

func TestMainFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, Main(context.Background(), []string{"-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "usage: go run -C bench . kind [flags]")
	stderr.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"-scenario=nested"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "cgroup namespace")
	assert.Equal(t, 2, Main(context.Background(), []string{"-bogus"}, &stdout, &stderr))
}

func TestExitErrorMessage(t *testing.T) {
	err := error(&ExitError{Cmd: "kind get clusters", Code: 1, Stderr: "boom\n"})
	assert.Equal(t, "kind get clusters: exit status 1: boom", err.Error())
	var ee *ExitError
	assert.True(t, errors.As(err, &ee))
}

// sharedOutcome plays the shared scenario: in the coprocess layout the
// recorded launcher logs (fitgo survives, untuned is OOM-killed), the env
// variant's sidecar killed while the workload finished; in the pod-level
// layout fitgo OOM-killed and the runtime variant's sidecar killed and
// restarted.
func sharedOutcome(t *testing.T) func(p *corev1.Pod) outcome {
	held := []byte(`{"type":"sidecar","state":"held","held_bytes":209715200,"rss_bytes":214016000}` + "\n")
	killed := []byte(`{"type":"sidecar","state":"killed","held_bytes":0,"rss_bytes":0}` + "\n")
	return func(p *corev1.Pod) outcome {
		v := p.Labels[LabelVariant]
		if strings.HasSuffix(p.Name, "-coprocess-r1-x7k2p") {
			switch v {
			case "fitgo":
				return outcome{reason: "Completed", logs: recordedLog(t, "coprocess-fitgo")}
			case "untuned":
				return outcome{exitCode: 137, reason: "OOMKilled", logs: recordedLog(t, "coprocess-untuned")}
			case "env":
				// The runtime saw an OOM kill in the container, and the
				// workload exited by itself with its result.
				return outcome{reason: "OOMKilled", logs: slices.Concat(held, recordedLog(t, "env"), killed)}
			}
			return outcome{reason: "Completed", logs: slices.Concat(held, recordedLog(t, "runtime"))}
		}
		switch v {
		case "fitgo":
			return outcome{exitCode: 137, reason: "OOMKilled", logs: recordedLog(t, "oom-untuned")}
		case "untuned":
			return outcome{reason: "Completed", logs: recordedLog(t, "untuned"), sidecarKilled: true}
		}
		return outcome{reason: "Completed", logs: recordedLog(t, "runtime")}
	}
}

func TestRunShared(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = sharedOutcome(t)
	res := runWith(t, f, "-scenario=shared", "-runs=1", "-variants=untuned,env,fitgo,oracle-headroom", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	golden(t, "shared", f.Calls())
	assert.Contains(t, res.stderr, "pod-level resources: supported")

	sums := readSummaries(t, res.out)
	require.Len(t, sums, 8)
	got := map[string]results.Summary{}
	for _, s := range sums {
		assert.Equal(t, "shared", s.Scenario)
		assert.Equal(t, int64(512<<20), s.MemoryBytes)
		assert.Equal(t, int64(200<<20), s.SidecarBytes)
		assert.Zero(t, s.FailedRuns, "%s %s", s.Layout, s.Variant)
		got[s.Layout+" "+s.Variant] = s
	}
	for key, want := range map[string]struct {
		oom, sidecarOOM int
		completed       int
	}{
		"coprocess untuned":         {1, 0, 0},
		"coprocess env":             {0, 1, 1},
		"coprocess fitgo":           {0, 0, 1},
		"coprocess oracle-headroom": {0, 0, 1},
		"pod-level untuned":         {0, 1, 1},
		"pod-level env":             {0, 0, 1},
		"pod-level fitgo":           {1, 0, 0},
		"pod-level oracle-headroom": {0, 0, 1},
	} {
		s, ok := got[key]
		require.True(t, ok, key)
		assert.Equal(t, uint64(want.oom), s.OOMKills, "%s: OOM kills", key)
		assert.Equal(t, want.sidecarOOM, s.SidecarOOMKills, "%s: sidecar OOM kills", key)
		assert.Equal(t, want.completed, s.CompletedRuns, "%s: completed", key)
	}
	// The recorded coprocess run: fitgo's GOMEMLIMIT from the headroom, the
	// p99 and GC CPU of the report.
	fit := got["coprocess fitgo"]
	assert.InDelta(t, 336739676, float64(fit.GOMEMLIMITBytes), 0)
	assert.Greater(t, float64(fit.LatencyP99MS), 0.0)
	assert.Greater(t, float64(fit.GCCPUFraction), 0.0)
	assert.True(t, math.IsNaN(float64(fit.LimitedUsageBytes)), "not read in a cluster")

	// The manifests: the launcher in the coprocess layout, the pod's limit,
	// the native sidecar and FITGO_MEMORY_LIMIT in the pod-level one, the
	// oracle's GOMEMLIMIT in both.
	jobs := map[string]*batchv1.Job{}
	for _, obj := range f.created {
		if j, ok := obj.(*batchv1.Job); ok {
			jobs[j.Name] = j
		}
	}
	require.Len(t, jobs, 8)
	cop := jobs["shared-fitgo-cnone-m512mi-coprocess-r1"]
	require.NotNil(t, cop, "%v", slices.Collect(maps.Keys(jobs)))
	c := cop.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"/bench/coprocess", "-sidecar=/bench/sidecar", "-mib=200", "--", "/bench/fitgo"}, c.Command)
	assert.Contains(t, c.Args, "-heap-mib=187")
	assert.True(t, resource.MustParse("512Mi").Equal(c.Resources.Limits[corev1.ResourceMemory]))
	assert.Empty(t, c.Env)

	pl := jobs["shared-fitgo-cnone-m512mi-pod-level-r1"].Spec.Template.Spec
	require.NotNil(t, pl.Resources)
	assert.True(t, resource.MustParse("512Mi").Equal(pl.Resources.Limits[corev1.ResourceMemory]))
	assert.Empty(t, pl.Containers[0].Resources.Limits)
	assert.Equal(t, []string{"/bench/fitgo"}, pl.Containers[0].Command)
	require.Len(t, pl.Containers[0].Env, 1)
	assert.Equal(t, podspec.MemoryLimitVar, pl.Containers[0].Env[0].Name)
	require.Len(t, pl.InitContainers, 1)
	assert.Equal(t, []string{"/bench/sidecar", "-mib=200", "-listen=:8642"}, pl.InitContainers[0].Command)
	for _, name := range []string{"shared-untuned-cnone-m512mi-pod-level-r1", "shared-env-cnone-m512mi-pod-level-r1"} {
		for _, e := range jobs[name].Spec.Template.Spec.Containers[0].Env {
			assert.NotEqual(t, podspec.MemoryLimitVar, e.Name, "%s: only fitgo takes FITGO_MEMORY_LIMIT", name)
		}
	}
	for _, layout := range []string{"coprocess", "pod-level"} {
		env := jobs["shared-oracle-headroom-cnone-m512mi-"+layout+"-r1"].Spec.Template.Spec.Containers[0].Env
		assert.Equal(t, []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "294440140"}}, env, "0.9 × (512 − 200) MiB")
	}

	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "pod-level memory limit 512 MiB shared with a 200 MiB sidecar in another container")
	assert.Contains(t, string(md), "memory limit 512 MiB shared with a 200 MiB sidecar in the same cgroup (coprocess)")
	assert.Contains(t, string(md), "FITGO_MEMORY_LIMIT")
	assert.Contains(t, res.stderr, "the sidecar was OOM-killed, not the workload")
}

// TestRunSharedWithoutPodLevelResources: where the cluster cannot run the
// pod-level layout, it is skipped with the reason, and the coprocess layout
// runs.
func TestRunSharedWithoutPodLevelResources(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(f *fakeCluster)
		reason string
		dryRun bool
	}{
		{"Kubernetes 1.33", func(f *fakeCluster) { f.minor = "33" }, "the cluster runs v1.33.8", false},
		{"feature gate off", func(f *fakeCluster) { f.podLevelOff = true }, "the API server (v1.35.8) drops a pod's spec.resources, so the feature gate is off", true},
		{"old kubelets", func(f *fakeCluster) {
			n := kindNode("8")
			n.Status.NodeInfo.KubeletVersion = "v1.33.4"
			f.nodes = []corev1.Node{n}
		}, "the nodes' kubelets are older (fitgo-bench-control-plane v1.33.4) and refuse such pods", false},
		{"dry run refused", func(f *fakeCluster) {
			f.fail["kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench -n fitgo-bench-test create --dry-run=server"] = &ExitError{Cmd: "kubectl create", Code: 1, Stderr: `The Pod "pod-level-check" is invalid: spec.resources: Forbidden`}
		}, "the API server refused a pod with pod-level resources in a dry run", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t)
			tc.setup(f)
			f.outcome = sharedOutcome(t)
			res := runWith(t, f, "-scenario=shared", "-runs=1", "-variants=fitgo,untuned", "-work-iters=1000")
			require.NoError(t, res.err, res.stderr)
			dry := slices.ContainsFunc(f.Calls(), func(c string) bool { return strings.Contains(c, "--dry-run=server") })
			assert.Equal(t, tc.dryRun, dry, "a dry run")
			for _, c := range f.Calls() {
				assert.NotContains(t, c, "pod-level-r1", "no pod-level run")
			}
			sums := readSummaries(t, res.out)
			require.Len(t, sums, 4)
			for _, s := range sums {
				if s.Layout == LayoutPodLevel {
					assert.Zero(t, s.CompletedRuns)
					continue
				}
				assert.Equal(t, LayoutCoprocess, s.Layout)
				assert.Equal(t, 1, s.Runs)
			}
			md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
			require.NoError(t, err)
			assert.Contains(t, string(md), "Skipped shared no CPU limit memory=512Mi pod-level sidecar=200Mi: pod-level resources (the PodLevelResources feature, beta and on by default from Kubernetes 1.34): "+tc.reason)
		})
	}
}

// TestRunSharedSidecarStuck: a pod-level pod whose sidecar container cannot
// start is stuck, not a run to wait out: an image error ends the benchmark
// (every run shares the image), another is a failed run.
func TestRunSharedSidecarStuck(t *testing.T) {
	for _, tc := range []struct {
		reason string
		fatal  bool
	}{{"ErrImagePull", true}, {"CreateContainerConfigError", false}} {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFakeCluster(t)
			f.outcome = func(p *corev1.Pod) outcome {
				if strings.Contains(p.Name, "pod-level") {
					return outcome{sidecarWaiting: tc.reason}
				}
				return outcome{reason: "Completed", logs: recordedLog(t, "coprocess-fitgo")}
			}
			res := runWith(t, f, "-scenario=shared", "-runs=1", "-variants=fitgo", "-work-iters=1000")
			require.Error(t, res.err)
			assert.Contains(t, res.err.Error(), "cannot run: the sidecar container: "+tc.reason)
			assert.Equal(t, tc.fatal, errors.Is(res.err, errImage), res.err)
			sums := readSummaries(t, res.out)
			require.Len(t, sums, 2)
			assert.Equal(t, 1, sums[0].CompletedRuns, "the coprocess run before it")
		})
	}
}

// TestRunFromPodSidecar: whose OOM kill a shared run's pod shows.
func TestRunFromPodSidecar(t *testing.T) {
	held := `{"type":"sidecar","state":"held","held_bytes":209715200,"rss_bytes":214016000}` + "\n"
	killed := `{"type":"sidecar","state":"killed","held_bytes":0,"rss_bytes":0}` + "\n"
	fitgo := string(recordedLog(t, "coprocess-fitgo"))
	pod := func(phase corev1.PodPhase, reason string, exit int32, sidecar *corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exit}},
		}}}}
		if sidecar != nil {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{*sidecar}
		}
		return p
	}
	restarted := func(reason string) *corev1.ContainerStatus {
		s := &corev1.ContainerStatus{Name: SidecarContainerName, RestartCount: 1}
		s.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed"}
		s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: 137}
		return s
	}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		logs       string
		oom        uint64
		sidecarOOM bool
		rss        int64
		err        bool
	}{
		{"coprocess, no kill", pod(corev1.PodSucceeded, "Completed", 0, nil), fitgo, 0, false, 213995520, false},
		{"coprocess, the workload killed", pod(corev1.PodFailed, "OOMKilled", 137, nil), held, 1, false, 214016000, false},
		{"coprocess, the sidecar killed", pod(corev1.PodSucceeded, "OOMKilled", 0, nil), fitgo + killed, 0, true, 213995520, false},
		// The runtime saw a kill, the workload exited 0 with its result, and
		// the launcher said nothing: still not the workload's kill.
		{"coprocess, a kill the launcher did not see", pod(corev1.PodSucceeded, "OOMKilled", 0, nil), fitgo, 0, true, 213995520, false},
		{"pod-level, the sidecar OOM-killed and restarted", pod(corev1.PodSucceeded, "Completed", 0, restarted("OOMKilled")), fitgo, 0, true, 213995520, false},
		{"pod-level, the sidecar restarted for another reason", pod(corev1.PodSucceeded, "Completed", 0, restarted("Error")), fitgo, 0, false, 213995520, false},
		{"pod-level, the workload killed", pod(corev1.PodFailed, "OOMKilled", 137, &corev1.ContainerStatus{Name: SidecarContainerName}), held, 1, false, 214016000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := RunFromPod(tc.pod, []byte(tc.logs))
			assert.Equal(t, tc.oom, run.OOMKills)
			require.NotNil(t, run.Sidecar)
			assert.Equal(t, tc.sidecarOOM, run.Sidecar.OOMKilled)
			assert.Equal(t, tc.rss, run.Sidecar.RSSBytes, "from the held line")
			assert.Equal(t, tc.err, run.Err != "", run.Err)
		})
	}
	// No sidecar lines, no sidecar container: no sidecar in the run.
	run := RunFromPod(pod(corev1.PodSucceeded, "Completed", 0, nil), recordedLog(t, "fitgo"))
	assert.Nil(t, run.Sidecar)
}
