package manifests

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The directories whose manifests these tests validate, relative to this
// package.
const (
	examplesDir = "../../../examples/kubernetes"
	benchDir    = "../.." // bench/, for kind-cluster.yaml
)

// isKindConfig tells kind cluster configurations from Kubernetes manifests.
func isKindConfig(data []byte) bool {
	return strings.Contains(string(data), "apiVersion: kind.x-k8s.io/")
}

// TestEveryManifestDecodesStrictly decodes every YAML file in
// examples/kubernetes and bench/ (kind-cluster.yaml), so that a new or
// edited file cannot escape validation.
func TestEveryManifestDecodesStrictly(t *testing.T) {
	var files []string
	for _, dir := range []string{examplesDir, benchDir} {
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, err := filepath.Glob(filepath.Join(dir, pat))
			require.NoError(t, err)
			files = append(files, m...)
		}
	}
	require.GreaterOrEqual(t, len(files), 4, "found: %v", files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if isKindConfig(data) {
			c, err := KindCluster(data)
			if assert.NoError(t, err, f) {
				assert.NotEmpty(t, c.Nodes, "%s: nodes", f)
				for _, n := range c.Nodes {
					assert.Empty(t, c.FeatureGates, "%s: feature gates break the releases that removed them", f)
					assert.Contains(t, []string{"control-plane", "worker"}, string(n.Role), f)
				}
			}
			continue
		}
		_, err = DecodeAll(data)
		assert.NoError(t, err, f)
	}
}

// deployment reads the single Deployment in an example file; its program is
// the first container.
func deployment(t *testing.T, name string) (*appsv1.Deployment, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name))
	require.NoError(t, err)
	objs, err := DecodeAll(data)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	d, ok := objs[0].(*appsv1.Deployment)
	require.True(t, ok, "%s holds a %T", name, objs[0])
	// The selector must select the template, or the API server rejects it.
	for k, v := range d.Spec.Selector.MatchLabels {
		assert.Equal(t, v, d.Spec.Template.Labels[k], "%s: selector label %s", name, k)
	}
	require.NotEmpty(t, d.Spec.Template.Spec.Containers)
	return d, string(data)
}

func limits(t *testing.T, c corev1.Container) (cores float64, mem int64) {
	t.Helper()
	cpu, ok := c.Resources.Limits[corev1.ResourceCPU]
	require.True(t, ok, "container %s has no CPU limit", c.Name)
	m, ok := c.Resources.Limits[corev1.ResourceMemory]
	require.True(t, ok, "container %s has no memory limit", c.Name)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req := c.Resources.Requests[r]
		lim := c.Resources.Limits[r]
		assert.LessOrEqual(t, req.Cmp(lim), 0, "%s request above its limit", r)
	}
	return float64(cpu.MilliValue()) / 1000, m.Value()
}

func resizable(t *testing.T, c corev1.Container) {
	t.Helper()
	got := map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy{}
	for _, p := range c.ResizePolicy {
		got[p.ResourceName] = p.RestartPolicy
	}
	assert.Equal(t, map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy{
		corev1.ResourceCPU:    corev1.NotRequired,
		corev1.ResourceMemory: corev1.NotRequired,
	}, got, "both resources resize in place without a restart")
}

func hardened(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	for _, c := range spec.Containers {
		require.NotNil(t, c.SecurityContext, name)
		assert.Equal(t, false, *c.SecurityContext.AllowPrivilegeEscalation, name)
		assert.Equal(t, true, *c.SecurityContext.ReadOnlyRootFilesystem, name)
	}
	require.NotNil(t, spec.SecurityContext, name)
	assert.Equal(t, true, *spec.SecurityContext.RunAsNonRoot, name)
}

