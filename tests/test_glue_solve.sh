#!/usr/bin/env bash
# tests/test_glue_solve.sh: a real ScaLAPACK computation through the glue (issue 7). The
# program tests/glue_solve.c (linked against ScaLAPACK only: an LU and a Cholesky solve with
# their scaled residuals) runs twice under the MPI launcher: as is, then unchanged under
# LD_PRELOAD=libtessera_scalapack.so. Passes when
#   - both runs pass both solves (scaled residual < 16: the same residual class), and
#   - the glue's exit summary (TESSERA_SCALAPACK_VERBOSE=2, one block per rank) shows the
#     solvers (pdgetrf_, pdgetrs_, pdpotrf_, pdpotrs_) reaching the glue on every rank: on
#     one process (a 1 x 1 grid), forced, computed by tessera and no PBLAS call made; on
#     more, pdpotrf_ (UPLO = 'L') by tessera's distributed Cholesky, forced, pdgetrf_ by
#     its distributed LU where the grid's transport is the device one, and the others sent
#     to the reference, whose pdgemm_ calls tessera computes (tessera >= 1, reference 0)
#     when TESSERA_SCALAPACK_FORCE=1, or at least reach the glue otherwise.
# A run whose pdgemm_ calls never reach the glue fails: a test that cannot fail is a defect.
#
# usage: test_glue_solve.sh GLUE PROGRAM NP LAUNCHER [LAUNCHER ARGS...]
#   the launcher line is run as: LAUNCHER... NP-FLAG NP PREFLAGS (given by CMake), e.g.
#   test_glue_solve.sh /b/libtessera_scalapack.so /b/glue_solve 4 mpiexec -n 4 --oversubscribe
# The knobs (TESSERA_*) come from the environment; the preload reaches only the ranks (the
# launcher runs `env LD_PRELOAD=... PROGRAM`, so mpirun itself is left alone).
# TESS_TEST_PRELOAD_FIRST: a sanitizer runtime to preload before the glue. GLUE_SOLVE_FAULT:
# the run through the glue injects that device fault instead (see below);
# GLUE_SOLVE_FAULT_FALLBACK=1: the faulted call is expected to run again on the reference.
# Exit 0 pass, 1 fail.
set -uo pipefail
glue=$1 prog=$2 np=$3
shift 3
launcher=("$@")
args=(${GLUE_SOLVE_ARGS:-})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

preload="$glue"
[ -n "${TESS_TEST_PRELOAD_FIRST:-}" ] && preload="$TESS_TEST_PRELOAD_FIRST $glue"

echo "== without the glue"
"${launcher[@]}" "$prog" "${args[@]}" >"$work/ref.out" 2>&1
rc=$?
cat "$work/ref.out"
[ $rc -eq 0 ] || fail "the program failed without the glue (exit $rc)"

if [ -n "${GLUE_SOLVE_FAULT:-}" ]; then
  # a device fault inside the distributed Cholesky or LU (TESSERA_FAULT=GLUE_SOLVE_FAULT,
  # the program run for that one solve: "chol" or "lu" in GLUE_SOLVE_ARGS): the call has
  # written A, so the glue stops the job (docs/scalapack.md) with the same error on every
  # rank: no hang, no wrong answer
  if [ "${args[3]:-}" = lu ]; then
    line=LU rout=pdgetrf_ what="the distributed LU"
  else
    line=CHOL rout=pdpotrf_ what="the distributed Cholesky"
  fi
  echo "== with LD_PRELOAD=$glue and TESSERA_FAULT=$GLUE_SOLVE_FAULT"
  TESSERA_SCALAPACK_VERBOSE=1 TESSERA_FAULT=$GLUE_SOLVE_FAULT timeout 90 "${launcher[@]}" \
    env LD_PRELOAD="$preload" "$prog" "${args[@]}" >"$work/fault.out" 2>&1
  rc=$?
  cat "$work/fault.out"
  [ $rc -ne 124 ] || fail "the job hung after the fault"
  if [ "${GLUE_SOLVE_FAULT_FALLBACK:-0}" = 1 ]; then
    # (the LU on several process rows: the fault comes before A is written back, so every
    # rank runs the call again on the reference and the solve passes)
    grep -q "$rout failed in tessera ($what.*runs again on the reference" "$work/fault.out" ||
      fail "no rank said that $what failed and went to the reference"
    [ $rc -eq 0 ] && grep -q "^$line .*PASSED" "$work/fault.out" ||
      fail "the solve did not pass after the fault (exit $rc)"
    echo "PASS"
    exit 0
  fi
  ! grep -q "^$line .*PASSED" "$work/fault.out" || fail "the fault never reached the factorization"
  grep -q "$rout failed in tessera ($what" "$work/fault.out" ||
    fail "no rank said that $what failed"
  [ $rc -ne 0 ] || fail "the job went on after $what failed"
  echo "PASS"
  exit 0
