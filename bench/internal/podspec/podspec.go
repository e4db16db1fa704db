// Package podspec builds the typed pieces of the pods that the benchmark's
// in-cluster runner (bench/internal/cluster) and the real-kubelet tests
// (bench/internal/kuberig) send to Kubernetes: quantities and limits, the
// downward API's environment, the in-place resize policy, and the Pod
// itself. The manifests are built from the k8s.io/api types, not written by
// hand, so that a misspelt field cannot compile.
package podspec

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CPU returns cores as a Kubernetes quantity, rounded to millicores: whole
// cores print as "1", fractions in millicores ("1500m").
func CPU(cores float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(cores*1000)), resource.DecimalSI)
}

// Memory returns bytes as a Kubernetes quantity: "512Mi" when a whole number
// of MiB (or Gi), else as the API server prints it ("1k", "5242881").
func Memory(b int64) resource.Quantity {
	return *resource.NewQuantity(b, resource.BinarySI)
}

// ResourceList returns cpu and memory, each when above 0 (a
// container's limits or requests).
func ResourceList(cpus float64, memBytes int64) corev1.ResourceList {
	lim := corev1.ResourceList{}
	if cpus > 0 {
		lim[corev1.ResourceCPU] = CPU(cpus)
	}
	if memBytes > 0 {
		lim[corev1.ResourceMemory] = Memory(memBytes)
	}
	return lim
}

// MemoryLimitVar is fitgo's explicit memory limit, which the pod-level
// layout sets from the downward API.
const MemoryLimitVar = "FITGO_MEMORY_LIMIT"

// MemoryLimitEnv is FITGO_MEMORY_LIMIT from the container's limits.memory in
// bytes: the README's recipe for a pod-level memory limit. Fixed when the
// container starts. An empty containerName is the container's own.
func MemoryLimitEnv(containerName string) corev1.EnvVar {
	return corev1.EnvVar{Name: MemoryLimitVar, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
		ContainerName: containerName, Resource: "limits.memory", Divisor: resource.MustParse("1"),
	}}}
}

// DownwardEnv is the downward-API recipe: GOMAXPROCS from limits.cpu (which
// the kubelet rounds up to whole cores) and GOMEMLIMIT from limits.memory in
// bytes. Both are fixed when the container starts.
func DownwardEnv(containerName string) []corev1.EnvVar {
	env := func(name, res string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: containerName, Resource: res, Divisor: resource.MustParse("1"),
		}}}
	}
	return []corev1.EnvVar{env("GOMAXPROCS", "limits.cpu"), env("GOMEMLIMIT", "limits.memory")}
}

// InPlace is a container's resize policy that resizes the resources in
// place, without a restart.
func InPlace(names ...corev1.ResourceName) []corev1.ContainerResizePolicy {
	p := make([]corev1.ContainerResizePolicy, len(names))
	for i, n := range names {
		p[i] = corev1.ContainerResizePolicy{ResourceName: n, RestartPolicy: corev1.NotRequired}
	}
	return p
}

// Pod returns a v1 Pod of meta and spec.
func Pod(meta metav1.ObjectMeta, spec corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta, Spec: spec}
}
