package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Guest shape: the scenarios expect 4 vCPUs (the affinity count that caps
// GOMAXPROCS) and memory well above the largest memory limit they set (512 MiB).
const (
	guestCPUs      = 4
	guestMemoryMiB = 1536
	// bootTimeout bounds one boot, scenarios included. A boot takes about 4 s
	// here and the longest suite about 20 s more.
	bootTimeout = 3 * time.Minute
)

// probes are the programs put in the guest's /bin, built from these packages.
var probes = map[string]string{
	"plain": "./probe/plain",
}

var (
	workDir string // removed by TestMain

	setupOnce sync.Once
	setupHost Host
	setupInit string // path of the initramfs
	setupErr  error
	setupMiss []string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fitgo-vmtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mode is FITGO_VMTEST: "require" turns a missing host piece into a failure,
// "skip" skips the boots.
func mode() string { return os.Getenv("FITGO_VMTEST") }

// setup finds the host's pieces and builds the probes and the initramfs once
// for all tests. It skips the test when a piece is missing, or fails it under
// FITGO_VMTEST=require.
func setup(t *testing.T) (Host, string) {
	t.Helper()
	switch {
	case mode() == "skip":
		t.Skip("FITGO_VMTEST=skip")
	case testing.Short() && mode() != "require":
		t.Skip("boots qemu; skipped with -short (FITGO_VMTEST=require runs it anyway)")
	}
	setupOnce.Do(func() {
		setupHost, setupMiss = LookupHost(".cache")
		if len(setupMiss) > 0 {
			return
		}
		setupInit, setupErr = buildInitramfs(setupHost.Busybox)
	})
	if len(setupMiss) > 0 {
		msg := "vm tests need:\n\t" + strings.Join(setupMiss, "\n\t")
		if mode() == "require" {
			t.Fatal(msg + "\n(FITGO_VMTEST=require)")
		}
		t.Skip(msg + "\n(FITGO_VMTEST=require makes this a failure)")
	}
	require.NoError(t, setupErr)
	return setupHost, setupInit
}

// buildInitramfs builds the probes with CGO_ENABLED=0 and writes the
// initramfs into workDir.
func buildInitramfs(busybox string) (string, error) {
	bin := filepath.Join(workDir, "bin")
	progs := map[string]string{}
	for name, pkg := range probes {
		out := filepath.Join(bin, name)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		progs[name] = out
	}
	r, err := NewInitramfs(busybox, progs)
	if err != nil {
		return "", err
	}
	path := filepath.Join(workDir, "initramfs.cpio")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := r.WriteTo(f); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// boot runs a suite in a fresh guest and returns its parsed console. Each
// FITGO-ERROR line fails the test; so does a guest that did not finish.
func boot(t *testing.T, suite string) *Console {
	t.Helper()
	host, initramfs := setup(t)
	m := Machine{
		QEMU:      host.QEMU,
		Kernel:    host.Kernel,
		Initramfs: initramfs,
		CPUs:      guestCPUs,
		MemoryMiB: guestMemoryMiB,
		Cmdline:   []string{"fitgo.suite=" + suite},
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	var out bytes.Buffer
	var console io.Writer = &out
	if dir := os.Getenv("FITGO_VMTEST_CONSOLE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, suite+".console"))
		require.NoError(t, err)
		defer f.Close()
		console = io.MultiWriter(&out, f)
	}
	start := time.Now()
	err := m.Run(ctx, console)
	t.Logf("suite %s: qemu ran %v", suite, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, out.Bytes())
	}
	c, err := ParseConsole(out.Bytes())
	require.NoError(t, err, "console:\n%s", out.Bytes())
	for _, e := range c.Errors {
		t.Errorf("guest: %s", e)
	}
	if !c.Done {
		t.Fatalf("the guest did not finish its suite; console:\n%s", out.Bytes())
	}
	if t.Failed() {
		t.Logf("console:\n%s", out.Bytes())
	}
	return c
}

// one decodes the only result of scenario and probe into v.
func one(t *testing.T, c *Console, scenario, probe string, v any) {
	t.Helper()
	rs := c.Find(scenario, probe)
	require.Len(t, rs, 1, "results of scenario %s, probe %s", scenario, probe)
	t.Logf("%s %s: %s", scenario, probe, rs[0].JSON)
	require.NoError(t, json.Unmarshal(rs[0].JSON, v))
}

// runtimeResult is what "plain runtime" prints.
type runtimeResult struct {
	GOMAXPROCS     int    `json:"gomaxprocs"`
	GOMEMLIMIT     int64  `json:"gomemlimit"`
	NumCPU         int    `json:"numcpu"`
	DefaultGODEBUG string `json:"default_godebug"`
}

// filesResult is what "plain files" prints.
type filesResult struct {
	Files  map[string]string `json:"files"`
	Errors map[string]string `json:"errors"`
}
