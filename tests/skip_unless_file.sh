#!/bin/sh
# skip_unless_file.sh FILE PROGRAM [ARGS...]: run PROGRAM when FILE exists; otherwise say why and
# exit 77, which Meson reports as a skipped test (never a failure).
file=$1
shift
if [ ! -f "$file" ]; then
  echo "SKIP: $file not found (PyTorch 1.13.1's operator file, from Debian's python3-torch;"
  echo "      set another folder with meson configure -Dpytorch_yaml_dir=DIR)"
  exit 77
fi
exec "$@"
