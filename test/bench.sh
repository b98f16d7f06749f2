#!/usr/bin/env bash
# bench.sh - one run, side by side, data paths between two "container" namespaces:
#   direct   a single veth c1<->c2 (baseline, no router at all)
#   vxlan    raw kernel VXLAN: two hosts, bridge + vxlan device + static FDB
#   plain    weave sleeve, no password
#   crypt    weave sleeve, --password (NaCl)
#   fastdp   weave with its VXLAN fast path (docs/fastdp.md), no password
#   fdp-ct   fastdp with conntrack left on for the VXLAN UDP flow (the
#            router's raw-table NOTRACK jumps deleted): what NOTRACK buys
#   plain-nb, crypt-nb  (not in the default list) plain / crypt with
#            --busy-poll=0
#   plain-j, crypt-j  (not in the default list) plain / crypt with
#            --sleeve-framing=jumbo: the round-1 framing (one IP-fragmented
#            64 KiB datagram per frame), for the A/B against segments
#   fdp-nobr (not in the default list) fastdp with bridged frames kept out of
#            netfilter (net.bridge.bridge-nf-call-iptables=0 in the host
#            namespaces): what br_netfilter and conntrack on bridged traffic cost
#   wg       wireguard-go between c1 and c2 over a veth (encrypted userspace
#            anchor; needs `wg` from wireguard-tools, builds wireguard-go
#            from the Go module proxy into bin/ once; skipped if unavailable)
# For each: iperf3 TCP single stream (REPS x DURATION s, median) and four
# streams (-P 4, once), UDP with 1400-byte datagrams offered at 1 and 5 Gbit/s
# (delivered rate and loss %), the small-packet rate (64-byte UDP datagrams
# offered on a ladder of PPS_LADDER packets/s for PPS_SECONDS each, up to the
# first step losing more than 1 %, then one step halfway back: the highest
# rate delivered with <= 1 % loss, in packets/s), ping RTT (PING_COUNT at PING_INTERVAL), the
# routers' CPU (utime+stime from /proc/<pid>/stat across the TCP runs, % of
# one core, both routers summed; "-" where the kernel does the work) and their
# idle CPU (IDLE_SECONDS with no traffic).
# Prints a table with ratios to the baseline and to wg, then every target of
# docs/performance.md with its figure from this run and whether it holds,
# then (CNI_BENCH=1) the CNI ADD latency row: cnitool, as a kubelet would,
# adding one container at a time (CNI_REPS times, each deleted again) and
# CNI_N containers at once on one host, through weave-net against the CNI
# project's bridge + host-local (same host namespace, same run; p50/p99 of
# the per-ADD wall time, cnitool's start included for both),
# then runs the Go benchmarks
# (`go test -run '^$' -bench . -benchmem`) of every package that has one.
# Needs root; run via `make bench`. Two namespace hosts on a veth underlay, iperf3 and ping.
#
# Environment: REPS [3] DURATION [10] PING_COUNT [100] PING_INTERVAL [0.01]
#              PASSWORD [bench-password] GO_BENCH [1] BENCHTIME [1s]
#              SCENARIOS ["direct vxlan fastdp fdp-ct plain crypt wg"] (direct is the baseline;
#              empty: none, e.g. only the CNI row)
#              WG_VERSION [pinned wireguard-go module version]
#              UDP_RATES ["1G 5G"] UDP_LEN [1400] UDP_SECONDS [5] IDLE_SECONDS [5]
#              PPS_LADDER ["10000 14000 20000 28000 40000 56000 80000 112000 160000 224000 320000"] PPS_SECONDS [2]
#              CNI_BENCH [1] CNI_N [40] CNI_REPS [9] CNI_PLUGINS [/usr/lib/cni or /opt/cni/bin]
#              PARTS ["tcp udp pps ping"]: the measurements each scenario runs (e.g.
#              PARTS="udp pps" for quick interleaved A/Bs of the packet path)
#              PERF_DIR [""]: a directory; when set, each scenario also runs one
#              TCP and one UDP-1G iperf3 under `perf record -a -g` and writes
#              <scenario>-tcp.txt / <scenario>-udp.txt (flat profile, both cores)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}; DURATION=${DURATION:-10}
PING_COUNT=${PING_COUNT:-100}; PING_INTERVAL=${PING_INTERVAL:-0.01}
PASSWORD=${PASSWORD:-bench-password}; GO_BENCH=${GO_BENCH:-1}; BENCHTIME=${BENCHTIME:-1s}
SCENARIOS=${SCENARIOS-direct vxlan fastdp fdp-ct plain crypt wg}
WG_VERSION=${WG_VERSION:-v0.0.0-20260522210424-ecfc5a8d5446}
PERF_DIR=${PERF_DIR:-}
PARTS=${PARTS:-tcp udp pps ping}
PPS_LADDER=${PPS_LADDER:-10000 14000 20000 28000 40000 56000 80000 112000 160000 224000 320000}; PPS_SECONDS=${PPS_SECONDS:-2}
CNI_BENCH=${CNI_BENCH:-1}; CNI_N=${CNI_N:-40}; CNI_REPS=${CNI_REPS:-9}
CNI_PLUGINS=${CNI_PLUGINS:-$([ -x /usr/lib/cni/bridge ] && echo /usr/lib/cni || echo /opt/cni/bin)}
CNITOOL=${CNITOOL:-$(command -v cnitool || echo "${WEAVE_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/weave-tools/bin}/cnitool")}
UDP_RATES=${UDP_RATES:-1G 5G}; UDP_LEN=${UDP_LEN:-1400}; UDP_SECONDS=${UDP_SECONDS:-5}; IDLE_SECONDS=${IDLE_SECONDS:-5}
P="w$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-5)-$$"  # netnstest sweepable
TMP=$(mktemp -d "${TMPDIR:-/tmp}/weave-bench.XXXXXX")
CLK_TCK=$(getconf CLK_TCK)
NAMESPACES=()
declare -A TCP RTT MED CPU TCP4 UDPR UDPL IDLE UDPA UDPH UDPT CNI PPS

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: FAILED: %s\n' "$*" >&2; exit 1; }
nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

