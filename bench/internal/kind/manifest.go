package kind

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The manifests the runner creates, as the subset of the Kubernetes API they
// use. The package does not import k8s.io/api (it would make the harness's
// binary much larger and slower to build); its tests decode every generated
// manifest strictly into the k8s.io/api types, so a wrong field name fails.

type objectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type job struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       jobSpec    `json:"spec"`
}

type jobSpec struct {
	BackoffLimit          *int32      `json:"backoffLimit"`
	ActiveDeadlineSeconds *int64      `json:"activeDeadlineSeconds,omitempty"`
	Template              podTemplate `json:"template"`
}

type podTemplate struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

type pod struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       podSpec    `json:"spec"`
}

type podSpec struct {
	RestartPolicy                 string              `json:"restartPolicy"`
	TerminationGracePeriodSeconds *int64              `json:"terminationGracePeriodSeconds,omitempty"`
	ActiveDeadlineSeconds         *int64              `json:"activeDeadlineSeconds,omitempty"`
	EnableServiceLinks            *bool               `json:"enableServiceLinks,omitempty"`
	AutomountServiceAccountToken  *bool               `json:"automountServiceAccountToken,omitempty"`
	SecurityContext               *podSecurityContext `json:"securityContext,omitempty"`
	Containers                    []container         `json:"containers"`
}

type podSecurityContext struct {
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	SeccompProfile *seccompProfile `json:"seccompProfile,omitempty"`
}

type seccompProfile struct {
	Type string `json:"type"`
}

type container struct {
	Name            string             `json:"name"`
	Image           string             `json:"image"`
	ImagePullPolicy string             `json:"imagePullPolicy,omitempty"`
	Command         []string           `json:"command,omitempty"`
	Args            []string           `json:"args,omitempty"`
	Env             []envVar           `json:"env,omitempty"`
	Resources       resources          `json:"resources"`
	ResizePolicy    []resizePolicy     `json:"resizePolicy,omitempty"`
	SecurityContext *containerSecurity `json:"securityContext,omitempty"`
}

type containerSecurity struct {
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	Capabilities             *capabilities `json:"capabilities,omitempty"`
}

type capabilities struct {
	Drop []string `json:"drop,omitempty"`
}

type envVar struct {
	Name      string     `json:"name"`
	Value     string     `json:"value,omitempty"`
	ValueFrom *envSource `json:"valueFrom,omitempty"`
}

type envSource struct {
	ResourceFieldRef *resourceFieldRef `json:"resourceFieldRef,omitempty"`
}

type resourceFieldRef struct {
	ContainerName string `json:"containerName,omitempty"`
	Resource      string `json:"resource"`
	Divisor       string `json:"divisor,omitempty"`
}

type resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type resizePolicy struct {
	ResourceName  string `json:"resourceName"`
	RestartPolicy string `json:"restartPolicy"`
}

// ContainerName is the name of the workload's container in every manifest.
const ContainerName = "workload"

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
	Image     string   // image loaded into the cluster
	Command   []string // the variant's binary in the image, and fixed arguments
	Args      []string // workload flags
	// CPUs and MemoryBytes are the container's limits (0: none).
	CPUs        float64
	MemoryBytes int64
	// DownwardEnv sets GOMAXPROCS and GOMEMLIMIT from the container's limits
	// through the downward API: the "env" variant.
	DownwardEnv bool
	// Env is more of the container's environment, as NAME=value.
	Env []string
	// Resizable makes the container resizable in place without a restart, and
	// requests a small fixed amount instead of the limits, so that a resize to
	// larger limits is never infeasible on a small node.
	Resizable bool
	// Deadline bounds the pod's run time (activeDeadlineSeconds); 0 for none.
	DeadlineSeconds int64
}

// Fixed requests of a resizable pod: it keeps Burstable QoS whatever its
// limits become, and always fits.
const (
	resizableCPURequest    = "100m"
	resizableMemoryRequest = "64Mi"
)

