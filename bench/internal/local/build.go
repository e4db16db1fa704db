package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fitgo/fitgo/bench/internal/variant"
)

// modulePath is the bench module's path.
const modulePath = "github.com/fitgo/fitgo/bench"

// findModule returns the bench module's directory: src if set, else the first
// of the working directory, its ancestors, and their bench/ subdirectories
// whose go.mod declares the bench module.
func findModule(src string) (string, error) {
	isBench := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return false
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		return strings.TrimSpace(strings.TrimPrefix(string(line), "module")) == modulePath
	}
	if src != "" {
		if !isBench(src) {
			return "", fmt.Errorf("-src %s: no go.mod of %s there", src, modulePath)
		}
		return src, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		for _, d := range []string{dir, filepath.Join(dir, "bench")} {
			if isBench(d) {
				return d, nil
			}
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("cannot find the bench module (%s) from %s: run from the repository, or pass -src", modulePath, wd)
		}
	}
}

// goTool returns the go command: from PATH, else the toolchain this program
// was built with (sudo often resets PATH).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// build compiles the variants' binaries into dir and returns their paths by
// variant name, with cgo when cgo is true (static binaries otherwise). It
// always builds the untuned variant too, which calibrates the work.
func build(ctx context.Context, src, dir string, vs []variant.Variant, cgo bool, log io.Writer) (map[string]string, error) {
	mod, err := findModule(src)
	if err != nil {
		return nil, err
	}
	want := append([]variant.Variant{}, vs...)
	if u, _ := variant.Lookup("untuned"); !containsVariant(want, u.Name) {
		want = append(want, u)
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	bins := map[string]string{}
	n := 0
	for _, v := range want {
		if !slices.Contains(args, "./"+v.Cmd) { // variants may share a binary
			args = append(args, "./"+v.Cmd)
			n++
		}
		bins[v.Name] = filepath.Join(dir, v.Binary())
	}
	fmt.Fprintf(log, "building %d workload binaries in %s ...\n", n, mod)
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = mod
	cmd.Env = append(cleanEnv(os.Environ()), "CGO_ENABLED=0")
	if cgo {
		cmd.Env[len(cmd.Env)-1] = "CGO_ENABLED=1"
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bins, nil
}

// prebuilt returns the paths of the variants' binaries in dir, checking that
// they exist; the untuned binary is needed too when the work is calibrated.
func prebuilt(dir string, vs []variant.Variant, calibrating bool) (map[string]string, error) {
	want := append([]variant.Variant{}, vs...)
	if u, _ := variant.Lookup("untuned"); calibrating && !containsVariant(want, u.Name) {
		want = append(want, u)
	}
	bins := map[string]string{}
	for _, v := range want {
		p := filepath.Join(dir, v.Binary())
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("-bin-dir: the %s variant's binary: %w", v.Name, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("-bin-dir: %s is not an executable file", p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		bins[v.Name] = abs
	}
	return bins, nil
}

func containsVariant(vs []variant.Variant, name string) bool {
	return slices.ContainsFunc(vs, func(v variant.Variant) bool { return v.Name == name })
}

// calibrate runs the untuned binary's -calibrate three times, outside the
// benchmark cgroups, and returns the highest iteration count (the least
// disturbed measurement).
func calibrate(ctx context.Context, bin string, work time.Duration) (int, error) {
	best := 0
	for range 3 {
		cmd := exec.CommandContext(ctx, bin, "-calibrate", "-work", work.String())
		cmd.Env = cleanEnv(os.Environ())
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("calibrating the work: %v", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("calibrating the work: unexpected output %q", out)
		}
		best = max(best, n)
	}
	return best, nil
}

// goVersion returns `go version`'s version of the toolchain that built the
// binaries, or this program's runtime version.
func goVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, goTool(), "env", "GOVERSION").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return runtime.Version()
}

// runtimeEnv are the environment variables that change the Go runtime's or the
// variants' behaviour; the runner clears them so that each variant starts from
// its own defaults.
var runtimeEnv = []string{"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "AUTOMEMLIMIT", "FITGO", cgexecEnv}

// cleanEnv returns env without runtimeEnv variables (and FITGO_*).
func cleanEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(runtimeEnv, k) || strings.HasPrefix(k, "FITGO_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// lineWriter calls fn for each complete line written to it.
type lineWriter struct {
	buf bytes.Buffer
	fn  func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(w.buf.Next(i + 1))
	}
}

// Flush passes a last unterminated line to fn.
func (w *lineWriter) Flush() {
	if w.buf.Len() > 0 {
		w.fn(w.buf.Bytes())
		w.buf.Reset()
	}
}