[ "$(id -u)" -eq 0 ] || die "needs root; run: sudo make bench"
case " $SCENARIOS " in *" plain "* | *" crypt "*) [ -x "$ROOT/bin/weaveutil" ] || die "bin/weaveutil missing; run: make build" ;; esac
for t in iperf3 ping ip; do command -v "$t" >/dev/null || die "$t missing; run test/deps.sh"; done

weave() {
	local h=$1; shift
	ip netns exec "$P-$h" env WEAVE_RUN_DIR="$TMP/$h/run" WEAVE_DATA_DIR="$TMP/$h/data" \
		WEAVE_HTTP_ADDR=127.0.0.1:6784 CHECKPOINT_DISABLE=1 PATH="$ROOT/bin:$PATH" sh "$ROOT/weave" "$@"
}

addns() {
	ip netns add "$P-$1"; NAMESPACES+=("$P-$1")
	nsx "$P-$1" ip link set lo up
	nsx "$P-$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}

teardown() {
	local h ns pid
	for h in h1 h2 cnih; do [ -d "$TMP/$h" ] && { weave "$h" stop >/dev/null 2>&1 || true; }; done
	for ns in "${NAMESPACES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
	NAMESPACES=()
	rm -rf "${TMP:?}"/h1 "${TMP:?}"/h2 "${TMP:?}"/cnih "${TMP:?}"/router.pids
	rm -f /var/lib/cni/results/"$P"-*-cnitool-* # libcni's result cache of the CNI row
}
on_exit() { local rc=$?; trap - EXIT; teardown; rm -rf "$TMP"; exit "$rc"; }
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setup_direct() {
	addns c1; addns c2
	ip link add vb1 netns "$P-c1" type veth peer name vb2 netns "$P-c2"
	nsx "$P-c1" ip link set vb1 name ethwe; nsx "$P-c2" ip link set vb2 name ethwe
	nsx "$P-c1" ip addr add 10.2.1.1/24 dev ethwe; nsx "$P-c1" ip link set ethwe up
	nsx "$P-c2" ip addr add 10.2.1.2/24 dev ethwe; nsx "$P-c2" ip link set ethwe up
}

# setup_weave [--password X]: two hosts on one underlay veth, routers, containers
setup_weave() {
	local i peers
	addns h1; addns h2; addns c1; addns c2
	ip link add eth0 netns "$P-h1" type veth peer name eth0 netns "$P-h2"
	for i in 1 2; do
		mkdir -p "$TMP/h$i/run" "$TMP/h$i/data"
		nsx "$P-h$i" ip addr add "192.168.100.$i/24" dev eth0; nsx "$P-h$i" ip link set eth0 up
	done
	for i in 1 2; do
		peers=(); [ "$i" -eq 2 ] && peers=(192.168.100.1)
		weave "h$i" launch "${LAUNCH_EXTRA[@]}" "$@" --name "aa:00:00:00:00:0$i" --nickname "h$i" --ipalloc-range "" \
			"${peers[@]}" >/dev/null || die "weave launch on h$i"
		weave "h$i" attach "10.2.1.$i/24" "/var/run/netns/$P-c$i" >/dev/null || die "weave attach on h$i"
	done
	local n=0
	until weave h2 status connections 2>/dev/null | grep -q established; do
		n=$((n + 1)); [ "$n" -le 120 ] || die "routers did not establish within 30s"; sleep 0.25
	done
}

LAUNCH_EXTRA=(--no-fastdp) # setup_weave's default: sleeve only

# setup_fastdp: setup_weave with the fast path, waiting until both routers
# show the link on the fastdp overlay.
setup_fastdp() {
	local n=0 h
	LAUNCH_EXTRA=(); setup_weave; LAUNCH_EXTRA=(--no-fastdp)
	for h in h1 h2; do
		until weave "$h" status connections 2>/dev/null | grep -q ' established fastdp '; do
			n=$((n + 1)); [ "$n" -le 120 ] || die "fastdp: $h not on fastdp within 30s"; sleep 0.25
		done
	done
}

# setup_fastdp_ct: setup_fastdp, then conntrack back on for the VXLAN flow.
setup_fastdp_ct() {
	local h c
	setup_fastdp
	for h in h1 h2; do
		for c in PREROUTING OUTPUT; do nsx "$P-$h" iptables -w -t raw -D "$c" -j WEAVE-NOTRACK; done
	done
}

# setup_fastdp_nobr: setup_fastdp, then bridged frames kept out of iptables.
setup_fastdp_nobr() {
	local h
	setup_fastdp
	for h in h1 h2; do nsx "$P-$h" sysctl -qw net.bridge.bridge-nf-call-iptables=0; done
}

# setup_vxlan: two hosts on one underlay veth; in each a bridge with a
# vxlan device (no learning, static FDB: flood entry and the remote
# container's MAC towards the other host) and the container's veth.
setup_vxlan() {
	local i o
	addns h1; addns h2; addns c1; addns c2
	ip link add eth0 netns "$P-h1" type veth peer name eth0 netns "$P-h2"
	for i in 1 2; do
		o=$((3 - i))
		nsx "$P-h$i" ip addr add "192.168.100.$i/24" dev eth0; nsx "$P-h$i" ip link set eth0 up
		nsx "$P-h$i" ip link add br0 type bridge; nsx "$P-h$i" ip link set br0 up
		nsx "$P-h$i" ip link add vx0 type vxlan id 42 dstport 4789 local "192.168.100.$i" dev eth0 nolearning
		nsx "$P-h$i" ip link set vx0 master br0 up
		nsx "$P-h$i" bridge fdb append 00:00:00:00:00:00 dev vx0 dst "192.168.100.$o"
		nsx "$P-h$i" bridge fdb add "02:00:00:00:01:0$o" dev vx0 dst "192.168.100.$o" static
		ip link add vc$i netns "$P-h$i" type veth peer name ethwe netns "$P-c$i"
		nsx "$P-h$i" ip link set vc$i mtu 1450 master br0 up
		nsx "$P-c$i" ip link set ethwe address "02:00:00:00:01:0$i" mtu 1450 up
		nsx "$P-c$i" ip addr add "10.2.1.$i/24" dev ethwe
	done
}

# setup_wg: wireguard-go in c1 and c2 over a veth; iperf3 and ping use the
# tunnel addresses. Returns 1 (scenario skipped) when it cannot run.
setup_wg() {
	local i o wgbin=$ROOT/bin/wireguard-go dev
	if ! command -v wg >/dev/null; then
		say "wg: installing wireguard-tools (the wg command)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wireguard-tools >&2 ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wireguard-tools >&2; } ||
			die "wg: cannot install wireguard-tools"
	fi
	if [ ! -x "$wgbin" ]; then
		say "wg: building wireguard-go $WG_VERSION into bin/"
		(cd "$ROOT" && GOBIN="$TMP/gobin" go install "golang.zx2c4.com/wireguard@$WG_VERSION" &&
			mkdir -p bin && mv "$TMP/gobin/wireguard" "$wgbin") >&2 ||
			die "wg: cannot build wireguard-go $WG_VERSION"
	fi
	addns c1; addns c2
	ip link add ul netns "$P-c1" type veth peer name ul netns "$P-c2"
	for i in 1 2; do
		(umask 077; wg genkey > "$TMP/wg$i.key"); wg pubkey < "$TMP/wg$i.key" > "$TMP/wg$i.pub"
	done
	for i in 1 2; do
		o=$((3 - i)); dev="${P:0:6}g$i" # UAPI sockets live in the shared /var/run/wireguard
		nsx "$P-c$i" ip addr add "192.168.100.$i/24" dev ul; nsx "$P-c$i" ip link set ul up
		WG_PROCESS_FOREGROUND=1 ip netns exec "$P-c$i" "$wgbin" "$dev" >"$TMP/wg$i.log" 2>&1 &
		echo $! >> "$TMP/router.pids"; disown # teardown kills it
		local n=0
		until nsx "$P-c$i" ip link show "$dev" >/dev/null 2>&1; do
			n=$((n + 1)); [ "$n" -le 40 ] || die "wireguard-go did not create $dev"; sleep 0.25
		done
		nsx "$P-c$i" wg set "$dev" listen-port 51820 private-key "$TMP/wg$i.key" \
			peer "$(cat "$TMP/wg$o.pub")" endpoint "192.168.100.$o:51820" allowed-ips "10.2.1.$o/32"
		nsx "$P-c$i" ip addr add "10.2.1.$i/24" dev "$dev"; nsx "$P-c$i" ip link set "$dev" up
	done
}

router_ticks() { # summed utime+stime of both routers, in clock ticks
	local t=0 pid
	while read -r pid; do
		[ -r "/proc/$pid/stat" ] || continue
		t=$((t + $(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
	done < <(cat "$TMP"/h1/run/weaver.pid "$TMP"/h2/run/weaver.pid "$TMP"/router.pids 2>/dev/null)
	echo "$t"
}

has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

median() { sort -g | awk '{a[NR]=$1} END{ if(NR==0) print "NA"; else if(NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

measure() {
	local label=$1 r t0 t1 c0 c1 spid
	local n=0
	until nsx "$P-c1" ping -c 1 -W 1 10.2.1.2 >/dev/null 2>&1; do
		n=$((n + 1)); [ "$n" -le 20 ] || die "$label: c1 cannot ping c2"
	done
	ip netns exec "$P-c2" iperf3 -s -p 5201 >/dev/null 2>&1 &
	spid=$!
	n=0; until nsx "$P-c2" sh -c 'ss -ltn | grep -q ":5201 "'; do n=$((n + 1)); [ "$n" -le 40 ] || die "iperf3 server"; sleep 0.25; done
	c0=$(router_ticks); t0=$(date +%s%N)
	for r in $(has_part tcp && seq 1 "$REPS"); do
		say "$label: iperf3 TCP rep $r/$REPS (${DURATION}s)"
		timeout $((DURATION + 20)) ip netns exec "$P-c1" iperf3 -c 10.2.1.2 -p 5201 -t "$DURATION" -f m \
			| awk '/receiver/{print $(NF-2)}' >> "$TMP/$label.tcp" || true
	done
	c1=$(router_ticks); t1=$(date +%s%N)
	[ "$c0" = 0 ] && [ "$c1" = 0 ] && CPU[$label]="-"
	TCP4[$label]=NA
	if has_part tcp; then
		say "$label: iperf3 TCP -P 4 (${DURATION}s)"
		TCP4[$label]=$(timeout $((DURATION + 20)) ip netns exec "$P-c1" iperf3 -c 10.2.1.2 -p 5201 -P 4 -t "$DURATION" -f m \
			| awk '/SUM.*receiver/{print $(NF-2)}')
	fi
	TCP4[$label]=${TCP4[$label]:-NA}
	! has_part udp || measure_udp "$label"
	! has_part pps || measure_pps "$label"
	[ -z "$PERF_DIR" ] || profile "$label"
	kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
	touch "$TMP/$label.tcp"; TCP[$label]=$(median < "$TMP/$label.tcp")
	has_part tcp || CPU[$label]="-"
	[ -n "${CPU[$label]:-}" ] || CPU[$label]=$(awk -v d=$((c1 - c0)) -v hz="$CLK_TCK" -v ns=$((t1 - t0)) 'BEGIN{printf "%.0f", d/hz/(ns/1e9)*100}')
	has_part ping || { RTT[$label]=NA MED[$label]=NA; return 0; }
	say "$label: ping -c $PING_COUNT -i $PING_INTERVAL"
	nsx "$P-c1" ping -c "$PING_COUNT" -i "$PING_INTERVAL" -W 2 10.2.1.2 > "$TMP/$label.ping" || true
	RTT[$label]=$(awk -F'[/ ]+' '/^rtt/{print $8}' "$TMP/$label.ping")
	RTT[$label]=${RTT[$label]:-NA}
	MED[$label]=$(awk -F'time=' '/time=/{split($2, a, " "); print a[1]}' "$TMP/$label.ping" | median)
}

# measure_udp LABEL: iperf3 UDP at each of UDP_RATES (server already up):
# the receiver's delivered Mbit/s and loss %.
measure_udp() {
	local label=$1 rate line app0 rtr0 lost
	for rate in $UDP_RATES; do
		say "$label: iperf3 UDP -b $rate -l $UDP_LEN (${UDP_SECONDS}s)"
		app0=$(udp_rcvbuf_errors "$P-c2"); rtr0=$(udp_rcvbuf_errors "$P-h2")
		line=$(timeout $((UDP_SECONDS + 20)) ip netns exec "$P-c1" iperf3 -c 10.2.1.2 -p 5201 -u -b "$rate" -l "$UDP_LEN" \
			-t "$UDP_SECONDS" -f m 2>/dev/null | grep receiver | tail -1) || true
		UDPR[$label,$rate]=$(awk '{for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") {print $(i-1); exit}}' <<<"$line")
		UDPL[$label,$rate]=$(sed -n 's/.*(\([0-9.e+-]*\)%).*/\1/p' <<<"$line")
		UDPR[$label,$rate]=${UDPR[$label,$rate]:-NA}; UDPL[$label,$rate]=${UDPL[$label,$rate]:-NA}
		if [ "$rate" = "${UDP_RATES%% *}" ]; then # where the first rate's losses went
			lost=$(sed -n 's#.* \([0-9][0-9]*\)/[0-9][0-9]* (.*#\1#p' <<<"$line")
			UDPA[$label]=$(($(udp_rcvbuf_errors "$P-c2") - app0))
			if [ -e "/var/run/netns/$P-h2" ]; then UDPH[$label]=$(($(udp_rcvbuf_errors "$P-h2") - rtr0)); else UDPH[$label]=-; fi
			UDPT[$label]=${lost:-NA}
		fi
	done
}

# udp64 PPS: one iperf3 run of 64-byte datagrams offered at PPS packets/s
# (server already up); prints "delivered-pps loss-%" (NA NA when it failed).
udp64() {
	local line lost total
	line=$(timeout $((PPS_SECONDS + 20)) ip netns exec "$P-c1" iperf3 -c 10.2.1.2 -p 5201 -u -l 64 -b $(($1 * 64 * 8)) \
		-t "$PPS_SECONDS" -f m 2>/dev/null | grep receiver | tail -1) || true
	lost=$(sed -n 's#.* \([0-9][0-9]*\)/\([0-9][0-9]*\) (.*#\1#p' <<<"$line")
	total=$(sed -n 's#.* \([0-9][0-9]*\)/\([0-9][0-9]*\) (.*#\2#p' <<<"$line")
	if [ -z "$lost" ] || [ -z "$total" ] || [ "$total" = 0 ]; then echo "NA NA"; return; fi
	awk -v l="$lost" -v t="$total" -v s="$PPS_SECONDS" 'BEGIN{printf "%.0f %.2f\n", (t-l)/s, l/t*100}'
}

# measure_pps LABEL: the 64-byte packet-rate row: up the ladder while loss
# stays <= 1 % (a lossy step is tried once more before it counts: on a
# shared machine one burst of other work loses a step), then once halfway
# between the last good and the first bad step; PPS[LABEL] is the best
# delivered rate with <= 1 % loss (0 when even the first step lost more).
measure_pps() {
	local label=$1 r good=0 bad=""
	PPS[$label]=0
	for r in $PPS_LADDER; do
		pps_step "$label" "$r" || pps_step "$label" "$r" || { bad=$r; break; }
		good=$r
	done
	[ -n "$bad" ] || return 0
	pps_step "$label" $(((good + bad) / 2)) || true
}

# pps_step LABEL PPS: one ladder step; true (and PPS[LABEL] raised to the
# delivered rate) when it lost <= 1 %.
pps_step() {
	local d l
	say "$1: iperf3 UDP -l 64 at $2 packets/s (${PPS_SECONDS}s)"
	read -r d l < <(udp64 "$2")
	say "$1: delivered $d packets/s, loss $l %"
	[ "$d" != NA ] && awk -v l="$l" 'BEGIN{exit !(l <= 1)}' || return 1
	[ "$d" -le "${PPS[$1]}" ] || PPS[$1]=$d
}

# udp_rcvbuf_errors NS: the namespace's UDP RcvbufErrors (datagrams a full
# socket receive buffer dropped); 0 when NS does not exist.
udp_rcvbuf_errors() {
	# shellcheck disable=SC2016 # awk's own $6
	ip netns exec "$1" awk '/^Udp:/ && n++ {print $6; exit}' /proc/net/snmp 2>/dev/null || echo 0
}

# profile LABEL: one TCP and one UDP-1G run under perf (server already up);
# flat profiles of both cores, symbols of every process and the kernel.
profile() {
	local label=$1 kind
	command -v perf >/dev/null || die "PERF_DIR set but perf missing (apt-get install linux-perf)"
	mkdir -p "$PERF_DIR"
	for kind in tcp udp; do
		say "$label: perf record -a -g during iperf3 $kind (${DURATION}s)"
		local args=(-t "$DURATION"); [ "$kind" = udp ] && args+=(-u -b 1G -l "$UDP_LEN")
		perf record -q -a -g -o "$TMP/perf.data" -- timeout $((DURATION + 20)) \
			ip netns exec "$P-c1" iperf3 -c 10.2.1.2 -p 5201 "${args[@]}" -f m > "$PERF_DIR/$label-$kind.iperf" 2>&1 || true
		{ perf report -q -i "$TMP/perf.data" --no-children --sort comm --stdio -g none
		  echo; perf report -q -i "$TMP/perf.data" --no-children --sort comm,dso,sym --percent-limit 0.3 --stdio -g none
		} > "$PERF_DIR/$label-$kind.txt" 2>/dev/null || true
		rm -f "$TMP/perf.data"
	done
}

# idle_cpu LABEL: the mean CPU of one router, % of one core, over IDLE_SECONDS
# with no traffic (after the link is up).
idle_cpu() {
	local label=$1 c0 c1
	c0=$(router_ticks)
	sleep "$IDLE_SECONDS"
	c1=$(router_ticks)
	if [ "$c0" = 0 ] && [ "$c1" = 0 ]; then IDLE[$label]="-"; return; fi
	IDLE[$label]=$(awk -v d=$((c1 - c0)) -v hz="$CLK_TCK" -v s="$IDLE_SECONDS" 'BEGIN{printf "%.2f", d/hz/s*100/2}') # per router
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0 == 0 || b+0 == 0) print "NA"; else printf "%.2f", a/b }'; }

# cni_add NET I: one `cnitool add` of container namespace I on the CNI row's
# host; prints its wall time in ms.
cni_add() {
	local t0
	t0=$(date +%s%N)
	nsenter --net="/var/run/netns/$P-cnih" env NETCONFPATH="$TMP/cnih/net.d" CNI_PATH="$ROOT/bin:$CNI_PLUGINS" \
		"$CNITOOL" add "$P-$1" "/var/run/netns/$P-k$2" >"$TMP/cnih/out.$1.$2" 2>&1 ||
		die "cni: cnitool add $1 of container $2: $(cat "$TMP/cnih/out.$1.$2")"
	echo $((($(date +%s%N) - t0) / 1000000))
}

cni_del() {
	nsenter --net="/var/run/netns/$P-cnih" env NETCONFPATH="$TMP/cnih/net.d" CNI_PATH="$ROOT/bin:$CNI_PLUGINS" \
		"$CNITOOL" del "$P-$1" "/var/run/netns/$P-k$2" >/dev/null 2>&1 || die "cni: cnitool del $1 of container $2"
}

# pct P: the P-th percentile (nearest rank) of the numbers on stdin.
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END{ if (NR == 0) { print "NA"; exit } i = int((NR*p + 99)/100); print a[i < 1 ? 1 : i] }'; }

# measure_cni: the CNI ADD row. One host namespace with a weave router
# (sleeve, IPAM) and the weave bridge; conflists "weave" (weave-net, its
# own IPAM) and "ref" (bridge + host-local, isGateway and hairpin as
# weave-net, no masquerade); for each, ADDs one at a time, then CNI_N at
# once.
measure_cni() {
	local net i t0 ok=1
	[ -x "$CNITOOL" ] || { say "cni: no cnitool ($CNITOOL); run test/deps.sh: row skipped"; ok=0; }
	if [ ! -x "$CNI_PLUGINS/bridge" ] || [ ! -x "$CNI_PLUGINS/host-local" ]; then
		say "cni: no bridge/host-local in $CNI_PLUGINS (Debian: containernetworking-plugins): row skipped"; ok=0
	fi
	if [ ! -x "$ROOT/bin/weave-net" ] || [ ! -x "$ROOT/bin/weaveutil" ]; then die "bin/weave-net missing; run: make build"; fi
	command -v nsenter >/dev/null || die "nsenter missing (util-linux)"
	[ "$ok" = 1 ] || return 0
	say "cni: weave-net vs bridge+host-local, $CNI_REPS single ADDs and $CNI_N at once each"
	addns cnih; mkdir -p "$TMP/cnih/run" "$TMP/cnih/data" "$TMP/cnih/net.d" "$TMP/cnih/wd" "$TMP/cnih/hl"
	weave cnih launch --no-fastdp --ipalloc-range 10.44.0.0/16 >/dev/null || die "cni: weave launch"
	printf '{"cniVersion":"1.0.0","name":"%s","plugins":[{"type":"weave-net","hairpinMode":true,"dataDir":"%s"}]}\n' \
		"$P-weave" "$TMP/cnih/wd" > "$TMP/cnih/net.d/10-weave.conflist"
	printf '{"cniVersion":"1.0.0","name":"%s","plugins":[{"type":"bridge","bridge":"%s","isGateway":true,"hairpinMode":true,"ipam":{"type":"host-local","subnet":"10.88.0.0/16","dataDir":"%s"}}]}\n' \
		"$P-ref" "cni${P:1:5}" "$TMP/cnih/hl" > "$TMP/cnih/net.d/20-ref.conflist"
	for i in $(seq 1 "$CNI_N"); do addns "k$i"; done
	for net in weave ref; do
		cni_add "$net" 1 >/dev/null; cni_del "$net" 1 # the router's IPAM ring, the bridge, page cache
		for i in $(seq 1 "$CNI_REPS"); do cni_add "$net" 1 >> "$TMP/cnih/single.$net"; cni_del "$net" 1; done
		t0=$(date +%s%N)
		for i in $(seq 1 "$CNI_N"); do cni_add "$net" "$i" >> "$TMP/cnih/par.$net" & done
		wait
		[ "$(wc -l < "$TMP/cnih/par.$net")" -eq "$CNI_N" ] || die "cni: not every one of $CNI_N ADDs of $net succeeded"
		CNI[$net,wall]=$((($(date +%s%N) - t0) / 1000000))
		for i in $(seq 1 "$CNI_N"); do cni_del "$net" "$i" & done
		wait
		CNI[$net,s50]=$(pct 50 < "$TMP/cnih/single.$net"); CNI[$net,s99]=$(pct 99 < "$TMP/cnih/single.$net")
		CNI[$net,p50]=$(pct 50 < "$TMP/cnih/par.$net"); CNI[$net,p99]=$(pct 99 < "$TMP/cnih/par.$net")
	done
	CNI[load]=$(cut -d' ' -f1-3 /proc/loadavg)
}

print_cni() {
	local net
	[ -n "${CNI[weave,s50]:-}" ] || return 0
	echo
	printf '%-22s %12s %12s %14s %14s %12s\n' "CNI ADD (cnitool)" "single p50" "single p99" "$CNI_N-at-once p50" "$CNI_N-at-once p99" "wall ms"
	for net in weave ref; do
		printf '%-22s %12s %12s %14s %14s %12s\n' "$([ "$net" = weave ] && echo weave-net || echo bridge+host-local)" \
			"${CNI[$net,s50]}" "${CNI[$net,s99]}" "${CNI[$net,p50]}" "${CNI[$net,p99]}" "${CNI[$net,wall]}"
	done
	printf '%-22s %12s %12s %14s %14s %12s\n' "x ref" "$(ratio "${CNI[weave,s50]}" "${CNI[ref,s50]}")" \
		"$(ratio "${CNI[weave,s99]}" "${CNI[ref,s99]}")" "$(ratio "${CNI[weave,p50]}" "${CNI[ref,p50]}")" \
		"$(ratio "${CNI[weave,p99]}" "${CNI[ref,p99]}")" "$(ratio "${CNI[weave,wall]}" "${CNI[ref,wall]}")"
	echo "(ms per ADD, cnitool's start included; single: $CNI_REPS ADDs one at a time, each deleted again; at once: $CNI_N"
	echo " containers' ADDs started together on one host; plugins from $CNI_PLUGINS; load while measuring: ${CNI[load]})"
}

TCP[direct]=NA; RTT[direct]=NA; MED[direct]=NA; TCP[wg]=NA
for s in $SCENARIOS; do
	ok=1
	case $s in
	direct) say "scenario direct: one veth c1<->c2"; setup_direct ;;
	vxlan) say "scenario vxlan: kernel VXLAN, bridge + static FDB"; setup_vxlan ;;
	plain) say "scenario plain: weave sleeve, no password"; setup_weave ;;
	crypt) say "scenario crypt: weave sleeve, --password"; setup_weave --password "$PASSWORD" ;;
	plain-j) say "scenario plain-j: weave sleeve, jumbo framing"; setup_weave --sleeve-framing=jumbo ;;
	crypt-nb) say "scenario crypt-nb: weave sleeve, --password, --busy-poll=0"; setup_weave --password "$PASSWORD" --busy-poll=0 ;;
	plain-nb) say "scenario plain-nb: weave sleeve, --busy-poll=0"; setup_weave --busy-poll=0 ;;
	crypt-j) say "scenario crypt-j: weave sleeve, --password, jumbo framing"; setup_weave --password "$PASSWORD" --sleeve-framing=jumbo ;;
	fastdp) say "scenario fastdp: weave VXLAN fast path"; setup_fastdp ;;
	fdp-ct) say "scenario fdp-ct: fastdp with conntrack on for its UDP"; setup_fastdp_ct ;;
	fdp-nobr) say "scenario fdp-nobr: fastdp, bridged frames not through iptables"; setup_fastdp_nobr ;;
	wg) say "scenario wg: wireguard-go c1<->c2"; setup_wg || ok=0 ;;
	*) die "unknown scenario $s" ;;
	esac
	if [ "$ok" = 1 ]; then idle_cpu "$s"; measure "$s"; else TCP[$s]=NA RTT[$s]=NA MED[$s]=NA CPU[$s]="-"; fi
	teardown
