package vmtest

import (
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Host is what booting a guest needs from the host.
type Host struct {
	QEMU    string // qemu-system-x86_64
	Kernel  string // the kernel image
	Busybox string // a statically linked busybox
}

// CacheDir is the default kernel cache, outside the repository:
// fitgo/vmtest in the user's cache directory ($XDG_CACHE_HOME or ~/.cache),
// where fetch-kernel.sh puts the kernel; FITGO_VMTEST_CACHE overrides it.
func CacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "fitgo", "vmtest")
}

// LookupHost finds qemu, the kernel and busybox, honouring the environment
// variables described in the package documentation. cacheDir is the default
// kernel cache directory (CacheDir). Each missing piece adds a line to missing that says
// how to get it.
func LookupHost(cacheDir string) (h Host, missing []string) {
	if dir := os.Getenv("FITGO_VMTEST_CACHE"); dir != "" {
		cacheDir = dir
	}

	qemu := os.Getenv("FITGO_VMTEST_QEMU")
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	if p, err := exec.LookPath(qemu); err != nil {
		missing = append(missing, fmt.Sprintf("%s not found (apt-get install qemu-system-x86, or set FITGO_VMTEST_QEMU)", qemu))
	} else {
		h.QEMU = p
	}

	busybox := os.Getenv("FITGO_VMTEST_BUSYBOX")
	if busybox == "" {
		busybox = "busybox"
	}
	if p, err := exec.LookPath(busybox); err != nil {
		missing = append(missing, fmt.Sprintf("%s not found (apt-get install busybox-static, or set FITGO_VMTEST_BUSYBOX)", busybox))
	} else if err := checkStatic(p); err != nil {
		missing = append(missing, fmt.Sprintf("%v (apt-get install busybox-static, or set FITGO_VMTEST_BUSYBOX)", err))
	} else {
		h.Busybox = p
	}

	kernel := os.Getenv("FITGO_VMTEST_KERNEL")
	if kernel == "" {
		kernel = filepath.Join(cacheDir, "vmlinuz")
	}
	if _, err := os.Stat(kernel); err != nil {
		missing = append(missing, fmt.Sprintf("no kernel at %s (run internal/rig/vmtest/fetch-kernel.sh, or set FITGO_VMTEST_KERNEL)", kernel))
	} else {
		h.Kernel = kernel
	}
	return h, missing
}

// checkStatic returns an error unless the ELF file at path is statically
// linked: the initramfs has no dynamic loader and no libraries.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is not an x86-64 program", path)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}

//go:embed guest/*.sh
var guestScripts embed.FS

// NewInitramfs returns the guest's root file system: busybox with a symbolic
// link for each of its applets in /bin, /init and the scenario scripts in
// /scenarios, the mount points /proc, /sys, /dev and /tmp, and the programs
// (name in /bin → host path) given in progs, which must be statically linked.
func NewInitramfs(busybox string, progs map[string]string) (*Initramfs, error) {
	r := &Initramfs{}
	for _, dir := range []string{"bin", "dev", "proc", "sys", "tmp", "scenarios"} {
		r.AddDir(dir, 0o755)
	}
	r.AddCharDev("dev/console", 0o600, 5, 1)

	if err := r.AddFileFrom("bin/busybox", 0o755, busybox); err != nil {
		return nil, err
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			r.AddSymlink("bin/"+applet, "busybox")
		}
	}

	for _, name := range slices.Sorted(maps.Keys(progs)) {
		src := progs[name]
		if err := checkStatic(src); err != nil {
			return nil, err
		}
		if err := r.AddFileFrom("bin/"+name, 0o755, src); err != nil {
			return nil, err
		}
	}

	scripts, err := fs.Glob(guestScripts, "guest/*.sh")
	if err != nil || len(scripts) == 0 {
		return nil, errors.Join(errors.New("no guest scripts embedded"), err)
	}
	for _, name := range scripts {
		data, err := guestScripts.ReadFile(name)
		if err != nil {
			return nil, err
		}
		base := filepath.Base(name)
		if base == "init.sh" {
			r.AddFile("init", 0o755, data)
		} else {
			r.AddFile("scenarios/"+base, 0o644, data)
		}
	}
	return r, nil
}
