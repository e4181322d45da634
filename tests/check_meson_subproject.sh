#!/usr/bin/env bash
# Builds tests/downstream/meson with this source tree as its subproject subprojects/dispatchkit
# and runs the program. The project is set up under the build directory, so later runs rebuild
# only what changed (a plain build: no optimization, it only has to link and run).
set -euo pipefail
source "$(dirname "$0")/downstream/common.sh"
build_dir=$1
project=$2
source_root=$3
work="$build_dir/downstream-meson"
mkdir -p "$work/proj/subprojects"
cp "$project/meson.build" "$work/proj/meson.build"
cp "$project/../prog.cpp" "$work/prog.cpp"
ln -sfn "$source_root" "$work/proj/subprojects/dispatchkit"
if [ ! -f "$work/build/build.ninja" ]; then
  meson setup "$work/build" "$work/proj" -Dbuildtype=plain >/dev/null
fi
ninja -C "$work/build" prog >/dev/null
out=$("$work/build/prog")
dk_expect_downstream_output "$out"
