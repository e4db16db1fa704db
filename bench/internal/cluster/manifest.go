package cluster

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fitgo/fitgo/bench/internal/podspec"
)

// ContainerName is the name of the workload's container in every manifest.
const ContainerName = "workload"

// SidecarContainerName is the sidecar's container in the pod-level layout,
// and SidecarPort the port it listens on once it holds its memory (its
// startup probe).
const (
	SidecarContainerName = "sidecar"
	SidecarPort          = 8642
)

// Sidecar is the shared scenario's sidecar next to a workload.
type Sidecar struct {
	// Layout is LayoutCoprocess (in the workload's container, started by
	// bench/cmd/coprocess) or LayoutPodLevel (a native sidecar container;
	// the limits are the pod's, the containers have none).
	Layout string
	// Bytes is the memory it holds, rounded up to whole MiB.
	Bytes int64
}

func (s Sidecar) mibArg() string { return "-mib=" + strconv.FormatInt((s.Bytes+(1<<20)-1)>>20, 10) }

// Labels on everything the runner creates.
const (
	LabelApp     = "app.kubernetes.io/name"
	LabelRunID   = "fitgo.dev/run-id"
	LabelVariant = "fitgo.dev/variant"
	AppName      = "fitgo-bench"
)

// Workload describes one workload container: which variant, with which
// limits and arguments.
type Workload struct {
	Name      string // object name (Job or Pod)
	Namespace string
	RunID     string
	Variant   string   // variant name, for the label
	Image     string   // image loaded into the cluster, or one it can pull
	Command   []string // the variant's binary in the image, and fixed arguments
	Args      []string // workload flags
	// PullPolicy is the container's imagePullPolicy; empty for IfNotPresent
	// (the image kind load put on the node).
	PullPolicy corev1.PullPolicy
	// NodeSelector restricts the nodes the pod may run on.
	NodeSelector map[string]string
	// CPUs and MemoryBytes are the container's limits (0: none).
	CPUs        float64
	MemoryBytes int64
	// DownwardEnv sets GOMAXPROCS and GOMEMLIMIT from the container's limits
	// through the downward API: the "env" variant.
	DownwardEnv bool
	// Env is more of the container's environment, as NAME=value (a
	// variant's FITGO or GOMAXPROCS setting).
	Env []string
	// Resizable makes the container resizable in place without a restart, and
	// requests a small fixed amount (at most the limits) instead of the
	// limits, so that a resize to larger limits is never infeasible on a
	// small node.
	Resizable bool
	// Deadline bounds the pod's run time (activeDeadlineSeconds); 0 for none.
	DeadlineSeconds int64
	// Sidecar, when set, runs the shared scenario's sidecar with the
	// workload, under the same memory limit.
	Sidecar *Sidecar
	// MemoryLimitEnv sets FITGO_MEMORY_LIMIT from the workload container's
	// limits.memory through the downward API (bytes): the README's recipe
	// for a pod-level limit, which fitgo cannot see from inside the
	// container's cgroup namespace. For a container without a limit of its
	// own the kubelet gives the pod's limit.
	MemoryLimitEnv bool
}

// podLevel reports whether the limits are the pod's, not the container's.
func (w Workload) podLevel() bool { return w.Sidecar != nil && w.Sidecar.Layout == LayoutPodLevel }

// Fixed requests of a resizable pod: it keeps Burstable QoS whatever its
// limits become, and always fits. A limit at or below them lowers the
// request to half the limit: a request may not exceed its limit, and one
// equal to it would make the pod Guaranteed, a QoS class a resize may not
// change.
var (
	resizableCPURequest    = resource.MustParse("100m")
	resizableMemoryRequest = resource.MustParse("64Mi")
)

// CPUQuantity formats cores as the API server does: "1", "1500m".
func CPUQuantity(cores float64) string {
	q := podspec.CPU(cores)
	return q.String()
}

// MemoryQuantity formats bytes as the API server does: "256Mi", "1Gi", "1000".
func MemoryQuantity(b int64) string {
	q := podspec.Memory(b)
	return q.String()
}

// Cores returns a CPU quantity in cores.
func Cores(q resource.Quantity) float64 { return float64(q.MilliValue()) / 1000 }

func ptr[T any](v T) *T { return &v }

// labels are the object's labels. A label value may not hold the "+" of
// automaxprocs+automemlimit: the variant label is its slug, and the
// annotation of the same name has the variant's name.
func (w Workload) labels() map[string]string {
	return map[string]string{LabelApp: AppName, LabelRunID: w.RunID, LabelVariant: slug(w.Variant)}
}

func (w Workload) annotations() map[string]string {
	return map[string]string{LabelVariant: w.Variant}
}

// Limits returns the container's limits: cpu and memory when set.
func (w Workload) Limits() corev1.ResourceList { return podspec.ResourceList(w.CPUs, w.MemoryBytes) }

// below returns the fixed request for the resource, or half its limit when
// the limit is not above it (no limit: the fixed request).
func below(lim corev1.ResourceList, name corev1.ResourceName, fixed resource.Quantity) resource.Quantity {
	l, ok := lim[name]
	if !ok || l.Cmp(fixed) > 0 {
		return fixed
	}
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(max(l.MilliValue()/2, 1), resource.DecimalSI)
	}
	return *resource.NewQuantity(l.Value()/2, resource.BinarySI)
}