func TestFitgoDeployment(t *testing.T) {
	d, text := deployment(t, "deployment.yaml")
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	cores, mem := limits(t, c)
	resizable(t, c)
	hardened(t, "deployment.yaml", d.Spec.Template.Spec)
	for _, e := range c.Env {
		assert.NotContains(t, []string{"GOMAXPROCS", "GOMEMLIMIT"}, e.Name, "a variable would switch fitgo off for that knob")
	}
	assert.Equal(t, "fitgo-example:dev", c.Image, "the image README.md builds")
	assert.Contains(t, c.Args, "-every=10s", "the program logs periodically, so kubectl logs shows a resize")

	// The comment states what fitgo's defaults give for these limits.
	procs := max(int(math.Ceil(cores)), 1)
	assert.Contains(t, text, "("+c.Resources.Limits.Cpu().String()+" -> "+strconv.Itoa(procs)+")")
	assert.Contains(t, text, "("+c.Resources.Limits.Memory().String()+" -> "+strconv.FormatFloat(0.9*float64(mem)/(1<<20), 'f', 1, 64)+" MiB)")
}

func TestDownwardAPIDeployment(t *testing.T) {
	d, text := deployment(t, "downward-api.yaml")
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	cores, mem := limits(t, c) // without limits the variables get the node's allocatable
	resizable(t, c)
	hardened(t, "downward-api.yaml", d.Spec.Template.Spec)
	refs := map[string]*corev1.ResourceFieldSelector{}
	for _, e := range c.Env {
		require.NotNil(t, e.ValueFrom, e.Name)
		require.NotNil(t, e.ValueFrom.ResourceFieldRef, e.Name)
		refs[e.Name] = e.ValueFrom.ResourceFieldRef
	}
	require.Len(t, refs, 2)
	for name, want := range map[string]string{"GOMAXPROCS": "limits.cpu", "GOMEMLIMIT": "limits.memory"} {
		ref := refs[name]
		require.NotNil(t, ref, name)
		assert.Equal(t, want, ref.Resource, name)
		assert.Equal(t, c.Name, ref.ContainerName, "%s must name this container", name)
		assert.Equal(t, "1", ref.Divisor.String(), "%s: divisor 1 gives whole cores and bytes", name)
	}

	// The caveats in the comments match these limits: the kubelet rounds
	// limits.cpu up to whole cores and gives limits.memory in bytes.
	assert.Contains(t, text, c.Resources.Limits.Cpu().String()+" gives GOMAXPROCS="+strconv.Itoa(int(math.Ceil(cores))))
	assert.Contains(t, text, "500m gives "+strconv.Itoa(int(math.Ceil(0.5))))
	assert.Contains(t, text, "("+strconv.FormatInt(mem, 10)+" here)")

	// The same program and limits as the fitgo Deployment, so the two compare.
	f, _ := deployment(t, "deployment.yaml")
	fc := f.Spec.Template.Spec.Containers[0]
	assert.Equal(t, fc.Image, c.Image)
	assert.Equal(t, fc.Args, c.Args)
	assert.True(t, fc.Resources.Limits.Cpu().Equal(*c.Resources.Limits.Cpu()))
	assert.True(t, fc.Resources.Limits.Memory().Equal(*c.Resources.Limits.Memory()))
}

