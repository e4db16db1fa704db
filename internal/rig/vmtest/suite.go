package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Require returns the host's pieces for a test of another package that boots
// a guest. It follows the rig's switches: FITGO_VMTEST=skip skips the test,
// -short skips it unless FITGO_VMTEST=require, and a missing piece skips it,
// or fails it under FITGO_VMTEST=require.
func Require(t *testing.T) Host {
	t.Helper()
	mode := os.Getenv("FITGO_VMTEST")
	switch {
	case mode == "skip":
		t.Skip("FITGO_VMTEST=skip")
	case testing.Short() && mode != "require":
		t.Skip("boots qemu; skipped with -short (FITGO_VMTEST=require runs it anyway)")
	}
	host, missing := LookupHost(CacheDir())
	if len(missing) > 0 {
		msg := "the vm test needs:\n\t" + strings.Join(missing, "\n\t")
		if mode == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return host
}

// RunSuite boots a guest with cpus CPUs and memMiB MiB whose /init runs
// script as the suite name, with progs (name in /bin → host path, linked
// statically), and returns its console once the guest has finished with no
// failed step. It fails the test otherwise.
func RunSuite(t *testing.T, h Host, name, script string, progs map[string]string, cpus, memMiB int) string {
	t.Helper()
	r, err := NewInitramfs(h.Busybox, progs)
	require.NoError(t, err)
	r.AddFile("scenarios/"+name+".sh", 0o644, []byte(script))
	initramfs := filepath.Join(t.TempDir(), "initramfs.cpio")
	f, err := os.Create(initramfs)
	require.NoError(t, err)
	_, err = r.WriteTo(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	m := Machine{
		QEMU: h.QEMU, Kernel: h.Kernel, Initramfs: initramfs,
		CPUs: cpus, MemoryMiB: memMiB, Cmdline: []string{"fitgo.suite=" + name},
	}
	// A hung guest goes quiet; how long a whole suite takes depends on the
	// host's load. qemu is stopped after quietCutoff without console output,
	// or after an hour.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	quiet := time.AfterFunc(quietCutoff, func() { cancel(fmt.Errorf("the guest printed nothing for %v", quietCutoff)) })
	defer quiet.Stop()
	var out bytes.Buffer
	start := time.Now()
	err = m.Run(ctx, &watchdog{&out, quiet})
	t.Logf("qemu ran %v", time.Since(start).Round(time.Second))
	console := out.String()
	require.NoError(t, err, "%v\n%s", context.Cause(ctx), console)
	c, err := ParseConsole(out.Bytes())
	require.NoError(t, err, console)
	require.True(t, c.Done, "the guest did not finish:\n%s", console)
	require.Empty(t, c.Errors, console)
	return console
}

// BuildStatic builds pkgs of the module in dir ("" or "." for the current
// directory) into out as static linux/amd64 programs that a guest runs: out
// is the file of one package, or a directory ending in a separator for
// several.
func BuildStatic(dir, out string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, b)
	}
	return nil
}

// quietCutoff is how long a guest may print nothing before it counts as hung
// (the bench suite prints after each run, minutes apart on a busy host).
const quietCutoff = 5 * time.Minute

// watchdog writes the console and restarts t at every write.
type watchdog struct {
	w io.Writer
	t *time.Timer
}

func (d *watchdog) Write(p []byte) (int, error) {
	d.t.Reset(quietCutoff)
	return d.w.Write(p)
}
