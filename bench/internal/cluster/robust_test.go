package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fitgo/fitgo/bench/internal/report"
	"github.com/fitgo/fitgo/bench/internal/results"
)

// The tests of what a first run on a real laptop or CI runner meets.

const kubectlNS = "kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench -n fitgo-bench-test "

func readRuns(t *testing.T, dir string) []results.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.RunsFile))
	require.NoError(t, err)
	var runs []results.Run
	require.NoError(t, json.Unmarshal(b, &runs))
	return runs
}

// An error that ends the benchmark still writes what ran, and marks the rest.
func TestRunWritesWhatRanBeforeAFatalError(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		if p.Labels[LabelVariant] == "fitgo" {
			return outcome{waiting: "ErrImagePull"}
		}
		return outcome{reason: "Completed"}
	}
	res := runWith(t, f, "-cpus=1", "-runs=2", "-variants=runtime,fitgo", "-work-iters=1000")
	require.Error(t, res.err)
	assert.ErrorIs(t, res.err, errImage)
	runs := readRuns(t, res.out)
	require.Len(t, runs, 4)
	assert.NotNil(t, runs[0].Workload, "the run before the error")
	for _, r := range runs[1:] {
		assert.Contains(t, r.Err, "not run: the benchmark stopped after 1 of 4 runs")
	}
	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Incomplete: the benchmark stopped after 1 of 4 runs")
	assert.Contains(t, res.stdout, "runtime", "the table of what ran")
}

// The files are rewritten after every run: a killed runner leaves them.
func TestRunWritesAfterEveryRun(t *testing.T) {
	f := newFakeCluster(t)
	var out string
	seen := 0
	f.outcome = func(p *corev1.Pod) outcome {
		if p.Labels[LabelVariant] == "fitgo" {
			runs := readRuns(t, out)
			require.Len(t, runs, 2)
			assert.NotNil(t, runs[0].Workload, "the runtime run is written before the fitgo run starts")
			assert.Contains(t, runs[1].Err, "not run yet")
			seen++
		}
		return outcome{reason: "Completed"}
	}
	out = t.TempDir()
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=runtime,fitgo", "-work-iters=1000", "-out="+out)
	require.NoError(t, res.err, res.stderr)
	assert.Equal(t, 1, seen)
	for _, r := range readRuns(t, out) {
		assert.Empty(t, r.Err)
	}
}

// kind v0.31+ creates Kubernetes 1.35+, whose kubelet refuses cgroup v1:
// fail before kind create cluster instead of after kubeadm's long wait.
func TestRunCgroupV1HostFailsFast(t *testing.T) {
	f := newFakeCluster(t)
	f.engine = dockerInfoJSON("1", "")
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "this host runs cgroup v1")
	assert.Contains(t, res.err.Error(), "-node-image")
	for _, c := range f.Calls() {
		assert.NotContains(t, c, "create cluster")
	}

	f = newFakeCluster(t)
	f.engine = dockerInfoJSON("1", "")
	res = runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-node-image=kindest/node:v1.35.8@sha256:0123")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "runs Kubernetes 1.35")

	f = newFakeCluster(t)
	f.engine = dockerInfoJSON("1", "")
	res = runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000", "-node-image=kindest/node:v1.34.3@sha256:0123")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, f.Calls(), "kind create cluster --name fitgo-bench --config /repo/bench/kind-cluster.yaml --wait 5m --image kindest/node:v1.34.3@sha256:0123")

	// An existing cluster already runs: nothing to check.
	f = newFakeCluster(t)
	f.engine = dockerInfoJSON("1", "")
	f.clusters = []string{"fitgo-bench"}
	res = runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
}

