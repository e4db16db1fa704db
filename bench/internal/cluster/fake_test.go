package cluster

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
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"

	"github.com/fitgo/fitgo/bench/internal/manifests"
	"github.com/fitgo/fitgo/bench/internal/results"
)

// fakeCluster plays docker, kind and kubectl for the runner. Every manifest
// the runner creates is decoded strictly into the k8s.io/api types, and every
// status it reads is marshalled from them. Pods move one step per poll:
// Pending, Running, then their outcome.
type fakeCluster struct {
	t *testing.T

	mu          sync.Mutex
	now         time.Time
	tmp         string // the runner's TempDir, shown as $TMP in calls
	clusters    []string
	minor       string // server minor version
	clientMinor string // kubectl's minor version
	allocCPU    string
	// engine is what "docker info" or "podman info" prints (JSON).
	engine string
	// nodes, when set, replace the one kind node with allocCPU.
	nodes []corev1.Node
	// system are the pods already running (kind's own: control plane, CoreDNS, kindnet).
	system []corev1.Pod
	// saMissing is how many times the default ServiceAccount is not found yet.
	saMissing int
	// flaky makes the commands with these prefixes fail that many times
	// with a transient error before they work.
	flaky map[string]int
	// kubeconfigs are the kubeconfig files kubectl was given, read when used.
	kubeconfigs []string
	// resizeCond, when set, is the condition the kubelet reports instead of
	// applying a resize.
	resizeCond *corev1.PodCondition
	// nodeSkew is how far the node's clock is ahead of this machine's.
	nodeSkew    time.Duration
	calibration []byte // the calibration pod's log
	calls       []string
	pods        map[string]*fakePod // by pod name
	byJob       map[string]string   // job name -> pod name
	created     []any               // every object created, decoded strictly
	deleted     []string            // kind/name of the Jobs and Pods deleted
	nsCreated   bool

	// outcome decides how each workload pod ends; nil: success with the
	// variant's recorded log.
	outcome func(p *corev1.Pod) outcome
	// fail makes the command whose String() has this prefix fail.
	fail map[string]error
	// podLevelOff makes the API server drop a pod's spec.resources, as it
	// does with the PodLevelResources feature gate off.
	podLevelOff bool
}

type outcome struct {
	exitCode int32
	reason   string // termination reason: Completed, Error, OOMKilled
	logs     []byte
	waiting  string // a waiting reason the pod never leaves (stuck)
	never    bool   // the pod stays Pending and unscheduled reasons are absent
	forever  bool   // the pod keeps running
	// The pod-level layout's sidecar container: its log (default: a held
	// line), and whether it was OOM-killed (and restarted) during the run.
	sidecarLogs   []byte
	sidecarKilled bool
	// sidecarWaiting is a waiting reason the sidecar container never
	// leaves (the workload waits for it: PodInitializing).
	sidecarWaiting string
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
		engine:      dockerInfoJSON("2", ""),
		pods:        map[string]*fakePod{},
		byJob:       map[string]string{},
		fail:        map[string]error{},
		flaky:       map[string]int{},
		calibration: []byte("38695\n"),
	}
}

// dockerInfoJSON is Docker's "info" as JSON, with the given cgroup version
// and driver-type (io.containerd.snapshotter.v1: the containerd image store).
func dockerInfoJSON(cgroup, driverType string) string {
	status := `[["Backing Filesystem","extfs"],["Supports d_type","true"]]`
	if driverType != "" {
		status = `[["driver-type","` + driverType + `"]]`
	}
	return `{"ID":"x","Containers":3,"Driver":"overlay2","DriverStatus":` + status + `,"CgroupDriver":"systemd","CgroupVersion":"` + cgroup + `","ServerVersion":"28.1.1","OperatingSystem":"Debian GNU/Linux 13 (trixie)","NCPU":2}`
}

// podmanInfoJSON is Podman's "info" as JSON (also what podman-docker's
// "docker info" prints).
const podmanInfoJSON = `{"host":{"arch":"amd64","cgroupManager":"systemd","cgroupVersion":"v2","cpus":2,"os":"linux"},"store":{"graphDriverName":"overlay"},"version":{"APIVersion":"5.4.2","Version":"5.4.2"}}`

