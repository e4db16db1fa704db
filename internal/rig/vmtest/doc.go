// Package vmtest checks fitgo against the files of a real Linux kernel: its
// tests boot a Debian cloud kernel in qemu (TCG, 4 vCPUs) with a generated
// initramfs holding busybox, a /init script and probe programs built from this
// repository, set up cgroups in the guest (cgroup v2 in one boot, pure cgroup
// v1 in another), run the probes inside them and parse what the probes print
// on the serial console.
//
// Running the tests needs qemu-system-x86_64, a static busybox and the kernel:
//
//	apt-get install qemu-system-x86 busybox-static
//	internal/rig/vmtest/fetch-kernel.sh
//	go test ./internal/rig/vmtest/
//
// Without them the tests skip and say what is missing; with FITGO_VMTEST=require
// a missing piece fails the tests instead (CI sets it). FITGO_VMTEST=skip, or
// -short without FITGO_VMTEST=require, skips the boots. The two boots (cgroup
// v2, and pure cgroup v1 then hybrid) run in parallel: about 12 s on an idle
// two-core machine, 40 s on a heavily loaded one. Other variables:
//
//	FITGO_VMTEST_CACHE    absolute path of the kernel cache (default $XDG_CACHE_HOME/fitgo/vmtest or ~/.cache/fitgo/vmtest)
//	FITGO_VMTEST_KERNEL   a kernel image to boot instead of $FITGO_VMTEST_CACHE/vmlinuz
//	FITGO_VMTEST_QEMU     the qemu binary (default qemu-system-x86_64 in PATH)
//	FITGO_VMTEST_BUSYBOX  a static busybox (default busybox in PATH)
//	FITGO_VMTEST_CONSOLE  a directory to save each boot's console output in
//
// The scenarios are in guest/v2.sh and guest/v1.sh, the programs they run in
// probe/: plain (no fitgo: the Go runtime's own choice, and small tools),
// explicit (cgroup.Read, cgroup.Watcher.Stats, maxprocs.Apply) and blank (the
// blank import and its refresh loop), and prom, the Prometheus collector's
// program, built in its own module (fitgoprom/internal/promprobe). The package's non-test code builds the
// initramfs (a newc cpio archive written in Go), runs qemu under a deadline and
// parses the console.
package vmtest
