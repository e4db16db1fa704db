#!/bin/sh
# /init of the vm tests' initramfs. It mounts the basic file systems, runs the
# suite named by "fitgo.suite=NAME" on the kernel command line
# (/scenarios/NAME.sh, with the helpers of /scenarios/lib.sh), prints
# FITGO-DONE and powers the machine off. Results go to the console as
# "FITGO-RESULT {json}" lines, failed steps as "FITGO-ERROR message" lines.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp

suite=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case $arg in
	fitgo.suite=*) suite=${arg#fitgo.suite=} ;;
	esac
done

# shellcheck source=/dev/null # lib.sh, checked on its own
. /scenarios/lib.sh
if [ -n "$suite" ] && [ -f "/scenarios/$suite.sh" ]; then
	step "$suite/start"
	# shellcheck disable=SC1090 # v1.sh or v2.sh
	. "/scenarios/$suite.sh"
	step "$suite/end"
else
	fail "no suite: fitgo.suite=$suite"
fi

echo FITGO-DONE
sync
poweroff -f
# Without ACPI power-off, a reboot ends qemu too (it runs with -no-reboot).
reboot -f
