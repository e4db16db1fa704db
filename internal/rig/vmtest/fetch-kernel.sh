#!/bin/sh
# fetch-kernel.sh downloads the Debian cloud kernel that the vm tests boot and
# extracts it into the cache directory. It never installs a kernel package.
#
# Usage: internal/rig/vmtest/fetch-kernel.sh
#
# The cache directory is $FITGO_VMTEST_CACHE, or fitgo/vmtest in the user's
# cache directory ($XDG_CACHE_HOME, or ~/.cache): outside the repository. On success it holds vmlinuz (a symlink to the extracted kernel) and
# kernel-version. Running the script again when the kernel of the current
# linux-image-cloud-amd64 candidate is already there does nothing.
#
# Needs apt-get, apt-cache and dpkg-deb (any Debian or Ubuntu machine with the
# Debian archive in its sources). Run "apt-get update" first on a fresh machine;
# the script runs it itself when apt does not know the meta package.
set -eu

meta=linux-image-cloud-amd64
cache=${FITGO_VMTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fitgo/vmtest}

if ! apt-cache show "$meta" >/dev/null 2>&1; then
	apt-get update
fi

# The meta package depends on exactly one versioned kernel package, e.g.
# "linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3)".
metaver=$(apt-cache policy "$meta" | awk '$1 == "Candidate:" { print $2 }')
if [ -z "$metaver" ] || [ "$metaver" = "(none)" ]; then
	echo "fetch-kernel.sh: apt has no candidate for $meta" >&2
	exit 1
fi

dir=$cache/kernel-$meta-$metaver
if [ -f "$dir/done" ] && [ -e "$cache/vmlinuz" ]; then
	echo "fetch-kernel.sh: $(cat "$cache/kernel-version") already in $cache"
	exit 0
fi

rm -rf "$dir"
mkdir -p "$dir/debs"
cd "$dir/debs"
# apt-get download warns when the _apt user cannot write here; the download
# itself works, so keep its output short.
apt-get download "$meta=$metaver" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
metadeb=$(ls ./"${meta}"_*.deb)
dep=$(dpkg-deb -f "$metadeb" Depends | sed 's/[,|].*//' | awk '{ print $1 }')
case $dep in
linux-image-*) ;;
*)
	echo "fetch-kernel.sh: unexpected dependency of $meta: $dep" >&2
	exit 1
	;;
esac
apt-get download "$dep" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
kdeb=$(ls ./"${dep}"_*.deb)
dpkg-deb -x "$kdeb" "$dir/root"

kernel=$(ls "$dir"/root/boot/vmlinuz-*)
release=${kernel##*/vmlinuz-}
# Keep the config (to check the kernel's features) and drop the modules: the
# tests need only built-in features (serial console, cgroup v1 and v2).
rm -rf "$dir/root/lib" "$dir/root/usr" "$dir/debs"

# Relative links, so that the cache directory can be moved or mounted elsewhere.
rel=${dir#"$cache"/}
ln -sfn "$rel/root/boot/vmlinuz-$release" "$cache/vmlinuz"
ln -sfn "$rel/root/boot/config-$release" "$cache/config"
printf '%s %s\n' "$dep" "$release" >"$cache/kernel-version"
touch "$dir/done"
echo "fetch-kernel.sh: $dep ($release) in $cache"