func TestRunPodman(t *testing.T) {
	for _, tc := range []struct{ name, provider string }{{"podman", "-provider=podman"}, {"podman-docker", "-provider=docker"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t)
			f.engine = podmanInfoJSON
			res := runWith(t, f, tc.provider, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
			require.NoError(t, res.err, res.stderr)
			calls := f.Calls()
			assert.Contains(t, calls, "KIND_EXPERIMENTAL_PROVIDER=podman kind create cluster --name fitgo-bench --config /repo/bench/kind-cluster.yaml --wait 5m")
			assert.Contains(t, calls, "(cd /repo) podman build -f bench/Dockerfile -t fitgo-bench:dev .")
			assert.Contains(t, calls, "podman save -o $TMP/image.tar localhost/fitgo-bench:dev")
			assert.Contains(t, calls, "KIND_EXPERIMENTAL_PROVIDER=podman kind load image-archive $TMP/image.tar --name fitgo-bench")
			assert.Equal(t, "KIND_EXPERIMENTAL_PROVIDER=podman kind delete cluster --name fitgo-bench", calls[len(calls)-1])
			for _, c := range calls {
				assert.NotContains(t, c, "docker-image")
			}
			for _, obj := range f.created {
				j := obj.(*batchv1.Job)
				assert.Equal(t, "localhost/fitgo-bench:dev", j.Spec.Template.Spec.Containers[0].Image, "the name Podman gives the image")
			}
			md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
			require.NoError(t, err)
			assert.Contains(t, string(md), "v2 (systemd manager, Podman host)")
		})
	}
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "podman")
	cfg, err := ParseFlags(nil, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, ProviderPodman, cfg.Provider)
}

// Docker's containerd image store (Docker Desktop, OrbStack, Docker 29):
// kind load docker-image fails with "content digest not found" (kind#3795).
func TestRunContainerdImageStore(t *testing.T) {
	f := newFakeCluster(t)
	f.engine = dockerInfoJSON("2", "io.containerd.snapshotter.v1")
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	calls := f.Calls()
	assert.Contains(t, calls, "docker save --platform linux/amd64 -o $TMP/image.tar fitgo-bench:dev")
	assert.Contains(t, calls, "kind load image-archive $TMP/image.tar --name fitgo-bench")
	for _, c := range calls {
		assert.NotContains(t, c, "docker-image")
	}

	// Docker 24 to 27 have the containerd store but no save --platform.
	f = newFakeCluster(t)
	f.engine = dockerInfoJSON("2", "io.containerd.snapshotter.v1")
	f.fail["docker save --platform"] = &ExitError{Cmd: "docker save", Code: 125, Stderr: "unknown flag: --platform\nSee 'docker save --help'."}
	res = runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, f.Calls(), "docker save -o $TMP/image.tar fitgo-bench:dev")
	assert.Contains(t, f.Calls(), "kind load image-archive $TMP/image.tar --name fitgo-bench")
}

// "TLS handshake timeout" and friends are retried; the run goes on.
func TestRunFlakyAPI(t *testing.T) {
	f := newFakeCluster(t)
	f.flaky["kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench version"] = 1
	f.flaky["kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench get nodes"] = 2
	f.flaky[kubectlNS+"get pods -l batch.kubernetes.io/job-name=cpu-runtime-c1-r1"] = 3
	f.flaky[kubectlNS+"logs cpu-fitgo-c1-r1"] = 4
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=runtime,fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, res.stderr, "TLS handshake timeout; retrying in 1s (2/5)")
	assert.Contains(t, res.stderr, "retrying in 8s (5/5)")
	for _, s := range readSummaries(t, res.out) {
		assert.Equal(t, 1, s.CompletedRuns, s.Variant)
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "kubectl ") && (strings.Contains(c, " get ") || strings.Contains(c, " logs ")) {
			assert.True(t, strings.HasSuffix(c, " --request-timeout=30s"), "%s", c)
		}
	}
}

