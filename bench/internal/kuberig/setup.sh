#!/usr/bin/env bash
# setup.sh builds the two programs the TestAPIServer* tests run, kube-apiserver
# and etcd, into a cache directory outside the repository. It never installs
# anything system-wide and never writes into the repository.
#
# Usage: bash bench/internal/kuberig/setup.sh [node]
#
# With "node" it also builds kubelet, kube-controller-manager, kubectl (the
# kind runner drives it) and kube-scheduler, and fetches what the qemu guest of
# the TestKubelet* tests needs (docs/kubelet-rig.md).
#
# The cache directory is $FITGO_KUBETEST_CACHE, or
# ${XDG_CACHE_HOME:-$HOME/.cache}/fitgo/kubetest. On success it holds
# bin/kube-apiserver and bin/etcd (symlinks to the versioned builds) and
# versions (one "name version" line each). Running the script again when the
# builds of the current versions are there does nothing.
#
# The versions follow bench/go.mod: kube-apiserver is k8s.io/kubernetes at the
# v1.x that matches k8s.io/api's v0.x, and etcd is go.etcd.io/etcd/server/v3 at
# the version k8s.io/kubernetes requires. k8s.io/kubernetes requires its staging
# modules (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and replaces them with
# directories of its own repository; replace directives of a dependency do not
# apply, so the build module here replaces each of them with the published v0.x.
#
# Needs only Go and the Go module proxy. A cold build (empty module and build
# caches) takes minutes on two cores, most of it kube-apiserver (the README
# has the time measured); set FITGO_KUBETEST_CACHE to a kept directory on CI.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/../.." && pwd)
cache=${FITGO_KUBETEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fitgo/kubetest}

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

api=$(go list -C "$bench" -m -f '{{.Version}}' k8s.io/api)
case $api in
v0.*) k8s=v1.${api#v0.} ;;
*)
	echo "setup.sh: unexpected k8s.io/api version in bench/go.mod: $api" >&2
	exit 1
	;;
esac

