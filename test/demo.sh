#!/bin/sh
# demo.sh - three weave routers in network-namespace "hosts", encrypted
# with a password; the underlay link h1<->h3 is cut, so c1<->c3 travels
# through h2. IPAM (consensus among the three) gives c1..c3 their
# addresses. Shows pings and the routers' status, then tears everything
# down (also on failure or Ctrl-C). Needs root; run via `make demo`.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PASSWORD=${PASSWORD:-demo-password}
# namespace names: w<5 hex>-<pid>-<role>, the pattern internal/netnstest
# sweeps when the creating process is gone
P="w$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-5)-$$"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/weave-demo.XXXXXX")
NAMESPACES=""

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces); run: sudo make demo"
if [ ! -x "$ROOT/bin/weaver" ] || [ ! -x "$ROOT/bin/weaveutil" ]; then
	die "bin/weaver or bin/weaveutil missing; run: make build"
fi

nsx() { ns=$1; shift; ip netns exec "$ns" "$@"; }

# weave HOST ARGS...: run the weave script inside host namespace HOST
weave() {
	h=$1; shift
	ip netns exec "$P-$h" env WEAVE_RUN_DIR="$TMP/$h/run" WEAVE_DATA_DIR="$TMP/$h/data" \
		WEAVE_HTTP_ADDR=127.0.0.1:6784 CHECKPOINT_DISABLE=1 PATH="$ROOT/bin:$PATH" \
		sh "$ROOT/weave" "$@"
}

cleanup() {
	rc=$?
	trap - EXIT INT TERM
	say "teardown"
	for h in h1 h2 h3; do
		if [ -d "$TMP/$h" ]; then weave "$h" stop >/dev/null 2>&1 || true; fi
	done
	for ns in $NAMESPACES; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$TMP"
	if [ "$rc" -eq 0 ]; then echo "demo: OK"; else echo "demo: exit status $rc" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

addns() {
	ip netns add "$P-$1"
	NAMESPACES="$P-$1 $NAMESPACES"
	nsx "$P-$1" ip link set lo up
	nsx "$P-$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds
wait_for() {
	secs=$1; what=$2; shift 2
	i=0
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le $((secs * 4)) ] || die "timed out after ${secs}s waiting for $what"
		sleep 0.25
	done
}

established() { weave "$1" status connections | grep -q "^-> $2:6783 *established"; }
resolves() { [ "$(weave "$1" dns-lookup "$2")" = "$3" ]; }

say "underlay: bridge br0 in namespace $P-ul, hosts h1..h3 on 192.168.100.0/24"
addns ul
nsx "$P-ul" ip link add br0 type bridge
nsx "$P-ul" ip link set br0 up
for i in 1 2 3; do
	addns "h$i"
	mkdir -p "$TMP/h$i/run" "$TMP/h$i/data"
	ip link add "vh$i" netns "$P-ul" type veth peer name eth0 netns "$P-h$i"
	nsx "$P-ul" ip link set "vh$i" master br0
	nsx "$P-ul" ip link set "vh$i" up
	nsx "$P-h$i" ip addr add "192.168.100.$i/24" dev eth0
	nsx "$P-h$i" ip link set eth0 up
done

say "cutting the underlay link h1 <-> h3 (iptables DROP in both hosts)"
nsx "$P-h1" iptables -w -I INPUT -s 192.168.100.3 -j DROP
nsx "$P-h1" iptables -w -I OUTPUT -d 192.168.100.3 -j DROP
nsx "$P-h3" iptables -w -I INPUT -s 192.168.100.1 -j DROP
nsx "$P-h3" iptables -w -I OUTPUT -d 192.168.100.1 -j DROP

say "launching routers with a password (h2 first; h1 and h3 dial h2)"
for i in 2 1 3; do
	peers=""
	[ "$i" -eq 2 ] || peers=192.168.100.2
	# shellcheck disable=SC2086 # empty $peers must vanish
	name=$(weave "h$i" launch --password "$PASSWORD" --name "aa:00:00:00:00:0$i" --nickname "h$i" \
		--ipalloc-range 10.32.0.0/12 --ipalloc-init consensus=3 $peers) || die "weave launch on h$i"
	echo "h$i: peer $name"
done

say "waiting for h1 and h3 to establish their connections to h2"
wait_for 30 "h1 -> h2 established" established h1 192.168.100.2
wait_for 30 "h3 -> h2 established" established h3 192.168.100.2

say "attaching containers c1..c3 with weave attach (no address: IPAM allocates; --name: weaveDNS)"
for i in 1 2 3; do
	addns "c$i"
	ip=$(weave "h$i" attach --name "c$i" "/var/run/netns/$P-c$i") || die "weave attach on h$i"
	echo "c$i: $ip"
	eval "IP$i=\$ip"
done

if [ "$IP1" = "$IP2" ] || [ "$IP2" = "$IP3" ] || [ "$IP1" = "$IP3" ]; then
	die "IPAM gave duplicate addresses: $IP1 $IP2 $IP3"
fi

say "ping c1 -> c2 (one hop)"
wait_for 20 "first ping c1 -> c2" nsx "$P-c1" ping -c 1 -W 1 "$IP2"
nsx "$P-c1" ping -c 3 -i 0.2 "$IP2"

say "ping c1 -> c3 (h1 and h3 cannot talk: relayed by h2)"
wait_for 20 "first ping c1 -> c3" nsx "$P-c1" ping -c 1 -W 1 "$IP3"
nsx "$P-c1" ping -c 3 -i 0.2 "$IP3"

say "weave status (h1)"
weave h1 status
say "weave status ipam (h1: each peer's share of 10.32.0.0/12)"
weave h1 status ipam
say "weave status peers (h1)"
weave h1 status peers
say "weave status connections (h1: h3 is unreachable; h2 established, encrypted, on sleeve with the reason the fast path is not used)"
weave h1 status connections
say "weaveDNS: h1 resolves c3, registered on h3, which it cannot reach directly"
wait_for 20 "c3.weave.local in h1's weaveDNS" resolves h1 c3 "$IP3"
weave h1 dns-lookup c3.weave.local
say "weave status dns (h1)"
weave h1 status dns