// An API that stays down for one run fails that run, not the benchmark.
func TestRunFailedVariantIsARow(t *testing.T) {
	f := newFakeCluster(t)
	f.flaky[kubectlNS+"logs cpu-runtime-c1-r1"] = readAttempts
	f.fail[kubectlNS+"create -f - <<< Job cpu-untuned-c1-r1"] = &ExitError{Cmd: "kubectl create", Code: 1, Stderr: "etcdserver: request timed out"}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=untuned,runtime,fitgo", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "2 run(s) failed")
	assert.Contains(t, res.err.Error(), "etcdserver: request timed out")
	assert.Contains(t, res.err.Error(), "TLS handshake timeout")
	sums := readSummaries(t, res.out)
	require.Len(t, sums, 3)
	assert.Equal(t, 1, sums[0].FailedRuns)
	assert.Equal(t, 1, sums[1].FailedRuns)
	assert.Equal(t, 1, sums[2].CompletedRuns, "the variant after the failures ran")
}

// The Dockerfile builds with the classic builder too (Docker 20.10, Docker 23+
// without buildx): no BuildKit-only syntax; .dockerignore keeps the caches
// out of the build context.
func TestDockerfileNeedsNoBuildKit(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		assert.NotRegexp(t, `^#\s*syntax\s*=`, l, "a syntax directive needs BuildKit")
	}
	for _, in := range dockerfile(t) {
		assert.NotContains(t, in, "--mount", "RUN --mount needs BuildKit")
		assert.NotContains(t, in, "<<", "heredocs need BuildKit")
	}
	ignore, err := os.ReadFile("../../../.dockerignore")
	require.NoError(t, err)
	for _, p := range []string{".git", "internal/rig/vmtest/.cache", "bench/out"} {
		assert.Contains(t, strings.Fields(string(ignore)), p)
	}
}

// Resize with limits below the fixed requests: the requests go below them,
// to half the limits (the fake, like the API server, rejects a request above
// its limit, and a resize that would change the pod's QoS class: requests
// equal to the limits would make it Guaranteed).
func TestResizeSmallLimits(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		return outcome{reason: "Completed", logs: recordedLog(t, "resize-fitgo")}
	}
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo", "-cpus=50m", "-memory=48Mi", "-duration=12s", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	p := f.created[0].(*corev1.Pod)
	req := p.Spec.Containers[0].Resources.Requests
	assert.True(t, resource.MustParse("25m").Equal(req[corev1.ResourceCPU]), "%v", req)
	assert.True(t, resource.MustParse("24Mi").Equal(req[corev1.ResourceMemory]), "%v", req)
	assert.Equal(t, "applied", resizeRows(t, res.out)[0].Status)
}

func resizeRows(t *testing.T, dir string) []ResizeResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ResizeJSON))
	require.NoError(t, err)
	var rows []ResizeResult
	require.NoError(t, json.Unmarshal(b, &rows))
	return rows
}

func resizeLogs(t *testing.T) func(p *corev1.Pod) outcome {
	return func(p *corev1.Pod) outcome {
		return outcome{reason: "Completed", logs: recordedLog(t, "resize-"+strings.ReplaceAll(p.Labels[LabelVariant], "+", "-"))}
	}
}

// A patch the API rejects fails that variant; the next one runs.
func TestResizeFailedPatchIsARow(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = resizeLogs(t)
	f.fail[kubectlNS+"patch pod fitgo-resize"] = &ExitError{Cmd: "kubectl patch", Code: 1, Stderr: `The Pod "fitgo-resize" is invalid`}
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo,automaxprocs+automemlimit", "-duration=12s", "-work-iters=1000")
	require.Error(t, res.err)
	assert.Contains(t, res.err.Error(), "1 resize run(s) failed")
	rows := resizeRows(t, res.out)
	require.Len(t, rows, 2)
	assert.Contains(t, rows[0].Err, `resize: kubectl patch: exit status 1: The Pod "fitgo-resize" is invalid`)
	assert.Equal(t, "applied", rows[1].Status, "the next variant ran")
	assert.Contains(t, f.deleted, "pod/fitgo-resize")
}

