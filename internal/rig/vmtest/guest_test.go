package vmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookupHostMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FITGO_VMTEST_CACHE", dir)
	t.Setenv("FITGO_VMTEST_KERNEL", "")
	t.Setenv("FITGO_VMTEST_QEMU", filepath.Join(dir, "no-qemu"))
	t.Setenv("FITGO_VMTEST_BUSYBOX", filepath.Join(dir, "no-busybox"))
	h, missing := LookupHost("unused")
	assert.Equal(t, Host{}, h)
	require.Len(t, missing, 3)
	assert.Contains(t, missing[0], "apt-get install qemu-system-x86")
	assert.Contains(t, missing[1], "apt-get install busybox-static")
	assert.Contains(t, missing[2], "no kernel at "+filepath.Join(dir, "vmlinuz"))
	assert.Contains(t, missing[2], "run internal/rig/vmtest/fetch-kernel.sh")
}

func TestLookupHostFound(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "vmlinuz")
	require.NoError(t, os.WriteFile(kernel, []byte("not really"), 0o644))
	// Any static x86-64 program stands in for qemu and busybox: a Go binary
	// built without cgo is one.
	prog := filepath.Join(dir, "prog")
	require.NoError(t, BuildStatic("", prog, "./probe/plain"))

	t.Setenv("FITGO_VMTEST_CACHE", "")
	t.Setenv("FITGO_VMTEST_KERNEL", "")
	t.Setenv("FITGO_VMTEST_QEMU", prog)
	t.Setenv("FITGO_VMTEST_BUSYBOX", prog)
	h, missing := LookupHost(dir)
	assert.Empty(t, missing)
	assert.Equal(t, Host{QEMU: prog, Kernel: kernel, Busybox: prog}, h)

	t.Setenv("FITGO_VMTEST_KERNEL", prog)
	h, missing = LookupHost(dir)
	assert.Empty(t, missing)
	assert.Equal(t, prog, h.Kernel)
}

func TestCheckStatic(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	assert.Error(t, checkStatic(script))

	// Debian's coreutils are dynamically linked.
	if _, err := os.Stat("/bin/ls"); err != nil {
		t.Skip("no /bin/ls")
	}
	err := checkStatic("/bin/ls")
	require.Error(t, err)
	assert.Equal(t, "/bin/ls is dynamically linked", err.Error())
}

func TestMachineArgs(t *testing.T) {
	m := Machine{QEMU: "q", Kernel: "/k", Initramfs: "/i", CPUs: 4, MemoryMiB: 1536, Cmdline: []string{"fitgo.suite=v2"}}
	args := strings.Join(m.Args(), " ")
	for _, want := range []string{
		"-accel tcg", "-smp 4", "-m 1536", "-no-reboot", "-serial stdio", "-kernel /k", "-initrd /i",
		"console=ttyS0 panic=-1 quiet no_timer_check fitgo.suite=v2",
	} {
		assert.Contains(t, args, want)
	}
	args = strings.Join(Machine{}.Args(), " ")
	assert.Contains(t, args, "-smp 1")
	assert.Contains(t, args, "-m 512")
}
