#!/bin/sh
# tests/check_exports.sh LIB: the shared library exports public tess_* names only (no
# tess__ internal or test hook, nothing of the CPU BLAS, CUDA or MPI). Tests that need an
# internal name link the static twin, tessera_internal.
lib=${1:?usage: check_exports.sh libtessera.so}
names=$(nm -D --defined-only "$lib") || exit 1
[ -n "$names" ] || { echo "check_exports: $lib exports nothing" >&2; exit 1; }
bad=$(printf '%s\n' "$names" | awk '{print $NF}' | grep -v '^tess_[a-z0-9]')
if [ -n "$bad" ]; then
  echo "check_exports: $lib exports names that are not public tess_* API:" >&2
  printf '%s\n' "$bad" >&2
  exit 1
fi
echo "check_exports: $(printf '%s\n' "$names" | wc -l) names, all public tess_*"
