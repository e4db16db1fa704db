package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fitgo/fitgo/bench/internal/manifests"
	"github.com/fitgo/fitgo/bench/internal/variant"
)

func testWorkload(v string, cpus float64, mem int64) Workload {
	vr, _ := variant.Lookup(v)
	return Workload{
		Name: "w", Namespace: "ns", RunID: "r1", Variant: vr.Name, Image: "fitgo-bench:dev",
		Command: []string{"/bench/" + vr.Binary()}, Args: []string{"-duration=5s"},
		CPUs: cpus, MemoryBytes: mem, DownwardEnv: vr.DownwardAPI, DeadlineSeconds: 600,
	}
}

func decodeJob(t *testing.T, w Workload) *batchv1.Job {
	t.Helper()
	b, err := JobManifest(w)
	require.NoError(t, err)
	obj, err := manifests.Decode(b)
	require.NoError(t, err, "%s", b)
	j, ok := obj.(*batchv1.Job)
	require.True(t, ok, "%T", obj)
	return j
}

func TestJobManifest(t *testing.T) {
	j := decodeJob(t, testWorkload("fitgo", 1.5, 256<<20))
	assert.Equal(t, "w", j.Name)
	assert.Equal(t, "ns", j.Namespace)
	assert.Equal(t, int32(0), *j.Spec.BackoffLimit, "an OOM kill is a result, not retried")
	assert.Equal(t, int64(600), *j.Spec.ActiveDeadlineSeconds)
	spec := j.Spec.Template.Spec
	assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, ContainerName, c.Name)
	assert.Equal(t, []string{"/bench/fitgo"}, c.Command)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, "the image is loaded with kind load, never pulled")
	assert.Empty(t, c.Env)
	assert.Empty(t, c.ResizePolicy)
	// CPU limit 1.5 cores is a CFS quota of 150 ms per 100 ms period.
	assert.True(t, resource.MustParse("1500m").Equal(c.Resources.Limits[corev1.ResourceCPU]))
	assert.True(t, resource.MustParse("256Mi").Equal(c.Resources.Limits[corev1.ResourceMemory]))
	assert.Equal(t, c.Resources.Limits, c.Resources.Requests, "Guaranteed QoS: requests equal limits")
	assert.Equal(t, map[string]string{LabelApp: AppName, LabelRunID: "r1", LabelVariant: "fitgo"}, j.Spec.Template.Labels)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot)
}

func TestJobManifestWithoutLimits(t *testing.T) {
	c := decodeJob(t, testWorkload("untuned", 0, 0)).Spec.Template.Spec.Containers[0]
	assert.Empty(t, c.Resources.Limits)
	assert.Empty(t, c.Resources.Requests)
	c = decodeJob(t, testWorkload("untuned", 0, 300<<20)).Spec.Template.Spec.Containers[0]
	assert.Equal(t, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("300Mi")}, c.Resources.Limits)
}

func TestJobManifestDownwardEnv(t *testing.T) {
	c := decodeJob(t, testWorkload("env", 0.5, 128<<20)).Spec.Template.Spec.Containers[0]
	require.Len(t, c.Env, 2)
	for i, want := range []struct{ name, resource string }{{"GOMAXPROCS", "limits.cpu"}, {"GOMEMLIMIT", "limits.memory"}} {
		e := c.Env[i]
		assert.Equal(t, want.name, e.Name)
		require.NotNil(t, e.ValueFrom)
		require.NotNil(t, e.ValueFrom.ResourceFieldRef)
		assert.Equal(t, ContainerName, e.ValueFrom.ResourceFieldRef.ContainerName)
		assert.Equal(t, want.resource, e.ValueFrom.ResourceFieldRef.Resource)
		assert.True(t, resource.MustParse("1").Equal(e.ValueFrom.ResourceFieldRef.Divisor), "whole cores and bytes")
	}
	assert.Equal(t, []string{"/bench/env"}, c.Command)
}

