#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs a downstream program with
#   g++ prog.cpp $(pkg-config --cflags --libs dispatchkit)
set -euo pipefail
source "$(dirname "$0")/downstream/common.sh"
build_dir=$1
prog=$2
dk_install_to_scratch "$build_dir"
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
dk_expect_downstream_output "$out"
# The testing library (dk/testing/): an operator author's opcheck, against dispatchkit-testing.pc.
testing_flags=$(pkg-config --cflags --libs dispatchkit-testing)
echo "g++ opcheck_prog.cpp $testing_flags"
g++ "$(dirname "$prog")/opcheck_prog.cpp" $testing_flags -o "$scratch/opcheck_prog"
out=$(LD_LIBRARY_PATH="$libdir" "$scratch/opcheck_prog")
echo "$out"
echo "$out" | grep -q "^opcheck passed: autograd_registration=ok boxed_unboxed=ok gradcheck=ok meta=ok schema=ok$"
