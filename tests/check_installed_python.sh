#!/usr/bin/env bash
# The Python package as `meson install` puts it: imports from the installed site-packages and
# runs an operator (Note [Python bindings]).
#   check_installed_python.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/downstream/common.sh"
build_dir=$1
dk_install_to_scratch "$build_dir"
init=$(find "$scratch/root" -path '*/dispatchkit/__init__.py' | head -n 1)
[ -n "$init" ] || { echo "dispatchkit/__init__.py was not installed"; exit 1; }
ext=$(find "$scratch/root" -path '*/dispatchkit/_C.*.so' | head -n 1)
[ -n "$ext" ] || { echo "dispatchkit/_C was not installed"; exit 1; }
site=$(dirname "$(dirname "$init")")
lib=$(dirname "$(find "$scratch/root" -name 'libdispatchkit.so*' | head -n 1)")
echo "site-packages: ${site#"$scratch/root"}"
# The installed extension's rpath is the real prefix's libdir; the scratch copy needs LD_LIBRARY_PATH.
cd "$scratch"
out=$(PYTHONPATH="$site" LD_LIBRARY_PATH="$lib" python3 -c '
import dispatchkit as dk
x = dk.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
print(dk.__file__.endswith("/dispatchkit/__init__.py"), x.grad.tolist())')
echo "$out"
[ "$out" = "True [2.0, 4.0]" ]