// TestJobManifestVariantEnv: a variant's own environment (a rounding rule, a
// static GOMAXPROCS) reaches the container.
func TestJobManifestVariantEnv(t *testing.T) {
	w := testWorkload("fitgo-floor", 1.5, 0)
	w.Env = []string{"FITGO=rounding=floor", "GOMAXPROCS=2"}
	c := decodeJob(t, w).Spec.Template.Spec.Containers[0]
	assert.Equal(t, []corev1.EnvVar{{Name: "FITGO", Value: "rounding=floor"}, {Name: "GOMAXPROCS", Value: "2"}}, c.Env)
}

func TestPodManifestResizable(t *testing.T) {
	w := testWorkload("fitgo", 1, 256<<20)
	w.Resizable = true
	b, err := PodManifest(w)
	require.NoError(t, err)
	obj, err := manifests.Decode(b)
	require.NoError(t, err)
	p, ok := obj.(*corev1.Pod)
	require.True(t, ok)
	assert.Equal(t, int64(600), *p.Spec.ActiveDeadlineSeconds)
	c := p.Spec.Containers[0]
	assert.ElementsMatch(t, []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
	}, c.ResizePolicy)
	// Small fixed requests, so that a resize to larger limits always fits the
	// node and keeps the QoS class (Burstable), which a resize cannot change.
	assert.True(t, resizableCPURequest.Equal(c.Resources.Requests[corev1.ResourceCPU]))
	assert.True(t, resizableMemoryRequest.Equal(c.Resources.Requests[corev1.ResourceMemory]))
	assert.True(t, resource.MustParse("1").Equal(c.Resources.Limits[corev1.ResourceCPU]))
}

func TestResizePatch(t *testing.T) {
	b, err := ResizePatch(3, 512<<20)
	require.NoError(t, err)
	assert.JSONEq(t, `{"spec":{"containers":[{"name":"workload","resources":{"limits":{"cpu":"3","memory":"512Mi"}}}]}}`, string(b))
	// The patch is a valid partial Pod.
	obj, err := manifests.Decode(append([]byte(`{"apiVersion":"v1","kind":"Pod",`), b[1:]...))
	require.NoError(t, err)
	assert.Equal(t, "workload", obj.(*corev1.Pod).Spec.Containers[0].Name)
}

func TestQuantities(t *testing.T) {
	for in, want := range map[float64]string{0.5: "500m", 1: "1", 1.5: "1500m", 2: "2", 0.01: "10m", 0.333: "333m"} {
		assert.Equal(t, want, CPUQuantity(in), "%v", in)
		q := resource.MustParse(want)
		assert.InDelta(t, in, float64(q.MilliValue())/1000, 1e-9, "Kubernetes reads %s back", want)
	}
	for in, want := range map[int64]string{256 << 20: "256Mi", 1 << 30: "1Gi", 3 << 30: "3Gi", 1536 << 20: "1536Mi", 1000: "1k", 5<<20 + 1: "5242881"} {
		assert.Equal(t, want, MemoryQuantity(in))
		q := resource.MustParse(want)
		assert.Equal(t, in, q.Value())
	}
}

func sharedWorkload(v, layout string) Workload {
	w := testWorkload(v, 0, 512<<20)
	w.Sidecar = &Sidecar{Layout: layout, Bytes: 200 << 20}
	return w
}

// TestJobManifestCoprocess: one container, its memory limit, and the
// launcher in front of the variant's command.
func TestJobManifestCoprocess(t *testing.T) {
	spec := decodeJob(t, sharedWorkload("fitgo", LayoutCoprocess)).Spec.Template.Spec
	assert.Nil(t, spec.Resources, "the container's limit")
	assert.Empty(t, spec.InitContainers)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, []string{"/bench/coprocess", "-sidecar=/bench/sidecar", "-mib=200", "--", "/bench/fitgo"}, c.Command)
	assert.Equal(t, []string{"-duration=5s"}, c.Args)
	assert.True(t, resource.MustParse("512Mi").Equal(c.Resources.Limits[corev1.ResourceMemory]))
	assert.Equal(t, c.Resources.Limits, c.Resources.Requests)
	assert.Empty(t, c.Env, "fitgo sees the container's limit and the sidecar under it")
}

