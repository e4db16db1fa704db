package manifests

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, "README.md"))
	require.NoError(t, err)
	return string(b)
}

// TestREADMECommands checks the README's commands against the files: the
// paths exist, the image, cluster and container names match the manifests,
// and the resize patch is a valid partial Pod for the right container.
func TestREADMECommands(t *testing.T) {
	text := readme(t)
	for _, m := range regexp.MustCompile(`examples/kubernetes/[A-Za-z0-9._-]+`).FindAllString(text, -1) {
		assert.FileExists(t, filepath.Join(examplesDir, "..", "..", m), "README names %s", m)
	}
	c, err := os.ReadFile(filepath.Join(examplesDir, "kind-cluster.yaml"))
	require.NoError(t, err)
	cluster, err := KindCluster(c)
	require.NoError(t, err)
	assert.Contains(t, text, "--context kind-"+cluster.Name+" ")
	assert.Contains(t, text, "kind load docker-image fitgo-example:dev --name "+cluster.Name)
	assert.Contains(t, text, "kind delete cluster --name "+cluster.Name)

	d, _ := deployment(t, "deployment.yaml")
	dw, _ := deployment(t, "downward-api.yaml")
	assert.Contains(t, text, "-t "+d.Spec.Template.Spec.Containers[0].Image+" .")
	pl, _ := deployment(t, "pod-level.yaml")
	for _, dep := range []string{d.Name, dw.Name, pl.Name} {
		assert.Contains(t, text, "deploy/"+dep)
	}

	m := regexp.MustCompile(`--patch '([^']+)'`).FindStringSubmatch(text)
	require.NotNil(t, m, "the resize command")
	obj, err := Decode([]byte(`{"apiVersion":"v1","kind":"Pod",` + m[1][1:]))
	require.NoError(t, err, "the resize patch")
	pc := obj.(*corev1.Pod).Spec.Containers
	require.Len(t, pc, 1)
	assert.Equal(t, d.Spec.Template.Spec.Containers[0].Name, pc[0].Name, "the patch names the container")
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(m[1]), &raw))
}

// TestREADMENumbers checks the values the README says the programs log
// against the manifests' limits and the rules: fitgo's defaults (ceil, at
// least 1; 0.9 × the memory limit) and the downward API's (rounded up; the
// limit in bytes).
func TestREADMENumbers(t *testing.T) {
	text := readme(t)
	d, _ := deployment(t, "deployment.yaml")
	cores, mem := limits(t, d.Spec.Template.Spec.Containers[0])
	fitMem := int64(0.9 * float64(mem))
	mib := func(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB" }
	assert.Contains(t, text, "GOMAXPROCS="+strconv.Itoa(max(int(math.Ceil(cores)), 1))+` GOMEMLIMIT="`+strconv.FormatInt(fitMem, 10)+" ("+mib(fitMem)+`)"`)
	assert.Contains(t, text, "cpu_limit="+strconv.FormatFloat(cores, 'f', -1, 64)+` memory_limit="`+strconv.FormatInt(mem, 10)+" ("+mib(mem)+`)"`)
	assert.Contains(t, text, "GOMAXPROCS="+strconv.Itoa(int(math.Ceil(cores)))+` GOMEMLIMIT="`+strconv.FormatInt(mem, 10)+" ("+mib(mem)+`)"`)
	assert.Contains(t, text, "env_GOMAXPROCS="+strconv.Itoa(int(math.Ceil(cores)))+" env_GOMEMLIMIT="+strconv.FormatInt(mem, 10))

	// The pod-level recipe: the pod's CPU limit rounded up, and 0.9 × (the
	// pod's memory limit − the sidecar's), told through the variables.
	pl, _ := deployment(t, "pod-level.yaml")
	podCPU := pl.Spec.Template.Spec.Resources.Limits.Cpu()
	podMem := pl.Spec.Template.Spec.Resources.Limits.Memory().Value()
	sideMem := pl.Spec.Template.Spec.Containers[1].Resources.Limits.Memory().Value()
	podFit := int64(0.9 * float64(podMem-sideMem))
	assert.Contains(t, text, "GOMAXPROCS="+strconv.Itoa(int(math.Ceil(float64(podCPU.MilliValue())/1000)))+` GOMEMLIMIT="`+
		strconv.FormatInt(podFit, 10)+" ("+mib(podFit)+`)" num_cpu=8 env_FITGO_MEMORY_LIMIT=`+strconv.FormatInt(podMem, 10)+
		" env_FITGO_CPU_LIMIT="+strconv.FormatInt(podCPU.MilliValue(), 10)+"m env_FITGO=reserve="+strconv.FormatInt(sideMem, 10)+
		" cpu_limit=none memory_limit=none")
	assert.Contains(t, text, "GOMAXPROCS.source=$FITGO_CPU_LIMIT")
	assert.Contains(t, text, "GOMEMLIMIT.source=$FITGO_MEMORY_LIMIT")

	// After the README's resize to 3 CPUs and 512Mi.
	resized := float64(512 << 20)
	after := int64(0.9 * resized)
	assert.Contains(t, text, `"cpu":"3","memory":"512Mi"`)
	assert.Contains(t, text, "`GOMAXPROCS=3`")
	assert.Contains(t, text, `GOMEMLIMIT="`+strconv.FormatInt(after, 10)+" ("+mib(after)+`)"`)
}

// TestExampleImageBuild runs the build command of examples/kubernetes/Dockerfile
// here, as the image build would, and runs the static binary once.
func TestExampleImageBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is a Linux ELF file")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	b, err := os.ReadFile(filepath.Join(examplesDir, "Dockerfile"))
	require.NoError(t, err)
	var cmd string
	var joined strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") {
			continue
		}
		if x, ok := strings.CutSuffix(l, `\`); ok {
			joined.WriteString(x + " ")
			continue
		}
		joined.WriteString(l)
		if in := joined.String(); strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build") {
			f := strings.Fields(strings.TrimPrefix(in, "RUN "))
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				f = f[1:]
			}
			cmd = strings.Join(f, " ")
		}
		joined.Reset()
	}
	require.NotEmpty(t, cmd, "a RUN with go build")
	assert.Contains(t, string(b), `ENTRYPOINT ["/app"]`)
	out := t.TempDir()
	cmd = strings.ReplaceAll(cmd, "/out/", out+"/")
	build := exec.Command("sh", "-c", cmd)
	build.Dir = filepath.Join(examplesDir, "..", "..")
	o, err := build.CombinedOutput()
	require.NoError(t, err, "%s\n%s", cmd, o)

	bin := filepath.Join(out, "app")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "dynamically linked")
	}
	run := exec.Command(bin)
	run.Env = []string{"FITGO=off"} // report only, whatever this machine's limits
	o, err = run.CombinedOutput()
	require.NoError(t, err, "%s", o)
	assert.Regexp(t, `msg=runtime GOMAXPROCS=\d+ GOMEMLIMIT=\S+ num_cpu=\d+ .*cpu_limit=`, string(o))
}