# k8s.io/kubernetes's go.mod: its etcd server version and its staging modules.
kmod=$(go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
if [ ! -f "$kmod" ]; then
	echo "setup.sh: cannot download the go.mod of k8s.io/kubernetes@$k8s" >&2
	exit 1
fi
etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$kmod")
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$kmod")
if [ -z "$etcd" ] || [ ${#staging[@]} -eq 0 ]; then
	echo "setup.sh: no etcd version or no staging modules in $kmod" >&2
	exit 1
fi

mkdir -p "$cache/bin"

# build NAME VERSION PACKAGE MODULE [REPLACE...] builds PACKAGE (found in
# MODULE@VERSION) into $cache/NAME-VERSION/NAME unless it is already there, and
# points bin/NAME at it.
build() {
	local name=$1 version=$2 pkg=$3 mod=$4
	shift 4
	local dir=$cache/$name-$version
	if [ -x "$dir/$name" ] && [ -f "$dir/done" ]; then
		echo "setup.sh: $name $version already in $dir"
	else
		echo "setup.sh: building $name $version (cold: minutes)"
		local t0=$SECONDS
		rm -rf "$dir"
		mkdir -p "$dir/src"
		{
			echo "module fitgo.invalid/kubetest/$name"
			echo
			echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
			echo
			echo "require $mod $version"
			local r
			for r in "$@"; do
				echo "replace $r"
			done
		} >"$dir/src/go.mod"
		(
			cd "$dir/src"
			go get "$pkg@$version"
			go build -trimpath -ldflags="${LDFLAGS:-} -s -w" -o "$dir/$name" "$pkg"
		)
		touch "$dir/done"
		echo "setup.sh: built $name $version in $((SECONDS - t0))s"
	fi
	ln -sfn "$dir/$name" "$cache/bin/$name"
}

replaces=()
for m in "${staging[@]}"; do
	replaces+=("$m => $m $api")
done
minor=${k8s#v1.}
minor=${minor%%.*}
LDFLAGS="-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
	build kube-apiserver "$k8s" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes "${replaces[@]}"
build etcd "$etcd" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3

printf 'kube-apiserver %s\netcd %s\n' "$k8s" "$etcd" >"$cache/versions"
echo "setup.sh: kube-apiserver $k8s and etcd $etcd in $cache/bin"

[ "${1:-}" = node ] || exit 0

# ---- setup.sh node: the single-node cluster of the TestKubelet* tests ------
# The kubelet, the control plane's other two programs and kubectl, built
# like kube-apiserver; and, for the qemu guest the kubelet runs in, Debian's
# containerd, runc and CNI loopback plugin with the libraries they link, and
# the modules of the guest's kernel that its network and overlay mounts need
# (fetch-kernel.sh keeps no modules). Nothing of it is installed on the host.
for name in kubelet kube-controller-manager kubectl kube-scheduler; do
	LDFLAGS="-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		build "$name" "$k8s" "k8s.io/kubernetes/cmd/$name" k8s.io/kubernetes "${replaces[@]}"
done

vmtest=$(cd "$bench/../internal/rig/vmtest" && pwd)
sh "$vmtest/fetch-kernel.sh"
vmcache=${FITGO_VMTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fitgo/vmtest}
kpkg=$(awk '{ print $1 }' "$vmcache/kernel-version")
krel=$(awk '{ print $2 }' "$vmcache/kernel-version")

# The CNI plugins the guest takes: loopback, and ptp with host-local, which
# give a pod without hostNetwork its eth0 (a veth pair inside the guest).
cni=(loopback ptp host-local)
# The kernel modules, in the order insmod needs them: virtio-net's PCI device,
# overlay (containerd's default snapshotter) and veth (ptp).
mods=(drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci net/core/failover
	drivers/net/net_failover drivers/net/virtio_net fs/overlayfs/overlay drivers/net/veth)

# The candidate version of each Debian package; the guest's files are kept in
# a directory named after all of them and the files taken.
pkgs=(containerd runc libseccomp2 libc6 containernetworking-plugins "$kpkg")
keys=()
for p in "${pkgs[@]}"; do
	v=$(apt-cache policy "$p" | awk '$1 == "Candidate:" { print $2 }')
	if [ -z "$v" ] || [ "$v" = "(none)" ]; then
		echo "setup.sh: apt has no candidate for $p (apt-get update?)" >&2
		exit 1
	fi
	keys+=("$p=$v")
done
node=$cache/node-$(printf '%s\n' "${keys[@]}" "${cni[@]}" "${mods[@]}" | sha256sum | cut -c1-12)
if [ -f "$node/done" ]; then
	echo "setup.sh: the guest's containerd, runc and modules already in $node"
else
	rm -rf "$node"
	mkdir -p "$node/debs" "$node/x" "$node/root/bin" "$node/root/lib64" "$node/root/lib/x86_64-linux-gnu" "$node/root/opt/cni/bin" "$node/root/modules"
	(
		cd "$node/debs"
		for p in "${keys[@]}"; do
			apt-get download "$p" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
		done
		for d in ./*.deb; do
			dpkg-deb -x "$d" "$node/x"
		done
	)
	x=$node/x r=$node/root
	cp "$x/usr/bin/containerd" "$x/usr/bin/containerd-shim-runc-v2" "$x/usr/bin/ctr" "$x/usr/sbin/runc" "$r/bin/"
	for c in "${cni[@]}"; do
		cp "$x/usr/lib/cni/$c" "$r/opt/cni/bin/"
	done
	cp "$x/lib64/ld-linux-x86-64.so.2" "$r/lib64/" 2>/dev/null || cp -L "$x/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$r/lib64/"
	for l in libc.so.6 libseccomp.so.2; do
		f=$(find "$x" -name "$l" | head -n 1)
		cp -L "$f" "$r/lib/x86_64-linux-gnu/$l"
	done
	for m in "${mods[@]}"; do
		cp "$x/lib/modules/$krel/kernel/$m.ko" "$r/modules/"
	done
	printf '%s\n' "${keys[@]}" >"$node/versions"
	rm -rf "$node/debs" "$node/x"
	touch "$node/done"
fi
ln -sfn "$node" "$cache/node"
printf 'kube-controller-manager %s\nkube-scheduler %s\nkubelet %s\nkubectl %s\n' "$k8s" "$k8s" "$k8s" "$k8s" >>"$cache/versions"
echo "setup.sh: kubelet, kube-controller-manager, kubectl, kube-scheduler $k8s in $cache/bin; the guest's files in $cache/node"