fi

echo "== with LD_PRELOAD=$glue"
TESSERA_SCALAPACK_VERBOSE=2 "${launcher[@]}" env LD_PRELOAD="$preload" "$prog" "${args[@]}" \
  >"$work/glue.out" 2>&1
rc=$?
cat "$work/glue.out"
[ $rc -eq 0 ] || fail "the program failed through the glue (exit $rc)"

# the distributed LU is tessera's on any grid of the device transport (TESSERA_PGEMM_NCCL=2
# here; on several process rows through one)
lu_dev=0
[ "${TESSERA_PGEMM_NCCL:-0}" = 2 ] && [ "$np" -ge 2 ] && lu_dev=1
for what in LU CHOL; do
  grep -q "^$what .*PASSED" "$work/ref.out" || fail "$what did not pass without the glue"
  grep -q "^$what .*PASSED" "$work/glue.out" || fail "$what did not pass through the glue"
done

# one process (a 1 x 1 grid): the solvers themselves run on tessera (forced), no PBLAS call
# is made; every rank's line: "tessera-scalapack: rank R: pdgetrf tessera N F reference M F2"
for rout in pdgetrf pdgetrs pdpotrf pdpotrs; do
  for ((r = 0; r < np; r++)); do
    line=$(grep "^tessera-scalapack: rank $r: $rout " "$work/glue.out")
    [ -n "$line" ] || fail "rank $r: no ${rout}_ call reached the glue"
    tess=$(awk '{print $6}' <<<"$line")
    ref=$(awk '{print $9}' <<<"$line")
    tessera=0
    { [ "$np" -eq 1 ] || [ "$rout" = pdpotrf ]; } && tessera=1
    [ "$rout" = pdgetrf ] && [ "$lu_dev" = 1 ] && tessera=1
    if [ $tessera = 1 ] && [ "${TESSERA_SCALAPACK_FORCE:-0}" = 1 ]; then
      [ "$tess" -ge 1 ] && [ "$ref" -eq 0 ] ||
        fail "rank $r: ${rout}_ calls: tessera $tess, reference $ref (forced: tessera)"
    elif [ "$np" -gt 1 ] && [ $tessera = 0 ]; then
      [ "$tess" -eq 0 ] && [ "$ref" -ge 1 ] ||
        fail "rank $r: ${rout}_ calls: tessera $tess, reference $ref (a grid of $np: the reference)"
    fi
    echo "rank $r: ${rout}_ tessera $tess reference $ref"
  done
done
[ "$np" -eq 1 ] && { echo "PASS"; exit 0; }
# the distributed LU on the device transport leaves no pdgemm_ call to the reference's
# solvers (p?getrs_ and p?potrs_ call p?trsm_)
[ "$lu_dev" = 1 ] && { echo "PASS"; exit 0; }

# every rank's pdgemm line: "tessera-scalapack: rank R: pdgemm tessera N F reference M F2 ..."
for ((r = 0; r < np; r++)); do
  line=$(grep "^tessera-scalapack: rank $r: pdgemm " "$work/glue.out")
  [ -n "$line" ] || fail "rank $r: no pdgemm_ call reached the glue"
  tess=$(awk '{print $6}' <<<"$line")
  ref=$(awk '{print $9}' <<<"$line")
  if [ "${TESSERA_SCALAPACK_FORCE:-0}" = 1 ]; then
    [ "$tess" -ge 1 ] && [ "$ref" -eq 0 ] ||
      fail "rank $r: pdgemm_ calls: tessera $tess, reference $ref (forced: all to tessera)"
  fi
  echo "rank $r: pdgemm_ tessera $tess reference $ref"
done
echo "PASS"
