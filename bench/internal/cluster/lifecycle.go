package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/variant"
)

// kindCluster creates the kind cluster unless it exists, and writes its
// kubeconfig for kubectl (the kind-<name> context may be missing from the
// user's kubeconfig: another machine created it, or it was exported
// elsewhere).
func (r *Runner) kindCluster(ctx context.Context) error {
	cfg := r.cfg
	out, err := r.Exec.Run(ctx, r.kindCmd("get", "clusters"))
	if err != nil {
		return err
	}
	exists := false
	for _, l := range strings.Split(string(out), "\n") {
		exists = exists || strings.TrimSpace(l) == cfg.Cluster
	}
	if exists {
		r.logf("using the existing cluster %s (kept at the end)", cfg.Cluster)
	} else {
		if err := r.checkNodeImage(); err != nil {
			return err
		}
		r.logf("creating the cluster %s from %s", cfg.Cluster, cfg.KindConfig)
		args := []string{"create", "cluster", "--name", cfg.Cluster, "--config", cfg.KindConfig, "--wait", "5m"}
		if cfg.NodeImage != "" {
			args = append(args, "--image", cfg.NodeImage)
		}
		r.createdClust = true // kind removes a half-created cluster itself, but delete it anyway
		c := r.kindCmd(args...)
		c.Stream = true
		if _, err := r.Exec.Run(ctx, c); err != nil {
			return err
		}
	}
	kc, err := r.Exec.Run(ctx, r.kindCmd("get", "kubeconfig", "--name", cfg.Cluster))
	if err != nil {
		return err
	}
	r.kubeconfig = filepath.Join(r.tmp, "kubeconfig")
	return os.WriteFile(r.kubeconfig, kc, 0o600)
}

// checkNodeImage fails before kind create cluster on a cgroup v1 host unless
// the node image runs a Kubernetes older than 1.35: from 1.35 the kubelet
// refuses cgroup v1 (failCgroupV1), and kind create cluster would fail only
// after kubeadm's four-minute wait.
func (r *Runner) checkNodeImage() error {
	if r.engine.cgroupVersion != "1" {
		return nil
	}
	cfg := r.cfg
	const advice = "; pass -node-image with a Kubernetes 1.34 (or older) image from the notes of your kind release, e.g. -node-image kindest/node:v1.34.3@sha256:<digest>, or run on a cgroup v2 host"
	if cfg.NodeImage == "" {
		if m, ok := kindMinor(r.info.kindVersion); ok && m < 31 {
			return nil // kind before v0.31 defaults to Kubernetes 1.34 or older
		}
		return fmt.Errorf("this host runs cgroup v1 (%s), and kind's default node image (%s) runs Kubernetes 1.35 or later, whose kubelet refuses cgroup v1%s",
			r.info.cgroup, r.info.kindVersion, advice)
	}
	if m, ok := nodeImageMinor(cfg.NodeImage); ok && m >= 35 {
		return fmt.Errorf("this host runs cgroup v1 (%s), and -node-image %s runs Kubernetes 1.%d, whose kubelet refuses cgroup v1%s",
			r.info.cgroup, cfg.NodeImage, m, advice)
	}
	return nil
}

// kindMinor returns the minor version in "kind v0.33.0 go1.26.8 linux/amd64".
func kindMinor(v string) (int, bool) {
	f := strings.Fields(v)
	if len(f) < 2 || !strings.HasPrefix(f[1], "v0.") {
		return 0, false
	}
	m, err := strconv.Atoi(strings.Split(f[1], ".")[1])
	return m, err == nil
}

// waitServiceAccount waits for the namespace's default ServiceAccount: the
// API server rejects a Pod in a namespace whose ServiceAccount the
// controller manager has not created yet (a Job only retries).
func (r *Runner) waitServiceAccount(ctx context.Context) error {
	_, err := r.read(ctx, true, "get", "serviceaccount", "default", "-o", "name")
	for i := 0; err != nil && notFound(err) && i < 30; i++ {
		if err := r.sleep(ctx, time.Second); err != nil {
			return err
		}
		_, err = r.read(ctx, true, "get", "serviceaccount", "default", "-o", "name")
	}
	if err != nil {
		return fmt.Errorf("the namespace's default ServiceAccount: %w", err)
	}
	return nil
}

