package kind

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/fitgo/fitgo/bench/internal/k8stest"
)

// fakeCluster plays docker, kind and kubectl for the runner. Every manifest
// the runner creates is decoded strictly into the k8s.io/api types, and every
// status it reads is marshalled from them. Pods move one step per poll:
// Pending, Running, then their outcome.
type fakeCluster struct {
	t *testing.T

	mu          sync.Mutex
	now         time.Time
	clusters    []string
	minor       string // server minor version
	clientMinor string // kubectl's minor version
	allocCPU    string
	calls       []string
	pods        map[string]*fakePod // by pod name
	byJob       map[string]string   // job name -> pod name
	created     []any               // every object created, decoded strictly

	// outcome decides how each workload pod ends; nil: success with the
	// variant's recorded log.
	outcome func(p *corev1.Pod) outcome
	// fail makes the command whose String() has this prefix fail.
	fail map[string]error
}

type outcome struct {
	exitCode int32
	reason   string // termination reason: Completed, Error, OOMKilled
	logs     []byte
	waiting  string // a waiting reason the pod never leaves (stuck)
	never    bool   // the pod stays Pending and unscheduled reasons are absent
	forever  bool   // the pod keeps running
}

type fakePod struct {
	pod       *corev1.Pod
	polls     int
	out       outcome
	started   time.Time
	patched   corev1.ResourceList // limits after a resize
	sincePatc int
}

func newFakeCluster(t *testing.T) *fakeCluster {
	return &fakeCluster{
		t:           t,
		now:         time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		minor:       "35",
		clientMinor: "35",
		allocCPU:    "8",
		pods:        map[string]*fakePod{},
		byJob:       map[string]string{},
		fail:        map[string]error{},
	}
}

func (f *fakeCluster) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeCluster) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeCluster) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// testdata is the absolute path of testdata/, for tests that change directory.
var testdata, _ = filepath.Abs("testdata")

// recordedLog returns testdata/logs/<name>.log.
func recordedLog(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "logs", name+".log"))
	if err != nil {
		t.Fatalf("recorded log: %v (record with testdata/record.sh)", err)
	}
	return b
}

func (f *fakeCluster) Run(ctx context.Context, c Cmd) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := c.String()
	if c.Dir != "" {
		call = "(cd " + shellQuote(c.Dir) + ") " + call
	}
	if c.Stdin != nil {
		obj, err := k8stest.Decode(c.Stdin)
		if err != nil {
			f.t.Errorf("%s: the manifest does not decode strictly: %v\n%s", call, err, c.Stdin)
			return nil, err
		}
		f.created = append(f.created, obj)
		switch o := obj.(type) {
		case *batchv1.Job:
			call += " <<< Job " + o.Name
		case *corev1.Pod:
			call += " <<< Pod " + o.Name
		}
	}
	f.calls = append(f.calls, call)
	for prefix, err := range f.fail {
		if strings.HasPrefix(call, prefix) {
			return nil, err
		}
	}
	args := c.Args
	switch c.Name {
	case "kind":
		return f.kind(args)
	case "docker":
		if args[0] == "info" {
			return []byte("2 systemd\n"), nil
		}
		return nil, nil
	case "kubectl":
		if len(args) >= 2 && args[0] == "--context" {
			args = args[2:]
		}
		if len(args) >= 2 && args[0] == "-n" {
			args = args[2:]
		}
		return f.kubectl(args, c.Stdin)
	}
	return nil, fmt.Errorf("fake: unknown command %s", call)
}

