package podspec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestResourceList(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		mem  int64
		want string
	}{
		{1.5, 512 << 20, `{"cpu":"1500m","memory":"512Mi"}`},
		{2, 1 << 30, `{"cpu":"2","memory":"1Gi"}`},
		{0.1, 128 << 20, `{"cpu":"100m","memory":"128Mi"}`},
		{0.0004, 5<<20 + 1, `{"cpu":"0","memory":"5242881"}`},
		{0, 768 << 20, `{"memory":"768Mi"}`},
		{0.25, 0, `{"cpu":"250m"}`},
		{0, 0, `{}`},
	} {
		assert.Equal(t, tc.want, marshal(t, ResourceList(tc.cpus, tc.mem)), "%v %v", tc.cpus, tc.mem)
	}
}

func TestEnv(t *testing.T) {
	assert.Equal(t, `{"name":"FITGO_MEMORY_LIMIT","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"1"}}}`,
		marshal(t, MemoryLimitEnv("")), "no containerName: the container's own")
	assert.Equal(t, `[{"name":"GOMAXPROCS","valueFrom":{"resourceFieldRef":{"containerName":"env","resource":"limits.cpu","divisor":"1"}}},`+
		`{"name":"GOMEMLIMIT","valueFrom":{"resourceFieldRef":{"containerName":"env","resource":"limits.memory","divisor":"1"}}}]`,
		marshal(t, DownwardEnv("env")))
}

func TestInPlace(t *testing.T) {
	assert.Equal(t, `[{"resourceName":"memory","restartPolicy":"NotRequired"}]`, marshal(t, InPlace(corev1.ResourceMemory)))
	assert.Equal(t, `[{"resourceName":"cpu","restartPolicy":"NotRequired"},{"resourceName":"memory","restartPolicy":"NotRequired"}]`,
		marshal(t, InPlace(corev1.ResourceCPU, corev1.ResourceMemory)))
}

func TestPod(t *testing.T) {
	p := Pod(metav1.ObjectMeta{Name: "p"}, corev1.PodSpec{NodeName: "n"})
	assert.Equal(t, "v1", p.APIVersion)
	assert.Equal(t, "Pod", p.Kind)
	assert.Equal(t, "p", p.Name)
	assert.Equal(t, "n", p.Spec.NodeName)
}