// inspectCluster reads the server version and the nodes, for the report and
// to check which settings fit.
func (r *Runner) inspectCluster(ctx context.Context) error {
	out, err := r.read(ctx, false, "version", "-o", "json")
	if err != nil {
		return err
	}
	v, err := serverVersion(out)
	if err != nil {
		return err
	}
	r.info.serverVersion = v.GitVersion
	r.info.minor, _ = strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if r.cfg.Resize() && v.Major == "1" && r.info.minor < 33 {
		return fmt.Errorf("-scenario resize needs in-place pod resize: Kubernetes 1.33 or later (GA in 1.35); the cluster runs %s: recreate it with a newer node image (-node-image)", r.info.serverVersion)
	}
	out, err = r.read(ctx, false, "get", "nodes", "-o", "json")
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := json.Unmarshal(out, &nodes); err != nil {
		return fmt.Errorf("decoding nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return errors.New("the cluster has no nodes")
	}
	var pods corev1.PodList
	out, err = r.read(ctx, false, "get", "pods", "--all-namespaces", "--field-selector=status.phase!=Succeeded,status.phase!=Failed", "-o", "json")
	switch {
	case err != nil && forbidden(err) && !r.cfg.Kind():
		// A namespace-scoped account in a shared cluster: the scheduler
		// still places the pods, but a setting that does not fit fails
		// instead of being skipped.
		r.logf("warning: cannot list the pods of every namespace (%v): checking the settings against the nodes' allocatable resources only", err)
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(out, &pods); err != nil {
			return fmt.Errorf("decoding pods: %w", err)
		}
	}
	var why []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if ok, reason := eligible(n, r.cfg.NodeSelector); !ok {
			why = append(why, n.Name+": "+reason)
			continue
		}
		r.nodes = append(r.nodes, freeOn(n, pods.Items))
	}
	if len(r.nodes) == 0 {
		return fmt.Errorf("no node can run the pods (%s)", strings.Join(why, "; "))
	}
	// The node with the most CPU free describes the cluster in the report.
	slices.SortStableFunc(r.nodes, func(a, b nodeFree) int { return b.freeCPU.Cmp(a.freeCPU) })
	n := r.nodes[0].node
	r.info.node = n.Name
	r.info.kernel = n.Status.NodeInfo.KernelVersion
	r.info.runtime = n.Status.NodeInfo.ContainerRuntimeVersion
	r.info.osImage = n.Status.NodeInfo.OSImage
	r.info.arch = n.Status.NodeInfo.Architecture
	if r.info.arch == "" {
		r.info.arch = runtime.GOARCH
	}
	r.info.capCPU = Cores(n.Status.Capacity[corev1.ResourceCPU])
	r.info.allocCPU = Cores(r.nodes[0].allocCPU)
	r.info.allocMemory = r.nodes[0].allocMem.Value()
	return nil
}

// fit returns "" when some node has room for a pod requesting cpus and mem,
// else why not (on the roomiest node).
func (r *Runner) fit(cpus float64, mem int64) string {
	why := ""
	for _, n := range r.nodes {
		w := n.fits(cpus, mem)
		if w == "" {
			return ""
		}
		if why == "" {
			why = w
		}
	}
	return why
}

// podLevelSupport returns "" when the cluster can run the pod-level layout,
// else why not: a Kubernetes before 1.34 (PodLevelResources is alpha and off
// in 1.32 and 1.33, and missing before), an API server that drops a pod's
// spec.resources in a dry run (the feature gate off), or nodes whose kubelet
// is older than 1.34 (which refuses such pods, PodLevelResourcesNotAdmitted).
// Only a cancelled context is an error.
func (r *Runner) podLevelSupport(ctx context.Context) (string, error) {
	if r.podLevelChecked {
		return r.podLevel, nil
	}
	why, err := r.checkPodLevel(ctx)
	if err != nil {
		return "", err
	}
	r.podLevelChecked, r.podLevel = true, why
	if why == "" {
		r.logf("pod-level resources: supported (a dry run kept spec.resources)")
	}
	return why, nil
}