// kindNode is kind's single node: the control plane, untainted because it
// is alone, with cpus CPUs and 8Gi of memory allocatable.
func kindNode(cpus string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fitgo-bench-control-plane", Labels: map[string]string{"kubernetes.io/hostname": "fitgo-bench-control-plane"}}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus), corev1.ResourceMemory: resource.MustParse("16Gi")}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus), corev1.ResourceMemory: resource.MustParse("16Gi")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KernelVersion: "6.18.0", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.1.4", KubeletVersion: "v1.35.8", Architecture: "amd64"}
	return n
}

// kindSystemPods are the pods of a fresh kind cluster on node, with their
// requests: 950m CPU and 290Mi in all.
func kindSystemPods(node string) []corev1.Pod {
	var pods []corev1.Pod
	for _, p := range []struct{ name, cpu, mem string }{
		{"etcd", "100m", "100Mi"}, {"kube-apiserver", "250m", ""}, {"kube-controller-manager", "200m", ""},
		{"kube-scheduler", "100m", ""}, {"coredns-1", "100m", "70Mi"}, {"coredns-2", "100m", "70Mi"}, {"kindnet", "100m", "50Mi"},
	} {
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(p.cpu)}
		if p.mem != "" {
			req[corev1.ResourceMemory] = resource.MustParse(p.mem)
		}
		pods = append(pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "kube-system"},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: p.name, Resources: corev1.ResourceRequirements{Requests: req}}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return pods
}

