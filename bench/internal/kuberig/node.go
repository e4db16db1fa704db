package kuberig

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/internal/rig/vmtest"
)

// InstallNode is the command that builds and fetches everything a Node needs.
const InstallNode = "bash bench/internal/kuberig/setup.sh node"

// NodeName is the name of the node (and the host name the API server
// reaches its kubelet by: see StartNode).
const NodeName = "localhost"

// PauseImage is the pod sandbox image the rig builds from ./pause.
const PauseImage = "localhost/fitgo/pause:v1"

//go:embed guest/node.sh
var nodeInit []byte

// Node is a single-node Kubernetes cluster: the control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) on the host's
// 127.0.0.1, and the node itself (the kubelet, containerd and runc) in a qemu
// guest with the Debian cloud kernel of internal/rig/vmtest, cgroup v2.
type Node struct {
	*Server
	console     *logFile
	kept        string // where the guest's console is kept, or why it is not
	controllers bool
	reported    bool // a test sharing the node has shown the node's report
}

// NodeOptions configures StartNode.
type NodeOptions struct {
	// Controllers starts kube-controller-manager (the Job, ServiceAccount and
	// node lifecycle controllers) and kube-scheduler too. Without them, pods
	// must name the node (spec.nodeName: NodeName) and their namespace's
	// ServiceAccount must be created (EnsureServiceAccount).
	Controllers bool
	Images      []Image // loaded into the node's containerd, besides the pause image
	CPUs        int     // the guest's vCPUs; 0 means 4
	MemoryMiB   int     // the guest's memory; 0 means 3072
}

// missingNode skips or fails a TestKubelet* test for a missing piece.
func missingNode(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("FITGO_KUBETEST") == "require" {
		t.Fatalf("%s (FITGO_KUBETEST=require); install: %s", msg, InstallNode)
	}
	t.Skipf("%s; install: %s, then FITGO_KUBETEST=require go test -C bench -run TestKubelet ./internal/kuberig/", msg, InstallNode)
}

// nodeBinaries returns the control plane's and the kubelet's paths by name,
// the directory of the guest's other files, and the qemu rig's host pieces.
// It skips the test unless FITGO_KUBETEST=require, and fails it when a piece
// is missing.
func nodeBinaries(t testing.TB, controllers bool) (map[string]string, string, vmtest.Host) {
	t.Helper()
	// A node boots in an emulated guest and takes minutes: only on request.
	if os.Getenv("FITGO_KUBETEST") != "require" {
		t.Skipf("boots a Kubernetes node in qemu (minutes): %s, then FITGO_KUBETEST=require go test -C bench -run TestKubelet ./internal/kuberig/", InstallNode)
	}
	dir := CacheDir()
	if dir == "" {
		missingNode(t, "no cache directory (set FITGO_KUBETEST_CACHE)")
	}
	bins := map[string]string{}
	names := []string{"etcd", "kube-apiserver", "kubelet"}
	if controllers {
		names = append(names, "kube-controller-manager", "kube-scheduler")
	}
	for _, name := range names {
		p := filepath.Join(dir, "bin", name)
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missingNode(t, "%s is not installed", p)
		}
		bins[name] = p
	}
	root := filepath.Join(dir, "node", "root")
	if _, err := os.Stat(filepath.Join(root, "bin", "containerd")); err != nil {
		missingNode(t, "the guest's containerd is not in %s", root)
	}
	host, missing := vmtest.LookupHost(vmtest.CacheDir())
	if len(missing) > 0 {
		missingNode(t, "the qemu rig needs: %s", strings.Join(missing, "; "))
	}
	return bins, root, host
}

