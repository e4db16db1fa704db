package kuberig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/cluster"
	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/internal/rig/vmtest"
)

// BenchImage is the kind runner's workload image in the rig: the variants it
// runs under /bench, as bench/Dockerfile puts them, built here and imported
// into the node's containerd (the node cannot pull).
const BenchImage = "localhost/fitgo/bench:v1"

func benchImage(t *testing.T, variants ...string) Image {
	t.Helper()
	dir := t.TempDir()
	var pkgs []string
	for _, v := range variants {
		pkgs = append(pkgs, "github.com/fitgo/fitgo/bench/cmd/"+v)
	}
	require.NoError(t, vmtest.BuildStatic("", dir+"/", pkgs...))
	img := Image{Name: BenchImage, Files: map[string]string{}}
	for _, v := range variants {
		img.Files[strings.TrimPrefix(cluster.ImageDir, "/")+"/"+v] = filepath.Join(dir, v)
	}
	return img
}

// kubeletRunner is the fourth point: the benchmark's Kubernetes
// runner (go run -C bench . kind) in its existing-cluster mode on the real
// node, with the controller manager (Jobs) and the scheduler: the cpu,
// memory and resize scenarios, with short settings since the node is
// emulated. It checks the Jobs (one per variant, finished by the Job
// controller), the results read from the pods' logs, the files written and
// the outcomes: in the memory scenario the untuned pod is OOM-killed and
// fitgo's completes; in the resize scenario fitgo follows the new limits,
// the runtime variant's GOMAXPROCS too, and the env variant does not.
func kubeletRunner(t *testing.T, n *Node, _ string) {
	kubectl := filepath.Join(CacheDir(), "bin", "kubectl")
	kubeconfig := filepath.Join(n.dir, "admin.kubeconfig")
	// The runner runs kubectl from PATH, as a user's shell would.
	t.Setenv("PATH", filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()

	// run runs the runner and returns its -out directory. -keep leaves the
	// namespace, for the checks of the Jobs.
	run := func(id string, args ...string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), id)
		args = append([]string{"-context=kubetest", "-kubeconfig=" + kubeconfig, "-image=" + BenchImage, "-pull-policy=Never",
			"-emulated=qemu TCG", "-out=" + out, "-run-id=" + id, "-keep", "-runs=1", "-work-iters=100", "-poll=1s"}, args...)
		var stdout, stderr bytes.Buffer
		began := time.Now()
		code := cluster.Main(ctx, args, &stdout, &stderr)
		t.Logf("go run -C bench . kind %s: exit %d after %v\n%s\n%s", strings.Join(args, " "), code, time.Since(began).Round(time.Second), stderr.String(), stdout.String())
		require.Equal(t, 0, code)
		return out
	}
	jobs := func(id string) []batchv1.Job {
		t.Helper()
		b, err := n.do(ctx, "GET", "/apis/batch/v1/namespaces/fitgo-bench-"+id+"/jobs", "", nil)
		require.NoError(t, err)
		var l batchv1.JobList
		require.NoError(t, json.Unmarshal(b, &l))
		return l.Items
	}
	pods := func(id string) []corev1.Pod {
		t.Helper()
		b, err := n.do(ctx, "GET", "/api/v1/namespaces/fitgo-bench-"+id+"/pods?labelSelector="+url.QueryEscape(cluster.LabelRunID+"="+id), "", nil)
		require.NoError(t, err)
		var l corev1.PodList
		require.NoError(t, json.Unmarshal(b, &l))
		return l.Items
	}
	// finished returns the Job's final condition, set by the Job controller.
	finished := func(j batchv1.Job) batchv1.JobConditionType {
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				return c.Type
			}
		}
		return ""
	}
	// finishedJobs waits for the Job controller to mark the run's want Jobs
	// finished (it may do so after the runner has seen their pods end).
	finishedJobs := func(id string, want int) []batchv1.Job {
		t.Helper()
		var js []batchv1.Job
		waitFor(t, "the Jobs of "+id+" finished", 2*time.Minute, n.console, func() error {
			js = jobs(id)
			for _, j := range js {
				if finished(j) == "" {
					return fmt.Errorf("the Job %s: %+v", j.Name, j.Status)
				}
			}
			if len(js) != want {
				return fmt.Errorf("%d Jobs, want %d", len(js), want)
			}
			return nil
		})
		return js
	}
	readRuns := func(out string) []results.Run {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, report.RunsFile))
		require.NoError(t, err)
		var runs []results.Run
		require.NoError(t, json.Unmarshal(b, &runs))
		return runs
	}
	readReport := func(out, file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, file))
		require.NoError(t, err)
		md := string(b)
		head, _, _ := strings.Cut(md, "\n- **Command**")
		t.Logf("%s, its header:\n%s", file, head)
		// The header says the node is emulated, right under the title.
		_, rest, _ := strings.Cut(md, "\n\n")
		assert.True(t, strings.HasPrefix(rest, "**The node is emulated (qemu TCG)**"), md)
		return md
	}
	checkFiles := func(out string) {
		t.Helper()
		for _, f := range []string{report.ResultsFile, report.RunsFile, report.BenchFile} {
			assert.FileExists(t, filepath.Join(out, f))
		}
		chart, err := os.ReadFile(filepath.Join(out, report.ChartFile))
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(chart, []byte("\x89PNG\r\n\x1a\n")), "chart.png is a PNG")
	}

	// The cpu scenario: one CPU limit, four variants, a small heap.
	out := run("cpu", "-scenario=cpu", "-cpus=1", "-variants=untuned,runtime,env,fitgo", "-duration=5s",
		"-heap-mib=8", "-alloc-mib=2", "-rate=20", "-timeout=8m")
	md := readReport(out, report.ReportFile)
	checkFiles(out)
	procs := map[string]int{}
	for _, r := range readRuns(out) {
		require.NotNil(t, r.Workload, "%s: the result from the pod's log: %+v", r.Variant, r)
		assert.Empty(t, r.Err, r.Variant)
		procs[r.Variant] = r.Workload.GOMAXPROCS
	}
	// untuned: the node's 4 CPUs; the runtime: the quota rounded up, at
	// least 2; env: ceil(limits.cpu); fitgo: the quota.
	assert.Equal(t, map[string]int{"untuned": 4, "runtime": 2, "env": 1, "fitgo": 1}, procs)
	assert.Contains(t, md, "## cpu")
	for _, j := range finishedJobs("cpu", 4) { // a Job per variant
		assert.Equal(t, batchv1.JobComplete, finished(j), "%s: %+v", j.Name, j.Status)
	}
	for _, p := range pods("cpu") {
		assert.Equal(t, NodeName, p.Spec.NodeName, "%s: placed by the scheduler", p.Name)
	}

	// The memory scenario as the runners set it: 256Mi, a live heap of 60 %
	// of it, no CPU limit; the local runner's window and allocation rate,
	// fewer requests.
	out = run("memory", "-scenario=memory", "-memory=256Mi", "-variants=untuned,fitgo", "-duration=10s",
		"-alloc-mib=50", "-rate=50", "-timeout=12m")
	readReport(out, report.ReportFile)
	checkFiles(out)
	byVariant := map[string]results.Run{}
	for _, r := range readRuns(out) {
		byVariant[r.Variant] = r
	}
	untuned, fitgo := byVariant["untuned"], byVariant["fitgo"]
	t.Logf("memory: untuned OOM kills %d, signal %q; fitgo err %q, result %v", untuned.OOMKills, untuned.Signal, fitgo.Err, fitgo.Workload != nil)
	assert.True(t, untuned.Killed(), "the untuned pod is OOM-killed: %+v", untuned)
	require.NotNil(t, fitgo.Workload, "fitgo's pod completes with its result: %+v", fitgo)
	assert.False(t, fitgo.Killed())
	assert.Empty(t, fitgo.Err)
	assert.Equal(t, int64(math.Floor(0.9*float64(256*mib))), fitgo.Workload.GOMEMLIMITStart)
	for _, j := range finishedJobs("memory", 2) {
		want := batchv1.JobComplete
		if strings.HasPrefix(j.Name, "memory-untuned-") {
			want = batchv1.JobFailed
		}
		assert.Equal(t, want, finished(j), "%s: %+v", j.Name, j.Status)
	}
	for _, p := range pods("memory") {
		if p.Labels[cluster.LabelVariant] == "untuned" {
			require.Len(t, p.Status.ContainerStatuses, 1)
			require.NotNil(t, p.Status.ContainerStatuses[0].State.Terminated)
			assert.Equal(t, "OOMKilled", p.Status.ContainerStatuses[0].State.Terminated.Reason, "the reason from the pod status")
		}
	}

	// The resize scenario: 1 CPU and 256Mi, resized in place to 3 and
	// 512Mi while the variants run.
	out = run("resize", "-scenario=resize", "-cpus=1", "-memory=256Mi", "-resize-cpus=3", "-resize-memory=512Mi",
		"-variants=fitgo,runtime,env", "-duration=45s", "-resize-after=15s", "-report-every=500ms",
		"-heap-mib=8", "-alloc-mib=2", "-rate=20", "-timeout=8m")
	md = readReport(out, cluster.ResizeMD)
	b, err := os.ReadFile(filepath.Join(out, cluster.ResizeJSON))
	require.NoError(t, err)
	var rows []cluster.ResizeResult
	require.NoError(t, json.Unmarshal(b, &rows))
	t.Logf("resize.md:\n%s", md)
	require.Len(t, rows, 3)
	for _, r := range rows {
		assert.Equal(t, "applied", r.Status, r.Variant)
		assert.Empty(t, r.Err, r.Variant)
	}
	fit, rt, env := rows[0], rows[1], rows[2]
	assert.True(t, fit.FollowsCPU(), "fitgo follows the CPU limit")
	assert.True(t, fit.FollowsMemory(), "fitgo follows the memory limit")
	assert.Equal(t, [2]int{1, 3}, [2]int{fit.GOMAXPROCSBefore, fit.GOMAXPROCSAfter})
	assert.Equal(t, [2]int64{int64(math.Floor(0.9 * 256 * mib)), int64(math.Floor(0.9 * 512 * mib))}, [2]int64{fit.GOMEMLIMITBefore, fit.GOMEMLIMITAfter})
	assert.True(t, rt.FollowsCPU(), "the runtime's GOMAXPROCS follows")
	assert.False(t, rt.FollowsMemory(), "the runtime sets no GOMEMLIMIT")
	assert.Equal(t, [2]int{2, 3}, [2]int{rt.GOMAXPROCSBefore, rt.GOMAXPROCSAfter})
	assert.False(t, env.FollowsCPU(), "the env variant's values are fixed at start")
	assert.False(t, env.FollowsMemory(), "the env variant's values are fixed at start")
	assert.Equal(t, [2]int{1, 1}, [2]int{env.GOMAXPROCSBefore, env.GOMAXPROCSAfter})
	// What the report says, row by row.
	assert.Contains(t, md, "| fitgo | 1 → 3 | yes")
	assert.Contains(t, md, "| runtime | 2 → 3 | yes")
	assert.Contains(t, md, "| env | 1 → 1 | no")
	for _, p := range pods("resize") {
		assert.Equal(t, NodeName, p.Spec.NodeName, "%s: placed by the scheduler", p.Name)
	}
}
