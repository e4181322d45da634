#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs a downstream program with
#   g++ prog.cpp $(pkg-config --cflags --libs dispatchkit)
set -euo pipefail
build_dir=$1
prog=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
meson install -C "$build_dir" --destdir "$scratch/root" --quiet >/dev/null
pc=$(find "$scratch/root" -name dispatchkit.pc | head -n 1)
[ -n "$pc" ] || { echo "dispatchkit.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
# The sysroot points pkg-config's -I and -L paths into the scratch install.
export PKG_CONFIG_SYSROOT_DIR="$scratch/root"
flags=$(pkg-config --cflags --libs dispatchkit)
echo "g++ prog.cpp $flags"
g++ "$prog" $flags -o "$scratch/prog"
libdir=$(pkg-config --libs-only-L dispatchkit | sed "s/^ *-L//; s/ *$//")
out=$(LD_LIBRARY_PATH="$libdir" "$scratch/prog")
echo "$out"
echo "$out" | grep -q "^CPU: registered at .*prog.cpp:13 \[kernel\]$"
