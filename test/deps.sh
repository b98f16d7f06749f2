#!/bin/sh
# deps.sh - install the programs the tests, demo and bench need, with
# apt-get, only when one is missing (a fast no-op otherwise).
set -eu

# command-on-PATH:debian-package
NEEDED="ip:iproute2 iptables:iptables ping:iputils-ping tcpdump:tcpdump iperf3:iperf3 ethtool:ethtool killall:psmisc"

missing=""
for pair in $NEEDED; do
	cmd=${pair%%:*}
	pkg=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

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
