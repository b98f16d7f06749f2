#!/usr/bin/env bash
# scale.sh - the many-router simulation at bigger sizes: N routers (real
# weaveworks/mesh, IPAM and liveness, fake data plane) in one process on
# loopback, one address each (127.A.x.y) and one shared port, a sparse
# overlay (four spread initial peers each, discovery off, conn limit 16). Prints, per
# size, the time for topology, liveness and the IPAM ring to converge after
# a cold start and after a router dies, mesh TCP and liveness UDP bytes per
# peer per second, heap per peer and the process's RSS
# (test/meshsim/scale_test.go).
# Run via `make bench` or `make bench-scale`; needs ss (iproute2).
#
# As root the run happens in a network namespace of its own (created here,
# deleted on exit), so its loopback addresses and ports meet nothing else.
#
# Environment: SIZES ["200,500"] WINDOW [30s] PROFILE [""]: a directory
#              to write cpu.pprof and mem.pprof of the run into;
#              IPAM [1]: an allocator per router (0: mesh and liveness only; see scale_test.go);
#              CONNLIMIT [16]: mesh connection limit per router;
#              DISCOVERY [0]: 1 turns mesh peer discovery on;
#              REAL [0]: 1 (or a size) makes a real bin/weaver (make build)
#              the last router of the 200-router (or that size) run, with
#              the sim on the real sleeve overlay, and prints its VmRSS and
#              VmHWM once joined and after the window (needs root);
#              LIMIT [30m]: deadline of each size's run;
#              DIAG [0]: 1 logs why a topology is stuck after a minute;
#              MAXRSS_MB [12000]: kill the run if it grows beyond.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES:-200,500}
WINDOW=${WINDOW:-30s}
PROFILE=${PROFILE:-}
REAL=${REAL:-0}
cd "$ROOT"
tmp=$(mktemp -d /tmp/weave-scale.XXXXXX)
ns=""
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
  if [ -n "$ns" ]; then
    # only our own processes live in this namespace: the test binary and its weaver
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$ns" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the patched mesh, also when run without make (docs/mesh-patch.md)
sh mesh/patches/apply.sh >/dev/null
export GOWORK="$ROOT/.build/go.work"
go test -c -o "$tmp/meshsim.test" ./test/meshsim/
args=(-test.count=1 -test.timeout 90m -test.run '^TestScaleBench$' -test.v)
if [ -n "$PROFILE" ]; then
  mkdir -p "$PROFILE"
  PROFILE=$(cd "$PROFILE" && pwd)
  args+=(-test.cpuprofile "$PROFILE/cpu.pprof" -test.memprofile "$PROFILE/mem.pprof")
fi
env=(MESHSIM_SCALE="$SIZES" MESHSIM_WINDOW="$WINDOW" MESHSIM_IPAM="${IPAM:-1}")
[ -n "${CONNLIMIT:-}" ] && env+=(MESHSIM_CONNLIMIT="$CONNLIMIT")
[ -n "${DISCOVERY:-}" ] && env+=(MESHSIM_DISCOVERY="$DISCOVERY")
[ -n "${LIMIT:-}" ] && env+=(MESHSIM_LIMIT="$LIMIT")
[ -n "${DIAG:-}" ] && env+=(MESHSIM_DIAG="$DIAG")
if [ "$REAL" != 0 ]; then
  [ -x bin/weaver ] || { echo "REAL=$REAL needs bin/weaver: run make build" >&2; exit 1; }
  env+=(MESHSIM_WEAVER="$ROOT/bin/weaver")
  [ "$REAL" != 1 ] && env+=(MESHSIM_REAL_AT="$REAL")
fi
run=(env "${env[@]}" "$tmp/meshsim.test" "${args[@]}")
if [ "$(id -u)" = 0 ]; then
  ns="weave-scale-$$-$RANDOM"
  ip netns add "$ns"
  ip netns exec "$ns" ip link set lo up
  run=(ip netns exec "$ns" env MESHSIM_NETNS="$ns" "${run[@]}")
elif [ "$REAL" != 0 ]; then
  echo "REAL=$REAL needs root (the weaver runs in a namespace of its own)" >&2
  exit 1
fi
if [ -n "$ns" ]; then
  # guard the shared machine: stop the run if a process of ours passes MAXRSS_MB
  ( while sleep 10; do
      for pid in $(ip netns pids "$ns" 2>/dev/null); do
        kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        if [ "${kb:-0}" -gt $(( ${MAXRSS_MB:-12000} * 1024 )) ]; then
          echo "scale.sh: pid $pid RSS ${kb} kB > ${MAXRSS_MB:-12000} MB: killed" >&2
          kill -9 "$pid" 2>/dev/null || true
        fi
      done
    done ) &
  watchdog=$!
fi
set +e
(cd "$ROOT/test/meshsim" && "${run[@]}") |
  grep --line-buffered -E 'meshsim [0-9]+ peers|real weaver|settled|: [0-9.]+(ms|s|m)| after [0-9hms.]+: |_test.go:[0-9]+: |^(--- |ok|FAIL|PASS)'
rc=${PIPESTATUS[0]}
[ -n "${watchdog:-}" ] && kill "$watchdog" 2>/dev/null
exit "$rc"
