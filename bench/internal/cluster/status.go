package cluster

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/version"

	"github.com/fitgo/fitgo/bench/internal/podspec"
	"github.com/fitgo/fitgo/bench/internal/report"
)

// podState is a pod as "kubectl get pod -o json" shows it, with the
// runner's reading of its state.
type podState struct{ corev1.Pod }

func decodePod(b []byte) (podState, error) {
	var p podState
	if err := json.Unmarshal(b, &p.Pod); err != nil {
		return p, fmt.Errorf("decoding pod: %w", err)
	}
	return p, nil
}

func decodePods(b []byte) ([]podState, error) {
	var l corev1.PodList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("decoding pod list: %w", err)
	}
	out := make([]podState, len(l.Items))
	for i := range l.Items {
		out[i] = podState{l.Items[i]}
	}
	return out, nil
}

// workload returns the status of the workload container, or nil before the
// kubelet reports it.
func (p podState) workload() *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// sidecar returns the status of the pod-level layout's sidecar container
// (a native sidecar: an init container that keeps running), or nil.
func (p podState) sidecar() *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == SidecarContainerName {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func (p podState) condition(typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// done reports whether the pod has finished, successfully or not.
func (p podState) done() bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// imageReasons are waiting reasons of an image the node cannot get: every
// other run uses the same image, so they end the benchmark.
var imageReasons = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"ErrImageNeverPull": true,
	"InvalidImageName":  true,
}

// stuckReasons are the other waiting reasons that will not resolve by waiting.
var stuckReasons = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// stuck returns why the pod cannot make progress, or "", and whether the
// reason is the image (which every run shares).
func (p podState) stuck() (why string, image bool) {
	for _, c := range []*corev1.ContainerStatus{p.workload(), p.sidecar()} {
		if c != nil && c.State.Waiting != nil {
			r := c.State.Waiting.Reason
			if imageReasons[r] || stuckReasons[r] {
				why := strings.TrimSpace(r + ": " + c.State.Waiting.Message)
				if c.Name != ContainerName {
					why = "the " + c.Name + " container: " + why
				}
				return why, imageReasons[r]
			}
		}
	}
	if c := p.condition(corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		return "unschedulable: " + c.Message, false
	}
	return "", false
}

// describe summarises the pod's state for progress and error messages.
func (p podState) describe() string {
	s := "phase " + string(p.Status.Phase)
	if p.Status.Phase == "" {
		s = "not created yet"
	}
	if p.Status.Reason != "" {
		s += " (" + p.Status.Reason + ")"
	}
	if c := p.workload(); c != nil {
		switch {
		case c.State.Waiting != nil:
			s += ", container waiting: " + c.State.Waiting.Reason
		case c.State.Running != nil:
			s += ", container running"
		case c.State.Terminated != nil:
			s += fmt.Sprintf(", container terminated: %s, exit code %d", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		}
	}
	if c := p.condition(corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		s += ", not scheduled: " + c.Message
	}
	return s
}

// serverVersion decodes "kubectl version -o json".
func serverVersion(b []byte) (*version.Info, error) {
	var v struct {
		ServerVersion *version.Info `json:"serverVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ServerVersion == nil {
		return nil, fmt.Errorf("kubectl version: no server version in %q", strings.TrimSpace(string(b)))
	}
	return v.ServerVersion, nil
}

// podRequests is what a pod requests of its node, as the scheduler counts
// it: the larger of its containers' sum and its largest init container (or
// its pod-level requests), plus its overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	add := func(to corev1.ResourceList, l corev1.ResourceList) {
		for k, v := range l {
			q := to[k]
			q.Add(v)
			to[k] = q
		}
	}
	for _, c := range p.Spec.Containers {
		add(sum, c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sum, c.Resources.Requests) // a sidecar runs alongside
			continue
		}
		for k, v := range c.Resources.Requests {
			if q := sum[k]; v.Cmp(q) > 0 {
				sum[k] = v
			}
		}
	}
	if p.Spec.Resources != nil {
		// Pod-level requests are what the scheduler counts for the
		// resources they name.
		for k, v := range p.Spec.Resources.Requests {
			sum[k] = v
		}
	}
	add(sum, p.Spec.Overhead)
	return sum
}

// nodeFree is one node the workload may run on, with what the pods already
// on it leave free.
type nodeFree struct {
	node      *corev1.Node
	allocCPU  resource.Quantity
	allocMem  resource.Quantity
	freeCPU   resource.Quantity
	freeMem   resource.Quantity
	requested corev1.ResourceList
}

// eligible reports whether the runner's pods can be scheduled on n: it is
// schedulable, Ready, has no NoSchedule or NoExecute taint (the pods have no
// tolerations, so a kind control plane with its taint is out) and matches the
// node selector. It returns why not.
func eligible(n *corev1.Node, selector map[string]string) (bool, string) {
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false, "taint " + t.ToString()
		}
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return false, "not Ready"
	}
	if len(selector) > 0 && !labels.SelectorFromSet(selector).Matches(labels.Set(n.Labels)) {
		return false, "does not match the node selector"
	}
	return true, ""
}

// freeOn returns what the non-terminated pods leave of n's allocatable CPU
// and memory.
func freeOn(n *corev1.Node, pods []corev1.Pod) nodeFree {
	f := nodeFree{node: n, requested: corev1.ResourceList{}}
	f.allocCPU = n.Status.Allocatable[corev1.ResourceCPU]
	f.allocMem = n.Status.Allocatable[corev1.ResourceMemory]
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for k, v := range podRequests(p) {
			q := f.requested[k]
			q.Add(v)
			f.requested[k] = q
		}
	}
	f.freeCPU = f.allocCPU.DeepCopy()
	f.freeCPU.Sub(f.requested[corev1.ResourceCPU])
	f.freeMem = f.allocMem.DeepCopy()
	f.freeMem.Sub(f.requested[corev1.ResourceMemory])
	return f
}

// fits returns "" when a pod requesting cpus and mem fits in f, else why not.
func (f nodeFree) fits(cpus float64, mem int64) string {
	if cpu := podspec.CPU(cpus); cpus > 0 && cpu.Cmp(f.freeCPU) > 0 {
		return fmt.Sprintf("the node %s has %v CPUs allocatable, %v of them requested by the pods already on it (%v free), and the pods request their limits",
			f.node.Name, Cores(f.allocCPU), Cores(f.requested[corev1.ResourceCPU]), Cores(f.freeCPU))
	}
	if m := podspec.Memory(mem); mem > 0 && m.Cmp(f.freeMem) > 0 {
		reqMem := f.requested[corev1.ResourceMemory]
		return fmt.Sprintf("the node %s has %s allocatable, %s of it requested by the pods already on it (%s free), and the pods request their limits",
			f.node.Name, report.MiB(float64(f.allocMem.Value())), report.MiB(float64(reqMem.Value())), report.MiB(float64(f.freeMem.Value())))
	}
	return ""
}