// The kubelet's reasons for not applying a resize are in the row.
func TestResizeNotApplied(t *testing.T) {
	for _, tc := range []struct {
		cond corev1.PodCondition
		want string
	}{
		{corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"},
			"infeasible (Infeasible): Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"},
		{corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Reason: corev1.PodReasonError, Message: "failed to update cgroup: device or resource busy"},
			"failed (Error): failed to update cgroup: device or resource busy"},
	} {
		t.Run(tc.cond.Reason, func(t *testing.T) {
			f := newFakeCluster(t)
			f.outcome = resizeLogs(t)
			f.resizeCond = &tc.cond
			res := runWith(t, f, "-scenario=resize", "-variants=fitgo", "-duration=12s", "-work-iters=1000")
			require.NoError(t, res.err, res.stderr)
			rows := resizeRows(t, res.out)
			require.Len(t, rows, 1)
			assert.Equal(t, tc.want, rows[0].Status)
			assert.Zero(t, rows[0].AppliedAtS)
		})
	}
}

// A 2-CPU node cannot show GOMAXPROCS following a resize to 3 CPUs.
func TestResizeWarnsAboutASmallNode(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = resizeLogs(t)
	f.allocCPU = "2"
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo", "-duration=12s", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	want := "The node fitgo-bench-control-plane has 2 CPUs, fewer than -resize-cpus 3"
	assert.Contains(t, res.stderr, "warning: "+want)
	md, err := os.ReadFile(filepath.Join(res.out, ResizeMD))
	require.NoError(t, err)
	assert.Contains(t, string(md), want)
}

// The node's clock (startedAt, in whole seconds) is not this machine's: a
// container VM drifts after the laptop sleeps. The resize is timed on this
// machine's clock alone.
func TestResizeIgnoresTheNodeClock(t *testing.T) {
	for _, skew := range []time.Duration{-30 * time.Second, 1700 * time.Millisecond, 10 * time.Minute} {
		f := newFakeCluster(t)
		f.outcome = resizeLogs(t)
		f.nodeSkew = skew
		res := runWith(t, f, "-scenario=resize", "-variants=fitgo", "-duration=12s", "-work-iters=1000")
		require.NoError(t, res.err, res.stderr)
		rows := resizeRows(t, res.out)
		require.Len(t, rows, 1)
		assert.InDelta(t, 4, rows[0].ResizeAtS, 0.01, "skew %v", skew)
		assert.Equal(t, 1, rows[0].GOMAXPROCSBefore, "skew %v", skew)
		assert.True(t, rows[0].FollowsCPU(), "skew %v", skew)
	}
}

// With -work-iters the first object is a bare Pod, which the API server
// rejects until the namespace's default ServiceAccount exists.
func TestResizeWaitsForTheServiceAccount(t *testing.T) {
	f := newFakeCluster(t)
	f.outcome = resizeLogs(t)
	f.saMissing = 3
	res := runWith(t, f, "-scenario=resize", "-variants=fitgo", "-duration=12s", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	assert.Equal(t, "applied", resizeRows(t, res.out)[0].Status)
}

// The calibration log may hold other lines around the number.
func TestRunCalibrationLogWithMoreLines(t *testing.T) {
	f := newFakeCluster(t)
	f.calibration = []byte("2026/11/29 12:00:00 INFO fitgo: fitted the Go runtime to the container GOMAXPROCS.after=2\n38695\n")
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, res.stderr, "work per request: 38695 iterations")
}

// On a cluster with workers, the tainted control plane is not where the pods
// run, and does not limit the settings.
func TestRunMultiNodeCluster(t *testing.T) {
	f := newFakeCluster(t)
	cp := kindNode("1")
	cp.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	w := kindNode("8")
	w.Name = "fitgo-bench-worker"
	f.nodes = []corev1.Node{cp, w}
	f.system = kindSystemPods("fitgo-bench-control-plane")
	res := runWith(t, f, "-cpus=1.5", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "kind node fitgo-bench-worker")
	assert.Equal(t, 1, readSummaries(t, res.out)[0].CompletedRuns)
}