done
if [ "$CNI_BENCH" = 1 ]; then measure_cni; teardown; fi

# check FIGURE OP LIMIT: "holds", "MISSED" or "NA".
check() { awk -v v="$1" -v op="$2" -v lim="$3" 'BEGIN{ if (v == "NA" || v == "" || v == "-") { print "NA"; exit }
	ok = (op == ">=") ? (v + 0 >= lim + 0) : (v + 0 <= lim + 0); print ok ? "holds" : "MISSED" }'; }

# target NAME FIGURE OP LIMIT: one row of the targets table.
target() { printf '%-44s %10s %2s %-6s %s\n' "$1" "$2" "$3" "$4" "$(check "$2" "$3" "$4")"; }

print_targets() {
	local l
	echo
	echo "targets (docs/performance.md), figures from this run:"
	target "encrypted sleeve TCP / wireguard-go TCP" "$(ratio "${TCP[crypt]:-NA}" "${TCP[wg]:-NA}")" ">=" 2
	target "plain sleeve TCP / direct veth TCP" "$(ratio "${TCP[plain]:-NA}" "${TCP[direct]:-NA}")" ">=" 0.4
	target "fastdp TCP / raw vxlan TCP" "$(ratio "${TCP[fastdp]:-NA}" "${TCP[vxlan]:-NA}")" ">=" 0.95
	for l in $SCENARIOS; do
		[ "$l" = direct ] || target "$l: UDP loss % at 1G offered" "${UDPL[$l,1G]:-NA}" "<=" 1
	done
	for l in plain crypt; do
		case " $SCENARIOS " in *" $l "*) target "$l: 64-byte UDP pkt/s at <= 1 % loss / vxlan" "$(ratio "${PPS[$l]:-NA}" "${PPS[vxlan]:-NA}")" ">=" 0.5 ;; esac
	done
	for l in fastdp plain crypt; do
		case " $SCENARIOS " in *" $l "*) target "$l: RTT median - direct, ms" "$(minus "${MED[$l]:-NA}" "${MED[direct]:-NA}")" "<=" 0.2 ;; esac
	done
	for l in fastdp plain crypt; do
		case " $SCENARIOS " in *" $l "*) target "$l: idle CPU per router, % of a core" "${IDLE[$l]:-NA}" "<=" 1 ;; esac
	done
	if [ "$CNI_BENCH" = 1 ]; then
		target "CNI ADD single p50, weave-net / bridge" "$(ratio "${CNI[weave,s50]:-NA}" "${CNI[ref,s50]:-NA}")" "<=" 2
		target "CNI ADD single p99, weave-net / bridge" "$(ratio "${CNI[weave,s99]:-NA}" "${CNI[ref,s99]:-NA}")" "<=" 2
		target "CNI ADD $CNI_N at once p50, weave-net / bridge" "$(ratio "${CNI[weave,p50]:-NA}" "${CNI[ref,p50]:-NA}")" "<=" 2
		target "CNI ADD $CNI_N at once p99, weave-net / bridge" "$(ratio "${CNI[weave,p99]:-NA}" "${CNI[ref,p99]:-NA}")" "<=" 2
	fi
}

