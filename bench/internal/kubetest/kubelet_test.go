package kubetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/fitgo/fitgo/bench/internal/results"
	"github.com/fitgo/fitgo/cgroup"
	"github.com/fitgo/fitgo/internal/vmtest"
	"github.com/fitgo/fitgo/internal/vmtest/probe/report"
)

const mib = 1 << 20

// ProbeImage is the image of the TestKubelet* pods: busybox, internal/vmtest's
// probes (explicit, blank; built in the root module, so with its go 1.23
// GODEBUG defaults, as in the vm tests), the benchmark's variants (built in
// this module) and ./watch.
const ProbeImage = "localhost/fitgo/probe:v1"

// probeImage builds ProbeImage's programs.
func probeImage(t *testing.T) Image {
	t.Helper()
	host, _ := vmtest.LookupHost(vmtest.CacheDir())
	if host.Busybox == "" {
		t.Skip("no static busybox (apt-get install busybox-static)")
	}
	dir := t.TempDir()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	require.NoError(t, vmtest.BuildStatic(root, dir+"/", "./internal/vmtest/probe/explicit", "./internal/vmtest/probe/blank"))
	require.NoError(t, vmtest.BuildStatic("", dir+"/", "github.com/fitgo/fitgo/bench/cmd/runtime", "github.com/fitgo/fitgo/bench/cmd/fitgo",
		"github.com/fitgo/fitgo/bench/cmd/untuned", "github.com/fitgo/fitgo/bench/cmd/env", "github.com/fitgo/fitgo/bench/internal/kubetest/watch"))
	img := Image{Name: ProbeImage, Files: map[string]string{"bin/busybox": host.Busybox}, Links: map[string]string{}}
	for _, p := range []string{"explicit", "blank", "runtime", "fitgo", "untuned", "env", "watch"} {
		img.Files["bin/"+p] = filepath.Join(dir, p)
	}
	for _, applet := range []string{"sh", "cat", "sleep", "echo"} {
		img.Links["bin/"+applet] = "busybox"
	}
	return img
}

// results returns the FITGO-RESULT lines of a log by probe name.
func resultLines(t *testing.T, log string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "FITGO-ERROR "); ok {
			t.Errorf("probe error: %s", rest)
		}
		js, ok := strings.CutPrefix(line, "FITGO-RESULT ")
		if !ok {
			continue
		}
		var h report.Header
		require.NoError(t, json.Unmarshal([]byte(js), &h), js)
		out[h.Probe] = js
	}
	return out
}

func podDone(p *corev1.Pod) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true, nil
	case corev1.PodFailed:
		return false, fmt.Errorf("pod failed: %s %s %+v", p.Status.Reason, p.Status.Message, p.Status.ContainerStatuses)
	}
	return false, nil
}

// TestKubeletLimits is the first point on a real kubelet: a pod with
// limits of 1500m CPU and 512Mi memory, and inside it what cgroup.Read finds,
// what the blank import sets, and what the Go runtime alone chooses.
func TestKubeletLimits(t *testing.T) {
	nodeBinaries(t, false)
	img := probeImage(t)
	n := StartNode(t, NodeOptions{Images: []Image{img}})
	ctx := context.Background()
	require.NoError(t, n.EnsureServiceAccount(ctx, "default"))

	// One container runs the three programs one after the other, in the
	// same cgroup.
	script := `explicit read -scenario limits; blank report -scenario limits; ` +
		`runtime -duration 300ms -heap-mib 4 -alloc-mib 4 -rate 50 -work-iters 100`
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"limits"},"spec":{
		"nodeName":"` + NodeName + `","hostNetwork":true,"restartPolicy":"Never","automountServiceAccountToken":false,
		"containers":[{"name":"probe","image":"` + ProbeImage + `","imagePullPolicy":"Never",
			"command":["/bin/sh","-c",` + mustJSON(t, script) + `],
			"resources":{"limits":{"cpu":"1500m","memory":"512Mi"}}}]}}`
	require.NoError(t, n.CreatePod(ctx, "default", []byte(pod)))
	p := n.WaitPod(t, "default", "limits", 5*time.Minute, podDone)
	log, err := n.Logs(ctx, "default", "limits", "probe")
	require.NoError(t, err)
	t.Logf("pod %s on %s, QoS %s; log:\n%s", p.Name, p.Spec.NodeName, p.Status.QOSClass, log)
	lines := resultLines(t, log)

	var r report.Read
	require.NoError(t, json.Unmarshal([]byte(lines["read"]), &r), log)
	cores, ok := r.Limits.CPUQuota()
	assert.True(t, ok, "a CPU limit")
	assert.Equal(t, 1.5, cores)
	assert.Equal(t, int64(512*mib), r.Limits.Memory.Max)
	assert.Empty(t, r.Limits.Err)
	// containerd gives the container a private cgroup namespace on v2: its
	// own cgroup is the root of what it sees, and it is the one that
	// imposes both limits (the pod's cgroup above has the same limits, and
	// is hidden).
	assert.Equal(t, cgroup.V2, r.Limits.CPU.Version)
	assert.Equal(t, "/", r.Limits.CPU.Path)
	assert.Equal(t, "/sys/fs/cgroup", r.Limits.CPU.Source)
	assert.Equal(t, "/sys/fs/cgroup", r.Limits.Memory.MaxSource)
	t.Logf("cgroup.Read: CPU %v from %q, memory.max %d from %q", cores, r.Limits.CPU.Source, r.Limits.Memory.Max, r.Limits.Memory.MaxSource)

	limit := int64(512 * mib)
	var b report.Blank
	require.NoError(t, json.Unmarshal([]byte(lines["report"]), &b), log)
	assert.Equal(t, 2, b.Runtime.GOMAXPROCS, "the blank import: ceil(1.5)")
	assert.Equal(t, int64(math.Floor(0.9*float64(limit))), b.Runtime.GOMEMLIMIT, "the blank import: 0.9 × 512 MiB")
	assert.Equal(t, r.Limits.CPU.Source, b.Fitgo.MaxProcs.Source)
	assert.Equal(t, r.Limits.Memory.MaxSource, b.Fitgo.MemLimit.Source)

	var w results.Workload
	require.NoError(t, json.Unmarshal([]byte(lastLine(log)), &w), log)
	assert.Equal(t, "runtime", w.Variant)
	assert.Equal(t, 2, w.GOMAXPROCS, "the Go runtime's rule: ceil(1.5), at least 2")
	assert.Equal(t, int64(math.MaxInt64), w.GOMEMLIMIT, "the Go runtime sets no memory limit")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
