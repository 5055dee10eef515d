#!/usr/bin/env bash
# jobs/mpirun-gemm.sh: the main job: tessera-gemm as a distributed GEMM under mpirun
# (tess_p?gemm on a P x Q grid of ranks, verified by the probe-vector oracle).
# Nodes: this one by default; several with MPIRUN_ARGS="--hostfile FILE" and NP = all ranks
# (docs/jobs.md; Slurm: jobs/slurm-gemm.sbatch). GPUs: one rank per GPU, each rank driving
# only its own (TESSERA_DEVICES = its node-local rank); with no GPU, NP = 2 ranks of
# TESSERA_EMULATE = 2 emulated devices each. Environment: Open MPI's mpirun
# (jobs/install-deps.sh installs it) and tessera built with MPI in $BUILD.
#   NP           ranks (default: the GPUs of this node, or 2 without a GPU)
#   BUILD        build directory holding tessera-gemm (default build)
#   MPIRUN       launcher (default mpirun); MPIRUN_ARGS: more launcher arguments
#   TESSERA_*    knobs (docs/knobs.md), passed to every rank; TESSERA_EMULATE: emulated
#                devices per rank when there is no GPU (0: the CPU worker)
# Arguments go to tessera-gemm after the defaults (-m 32768 -r 3 --pinned on GPUs,
# -m 2048 -r 3 without), so they override them: jobs/mpirun-gemm.sh -m 8192 -p z -P 2.
# Another job launched the same way (jobs/mpirun-solve.sh) sets JOB_NAME, JOB_TOOL,
# JOB_DEFAULTS_GPU, JOB_DEFAULTS_EMU and JOB_EMU_ENV (assignments exported without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
job=${JOB_NAME:-mpirun-gemm}
exe=$BUILD/${JOB_TOOL:-tessera-gemm}
if [ ! -x "$exe" ]; then
  echo "$job: $exe not found: build first (bash jobs/quickstart.sh)" >&2; exit 1
fi
if ! "$exe" --help 2>/dev/null | grep -q "Distributed"; then
  echo "$job: $exe was built without MPI (jobs/install-deps.sh installs it)" >&2; exit 1
fi

# GPUs of this node (those CUDA_VISIBLE_DEVICES leaves, if set)
gpus=0
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  gpus=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c . || true)
elif command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
bind=0
if [ "$gpus" -gt 0 ] && [ "${TESSERA_DEVICES:-all}" != none ]; then
  NP=${NP:-$gpus}
  # shellcheck disable=SC2206
  defaults=(${JOB_DEFAULTS_GPU:--m 32768 -r 3 --pinned})
  # several ranks and no choice made (TESSERA_DEVICES unset or all): one GPU per rank
  [ "$NP" -gt 1 ] && [ "${TESSERA_DEVICES:-all}" = all ] && bind=1
else
  NP=${NP:-2}
  export TESSERA_DEVICES=none TESSERA_EMULATE=${TESSERA_EMULATE:-2}
  # shellcheck disable=SC2206
  defaults=(${JOB_DEFAULTS_EMU:--m 2048 -r 3})
  for a in ${JOB_EMU_ENV:-}; do export "${a?}"; done
  # robust over fast: no CMA single copy (containers often forbid process_vm_readv)
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
# Several ranks on a node: no pinning (TESSERA_PIN would spread the ranks' workers by
# node-local rank, but their OpenBLAS and MPI threads share the same cores).
[ "$NP" -gt 1 ] && export TESSERA_PIN=${TESSERA_PIN:-0}

launch=("$MPIRUN" -np "$NP")
if "$MPIRUN" --version 2>&1 | grep -q "Open MPI\|OpenRTE"; then
  if [ "$(id -u)" -eq 0 ]; then  # Open MPI refuses root unless told
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  # every rank runs a worker thread per device, stream threads and MPI: no core binding
  launch+=(--bind-to none)
  if [ "$NP" -gt "$(nproc)" ]; then  # more ranks than cores: allowed, and ranks yield
    launch+=(--oversubscribe)
    export OMPI_MCA_mpi_yield_when_idle=1
  fi
  # the knobs reach ranks on other nodes too
  for v in $(compgen -e | grep -E '^(TESSERA_|NCCL_)' || true); do launch+=(-x "$v"); done
fi
# shellcheck disable=SC2206
launch+=(${MPIRUN_ARGS:-})
if [ "$bind" = 1 ]; then
  # one GPU per rank: its node-local rank (Open MPI, MPICH/Hydra or Slurm numbering)
  # shellcheck disable=SC2016
  local_rank='${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}'
  launch+=(bash -c "export TESSERA_DEVICES=\$(( $local_rank % $gpus )); exec \"\$0\" \"\$@\"")
fi
if [ "$bind" = 1 ]; then what="one GPU each"
elif [ "$gpus" -gt 0 ]; then what="GPUs ${TESSERA_DEVICES:-all} each"
else what="${TESSERA_EMULATE} emulated devices each"; fi
echo "$job: $NP ranks, $what: ${launch[0]} -np $NP ... $exe ${defaults[*]} $*" >&2
# what one rank will use: its devices as tessera-info sees them in the ranks' environment
# (with one GPU per rank, the first rank's), and the knobs the job sets
info=$BUILD/tessera-info
if [ -x "$info" ]; then
  if [ "$bind" = 1 ]; then TESSERA_DEVICES=0 "$info" 2>&1 | sed -n '/^devices/,/^$/p' >&2
  else "$info" 2>&1 | sed -n '/^devices/,/^$/p' >&2; fi
  echo "knobs set for every rank: $(compgen -e | grep -E '^TESSERA_' | sort |
    while read -r v; do printf '%s=%s ' "$v" "${!v}"; done)" >&2
fi
exec "${launch[@]}" "$exe" "${defaults[@]}" "$@"