// kubectl gets the cluster's kubeconfig from kind: the kind-<name> context
// may be missing from the user's kubeconfig.
func TestRunUsesKindsKubeconfig(t *testing.T) {
	f := newFakeCluster(t)
	f.clusters = []string{"fitgo-bench"}
	res := runWith(t, f, "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	calls := f.Calls()
	assert.Contains(t, calls, "kind get kubeconfig --name fitgo-bench")
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, "kubectl ") && c != "kubectl version --client -o json" {
			assert.True(t, strings.HasPrefix(c, "kubectl --kubeconfig $TMP/kubeconfig --context kind-fitgo-bench "), c)
			n++
		}
	}
	assert.Equal(t, n, len(f.kubeconfigs), "every kubectl call read the file kind wrote")
}

// An existing cluster: its context, an image it pulls, a namespace that
// exists, a node selector; no Docker, no kind.
func TestRunExistingCluster(t *testing.T) {
	f := newFakeCluster(t)
	other := kindNode("16")
	other.Name = "gke-default-pool-1"
	bench := kindNode("3500m")
	bench.Name = "gke-bench-pool-1"
	bench.Labels = map[string]string{"pool": "bench"}
	f.nodes = []corev1.Node{other, bench}
	res := runWith(t, f, "-context=gke_prod", "-image=registry.example.com/fitgo-bench:v1", "-namespace=perf", "-node-selector=pool=bench",
		"-cpus=1,4", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	golden(t, "cluster-existing", f.Calls())
	for _, obj := range f.created {
		spec := obj.(*batchv1.Job).Spec.Template.Spec
		assert.Equal(t, map[string]string{"pool": "bench"}, spec.NodeSelector)
		assert.Equal(t, "registry.example.com/fitgo-bench:v1", spec.Containers[0].Image)
		assert.Equal(t, corev1.PullAlways, spec.Containers[0].ImagePullPolicy)
	}
	assert.Contains(t, res.stderr, "skipping cpu cpus=4: the node gke-bench-pool-1 has 3.5 CPUs allocatable, 0 of them requested by the pods already on it (3.5 free)")
	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "node gke-bench-pool-1")
	assert.Contains(t, string(md), "(context gke_prod)")
}