// TestPodLevelDeployment checks the pod-level recipe: the limits on the
// pod, none on the program's container, FITGO_MEMORY_LIMIT from its
// limits.memory in bytes and FITGO_CPU_LIMIT from its limits.cpu in
// millicores with an m (the pod's limits for a container without any),
// FITGO=reserve from the sidecar's own memory limit, and nothing that would
// switch fitgo off.
func TestPodLevelDeployment(t *testing.T) {
	d, text := deployment(t, "pod-level.yaml")
	spec := d.Spec.Template.Spec
	hardened(t, "pod-level.yaml", spec)
	require.NotNil(t, spec.Resources, "pod-level resources")
	mem, ok := spec.Resources.Limits[corev1.ResourceMemory]
	require.True(t, ok, "a pod-level memory limit")
	cpu, ok := spec.Resources.Limits[corev1.ResourceCPU]
	require.True(t, ok, "a pod-level CPU limit")
	for r, req := range spec.Resources.Requests {
		if l, ok := spec.Resources.Limits[r]; ok {
			assert.LessOrEqual(t, req.Cmp(l), 0, "%s request above its limit", r)
		}
	}
	require.Len(t, spec.Containers, 2, "the program and a sidecar")
	c, side := spec.Containers[0], spec.Containers[1]
	assert.Empty(t, c.Resources.Limits, "no limit of its own: limits.memory and limits.cpu are then the pod's")
	assert.Empty(t, c.Resources.Requests)
	_, sideMem := limits(t, side) // its own limits: else its limits.memory is the pod's
	for r, l := range side.Resources.Limits {
		assert.LessOrEqual(t, l.Cmp(spec.Resources.Limits[r]), 0, "the sidecar's %s limit within the pod's", r)
	}

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		assert.NotContains(t, []string{"GOMAXPROCS", "GOMEMLIMIT"}, e.Name, "a variable would switch fitgo off for that knob")
		env[e.Name] = e
	}
	require.Len(t, env, 5)
	ref := func(name, container, resource, divisor string) {
		e := env[name]
		require.NotNil(t, e.ValueFrom, name)
		r := e.ValueFrom.ResourceFieldRef
		require.NotNil(t, r, "%s: an environment variable, not a downward-API volume (which gives the node's allocatable)", name)
		assert.Equal(t, resource, r.Resource, name)
		assert.Equal(t, container, r.ContainerName, name)
		assert.Equal(t, divisor, r.Divisor.String(), name)
	}
	ref("FITGO_MEMORY_LIMIT", c.Name, "limits.memory", "1")
	ref("CPU_LIMIT_MILLICORES", c.Name, "limits.cpu", "1m")
	ref("SIDECAR_MEMORY_LIMIT", side.Name, "limits.memory", "1")
	// $(VAR) refers to a variable declared before it, or stays as it is.
	for name, value := range map[string]string{"FITGO_CPU_LIMIT": "$(CPU_LIMIT_MILLICORES)m", "FITGO": "reserve=$(SIDECAR_MEMORY_LIMIT)"} {
		assert.Equal(t, value, env[name].Value, name)
	}
	order := map[string]int{}
	for i, e := range c.Env {
		order[e.Name] = i
	}
	assert.Less(t, order["CPU_LIMIT_MILLICORES"], order["FITGO_CPU_LIMIT"])
	assert.Less(t, order["SIDECAR_MEMORY_LIMIT"], order["FITGO"])

	// The comment's numbers: the values the kubelet gives, and what fitgo's
	// defaults make of them.
	assert.Contains(t, text, "("+strconv.FormatInt(mem.Value(), 10)+" here)")
	assert.Contains(t, text, `reads "`+cpu.String()+`" here`)
	assert.Contains(t, text, "("+strconv.FormatInt(sideMem, 10)+" here)")
	assert.Contains(t, text, "("+cpu.String()+" -> "+strconv.Itoa(int(math.Ceil(float64(cpu.MilliValue())/1000)))+", rounded up)")
	sideQ := side.Resources.Limits.Memory()
	assert.Contains(t, text, "("+mem.String()+" - "+sideQ.String()+" -> "+
		strconv.FormatFloat(0.9*float64(mem.Value()-sideMem)/(1<<20), 'f', 1, 64)+" MiB)")

	// The same program as the other Deployments.
	f, _ := deployment(t, "deployment.yaml")
	fc := f.Spec.Template.Spec.Containers[0]
	for _, pc := range spec.Containers {
		assert.Equal(t, fc.Image, pc.Image)
	}
	assert.Equal(t, fc.Args, c.Args)
	assert.True(t, fc.Resources.Limits.Memory().Equal(mem), "the same memory limit as the fitgo Deployment's container, so the logs compare")
	assert.True(t, fc.Resources.Limits.Cpu().Equal(cpu), "the same CPU limit as the fitgo Deployment's container")
}
