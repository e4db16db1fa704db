package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Machine describes a qemu guest booted from a kernel image and an initramfs,
// with its serial console as the only device. It uses TCG, the software
// emulator, so it runs where KVM does not.
type Machine struct {
	QEMU      string   // qemu-system-x86_64 binary
	Kernel    string   // bzImage to boot
	Initramfs string   // cpio archive given with -initrd
	CPUs      int      // number of vCPUs; 0 means 1
	MemoryMiB int      // guest memory; 0 means 512
	Cmdline   []string // kernel command line parameters besides the console's
	Devices   []string // more qemu arguments, such as a network device
}

// Args returns qemu's command line arguments.
func (m Machine) Args() []string {
	cpus, mem := max(m.CPUs, 1), m.MemoryMiB
	if mem == 0 {
		mem = 512
	}
	// console=ttyS0: the guest's console is the first serial port, which
	// -serial stdio connects to qemu's standard output. panic=-1 reboots at
	// once on a panic (for example when /init dies), and -no-reboot turns any
	// reboot into qemu's exit, so a broken guest ends the run. no_timer_check:
	// on a busy host the emulated timer can miss the kernel's boot-time check,
	// which then panics ("IO-APIC + timer doesn't work").
	cmdline := append([]string{"console=ttyS0", "panic=-1", "quiet", "no_timer_check"}, m.Cmdline...)
	return append([]string{
		"-accel", "tcg",
		"-smp", strconv.Itoa(cpus),
		"-m", strconv.Itoa(mem),
		"-nodefaults", "-no-user-config",
		"-display", "none", "-monitor", "none", "-serial", "stdio",
		"-no-reboot",
		"-kernel", m.Kernel,
		"-initrd", m.Initramfs,
		"-append", strings.Join(cmdline, " "),
	}, m.Devices...)
}

// Run boots the machine and copies its console output to console until qemu
// exits. When ctx ends first, Run kills qemu and returns ctx's error. A qemu
// that exits with a non-zero status is an error too.
func (m Machine) Run(ctx context.Context, console io.Writer) error {
	cmd := exec.CommandContext(ctx, m.QEMU, m.Args()...)
	var stderr bytes.Buffer
	cmd.Stdin = nil // /dev/null: qemu must not touch the test's terminal
	cmd.Stdout = console
	cmd.Stderr = &stderr
	// CommandContext kills qemu when ctx ends; WaitDelay bounds the wait for
	// the output pipes after that.
	cmd.WaitDelay = 5 * time.Second
	killWithParent(cmd)
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("qemu killed: %w (stderr: %s)", ctx.Err(), strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("qemu: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
		}
		return fmt.Errorf("qemu: %w", err)
	}
	return nil
}