// A namespace-scoped account cannot list every namespace's pods: the
// settings are checked against the allocatable resources alone.
func TestRunExistingClusterWithoutClusterWideRead(t *testing.T) {
	f := newFakeCluster(t)
	f.fail["kubectl --context prod get pods --all-namespaces"] = &ExitError{Cmd: "kubectl get pods", Code: 1, Stderr: `Error from server (Forbidden): pods is forbidden: User "me" cannot list resource "pods" in API group "" at the cluster scope`}
	res := runWith(t, f, "-context=prod", "-image=registry.example.com/fitgo-bench:v1", "-namespace=perf", "-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	assert.Contains(t, res.stderr, "warning: cannot list the pods of every namespace")
	n := 0
	for _, c := range f.Calls() {
		if strings.Contains(c, "--all-namespaces") {
			n++
		}
	}
	assert.Equal(t, 1, n, "Forbidden is not retried")
}

func TestRunExistingClusterPush(t *testing.T) {
	f := newFakeCluster(t)
	res := runWith(t, f, "-context=prod", "-kubeconfig=/home/me/.kube/prod", "-image=registry.example.com/fitgo-bench:v1", "-push",
		"-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	calls := f.Calls()
	assert.Contains(t, calls, "(cd /repo) docker build -f bench/Dockerfile -t registry.example.com/fitgo-bench:v1 .")
	assert.Contains(t, calls, "docker push registry.example.com/fitgo-bench:v1")
	assert.Contains(t, calls, "kubectl --kubeconfig /home/me/.kube/prod --context prod create namespace fitgo-bench-test")
	assert.Equal(t, "kubectl --kubeconfig /home/me/.kube/prod --context prod delete namespace fitgo-bench-test --ignore-not-found --timeout=2m", calls[len(calls)-1])
	for _, c := range calls {
		assert.False(t, strings.HasPrefix(c, "kind "), c)
	}
}

// An existing cluster whose node has the image loaded (it cannot pull) and
// is emulated: the pods never pull, and the reports say in their header that
// the timings mean nothing.
func TestRunExistingClusterLoadedImageEmulatedNode(t *testing.T) {
	f := newFakeCluster(t)
	res := runWith(t, f, "-context=rig", "-image=localhost/fitgo/bench:v1", "-pull-policy=Never", "-emulated=qemu TCG",
		"-cpus=1", "-runs=1", "-variants=fitgo", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	require.NotEmpty(t, f.created)
	for _, obj := range f.created {
		assert.Equal(t, corev1.PullNever, obj.(*batchv1.Job).Spec.Template.Spec.Containers[0].ImagePullPolicy)
	}
	md, err := os.ReadFile(filepath.Join(res.out, report.ReportFile))
	require.NoError(t, err)
	title, rest, _ := strings.Cut(string(md), "\n\n")
	assert.Equal(t, "# fitgo benchmark (kind runner)", title)
	assert.True(t, strings.HasPrefix(rest, "**The node is emulated (qemu TCG)**: "), "the header, not a footnote:\n%s", md)
	bt, err := os.ReadFile(filepath.Join(res.out, report.BenchFile))
	require.NoError(t, err)
	assert.Contains(t, string(bt), "\nemulated: qemu TCG\n")

	f = newFakeCluster(t)
	f.outcome = func(p *corev1.Pod) outcome {
		return outcome{reason: "Completed", logs: recordedLog(t, "resize-"+strings.ReplaceAll(p.Labels[LabelVariant], "+", "-"))}
	}
	res = runWith(t, f, "-context=rig", "-image=localhost/fitgo/bench:v1", "-pull-policy=IfNotPresent", "-emulated=qemu TCG",
		"-scenario=resize", "-variants=fitgo", "-duration=12s", "-work-iters=1000")
	require.NoError(t, res.err, res.stderr)
	require.NotEmpty(t, f.created)
	for _, obj := range f.created {
		if p, ok := obj.(*corev1.Pod); ok {
			assert.Equal(t, corev1.PullIfNotPresent, p.Spec.Containers[0].ImagePullPolicy)
		}
	}
	md, err = os.ReadFile(filepath.Join(res.out, ResizeMD))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(md), "# fitgo in-place resize (kind runner)\n\n**The node is emulated (qemu TCG)**: "), "%s", md)
}

func TestParseFlagsExistingCluster(t *testing.T) {
	c, err := ParseFlags([]string{"-context=prod", "-image=r.example/x:1", "-namespace=perf", "-node-selector=pool=bench,kubernetes.io/arch=amd64"}, os.Stderr)
	require.NoError(t, err)
	assert.False(t, c.Kind())
	assert.Equal(t, "prod", c.Context())
	assert.Equal(t, "perf", c.Namespace())
	assert.Equal(t, map[string]string{"pool": "bench", "kubernetes.io/arch": "amd64"}, c.NodeSelector)
	assert.False(t, c.Build, "the cluster pulls the image")
	for _, args := range [][]string{
		{"-context=prod"}, // no image the cluster can pull
		{"-context=prod", "-image=r/x:1", "-cluster=other"},
		{"-context=prod", "-image=r/x:1", "-build"},
		{"-kubeconfig=/x"},
		{"-push"},
		{"-node-selector=pool"},
		{"-node-selector=bad key=x"},
		{"-namespace=Perf"},
		{"-provider=lxc"},
		{"-context=prod", "-image=r/x:1", "-pull-policy=Sometimes"},
	} {
		_, err := ParseFlags(args, &strings.Builder{})
		assert.Error(t, err, "%q", args)
	}
}

func TestNodeImageMinor(t *testing.T) {
	for ref, want := range map[string]int{
		"kindest/node:v1.34.3@sha256:abc": 34, "kindest/node:v1.35.0": 35, "localhost:5000/node:v1.29.1": 29,
	} {
		got, ok := nodeImageMinor(ref)
		assert.True(t, ok, ref)
		assert.Equal(t, want, got, ref)
	}
	for _, ref := range []string{"kindest/node", "localhost:5000/node", "kindest/node:latest"} {
		_, ok := nodeImageMinor(ref)
		assert.False(t, ok, ref)
	}
}