// StartNode starts a single-node cluster for the test and stops it when the
// test ends: qemu is killed (everything of the node lived in the guest's
// memory), the control plane's processes are stopped and their temporary
// directory removed. Nothing is written outside the test's temporary
// directories, and no setting of the host changes.
//
// Addresses: the control plane listens on 127.0.0.1 only. The guest has
// qemu's user network with restrict=on, which routes nowhere; the kubelet
// reaches the API server at 10.0.2.100:6443, an address inside qemu's user
// network that guestfwd connects to 127.0.0.1 on the host, and the API server
// reaches the kubelet (logs, exec) at localhost:<port>, which hostfwd forwards
// from the host's 127.0.0.1 into the guest.
func StartNode(t testing.TB, opts NodeOptions) *Node {
	t.Helper()
	bins, root, host := nodeBinaries(t, opts.Controllers)
	if opts.CPUs == 0 {
		opts.CPUs = 4
	}
	if opts.MemoryMiB == 0 {
		opts.MemoryMiB = 3072
	}
	work := t.TempDir()

	// The images first: a build failure should not wait for a control plane.
	began := time.Now()
	pause := filepath.Join(work, "pause")
	if err := vmtest.BuildStatic("", pause, "github.com/fitgo/fitgo/bench/internal/kuberig/pause"); err != nil {
		t.Fatal(err)
	}
	images := append([]Image{{Name: PauseImage, Files: map[string]string{"pause": pause}, Entrypoint: []string{"/pause"}}}, opts.Images...)

	pauseTime := time.Since(began)

	began = time.Now()
	kubeletToken := randomHex(t)
	ports := freePorts(t, 3)
	kubeletPort := ports[0]
	s := startServer(t, bins["kube-apiserver"], bins["etcd"],
		[]string{kubeletToken + `,system:node:` + NodeName + `,kubelet,"system:nodes,system:masters"`},
		// The node's addresses: Hostname (localhost) is the one the host can
		// reach, through qemu's hostfwd.
		"--kubelet-preferred-address-types=Hostname")
	adminConfig := filepath.Join(s.dir, "admin.kubeconfig")
	writeFile(t, adminConfig, kubeconfig(s.URL, s.token))
	if opts.Controllers {
		startControllers(t, bins, adminConfig, s.dir, ports[1], ports[2])
	}
	controlPlane := time.Since(began)

	began = time.Now()

	initramfs := guestInitramfs(t, host.Busybox, root, work, nodeInit, images, map[string]string{
		"bin/kubelet": bins["kubelet"],
	}, map[string]string{
		"etc/containerd/config.toml":        containerdConfig,
		"etc/cni/net.d/10-pods.conflist":    podNetwork,
		"etc/kubernetes/kubelet.yaml":       fmt.Sprintf(kubeletConfig, kubeletPort),
		"etc/kubernetes/kubelet.kubeconfig": string(kubeconfig("https://10.0.2.100:6443", kubeletToken)),
		"etc/hosts":                         "127.0.0.1 localhost\n",
		"etc/passwd":                        "root:x:0:0:root:/:/bin/sh\n",
		"etc/group":                         "root:x:0:\n",
		"etc/resolv.conf":                   "",
		"etc/machine-id":                    randomHex(t) + "\n",
		// The node's osImage, which the kind runner's reports show.
		"etc/os-release": "PRETTY_NAME=\"fitgo test rig: qemu TCG guest, Debian cloud kernel\"\n",
	})

	initramfsTime := time.Since(began)
	apiPort := strings.TrimPrefix(s.URL, "https://127.0.0.1:")
	m := vmtest.Machine{
		QEMU: host.QEMU, Kernel: host.Kernel, Initramfs: initramfs,
		CPUs: opts.CPUs, MemoryMiB: opts.MemoryMiB,
		Cmdline: []string{"apparmor=0"},
		Devices: []string{
			"-netdev", fmt.Sprintf("user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:6443-cmd:%s nc 127.0.0.1 %s,hostfwd=tcp:127.0.0.1:%d-10.0.2.15:%d",
				host.Busybox, apiPort, kubeletPort, kubeletPort),
			"-device", "virtio-net-pci,netdev=n0",
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	console := &logFile{exited: make(chan struct{})}
	var runErr error
	var w io.Writer = console
	kept := "not kept (set FITGO_VMTEST_CONSOLE to a directory to keep it)"
	if dir := os.Getenv("FITGO_VMTEST_CONSOLE"); dir != "" {
		// Kept for reading while the test runs, and after it.
		f, err := os.Create(filepath.Join(dir, "kubelet-"+strings.ReplaceAll(t.Name(), "/", "-")+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		w = io.MultiWriter(console, f)
		kept = f.Name()
	}
	go func() {
		runErr = m.Run(ctx, w)
		close(console.exited)
	}()
	n := &Node{Server: s, console: console, kept: kept, controllers: opts.Controllers}
	t.Cleanup(func() {
		// A test that shares the node has shown the pods' and the node's
		// last lines at its own failure.
		full := t.Failed() && !n.reported
		if full {
			// While the node still runs: the pods' own last words.
			t.Logf("pods (last log lines):\n%s", n.podLogs(20))
		}
		cancel()
		<-console.exited
		if t.Failed() {
			t.Logf("qemu: %v; guest console: %s", runErr, kept)
			if full {
				n.logTails(t)
			}
			t.Logf("guest console, all of it (last lines):\n%s", console.tail(25))
		}
	})
	booted := time.Now()
	waitFor(t, "the node", 5*time.Minute, console, func() error {
		if strings.Contains(console.tail(1000), "FITGO-NODE-ERROR") {
			t.Fatalf("the guest failed:\n%s", console.tail(40))
		}
		return n.nodeReady(context.Background())
	})
	t.Logf("node %s ready: the pause image built in %v, the control plane started in %v, the initramfs (%d images) written in %v, the node Ready %v after qemu started (%s)",
		NodeName, pauseTime.Round(100*time.Millisecond), controlPlane.Round(100*time.Millisecond), len(images), initramfsTime.Round(100*time.Millisecond),
		time.Since(booted).Round(time.Second), n.guestPhases())
	return n
}

// guestPhases says when, on the guest's clock from its boot, guest/node.sh
// reached each of its phases (its FITGO-NODE-PHASE lines): where the boot's
// time goes.
func (n *Node) guestPhases() string {
	var out []string
	prev := 0.0
	for _, line := range strings.Split(n.console.tailFrom("FITGO-NODE-PHASE ", 20), "\n") {
		var name string
		var at float64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "FITGO-NODE-PHASE %s %g", &name, &at); err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s %.1f s (+%.1f)", name, at, at-prev))
		prev = at
	}
	if len(out) == 0 {
		return "the guest logged no phases"
	}
	return "the guest's clock: " + strings.Join(out, ", ")
}

// logTails logs the kubelet's and containerd's last lines, and where the
// guest's console is kept.
func (n *Node) logTails(t testing.TB) {
	t.Helper()
	for _, from := range []string{"kubelet: ", "containerd: "} {
		t.Logf("%s(last lines):\n%s", from, n.console.tailFrom(from, 25))
	}
	t.Logf("guest console: %s", n.kept)
}

// systemNamespaces are the namespaces the API server creates; every other
// namespace on a shared node belongs to a test.
var systemNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

// Share readies the node for one of several tests that share it, with
// ns as the test's own namespace. It checks that the node is Ready and that
// nothing of an earlier test is left: no pod, no namespace but the system's
// (it deletes what it finds and says so). It creates ns and its
// ServiceAccount, and when the test ends, even after a failure: when the test
// has failed, it logs the pods' last log lines, the kubelet's and
// containerd's last lines and where the guest's console is kept, while the
// pods still run; then it deletes the test's namespaces (ns and any other it
// created, such as the runner's) and its pods, and waits until the kubelet
// has stopped them, so that their memory is the node's again.
func (n *Node) Share(t testing.TB, ns string) {
	t.Helper()
	if !n.controllers {
		t.Fatal("a shared node needs NodeOptions.Controllers: the namespace controller deletes a test's namespaces")
	}
	ctx := context.Background()
	waitFor(t, "the node Ready", 2*time.Minute, n.console, func() error { return n.nodeReady(ctx) })
	began := time.Now()
	left, err := n.tidy(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("the node is not clean for this test: %v", err)
	}
	if left != "" {
		t.Logf("deleted what an earlier test left on the node, in %v: %s", time.Since(began).Round(100*time.Millisecond), left)
	}
	if err := n.Create(ctx, "", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := n.EnsureServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	t.Cleanup(func() {
		own := time.Since(began)
		if t.Failed() {
			n.reported = true
			t.Logf("pods (last log lines):\n%s", n.podLogs(20))
			n.logTails(t)
		}
		cleaned := time.Now()
		left, err := n.tidy(ctx, 3*time.Minute)
		if err != nil {
			t.Errorf("the test's pods and namespaces are not gone: %v", err)
		}
		if left == "" {
			left = "none"
		}
		t.Logf("the test's own part took %v on the node; its pods and namespaces (%s) deleted in %v",
			own.Round(100*time.Millisecond), left, time.Since(cleaned).Round(100*time.Millisecond))
	})
}

// tidy deletes every namespace but the system's and every pod, and waits
// until the pods and those namespaces are gone, or timeout passes. It returns
// what it deleted.
func (n *Node) tidy(ctx context.Context, timeout time.Duration) (string, error) {
	list := func() (namespaces []string, pods map[string][]string, err error) {
		var nsl corev1.NamespaceList
		if err := n.get(ctx, "/api/v1/namespaces", &nsl); err != nil {
			return nil, nil, err
		}
		for _, x := range nsl.Items {
			if !systemNamespaces[x.Name] {
				namespaces = append(namespaces, x.Name)
			}
		}
		var pl corev1.PodList
		if err := n.get(ctx, "/api/v1/pods", &pl); err != nil {
			return nil, nil, err
		}
		pods = map[string][]string{}
		for _, p := range pl.Items {
			pods[p.Namespace] = append(pods[p.Namespace], p.Name)
		}
		return namespaces, pods, nil
	}
	namespaces, pods, err := list()
	if err != nil {
		return "", err
	}
	if len(namespaces) == 0 && len(pods) == 0 {
		return "", nil
	}
	what := fmt.Sprintf("namespaces %v, pods %v", namespaces, pods)
	// The namespaces first: a namespace being deleted takes no new pods
	// (a Job's, say); then the pods, each with a grace period of 1 s, so
	// that the API server keeps them until the kubelet has stopped them.
	for _, ns := range namespaces {
		if _, err := n.do(ctx, "DELETE", "/api/v1/namespaces/"+url.PathEscape(ns), "", nil); err != nil && !notFound(err) {
			return what, err
		}
	}
	for ns := range pods {
		if _, err := n.do(ctx, "DELETE", "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods?gracePeriodSeconds=1", "", nil); err != nil {
			return what, err
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		namespaces, pods, err = list()
		if err == nil && len(namespaces) == 0 && len(pods) == 0 {
			return what, nil
		}
		if time.Now().After(deadline) {
			return what, fmt.Errorf("after %v still there: namespaces %v, pods %v (%v)", timeout, namespaces, pods, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// get GETs path and decodes the answer into v.
func (n *Node) get(ctx context.Context, path string, v any) error {
	b, err := n.do(ctx, "GET", path, "", nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func notFound(err error) bool {
	var st *StatusError
	return errors.As(err, &st) && st.Code == 404
}

// Console returns the last n lines of the guest's console.
func (n *Node) Console(lines int) string { return n.console.tail(lines) }

// podLogs returns the last lines of every container of every pod on the
// node, for a failing test's report.
func (n *Node) podLogs(lines int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := n.do(ctx, "GET", "/api/v1/pods", "", nil)
	if err != nil {
		return fmt.Sprintf("cannot list the pods: %v", err)
	}
	var pods corev1.PodList
	if err := json.Unmarshal(b, &pods); err != nil {
		return fmt.Sprintf("cannot list the pods: %v", err)
	}
	var out strings.Builder
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			fmt.Fprintf(&out, "--- %s/%s %s (%s):\n", p.Namespace, p.Name, c.Name, p.Status.Phase)
			log, err := n.do(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&tailLines=%d",
				url.PathEscape(p.Namespace), url.PathEscape(p.Name), url.QueryEscape(c.Name), lines), "", nil)
			if err != nil {
				fmt.Fprintf(&out, "(no log: %v)\n", err)
				continue
			}
			out.Write(log)
		}
	}
	return out.String()
}

func (n *Node) nodeReady(ctx context.Context) error {
	b, err := n.do(ctx, "GET", "/api/v1/nodes/"+NodeName, "", nil)
	if err != nil {
		return err
	}
	var node corev1.Node
	if err := json.Unmarshal(b, &node); err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node not ready: %s: %s", c.Reason, c.Message)
		}
	}
	return errors.New("node has no Ready condition yet")
}

// kubeconfig returns a kubeconfig for server with a bearer token. The
// servers' certificates are the test's own, self-signed.
func kubeconfig(server, token string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: ` + server + `
    insecure-skip-tls-verify: true
users:
- name: kubetest
  user:
    token: ` + token + `
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: kubetest
current-context: kubetest
`)
}

// containerdConfig is containerd 1.6's configuration in the guest. The root
// is the initramfs, where pivot_root cannot work: runc changes root with
// chroot (NoPivotRoot), which is enough for a rig whose every container is
// its own. The guest kernel runs without AppArmor (apparmor=0).
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage + `"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/bin/runc"
        NoPivotRoot = true
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
`

// podNetwork is the CNI configuration of the pods without hostNetwork: ptp
// gives each an eth0, one end of a veth pair whose other end is in the
// guest, with an address of host-local's range and no route beyond it.
// The range is the guest's own; nothing forwards it out of the guest (qemu's
// user network only answers 10.0.2.15).
const podNetwork = `{"cniVersion":"0.4.0","name":"pods","plugins":[{"type":"ptp","ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.88.0.0/16"}]],"dataDir":"/run/cni/ipam"}}]}`

// kubeletConfig is the kubelet's configuration; %d is its port. Its server
// listens on the guest's user-network address for the host's forward;
// authentication and authorization are open, as nothing but the test's own
// API server can reach it.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: 10.0.2.15
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
failSwapOn: false
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`

// CreatePod creates a pod from its manifest (YAML or JSON) in ns.
func (s *Server) CreatePod(ctx context.Context, ns string, manifest []byte) error {
	return s.Create(ctx, ns, manifest)
}

// Pod returns a pod.
func (s *Server) Pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	b, err := s.do(ctx, "GET", "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name), "", nil)
	if err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Logs returns a container's log.
func (s *Server) Logs(ctx context.Context, ns, pod, container string) (string, error) {
	b, err := s.do(ctx, "GET", "/api/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(pod)+"/log?container="+url.QueryEscape(container), "", nil)
	return string(b), err
}

// EnsureServiceAccount creates the default ServiceAccount of ns unless the
// controller manager already has.
func (s *Server) EnsureServiceAccount(ctx context.Context, ns string) error {
	err := s.Create(ctx, ns, []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`))
	var st *StatusError
	if errors.As(err, &st) && st.Code == 409 {
		return nil
	}
	return err
}

// WaitPod polls the pod until done returns true or an error, or timeout
// passes, and returns the last pod read.
func (n *Node) WaitPod(t testing.TB, ns, name string, timeout time.Duration, done func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, "pod "+name, timeout, n.console, func() error {
		p, err := n.Pod(context.Background(), ns, name)
		if err != nil {
			return err
		}
		pod = p
		ok, err := done(p)
		if err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		if !ok {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	return pod
}

// guestInitramfs writes the guest's initramfs into dir and returns its path:
// busybox, init, the files under root (the guest's containerd, runc,
// libraries and modules from setup.sh), progs (path in the guest → host
// file), the images as archives in /images, and files (path → content).
func guestInitramfs(t testing.TB, busybox, root, dir string, init []byte, images []Image, progs, files map[string]string) string {
	t.Helper()
	r, err := vmtest.NewInitramfs(busybox, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.AddFile("init", 0o755, init)
	for name, src := range progs {
		if err := r.AddFileFrom(name, 0o755, src); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return r.AddFileFrom(filepath.ToSlash(rel), 0o755, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, img := range images {
		tar := filepath.Join(dir, fmt.Sprintf("image%d.tar", i))
		if err := img.WriteArchive(tar); err != nil {
			t.Fatal(err)
		}
		if err := r.AddFileFrom(fmt.Sprintf("images/%d.tar", i), 0o644, tar); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		r.AddFile(name, 0o644, []byte(content))
	}
	initramfs := filepath.Join(dir, "initramfs.cpio")
	f, err := os.Create(initramfs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return initramfs
}

// startControllers starts kube-controller-manager and kube-scheduler on
// 127.0.0.1 with the administrator's kubeconfig.
func startControllers(t testing.TB, bins map[string]string, kubeconfig, dir string, kcmPort, schedPort int) {
	t.Helper()
	start(t, bins["kube-controller-manager"],
		"--kubeconfig="+kubeconfig, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kcmPort),
		"--leader-elect=false", "--service-account-private-key-file="+filepath.Join(dir, "sa.key"),
		"--use-service-account-credentials=false", "--v=0")
	start(t, bins["kube-scheduler"],
		"--kubeconfig="+kubeconfig, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedPort),
		"--leader-elect=false", "--v=0")
}
