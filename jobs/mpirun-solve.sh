#!/usr/bin/env bash
# jobs/mpirun-solve.sh: the solver job: tessera-solve under mpirun, ScaLAPACK's LU and
# Cholesky solves through the glue on a P x Q grid of the ranks, each run verified by its
# scaled residual, with the factorization's rate and each rank's glue counters
# (docs/jobs.md). Launched as jobs/mpirun-gemm.sh launches tessera-gemm (NP, BUILD, MPIRUN,
# MPIRUN_ARGS, one GPU per rank, emulated devices without a GPU; tessera built with MPI and
# ScaLAPACK found). Without a GPU the glue's device paths run on the emulated devices
# (TESSERA_PGEMM_NCCL=2) and every call goes to tessera (TESSERA_SCALAPACK_FORCE=1), unless
# set otherwise. Arguments go to tessera-solve after the defaults (-n 32768 --nb 512 -r 3 on
# GPUs, -n 1024 --nb 32 -r 2 without): jobs/mpirun-solve.sh -n 65536 -P 1 --routine getrf.
set -euo pipefail
export JOB_NAME=mpirun-solve JOB_TOOL=tessera-solve \
  JOB_DEFAULTS_GPU="-n 32768 --nb 512 -r 3" JOB_DEFAULTS_EMU="-n 1024 --nb 32 -r 2" \
  JOB_EMU_ENV="TESSERA_PGEMM_NCCL=${TESSERA_PGEMM_NCCL:-2} TESSERA_SCALAPACK_FORCE=${TESSERA_SCALAPACK_FORCE:-1}"
exec bash "$(dirname "$0")/mpirun-gemm.sh" "$@"
