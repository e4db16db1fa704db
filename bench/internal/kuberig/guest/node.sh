#!/bin/sh
# /init of the TestKubelet* guest: a Kubernetes node (containerd, runc and the
# kubelet) on the guest's own kernel, whose control plane runs on the host.
# The host writes the configuration files into the initramfs; this script
# mounts the file systems, brings up loopback and the qemu user network (whose
# only way out is the forward to the host's API server, see node.go), starts
# containerd, loads the images and starts the kubelet. It runs until the host
# stops qemu; containerd's and the kubelet's output goes to the console.
export PATH=/bin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# containerd's overlay snapshots need a file system with xattrs: a tmpfs.
for d in /run /tmp /var; do
	mkdir -p "$d"
	mount -t tmpfs tmpfs "$d"
done
mkdir -p /var/lib/kubelet /var/log /var/lib/containerd

# Where the boot's time goes: each phase's end on the guest's clock (seconds
# since its kernel started), which the host logs once the node is Ready.
phase() {
	echo "FITGO-NODE-PHASE $1 $(cut -d' ' -f1 /proc/uptime)"
}
phase init

fail() {
	echo "FITGO-NODE-ERROR $*"
	poweroff -f
}

# Modules in dependency order; a few passes instead of a dependency solver.
for _ in 1 2 3; do
	for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net overlay veth; do
		grep -q "^$m " /proc/modules || insmod "/modules/$m.ko" 2>/dev/null
	done
done
ip link set lo up
ip link set eth0 up || fail "no eth0"
ip addr add 10.0.2.15/24 dev eth0
hostname localhost

# The controllers the kubelet needs in the root's children.
echo "+cpuset +cpu +io +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control || fail "cgroup controllers"
phase network

containerd --config /etc/containerd/config.toml 2>&1 | sed 's/^/containerd: /' &
i=0
until ctr version >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "containerd did not start"
	sleep 0.2
done
phase containerd
for img in /images/*.tar; do
	ctr -n k8s.io images import "$img" >/dev/null || fail "ctr images import $img"
done
echo "FITGO-NODE images: $(ctr -n k8s.io images ls -q | tr '\n' ' ')"
phase images
echo "FITGO-NODE memory with the images in: $(grep MemAvailable /proc/meminfo)"

kubelet --config=/etc/kubernetes/kubelet.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig \
	--hostname-override=localhost --node-ip=10.0.2.15 --v="${KUBELET_V:-0}" 2>&1 | sed 's/^/kubelet: /' &
echo "FITGO-NODE-STARTED"
wait
fail "kubelet and containerd ended"
