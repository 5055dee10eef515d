#!/usr/bin/env bash
# jobs/install-deps.sh: installs, from Debian's packages, whatever tessera's build and tests
# need and this machine lacks (one node, no GPU needed; the CUDA Toolkit is used when found
# under /usr/local/cuda). Idempotent: installs nothing when everything is present.
# Environment: TESS_DEPS_EXTRA="pkg ..." adds packages.
set -euo pipefail
# libblas-test, python3-numpy, octave: the drop-in library's tests (reference BLAS testers,
# numpy and Octave under LD_PRELOAD; octave installs in about 20 s here);
# libscalapack-openmpi-dev: the oracle of the distributed GEMM's test (test_pgemm_mpi);
# clang-format: the layout check (tests/check_style.sh)
pkgs=(cmake make gcc pkg-config libopenblas-dev openmpi-bin libopenmpi-dev
      libblas3 libblas-test python3-numpy octave libscalapack-openmpi-dev clang-format
      ${TESS_DEPS_EXTRA:-})
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]} (with their dependencies; a few minutes)"
# apt: waits for the dpkg lock (fresh cloud machines run unattended upgrades at boot), says
# so, and shows one line per package set up.
apt_run() { # apt-get arguments...
  local log rc tries=0
  log=$(mktemp)
  while :; do
    rc=0
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 \
      -o Dpkg::Use-Pty=0 "$@" 2>"$log" | awk '/^Setting up /{n++; printf "install-deps: [%d] %s\n", n, $0; fflush()}' || rc=$?
    [ "$rc" -eq 0 ] && break
    if grep -qiE "could not get lock|unable to lock|is another process using it" "$log" &&
       [ $((tries += 1)) -le 60 ]; then
      echo "install-deps: another apt or dpkg run holds the lock; waiting (try $tries of 60)"
      sleep 10
      continue
    fi
    cat "$log" >&2; rm -f "$log"; return "$rc"
  done
  rm -f "$log"
}
apt_run update -qq
apt_run install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
