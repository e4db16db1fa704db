package cluster

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fitgo/fitgo/bench/internal/variant"
)

// dockerfile returns bench/Dockerfile's instructions, continuation lines
// joined and comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" && cur.Len() == 0 {
			continue
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// buildCommand is the shell command of the Dockerfile's RUN that builds the
// binaries, without the RUN flags.
func buildCommand(t *testing.T) string {
	t.Helper()
	for _, in := range dockerfile(t) {
		if strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build") {
			f := strings.Fields(strings.TrimPrefix(in, "RUN "))
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				f = f[1:]
			}
			return strings.Join(f, " ")
		}
	}
	t.Fatal("no RUN with go build in bench/Dockerfile")
	return ""
}

func TestDockerfileMatchesTheRunner(t *testing.T) {
	ins := dockerfile(t)
	var goVersion string
	for _, in := range ins {
		if v, ok := strings.CutPrefix(in, "ARG GO_VERSION="); ok {
			goVersion = v
		}
	}
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	require.NotNil(t, m)
	assert.Equal(t, string(m[1]), goVersion, "the golang image's version follows bench/go.mod's go line")

	assert.Contains(t, ins, "COPY --from=build /out/ "+ImageDir+"/", "the runner runs /bench/<variant binary>")
	assert.Contains(t, ins, "FROM scratch", "a minimal final image")
	assert.Contains(t, ins, "USER 65532:65532", "the pods' runAsUser")
	cmd := buildCommand(t)
	assert.Contains(t, cmd, "CGO_ENABLED=0", "static binaries for a scratch image")
	assert.Contains(t, cmd, "./cmd/...", "every variant")
}

// TestDockerfileBuild runs the Dockerfile's build command here, as the image
// build would (no Docker engine needed), and checks that every variant's
// binary is there, static, and runs.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every variant")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binaries are Linux ELF files")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	cmd := buildCommand(t)
	out := t.TempDir()
	cmd = strings.ReplaceAll(cmd, "/out/", out+"/")
	build := exec.Command("sh", "-c", cmd)
	build.Dir = "../../.." // the build context: the repository root
	build.Env = append(os.Environ(), "PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s\n%s", cmd, b)

	static := func(bin string) bool {
		if !assert.FileExists(t, bin) {
			return false
		}
		f, err := elf.Open(bin)
		require.NoError(t, err)
		defer f.Close()
		for _, p := range f.Progs {
			assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s is dynamically linked", bin)
		}
		libs, _ := f.ImportedLibraries()
		assert.Empty(t, libs, bin)
		return true
	}
	// The shared scenario's sidecar, and the launcher of its coprocess
	// layout (the image has no shell), with the flags the manifests pass.
	for bin, flags := range map[string][]string{
		variant.Sidecar.Binary(): {"-mib", "-listen"},
		"coprocess":              {"-sidecar", "-mib"},
	} {
		if !static(filepath.Join(out, bin)) {
			continue
		}
		help, _ := exec.Command(filepath.Join(out, bin), "-h").CombinedOutput()
		for _, f := range flags {
			assert.Contains(t, string(help), "  "+f+" ", "%s has %s", bin, f)
		}
	}
	for _, v := range variant.All {
		bin := filepath.Join(out, v.Binary())
		if !static(bin) {
			continue
		}

		help, err := exec.Command(bin, "-h").CombinedOutput()
		assert.NoError(t, err, "%s -h: %s", v.Name, help)
		assert.Contains(t, string(help), "-report-every", "%s has the flag the resize scenario needs", v.Name)
	}
}

// TestDockerfileDownloadsWhatTheVariantsImport checks the Dockerfile's go
// mod download against the modules the variants import, so that the cached
// layer holds all of them (and nothing of the harness's).
func TestDockerfileDownloadsWhatTheVariantsImport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	var listed []string
	for _, in := range dockerfile(t) {
		if rest, ok := strings.CutPrefix(in, "RUN cd bench && go mod download "); ok {
			listed = strings.Fields(rest)
		}
	}
	require.NotEmpty(t, listed, "no RUN cd bench && go mod download in bench/Dockerfile")
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "../../cmd/...").Output()
	require.NoError(t, err)
	var want []string
	for _, m := range strings.Fields(string(out)) {
		if !strings.HasPrefix(m, "github.com/fitgo/fitgo") && !slices.Contains(want, m) {
			want = append(want, m)
		}
	}
	assert.ElementsMatch(t, want, listed)
}
