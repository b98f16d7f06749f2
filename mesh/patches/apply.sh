#!/bin/sh
# Builds weave's patched copy of the pinned github.com/weaveworks/mesh:
# copies the module out of the module cache into .build/, applies
# mesh.patch to the copy and writes .build/go.work, a Go workspace that
# uses this module and replaces the pinned mesh version by the copy.
# Prints the go.work path; `make` exports it as GOWORK for every go
# command. go.mod and the module cache stay untouched; docs/mesh-patch.md
# explains every hunk.
#
# Usage: GOWORK=$(sh mesh/patches/apply.sh) go build ./...
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
mod=github.com/weaveworks/mesh
pinned=v0.0.0-20191105120815-58dbcc3e8e63
patch=$root/mesh/patches/mesh.patch
build=$root/.build
work=$build/go.work

die() { echo "mesh/patches/apply.sh: $*" >&2; exit 1; }

export GOWORK=off # read go.mod itself, not the workspace written here
cd "$root"

version=$(go list -m -f '{{.Version}}' "$mod") || die "cannot resolve $mod in go.mod"
[ "$version" = "$pinned" ] ||
	die "go.mod requires $mod $version but mesh.patch is written for $pinned: port the patch, then update pinned"
go mod download "$mod" || die "go mod download $mod failed"
src=$(go list -m -f '{{.Dir}}' "$mod")
[ -f "$src/go.mod" ] || die "module directory of $mod not found (got '$src')"
goversion=$(go list -m -f '{{.GoVersion}}')

stamp=$(cat "$patch" "$0" | sha256sum | cut -c1-16)
name=mesh-$stamp
if [ -f "$build/$name/.weave-patched" ] && grep -q "=> ./$name\$" "$work" 2>/dev/null &&
	grep -q "^go $goversion\$" "$work"; then
	echo "$work"
	exit 0
fi

mkdir -p "$build"
tmp=$(mktemp -d "$build/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -R "$src/." "$tmp/"
chmod -R u+w "$tmp"
# git apply outside any repository (the ceiling stops it finding ours).
(cd "$tmp" && GIT_CEILING_DIRECTORIES=$build git apply --whitespace=nowarn "$patch") ||
	die "mesh.patch does not apply to $src"
: >"$tmp/.weave-patched"
rm -rf "${build:?}/$name"
mv "$tmp" "$build/$name"
printf 'go %s\n\nuse ..\n\nreplace %s %s => ./%s\n' "$goversion" "$mod" "$pinned" "$name" >"$work.tmp"
mv "$work.tmp" "$work"
for old in "$build"/mesh-*; do
	[ "$old" = "$build/$name" ] || [ ! -d "$old" ] || rm -rf "$old"
done
echo "$work"
