#!/usr/bin/env bash
# jobs/install-deps.sh: installs, from Debian's packages, whatever tessera's build and tests
# need and this machine lacks (one node, no GPU needed; the CUDA Toolkit is used when found
# under /usr/local/cuda). Idempotent: installs nothing when everything is present.
# Environment: TESS_DEPS_EXTRA="pkg ..." adds packages.
set -euo pipefail
# libblas-test, python3-numpy, octave: the drop-in library's tests (reference BLAS testers,
# numpy and Octave under LD_PRELOAD; octave installs in about 20 s here);
# libscalapack-openmpi-dev: the oracle of the distributed GEMM's test (test_pgemm_mpi)
pkgs=(cmake make gcc pkg-config libopenblas-dev openmpi-bin libopenmpi-dev
      libblas3 libblas-test python3-numpy octave libscalapack-openmpi-dev
      ${TESS_DEPS_EXTRA:-})
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
