package kind

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fitgo/fitgo/bench/internal/k8stest"
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
	obj, err := k8stest.Decode(b)
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
	obj, err := k8stest.Decode(b)
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
	obj, err := k8stest.Decode(append([]byte(`{"apiVersion":"v1","kind":"Pod",`), b[1:]...))
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
