package kind

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The parts of "kubectl get … -o json" output the runner reads. Decoding is
// lenient (the API has many more fields); the tests feed these types with
// objects marshalled from k8s.io/api, so the JSON names are checked.

type podList struct {
	Items []podStatusObject `json:"items"`
}

type podStatusObject struct {
	Metadata struct {
		Name              string    `json:"name"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name      string    `json:"name"`
			Resources resources `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
	Status podStatus `json:"status"`
}

type podStatus struct {
	Phase             string            `json:"phase"`
	Reason            string            `json:"reason"`
	Message           string            `json:"message"`
	Conditions        []podCondition    `json:"conditions"`
	ContainerStatuses []containerStatus `json:"containerStatuses"`
}

type podCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	State        containerState `json:"state"`
	RestartCount int32          `json:"restartCount"`
	// Resources are the limits and requests in force in the running
	// container, as the kubelet reports them (they change after a resize).
	Resources *resources `json:"resources"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting"`
	Running *struct {
		StartedAt time.Time `json:"startedAt"`
	} `json:"running"`
	Terminated *struct {
		ExitCode   int32     `json:"exitCode"`
		Signal     int32     `json:"signal"`
		Reason     string    `json:"reason"`
		Message    string    `json:"message"`
		StartedAt  time.Time `json:"startedAt"`
		FinishedAt time.Time `json:"finishedAt"`
	} `json:"terminated"`
}

func decodePod(b []byte) (podStatusObject, error) {
	var p podStatusObject
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("decoding pod: %w", err)
	}
	return p, nil
}

func decodePods(b []byte) ([]podStatusObject, error) {
	var l podList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("decoding pod list: %w", err)
	}
	return l.Items, nil
}

// workload returns the status of the workload container, or nil before the
// kubelet reports it.
func (p podStatusObject) workload() *containerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func (p podStatusObject) condition(typ string) *podCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Done reports whether the pod has finished, successfully or not.
func (p podStatusObject) done() bool {
	return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed"
}

// stuckReasons are waiting reasons that will not resolve by waiting.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// stuck returns why the pod cannot make progress, or "".
func (p podStatusObject) stuck() string {
	if c := p.workload(); c != nil && c.State.Waiting != nil && stuckReasons[c.State.Waiting.Reason] {
		return strings.TrimSpace(c.State.Waiting.Reason + ": " + c.State.Waiting.Message)
	}
	if c := p.condition("PodScheduled"); c != nil && c.Status == "False" && c.Reason == "Unschedulable" {
		return "unschedulable: " + c.Message
	}
	return ""
}

// describe summarises the pod's state for progress and error messages.
func (p podStatusObject) describe() string {
	s := "phase " + p.Status.Phase
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
	if c := p.condition("PodScheduled"); c != nil && c.Status == "False" {
		s += ", not scheduled: " + c.Message
	}
	return s
}

type versionInfo struct {
	ServerVersion *struct {
		Major      string `json:"major"`
		Minor      string `json:"minor"`
		GitVersion string `json:"gitVersion"`
	} `json:"serverVersion"`
}

type nodeList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Capacity    map[string]string `json:"capacity"`
			Allocatable map[string]string `json:"allocatable"`
			NodeInfo    struct {
				KernelVersion           string `json:"kernelVersion"`
				OSImage                 string `json:"osImage"`
				ContainerRuntimeVersion string `json:"containerRuntimeVersion"`
				KubeletVersion          string `json:"kubeletVersion"`
				Architecture            string `json:"architecture"`
			} `json:"nodeInfo"`
		} `json:"status"`
	} `json:"items"`
}