// TestJobManifestPodLevel: the limit on the pod, none on the two
// containers, the sidecar a native sidecar that is started first and probed,
// and FITGO_MEMORY_LIMIT from the downward API for fitgo.
func TestJobManifestPodLevel(t *testing.T) {
	spec := decodeJob(t, func() Workload {
		w := sharedWorkload("fitgo", LayoutPodLevel)
		w.MemoryLimitEnv = true
		return w
	}()).Spec.Template.Spec
	require.NotNil(t, spec.Resources)
	assert.Equal(t, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}, spec.Resources.Limits)
	assert.Equal(t, spec.Resources.Limits, spec.Resources.Requests)

	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Empty(t, c.Resources.Limits, "no limit of its own: the pod's")
	assert.Empty(t, c.Resources.Requests)
	assert.Equal(t, []string{"/bench/fitgo"}, c.Command)
	require.Len(t, c.Env, 1)
	e := c.Env[0]
	assert.Equal(t, "FITGO_MEMORY_LIMIT", e.Name)
	require.NotNil(t, e.ValueFrom)
	require.NotNil(t, e.ValueFrom.ResourceFieldRef)
	assert.Equal(t, corev1.ResourceFieldSelector{ContainerName: ContainerName, Resource: "limits.memory", Divisor: resource.MustParse("1")}, *e.ValueFrom.ResourceFieldRef,
		"bytes, and the pod's limit for a container without one")

	require.Len(t, spec.InitContainers, 1)
	s := spec.InitContainers[0]
	assert.Equal(t, SidecarContainerName, s.Name)
	require.NotNil(t, s.RestartPolicy)
	assert.Equal(t, corev1.ContainerRestartPolicyAlways, *s.RestartPolicy, "a native sidecar: it runs alongside and is stopped when the workload ends")
	assert.Equal(t, []string{"/bench/sidecar", "-mib=200", "-listen=:8642"}, s.Command)
	assert.Empty(t, s.Resources.Limits)
	require.NotNil(t, s.StartupProbe)
	require.NotNil(t, s.StartupProbe.TCPSocket, "no shell in the image: a TCP probe")
	assert.Equal(t, int32(SidecarPort), s.StartupProbe.TCPSocket.Port.IntVal)
	assert.True(t, *s.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, c.Image, s.Image)

	// The env variant's recipe: GOMEMLIMIT from limits.memory, the pod's.
	c = decodeJob(t, sharedWorkload("env", LayoutPodLevel)).Spec.Template.Spec.Containers[0]
	require.Len(t, c.Env, 2)
	assert.Equal(t, "GOMEMLIMIT", c.Env[1].Name)
	assert.Empty(t, c.Resources.Limits)
}

func TestSidecarMiB(t *testing.T) {
	assert.Equal(t, "-mib=200", Sidecar{Bytes: 200 << 20}.mibArg())
	assert.Equal(t, "-mib=2", Sidecar{Bytes: 1<<20 + 1}.mibArg(), "rounded up")
}

// TestPodRequests: what the scheduler counts of the runner's own pods, and
// of others' pods with pod-level resources on a node the runner checks.
func TestPodRequests(t *testing.T) {
	for _, layout := range []string{LayoutCoprocess, LayoutPodLevel} {
		p := Pod(sharedWorkload("fitgo", layout))
		got := podRequests(p)
		assert.True(t, resource.MustParse("512Mi").Equal(got[corev1.ResourceMemory]), "%s: %v", layout, got)
		_, cpu := got[corev1.ResourceCPU]
		assert.False(t, cpu, layout)
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
	}}
	got := podRequests(p)
	assert.True(t, resource.MustParse("2").Equal(got[corev1.ResourceCPU]), "the pod's CPU request, not its container's")
	assert.True(t, resource.MustParse("1Gi").Equal(got[corev1.ResourceMemory]), "the containers' memory: the pod names none")
}
