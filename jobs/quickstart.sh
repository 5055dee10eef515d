#!/usr/bin/env bash
# jobs/quickstart.sh: the README's first command. One node: installs what is missing
# (jobs/install-deps.sh, Open MPI included), builds tessera in ./build, and runs the main
# job, jobs/mpirun-gemm.sh: tessera-gemm under mpirun, a distributed DGEMM (tess_pdgemm on a
# grid of ranks) verified by the probe-vector oracle, with one rank per GPU, or, with no
# GPU, 2 ranks of 2 emulated devices each (TESSERA_EMULATE=N per rank, NP=N ranks); it
# prints the rate, each rank's device counters and its communication. Extra arguments go to
# tessera-gemm (e.g. -m 8192 -p z).
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/tessera-info | sed -n '1,/^knobs/p'
exec bash jobs/mpirun-gemm.sh "$@"