minus() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0 == 0 || b+0 == 0) print "NA"; else printf "%.3f", a-b }'; }

echo
printf '%-7s %11s %7s %6s %11s %7s %10s %11s %10s %13s\n' path "TCP Mbit/s" "x base" "x wg" "RTT avg ms" "x base" \
	"avg-base" "RTT med ms" "med-base" "router CPU %"
for l in $SCENARIOS; do
	printf '%-7s %11s %7s %6s %11s %7s %10s %11s %10s %13s\n' "$l" "${TCP[$l]}" "$(ratio "${TCP[$l]}" "${TCP[direct]}")" \
		"$(ratio "${TCP[$l]}" "${TCP[wg]}")" "${RTT[$l]}" "$(ratio "${RTT[$l]}" "${RTT[direct]}")" \
		"$(minus "${RTT[$l]}" "${RTT[direct]}")" "${MED[$l]}" "$(minus "${MED[$l]}" "${MED[direct]}")" "${CPU[$l]}"
done
echo "(TCP: median of $REPS x ${DURATION}s single stream; RTT: ping -c $PING_COUNT -i $PING_INTERVAL, mean and median; CPU: both routers"
echo " (weaver or wireguard-go), % of one core during TCP; machine load while measuring: $(cut -d' ' -f1-3 /proc/loadavg))"

