#!/usr/bin/env bash
# scale.sh - the many-router simulation at bigger sizes: N routers (real
# weaveworks/mesh, IPAM and liveness, fake data plane) in one process on
# loopback, one address each (127.A.x.y) and one shared port. Prints, per
# size, the time for topology, liveness and the IPAM ring to converge after
# a cold start and after a router dies, mesh TCP and liveness UDP bytes per
# peer per second, and heap per peer (test/meshsim/scale_test.go).
# Run via `make bench` or `make bench-scale`; needs ss (iproute2).
#
# Environment: SIZES ["200,500"] WINDOW [30s] PROFILE [""]: a directory
#              to write cpu.pprof and mem.pprof of the run into;
#              IPAM [0]: 1 adds an allocator per router (see scale_test.go).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES:-200,500}
WINDOW=${WINDOW:-30s}
PROFILE=${PROFILE:-}
cd "$ROOT"
args=(-count=1 -timeout 60m -run '^TestScaleBench$' -v)
if [ -n "$PROFILE" ]; then
  mkdir -p "$PROFILE"
  args+=(-cpuprofile "$PROFILE/cpu.pprof" -memprofile "$PROFILE/mem.pprof")
fi
MESHSIM_SCALE=$SIZES MESHSIM_WINDOW=$WINDOW MESHSIM_IPAM=${IPAM:-0} go test "${args[@]}" ./test/meshsim/ |
  grep -E 'meshsim [0-9]+ peers|: [0-9.]+(ms|s|m)|^(--- |ok|FAIL)' || true