// transient is the error a loaded laptop's API server gives now and then.
func transient(call string) error {
	return &ExitError{Cmd: call, Code: 1, Stderr: "Unable to connect to the server: net/http: TLS handshake timeout"}
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
	if f.tmp != "" {
		call = strings.ReplaceAll(call, f.tmp, "$TMP")
	}
	if c.Dir != "" {
		call = "(cd " + shellQuote(c.Dir) + ") " + call
	}
	if c.Stdin != nil {
		obj, err := manifests.Decode(c.Stdin)
		if err != nil {
			f.t.Errorf("%s: the manifest does not decode strictly: %v\n%s", call, err, c.Stdin)
			return nil, err
		}
		f.created = append(f.created, obj)
		if m, ok := obj.(metav1.Object); ok {
			f.checkLabels(call, m.GetLabels())
		}
		if j, ok := obj.(*batchv1.Job); ok {
			f.checkLabels(call, j.Spec.Template.Labels)
		}
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
	for prefix, n := range f.flaky {
		if n > 0 && strings.HasPrefix(call, prefix) {
			f.flaky[prefix] = n - 1
			return nil, transient(call)
		}
	}
	args := c.Args
	switch c.Name {
	case "kind":
		return f.kind(args)
	case "docker", "podman":
		if args[0] == "info" {
			if strings.Join(args, " ") != "info --format {{json .}}" {
				return nil, fmt.Errorf("fake %s: %q", c.Name, args)
			}
			return []byte(f.engine + "\n"), nil
		}
		return nil, nil
	case "kubectl":
		if len(args) >= 2 && args[0] == "--kubeconfig" {
			if filepath.Base(args[1]) == "kubeconfig" { // the one the runner wrote from kind get kubeconfig
				b, err := os.ReadFile(args[1])
				if err != nil || !strings.Contains(string(b), "kind-fitgo-bench") {
					f.t.Errorf("%s: kubeconfig %s: %v %q", call, args[1], err, b)
				}
				f.kubeconfigs = append(f.kubeconfigs, args[1])
			}
			args = args[2:]
		}
		if len(args) >= 2 && args[0] == "--context" {
			args = args[2:]
		}
		if len(args) >= 2 && args[0] == "-n" {
			args = args[2:]
		}
		if len(args) > 0 && args[len(args)-1] == requestTimeout {
			args = args[:len(args)-1]
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
	case "get kubeconfig":
		if !slices.Contains(f.clusters, args[3]) {
			return nil, fmt.Errorf("fake kind: no cluster %s", args[3])
		}
		return []byte("apiVersion: v1\nkind: Config\ncurrent-context: kind-" + args[3] + "\ncontexts:\n- name: kind-" + args[3] + "\n"), nil
	case "load docker-image", "load image-archive":
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
	// The controller manager creates the default ServiceAccount a while
	// after the namespace.
	saExists := f.saMissing == 0
	if f.saMissing > 0 && f.nsCreated {
		f.saMissing--
	}
	switch {
	case strings.Join(args, " ") == "version --client -o json":
		return mustJSON(f.t, map[string]any{"clientVersion": version.Info{Major: "1", Minor: f.clientMinor, GitVersion: "v1." + f.clientMinor + ".4"}}), nil
	case args[0] == "version":
		return mustJSON(f.t, map[string]any{
			"clientVersion": version.Info{Major: "1", Minor: "35", GitVersion: "v1.35.8"},
			"serverVersion": version.Info{Major: "1", Minor: f.minor, GitVersion: "v1." + f.minor + ".8"},
		}), nil
	case strings.Join(args, " ") == "get nodes -o json":
		nodes := f.nodes
		if nodes == nil {
			nodes = []corev1.Node{kindNode(f.allocCPU)}
		}
		return mustJSON(f.t, corev1.NodeList{Items: nodes}), nil
	case strings.Join(args, " ") == "get pods --all-namespaces --field-selector=status.phase!=Succeeded,status.phase!=Failed -o json":
		return mustJSON(f.t, corev1.PodList{Items: f.system}), nil
	case strings.Join(args, " ") == "get serviceaccount default -o name":
		if !saExists {
			return nil, &ExitError{Cmd: "kubectl get serviceaccount", Code: 1, Stderr: `Error from server (NotFound): serviceaccounts "default" not found`}
		}
		return []byte("serviceaccount/default\n"), nil
	case args[0] == "create" && args[1] == "namespace":
		f.nsCreated = true
		return []byte("namespace/" + args[2] + " created\n"), nil
	case strings.Join(args, " ") == "create --dry-run=server -f - -o json":
		p, ok := f.created[len(f.created)-1].(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("fake kubectl: a dry run of a %T", f.created[len(f.created)-1])
		}
		p = p.DeepCopy()
		if f.podLevelOff {
			p.Spec.Resources = nil
		}
		return mustJSON(f.t, p), nil
	case args[0] == "create" && args[1] == "-f":
		obj := f.created[len(f.created)-1]
		switch o := obj.(type) {
		case *batchv1.Job:
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.Name + "-x7k2p", Labels: o.Spec.Template.Labels}, Spec: o.Spec.Template.Spec}
			f.addPod(p)
			f.byJob[o.Name] = p.Name
			return []byte("job.batch/" + o.Name + " created\n"), nil
		case *corev1.Pod:
			if !saExists {
				return nil, &ExitError{Cmd: "kubectl create", Code: 1, Stderr: `Error from server (Forbidden): error when creating "STDIN": pods "` + o.Name + `" is forbidden: error looking up service account ns/default: serviceaccount "default" not found`}
			}
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
		if len(args) == 4 && args[3] == SidecarContainerName {
			if len(fp.pod.Spec.InitContainers) == 0 {
				return nil, fmt.Errorf(`error: container %s is not valid for pod %s`, args[3], args[1])
			}
			if fp.out.sidecarLogs != nil {
				return fp.out.sidecarLogs, nil
			}
			return []byte(`{"type":"sidecar","state":"held","held_bytes":209715200,"rss_bytes":213000000}` + "\n"), nil
		}
		if fp.pod.Status.Phase == corev1.PodRunning {
			return f.logsSoFar(fp), nil
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
		lim := patch.Spec.Containers[0].Resources.Limits
		req := fp.pod.Spec.Containers[0].Resources.Requests
		for k, v := range req {
			if l, ok := lim[k]; ok && v.Cmp(l) > 0 {
				return nil, &ExitError{Cmd: "kubectl patch", Code: 1, Stderr: fmt.Sprintf(`The Pod %q is invalid: spec.containers[0].resources.requests: Invalid value: %q: must be less than or equal to %s limit of %s`, args[2], v.String(), k, l.String())}
			}
		}
		if guaranteed(fp.pod.Spec.Containers[0].Resources.Limits, req) != guaranteed(lim, req) {
			return nil, &ExitError{Cmd: "kubectl patch", Code: 1, Stderr: fmt.Sprintf(`The Pod %q is invalid: spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing`, args[2])}
		}
		fp.patched = lim
		return []byte("pod/" + args[2] + " patched\n"), nil
	case args[0] == "delete":
		if args[1] == "pod" || args[1] == "job" {
			f.deleted = append(f.deleted, args[1]+"/"+args[2])
		}
		return nil, nil
	}
	return nil, fmt.Errorf("fake kubectl: %q", args)
}

func (f *fakeCluster) addPod(p *corev1.Pod) {
	out := outcome{exitCode: 0, reason: "Completed"}
	variant := p.Labels[LabelVariant]
	for k, v := range p.Spec.Containers[0].Resources.Requests {
		if l, ok := p.Spec.Containers[0].Resources.Limits[k]; ok && v.Cmp(l) > 0 {
			f.t.Errorf("pod %s: the API server rejects a %s request %s above its limit %s", p.Name, k, v.String(), l.String())
		}
	}
	if p.Name == "calibrate-x7k2p" {
		out.logs = f.calibration
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
	if why := f.unschedulable(p); why != "" {
		st.Phase = corev1.PodPending
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: why}}
		st.ContainerStatuses = nil
		return p.DeepCopy()
	}
	switch {
	case fp.out.never:
		st.Phase = corev1.PodPending
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	case fp.out.sidecarWaiting != "":
		st.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
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
		// The node reports the start on its own clock, in whole seconds.
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(fp.started.Add(f.nodeSkew).Truncate(time.Second))}
		cs.Ready = true
		lim := c.Resources.Limits
		if fp.patched != nil && f.resizeCond != nil {
			st.Conditions = []corev1.PodCondition{*f.resizeCond}
			fp.sincePatc++
		} else if fp.patched != nil {
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
	st.InitContainerStatuses = nil
	for _, ic := range p.Spec.InitContainers {
		// A native sidecar: running from the start (its startup probe
		// passed), stopped with the pod.
		ics := corev1.ContainerStatus{Name: ic.Name, Image: ic.Image, Started: ptr(true)}
		switch {
		case fp.out.sidecarWaiting != "":
			ics.Started = ptr(false)
			ics.State.Waiting = &corev1.ContainerStateWaiting{Reason: fp.out.sidecarWaiting, Message: "fake"}
		case st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed:
			ics.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
		default:
			ics.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(f.now)}
		}
		if fp.out.sidecarKilled && fp.polls > 2 {
			ics.RestartCount = 1
			ics.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, ics)
	}
	return p.DeepCopy()
}

// logsSoFar is the part of a running pod's log written by now: the lines
// before the first progress line after the time it has been running.
func (f *fakeCluster) logsSoFar(fp *fakePod) []byte {
	elapsed := f.now.Sub(fp.started).Seconds()
	var out []byte
	for _, l := range strings.SplitAfter(string(fp.out.logs), "\n") {
		if line, err := results.ParseLine([]byte(strings.TrimSpace(l))); err == nil {
			if line.Result != nil || line.Progress != nil && line.Progress.ElapsedMS/1000 > elapsed {
				break
			}
		}
		out = append(out, l...)
	}
	return out
}

// unschedulable is the scheduler's verdict on p: "" when some node without
// a taint, matching its node selector, has room for its CPU request besides
// the pods already there.
func (f *fakeCluster) unschedulable(p *corev1.Pod) string {
	nodes := f.nodes
	if nodes == nil {
		nodes = []corev1.Node{kindNode(f.allocCPU)}
	}
	want := p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	for _, n := range nodes {
		matches := len(n.Spec.Taints) == 0
		for k, v := range p.Spec.NodeSelector {
			matches = matches && n.Labels[k] == v
		}
		if !matches {
			continue
		}
		free := n.Status.Allocatable.Cpu().MilliValue()
		for _, sp := range f.system {
			if sp.Spec.NodeName == n.Name {
				free -= sp.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			}
		}
		if want <= free {
			return ""
		}
	}
	return fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu.", len(nodes), len(nodes))
}

// guaranteed reports whether a one-container pod with these limits and
// requests has the Guaranteed QoS class: CPU and memory limits, and requests
// equal to them.
func guaranteed(lim, req corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		l, ok := lim[r]
		if q, rok := req[r]; !ok || rok && q.Cmp(l) != 0 {
			return false
		}
	}
	return true
}

// checkLabels fails the test on a label the API server rejects.
func (f *fakeCluster) checkLabels(call string, labels map[string]string) {
	for k, v := range labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			f.t.Errorf("%s: label %s=%s: %v", call, k, v, errs)
		}
	}
}