echo
udp_hdr="" ; for rate in $UDP_RATES; do udp_hdr="$udp_hdr $(printf '%13s %7s' "UDP $rate Mb/s" "loss %")"; done
printf '%-7s %13s %7s%s %10s %13s %9s\n' path "TCP -P4 Mb/s" "x base" "$udp_hdr" "idle CPU %" "64B pkt/s" "x vxlan"
for l in $SCENARIOS; do
	udp=""; for rate in $UDP_RATES; do udp="$udp $(printf '%13s %7s' "${UDPR[$l,$rate]:-NA}" "${UDPL[$l,$rate]:-NA}")"; done
	printf '%-7s %13s %7s%s %10s %13s %9s\n' "$l" "${TCP4[$l]:-NA}" "$(ratio "${TCP4[$l]:-NA}" "${TCP4[direct]:-NA}")" "$udp" "${IDLE[$l]:--}" \
		"${PPS[$l]:-NA}" "$(ratio "${PPS[$l]:-NA}" "${PPS[vxlan]:-NA}")"
done
echo "(TCP -P4: one ${DURATION}s run, four streams; UDP: ${UDP_LEN}-byte datagrams for ${UDP_SECONDS}s at each offered rate,"
echo " delivered rate and loss at the receiver; idle CPU: per router (mean of the two) over ${IDLE_SECONDS}s with no traffic;"
echo " 64B pkt/s: the highest rate of 64-byte UDP datagrams delivered with <= 1 % loss, ladder $PPS_LADDER, ${PPS_SECONDS}s a step;"
echo " iperf3's own sender tops out near the direct row's figure on this machine)"
echo
echo "UDP ${UDP_RATES%% *} offered: where the lost datagrams went (socket receive buffers that overflowed)"
printf '%-8s %10s %22s %26s %12s\n' path lost "receiving app socket" "receiving host (router)" elsewhere
for l in $SCENARIOS; do
	[ -n "${UDPT[$l]:-}" ] || continue
	other=NA
	case "${UDPT[$l]}${UDPA[$l]}${UDPH[$l]}" in *NA*) ;; *) other=$((UDPT[$l] - UDPA[$l] - ${UDPH[$l]/-/0})) ;; esac
	printf '%-8s %10s %22s %26s %12s\n' "$l" "${UDPT[$l]}" "${UDPA[$l]}" "${UDPH[$l]}" "$other"
done
echo "(app socket: iperf3's in c2, and wireguard-go's own for wg; elsewhere: capture, sockets' send side, qdiscs, the wire)"
print_cni
print_targets

if [ "$GO_BENCH" = 1 ]; then
	echo
	say "Go benchmarks"
	mapfile -t pkgs < <(cd "$ROOT" && grep -rl --include='*_test.go' '^func Benchmark' . | xargs -r -n1 dirname | sort -u)
	if [ "${#pkgs[@]}" -gt 0 ]; then
		(cd "$ROOT" && go test -run '^$' -bench . -benchmem -benchtime "$BENCHTIME" "${pkgs[@]}")
	else
		echo "no package has benchmarks yet"
	fi
fi
