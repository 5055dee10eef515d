#!/usr/bin/env bash
# jobs/quickstart.sh: the README's first command. One node: installs what is missing
# (jobs/install-deps.sh), builds tessera in ./build, and runs the main job, tessera-gemm:
# a verified DGEMM through the node runtime on every GPU found (or, with none, on the CPU
# worker; TESSERA_EMULATE=N adds emulated devices), printing the rate and per-device
# counters. Extra arguments go to tessera-gemm (e.g. -m 8192 -p z).
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/tessera-info | sed -n '1,/^knobs/p'
exec ./build/tessera-gemm "$@"
