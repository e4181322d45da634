#!/usr/bin/env bash
# Installs the build into a scratch prefix, then configures, builds and runs a downstream CMake
# project that does find_package(dispatchkit) and links dispatchkit::dispatchkit.
set -euo pipefail
source "$(dirname "$0")/downstream/common.sh"
build_dir=$1
project=$2
dk_install_to_scratch "$build_dir"
config=$(find "$scratch/root" -name dispatchkitConfig.cmake | head -n 1)
[ -n "$config" ] || { echo "dispatchkitConfig.cmake was not installed"; exit 1; }
# The package is relocatable (its paths are relative to the config file), so it works from the
# scratch install; dispatchkit_DIR is where find_package looks first.
cmake -S "$project" -B "$scratch/build" -Ddispatchkit_DIR="$(dirname "$config")" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" >/dev/null
out=$("$scratch/build/prog")
dk_expect_downstream_output "$out"
out=$("$scratch/build/opcheck_prog")
echo "$out"
echo "$out" | grep -q "^opcheck passed: autograd_registration=ok boxed_unboxed=ok gradcheck=ok meta=ok schema=ok$"