func (f *fakeCluster) kind(args []string) ([]byte, error) {
	switch strings.Join(args[:min(2, len(args))], " ") {
	case "version":
		return []byte("kind v0.33.0 go1.26.8 linux/amd64\n"), nil
	case "get clusters":
		if len(f.clusters) == 0 {
			return nil, nil // kind prints "No kind clusters found." on stderr
		}
		return []byte(strings.Join(f.clusters, "\n") + "\n"), nil
	case "create cluster":
		f.clusters = append(f.clusters, args[3])
		return nil, nil
	case "delete cluster":
		f.clusters = slices.DeleteFunc(f.clusters, func(s string) bool { return s == args[3] })
		return nil, nil
	case "load docker-image":
		return nil, nil
	}
	return nil, fmt.Errorf("fake kind: %q", args)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fakeCluster) kubectl(args []string, stdin []byte) ([]byte, error) {
	switch {
	case strings.Join(args, " ") == "version --client -o json":
		return mustJSON(f.t, map[string]any{"clientVersion": version.Info{Major: "1", Minor: f.clientMinor, GitVersion: "v1." + f.clientMinor + ".4"}}), nil
	case args[0] == "version":
		return mustJSON(f.t, map[string]any{
			"clientVersion": version.Info{Major: "1", Minor: "35", GitVersion: "v1.35.8"},
			"serverVersion": version.Info{Major: "1", Minor: f.minor, GitVersion: "v1." + f.minor + ".8"},
		}), nil
	case strings.Join(args, " ") == "get nodes -o json":
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fitgo-bench-control-plane"}}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(f.allocCPU), corev1.ResourceMemory: resource.MustParse("16Gi")}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KernelVersion: "6.18.0", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.1.4", KubeletVersion: "v1." + f.minor + ".8"}
		return mustJSON(f.t, corev1.NodeList{Items: []corev1.Node{n}}), nil
	case args[0] == "create" && args[1] == "namespace":
		return []byte("namespace/" + args[2] + " created\n"), nil
	case args[0] == "create" && args[1] == "-f":
		obj := f.created[len(f.created)-1]
		switch o := obj.(type) {
		case *batchv1.Job:
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.Name + "-x7k2p", Labels: o.Spec.Template.Labels}, Spec: o.Spec.Template.Spec}
			f.addPod(p)
			f.byJob[o.Name] = p.Name
			return []byte("job.batch/" + o.Name + " created\n"), nil
		case *corev1.Pod:
			f.addPod(o.DeepCopy())
			return []byte("pod/" + o.Name + " created\n"), nil
		}
	case args[0] == "get" && args[1] == "pods" && args[2] == "-l":
		job, ok := strings.CutPrefix(args[3], "batch.kubernetes.io/job-name=")
		if !ok {
			return nil, fmt.Errorf("fake kubectl: selector %q", args[3])
		}
		var items []corev1.Pod
		if fp := f.pods[f.byJob[job]]; fp != nil {
			items = append(items, *f.step(fp))
		}
		return mustJSON(f.t, corev1.PodList{Items: items}), nil
	case args[0] == "get" && args[1] == "pod":
		fp := f.pods[args[2]]
		if fp == nil {
			return nil, fmt.Errorf(`Error from server (NotFound): pods %q not found`, args[2])
		}
		return mustJSON(f.t, f.step(fp)), nil
	case args[0] == "logs":
		fp := f.pods[args[1]]
		if fp == nil || fp.polls < 2 {
			return nil, fmt.Errorf("fake kubectl: logs of %s before it ran", args[1])
		}
		return fp.out.logs, nil
	case args[0] == "patch":
		fp := f.pods[args[2]]
		var patch struct {
			Spec struct {
				Containers []corev1.Container `json:"containers"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(args[len(args)-1]), &patch); err != nil {
			f.t.Errorf("resize patch: %v", err)
			return nil, err
		}
		if len(patch.Spec.Containers) != 1 || patch.Spec.Containers[0].Name != ContainerName {
			f.t.Errorf("resize patch names %+v, want the container %s", patch.Spec.Containers, ContainerName)
		}
		fp.patched = patch.Spec.Containers[0].Resources.Limits
		return []byte("pod/" + args[2] + " patched\n"), nil
	case args[0] == "delete":
		return nil, nil
	}
	return nil, fmt.Errorf("fake kubectl: %q", args)
}

func (f *fakeCluster) addPod(p *corev1.Pod) {
	out := outcome{exitCode: 0, reason: "Completed"}
	variant := p.Labels[LabelVariant]
	if p.Name == "calibrate-x7k2p" {
		out.logs = []byte("38695\n")
	} else if f.outcome != nil {
		out = f.outcome(p)
	}
	if out.logs == nil && out.waiting == "" && !out.never {
		out.logs = recordedLog(f.t, strings.ReplaceAll(variant, "+", "-"))
	}
	p.Namespace = "ns"
	f.pods[p.Name] = &fakePod{pod: p, out: out}
}

// step advances the pod one step and returns its status.
func (f *fakeCluster) step(fp *fakePod) *corev1.Pod {
	fp.polls++
	p := fp.pod
	c := p.Spec.Containers[0]
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	st := &p.Status
	switch {
	case fp.out.never:
		st.Phase = corev1.PodPending
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case fp.polls == 1 || fp.out.waiting != "":
		st.Phase = corev1.PodPending
		reason := "ContainerCreating"
		if fp.out.waiting != "" && fp.polls > 1 {
			reason = fp.out.waiting
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: "fake"}
	case fp.polls == 2 || fp.out.forever || fp.patched != nil && fp.sincePatc < 2 || p.Spec.Containers[0].ResizePolicy != nil && fp.patched == nil:
		if fp.started.IsZero() {
			fp.started = f.now
		}
		st.Phase = corev1.PodRunning
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(fp.started)}
		cs.Ready = true
		lim := c.Resources.Limits
		if fp.patched != nil {
			fp.sincePatc++
			if fp.sincePatc >= 2 { // the kubelet applies the resize on the second poll
				lim = fp.patched
				st.Conditions = nil
			} else {
				st.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}}
			}
		}
		cs.Resources = &corev1.ResourceRequirements{Limits: lim, Requests: c.Resources.Requests}
	default:
		st.Phase = corev1.PodSucceeded
		if fp.out.exitCode != 0 {
			st.Phase = corev1.PodFailed
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: fp.out.exitCode, Reason: fp.out.reason,
			StartedAt: metav1.NewTime(fp.started), FinishedAt: metav1.NewTime(f.now),
		}
	}
	st.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p.DeepCopy()
}
