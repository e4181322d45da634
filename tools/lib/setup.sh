# Shared set-up for tools/demo and tools/test (sourced, not run): installs the Debian
# packages the build needs when they are missing, and configures a build directory.

DK_PACKAGES=(meson ninja-build catch2 python3-jinja2 python3-yaml python3-pytest python3-hypothesis g++ pkg-config ccache
  libopenblas-dev libsleef-dev libgloo-dev pybind11-dev python3-dev python3-numpy)
# tools/test also installs python3-torch: it ships PyTorch 1.13.1's native_functions.yaml and
# tags.yaml, which the PyTorch-file tests read (they skip when the files are absent); and cmake,
# for the downstream CMake project of the install tests; and clang-14, the second compiler; and
# Open MPI, so that the MPI backend of dk::distributed is built and tested (mpirun -n 2).
DK_TEST_PACKAGES=(python3-torch cmake clang-14 libopenmpi-dev)

dk_install_missing_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "==> installing missing packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The generator runs on Debian's python3, which has jinja2 and yaml from the packages above.
dk_use_system_python() { export PATH="/usr/bin:$PATH"; }

# dk_configure BUILD_DIR [meson options...]: configure once; reconfigure if options changed.
dk_configure() {
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}