func (w Workload) resources() corev1.ResourceRequirements {
	lim := w.Limits()
	if len(lim) == 0 {
		return corev1.ResourceRequirements{}
	}
	if w.Resizable {
		req := corev1.ResourceList{corev1.ResourceCPU: below(lim, corev1.ResourceCPU, resizableCPURequest)}
		if _, ok := lim[corev1.ResourceMemory]; ok {
			req[corev1.ResourceMemory] = below(lim, corev1.ResourceMemory, resizableMemoryRequest)
		}
		return corev1.ResourceRequirements{Limits: lim, Requests: req}
	}
	// Requests equal to the limits: a latency-sensitive service's usual
	// Guaranteed QoS (with both set), and the scheduler checks the node fits.
	return corev1.ResourceRequirements{Limits: lim, Requests: lim.DeepCopy()}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func (w Workload) podSpec() corev1.PodSpec {
	pull := w.PullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	c := corev1.Container{
		Name:            ContainerName,
		Image:           w.Image,
		ImagePullPolicy: pull,
		Command:         w.Command,
		Args:            w.Args,
		Resources:       w.resources(),
		SecurityContext: containerSecurity(),
	}
	var podResources *corev1.ResourceRequirements
	var initContainers []corev1.Container
	switch {
	case w.Sidecar != nil && w.Sidecar.Layout == LayoutCoprocess:
		c.Command = append([]string{path.Join(ImageDir, "coprocess"), "-sidecar=" + path.Join(ImageDir, "sidecar"), w.Sidecar.mibArg(), "--"}, w.Command...)
	case w.podLevel():
		r := w.resources()
		podResources = &r
		c.Resources = corev1.ResourceRequirements{}
		// A native sidecar (an init container that keeps running): the
		// kubelet starts the workload once its startup probe passes, that
		// is once it holds its memory, and stops it when the workload ends.
		initContainers = []corev1.Container{{
			Name:            SidecarContainerName,
			Image:           w.Image,
			ImagePullPolicy: pull,
			Command:         []string{path.Join(ImageDir, "sidecar"), w.Sidecar.mibArg(), "-listen=:" + strconv.Itoa(SidecarPort)},
			RestartPolicy:   ptr(corev1.ContainerRestartPolicyAlways),
			StartupProbe: &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(SidecarPort)}},
				PeriodSeconds:    1,
				FailureThreshold: 120,
			},
			SecurityContext: containerSecurity(),
		}}
	}
	if w.DownwardEnv {
		c.Env = podspec.DownwardEnv(ContainerName)
	}
	if w.MemoryLimitEnv {
		c.Env = append(c.Env, podspec.MemoryLimitEnv(ContainerName))
	}
	for _, kv := range w.Env {
		name, value, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
	if w.Resizable {
		c.ResizePolicy = podspec.InPlace(corev1.ResourceCPU, corev1.ResourceMemory)
	}
	s := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr(int64(5)),
		EnableServiceLinks:            ptr(false),
		AutomountServiceAccountToken:  ptr(false),
		NodeSelector:                  w.NodeSelector,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr(true),
			RunAsUser:      ptr(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: initContainers,
		Containers:     []corev1.Container{c},
		Resources:      podResources,
	}
	return s
}

// Job returns the Job that runs w once: no retry (an OOM kill is a result,
// not something to retry), a deadline, and the pod's limits.
func Job(w Workload) *batchv1.Job {
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.labels(), Annotations: w.annotations()},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: w.labels(), Annotations: w.annotations()},
				Spec:       w.podSpec(),
			},
		},
	}
	if w.DeadlineSeconds > 0 {
		j.Spec.ActiveDeadlineSeconds = ptr(w.DeadlineSeconds)
	}
	return j
}

// Pod returns a bare Pod that runs w once; the resize scenario uses it
// because the resize subresource is a pod's.
func Pod(w Workload) *corev1.Pod {
	p := podspec.Pod(metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.labels(), Annotations: w.annotations()}, w.podSpec())
	if w.DeadlineSeconds > 0 {
		p.Spec.ActiveDeadlineSeconds = ptr(w.DeadlineSeconds)
	}
	return p
}

// JobManifest returns Job(w) as JSON, for kubectl create -f -.
func JobManifest(w Workload) ([]byte, error) { return json.MarshalIndent(Job(w), "", "  ") }

// PodManifest returns Pod(w) as JSON, for kubectl create -f -.
func PodManifest(w Workload) ([]byte, error) { return json.MarshalIndent(Pod(w), "", "  ") }

// ResizePatch is the strategic-merge patch for the resize subresource that
// sets the workload container's CPU and memory limits (requests stay).
func ResizePatch(cpus float64, memBytes int64) ([]byte, error) {
	type container struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources"`
	}
	var patch struct {
		Spec struct {
			Containers []container `json:"containers"`
		} `json:"spec"`
	}
	w := Workload{CPUs: cpus, MemoryBytes: memBytes}
	patch.Spec.Containers = []container{{Name: ContainerName, Resources: corev1.ResourceRequirements{Limits: w.Limits()}}}
	return json.Marshal(patch)
}

// localImage reports whether ref names no registry (fitgo-bench:dev), which
// Podman stores as localhost/fitgo-bench:dev.
func localImage(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return !ok || !strings.ContainsAny(first, ".:") && first != "localhost"
}
