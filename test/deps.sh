#!/bin/sh
# deps.sh - install the programs the tests, demo and bench need, with
# apt-get (and go install for Go tools), only when one is missing (a fast
# no-op otherwise).
set -eu

# command-on-PATH:debian-package
NEEDED="ip:iproute2 iptables:iptables ping:iputils-ping tcpdump:tcpdump iperf3:iperf3 ethtool:ethtool killall:psmisc shellcheck:shellcheck"
# CNI tests (plugin/cni, test/e2e): podman 4.3 with runc, a static busybox
# for the test image, nsenter; files below are checked by path.
NEEDED="$NEEDED podman:podman runc:runc busybox:busybox-static nsenter:util-linux"
# NetworkPolicy tests (npc/nft) list our table with nft.
NEEDED="$NEEDED nft:nftables"
# The status page's browser tests (test/e2e TestStatusPage*) drive Debian's Chromium.
NEEDED="$NEEDED chromium:chromium"
# The real cluster (test/cluster): containerd 1.6 with its CRI plugin, and
# for the weave-kube image (make image) kmod's modprobe.
NEEDED="$NEEDED containerd:containerd ctr:containerd modprobe:kmod"
NEEDED_FILES="/usr/lib/cni/portmap:containernetworking-plugins"

# apt_install installs the Debian packages whose command (or file) is missing.
apt_install() {
	missing=""
	for pair in $NEEDED; do
		cmd=${pair%%:*}
		pkg=${pair#*:}
		command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg"
	done
	for pair in $NEEDED_FILES; do
		[ -e "${pair%%:*}" ] || missing="$missing ${pair#*:}"
	done
	# The Docker e2e test imports /bin/busybox as an image: it must be static.
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing="$missing busybox-static"
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: missing:$missing; run as root (or: sudo apt-get install$missing)" >&2
		exit 1
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "deps.sh: missing:$missing and no apt-get here; install them by hand" >&2
		exit 1
	fi
	echo "deps.sh: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	apt-get install -y -qq --no-install-recommends $missing
}

# cnitool, the reference CNI client, goes into a cache dir outside the
# repo: $WEAVE_TOOLS_BIN, else ${XDG_CACHE_HOME:-$HOME/.cache}/weave-tools/bin
# (test/e2e looks there too).
install_cnitool() {
	bin=${WEAVE_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/weave-tools/bin}
	[ -x "$bin/cnitool" ] && return 0
	if ! command -v go >/dev/null 2>&1; then
		echo "deps.sh: no go on PATH; cannot install cnitool (the CNI e2e test needs it)" >&2
		return 0
	fi
	echo "deps.sh: installing cnitool into $bin"
	mkdir -p "$bin"
	GOBIN=$bin go install github.com/containernetworking/cni/cnitool@v1.3.0
}

apt_install
install_cnitool
