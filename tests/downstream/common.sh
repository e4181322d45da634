# Shared by the install tests (tests/check_*.sh; sourced, not run).

# dk_install_to_scratch BUILD_DIR: installs the build under a fresh $scratch/root, removed at exit.
dk_install_to_scratch() {
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  meson install -C "$1" --destdir "$scratch/root" --quiet >/dev/null
}

# dk_expect_downstream_output OUTPUT: prints what tests/downstream/prog.cpp printed and checks it:
# the CPU slot's kernel is the one prog.cpp registered, at the line of its DK_LIBRARY_IMPL.
dk_expect_downstream_output() {
  local here line
  here=$(dirname "${BASH_SOURCE[0]}")
  line=$(grep -n '^DK_LIBRARY_IMPL(downstream, CPU' "$here/prog.cpp" | cut -d: -f1)
  echo "$1"
  echo "$1" | grep -q "^CPU: registered at .*prog.cpp:$line \[kernel\]$"
}