// CPUQuantity formats cores as a Kubernetes quantity: whole cores as "1",
// fractions in millicores ("1500m").
func CPUQuantity(cores float64) string {
	milli := int64(math.Round(cores * 1000))
	if milli%1000 == 0 {
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatInt(milli, 10) + "m"
}

// MemoryQuantity formats bytes as a Kubernetes quantity: "512Mi" when a whole
// number of MiB (or Gi), else plain bytes.
func MemoryQuantity(b int64) string {
	switch {
	case b > 0 && b%(1<<30) == 0:
		return strconv.FormatInt(b>>30, 10) + "Gi"
	case b > 0 && b%(1<<20) == 0:
		return strconv.FormatInt(b>>20, 10) + "Mi"
	}
	return strconv.FormatInt(b, 10)
}

func ptr[T any](v T) *T { return &v }

func (w Workload) labels() map[string]string {
	return map[string]string{LabelApp: AppName, LabelRunID: w.RunID, LabelVariant: w.Variant}
}

func (w Workload) resources() resources {
	lim := map[string]string{}
	if w.CPUs > 0 {
		lim["cpu"] = CPUQuantity(w.CPUs)
	}
	if w.MemoryBytes > 0 {
		lim["memory"] = MemoryQuantity(w.MemoryBytes)
	}
	if len(lim) == 0 {
		return resources{}
	}
	if w.Resizable {
		req := map[string]string{"cpu": resizableCPURequest}
		if w.MemoryBytes > 0 {
			req["memory"] = resizableMemoryRequest
		}
		return resources{Limits: lim, Requests: req}
	}
	// Requests equal to the limits: a latency-sensitive service's usual
	// Guaranteed QoS (with both set), and the scheduler checks the node fits.
	req := map[string]string{}
	for k, v := range lim {
		req[k] = v
	}
	return resources{Limits: lim, Requests: req}
}

func (w Workload) podSpec(restart string) podSpec {
	c := container{
		Name:            ContainerName,
		Image:           w.Image,
		ImagePullPolicy: "IfNotPresent",
		Command:         w.Command,
		Args:            w.Args,
		Resources:       w.resources(),
		SecurityContext: &containerSecurity{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &capabilities{Drop: []string{"ALL"}},
		},
	}
	if w.DownwardEnv {
		c.Env = DownwardEnv(ContainerName)
	}
	for _, kv := range w.Env {
		name, value, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, envVar{Name: name, Value: value})
	}
	if w.Resizable {
		c.ResizePolicy = []resizePolicy{
			{ResourceName: "cpu", RestartPolicy: "NotRequired"},
			{ResourceName: "memory", RestartPolicy: "NotRequired"},
		}
	}
	s := podSpec{
		RestartPolicy:                 restart,
		TerminationGracePeriodSeconds: ptr(int64(5)),
		EnableServiceLinks:            ptr(false),
		AutomountServiceAccountToken:  ptr(false),
		SecurityContext: &podSecurityContext{
			RunAsNonRoot:   ptr(true),
			RunAsUser:      ptr(int64(65532)),
			SeccompProfile: &seccompProfile{Type: "RuntimeDefault"},
		},
		Containers: []container{c},
	}
	return s
}

// DownwardEnv is the downward-API recipe: GOMAXPROCS from limits.cpu (which
// the kubelet rounds up to whole cores) and GOMEMLIMIT from limits.memory in
// bytes. Both are fixed when the container starts.
func DownwardEnv(containerName string) []envVar {
	return []envVar{
		{Name: "GOMAXPROCS", ValueFrom: &envSource{ResourceFieldRef: &resourceFieldRef{ContainerName: containerName, Resource: "limits.cpu", Divisor: "1"}}},
		{Name: "GOMEMLIMIT", ValueFrom: &envSource{ResourceFieldRef: &resourceFieldRef{ContainerName: containerName, Resource: "limits.memory", Divisor: "1"}}},
	}
}

// JobManifest returns the Job that runs w once: no retry (an OOM kill is a
// result, not something to retry), a deadline, and the pod's limits.
func JobManifest(w Workload) ([]byte, error) {
	j := job{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata:   objectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.labels()},
		Spec: jobSpec{
			BackoffLimit: ptr(int32(0)),
			Template: podTemplate{
				Metadata: objectMeta{Labels: w.labels()},
				Spec:     w.podSpec("Never"),
			},
		},
	}
	if w.DeadlineSeconds > 0 {
		j.Spec.ActiveDeadlineSeconds = ptr(w.DeadlineSeconds)
	}
	return json.MarshalIndent(j, "", "  ")
}

// PodManifest returns a bare Pod that runs w once; the resize scenario uses it
// because the resize subresource is a pod's.
func PodManifest(w Workload) ([]byte, error) {
	p := pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata:   objectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.labels()},
		Spec:       w.podSpec("Never"),
	}
	if w.DeadlineSeconds > 0 {
		p.Spec.ActiveDeadlineSeconds = ptr(w.DeadlineSeconds)
	}
	return json.MarshalIndent(p, "", "  ")
}

// ResizePatch is the strategic-merge patch for the resize subresource that
// sets the workload container's CPU and memory limits (requests stay).
func ResizePatch(cpus float64, memBytes int64) ([]byte, error) {
	lim := map[string]string{}
	if cpus > 0 {
		lim["cpu"] = CPUQuantity(cpus)
	}
	if memBytes > 0 {
		lim["memory"] = MemoryQuantity(memBytes)
	}
	patch := map[string]any{
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"name":      ContainerName,
				"resources": map[string]any{"limits": lim},
			}},
		},
	}
	return json.Marshal(patch)
}