func (r *Runner) checkPodLevel(ctx context.Context) (string, error) {
	const feature = "pod-level resources (the PodLevelResources feature, beta and on by default from Kubernetes 1.34)"
	if r.info.minor < 34 {
		return fmt.Sprintf("%s: the cluster runs %s", feature, r.info.serverVersion), nil
	}
	var old []string
	for _, n := range r.nodes {
		kv := n.node.Status.NodeInfo.KubeletVersion
		if m, ok := nodeImageMinor("node:" + kv); ok && m < 34 {
			old = append(old, n.node.Name+" "+kv)
		}
	}
	if len(old) == len(r.nodes) {
		return fmt.Sprintf("%s: the nodes' kubelets are older (%s) and refuse such pods", feature, strings.Join(old, ", ")), nil
	}
	v, _ := variant.Lookup("untuned")
	w := r.workload("pod-level-check", v, 0, 64<<20, nil)
	w.Sidecar = &Sidecar{Layout: LayoutPodLevel, Bytes: 1 << 20}
	manifest, err := PodManifest(w)
	if err != nil {
		return "", err
	}
	out, err := r.Exec.Run(ctx, r.kubectlCmd(true, manifest, "create", "--dry-run=server", "-f", "-", "-o", "json"))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("%s: the API server refused a pod with pod-level resources in a dry run: %v", feature, err), nil
	}
	p, err := decodePod(out)
	if err != nil {
		return fmt.Sprintf("%s: the dry run's answer: %v", feature, err), nil
	}
	if p.Spec.Resources == nil || len(p.Spec.Resources.Limits) == 0 {
		return fmt.Sprintf("%s: the API server (%s) drops a pod's spec.resources, so the feature gate is off", feature, r.info.serverVersion), nil
	}
	return "", nil
}

// cleanup deletes what the runner created, unless -keep.
func (r *Runner) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cfg := r.cfg
	kubectl := "kubectl --context " + cfg.Context()
	if !cfg.Kind() && cfg.Kubeconfig != "" {
		kubectl = "kubectl --kubeconfig " + shellQuote(cfg.Kubeconfig) + " --context " + cfg.Context()
	}
	if cfg.Keep {
		if r.createdNS {
			r.logf("kept the namespace %s: %s delete namespace %s", cfg.Namespace(), kubectl, cfg.Namespace())
		} else if r.createdObjs {
			r.logf("kept the Jobs and Pods: %s -n %s delete jobs,pods -l %s=%s", kubectl, cfg.Namespace(), LabelRunID, cfg.RunID)
		}
		if r.createdClust {
			r.logf("kept the cluster %s: kind delete cluster --name %s", cfg.Cluster, cfg.Cluster)
		}
		return nil
	}
	if r.createdClust {
		r.logf("deleting the cluster %s", cfg.Cluster)
		_, err := r.Exec.Run(ctx, r.kindCmd("delete", "cluster", "--name", cfg.Cluster))
		return err
	}
	if r.createdNS {
		r.logf("deleting the namespace %s", cfg.Namespace())
		_, err := r.kubectl(ctx, false, "delete", "namespace", cfg.Namespace(), "--ignore-not-found", "--timeout=2m")
		return err
	}
	if cfg.NamespaceName != "" && r.createdObjs {
		r.logf("deleting the Jobs and Pods of this run in %s", cfg.Namespace())
		_, err := r.kubectl(ctx, true, "delete", "jobs,pods", "-l", LabelRunID+"="+cfg.RunID, "--ignore-not-found", "--timeout=2m")
		return err
	}
	return nil
}
