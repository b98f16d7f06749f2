#!/bin/sh
# Build the directory of weave's Docker v2 managed plugin:
#   sh plugin/docker/v2/build.sh WEAVER OUTDIR
#   docker plugin create weave-plugin:dev OUTDIR && docker plugin enable weave-plugin:dev
# OUTDIR gets config.json (next to this script) and rootfs/: the weaver
# binary WEAVER, iptables-nft with its shared libraries and extensions, and
# the directories weaver writes to. No registry and no base image: the
# files come from this host (make docker-plugin).
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 WEAVER OUTDIR" >&2
	exit 2
fi
weaver=$1
out=$2
here=$(dirname "$0")
[ -x "$weaver" ] || { echo "$0: $weaver is not an executable weaver (make build)" >&2; exit 1; }
xt=$(command -v xtables-nft-multi || true)
[ -n "$xt" ] || { echo "$0: xtables-nft-multi not found: apt-get install iptables" >&2; exit 1; }
xt=$(readlink -f "$xt")

rootfs=$out/rootfs
rm -rf "$rootfs"
for d in proc sys dev tmp etc run/docker/plugins var/lib/weave var/run/weave usr/sbin; do
	mkdir -p "$rootfs/$d"
done

# copy FILE DEST: FILE at rootfs/DEST, and every library ldd names for it
# at its own path under rootfs.
copy() {
	mkdir -p "$rootfs$(dirname "$2")"
	cp -L "$1" "$rootfs$2"
	# Static binaries: ldd fails, nothing to add.
	for lib in $(ldd "$1" 2>/dev/null | sed -n 's/.*[[:space:]]\(\/[^[:space:]]*\) (0x.*/\1/p'); do
		[ -e "$rootfs$lib" ] && continue
		mkdir -p "$rootfs$(dirname "$lib")"
		cp -L "$lib" "$rootfs$lib"
	done
}

copy "$weaver" /weaver
copy "$xt" /usr/sbin/xtables-nft-multi
for l in iptables iptables-save iptables-restore iptables-nft iptables-nft-save iptables-nft-restore; do
	ln -s xtables-nft-multi "$rootfs/usr/sbin/$l"
done
for ext in /usr/lib/*/xtables/*.so; do
	[ -e "$ext" ] && copy "$ext" "$ext"
done
cp "$here/config.json" "$out/config.json"
echo "$out: docker plugin create <name> $out"
