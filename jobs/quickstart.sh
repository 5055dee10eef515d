#!/usr/bin/env bash
# jobs/quickstart.sh: the README's first command. One node: installs what is missing
# (jobs/install-deps.sh, Open MPI included), builds tessera in ./build, and runs the main
# job, jobs/mpirun-gemm.sh: tessera-gemm under mpirun, a distributed DGEMM (tess_pdgemm on a
# grid of ranks) verified by the probe-vector oracle, with one rank per GPU, or, with no
# GPU, 2 ranks of 2 emulated devices each (TESSERA_EMULATE=N per rank, NP=N ranks); it
# prints the rate, each rank's device counters and its communication. Extra arguments go to
# tessera-gemm (e.g. -m 8192 -p z). The job prints the devices each rank will use and the
# knobs it sets before it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/install-deps.sh
echo "quickstart: configuring and building tessera in ./build (about a minute on 2 cores)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build.configure.log 2>&1 || {
  tail -40 build.configure.log; exit 1; }
cmake --build build -j"$(nproc)" >build.build.log 2>&1 || { tail -40 build.build.log; exit 1; }
echo "quickstart: built (logs: build.configure.log, build.build.log)"
exec bash jobs/mpirun-gemm.sh "$@"
