#!/usr/bin/env bash
# tests/test_dropin.sh: one program run through the drop-in library, checked twice: its own
# verdict (every routine of a reference tester prints PASSED, or a program exits 0, or
# numpy/Octave give the same numbers with and without the drop-in), and where the calls
# went, read from the drop-in's exit summary (TESSERA_BLAS_VERBOSE=2). A run whose calls
# never reached the drop-in fails: a test that cannot fail is a defect.
#
# usage: test_dropin.sh LIB MODE WHAT [ARG...]
#   LIB            path of libtessera_blas.so
#   MODE default   two emulated devices; the crossover model routes nothing to emulated
#                  devices: everything on the CPU BLAS
#        model     the same with TESSERA_BLAS_EMULATED=1 and the model parameters of a
#                  made-up machine whose devices are 1000 times the CPU and cost 1 ms a call:
#                  small calls and the testers' tiny ones stay on the CPU BLAS, larger ones
#                  go to tessera, by shape and precision; ?potrf_/?posv_ and ?getrf_/?gesv_
#                  from n = 256
#        force     every call onto the emulated devices with 7 x 7 tiles (edge tiles
#                  everywhere)
#        cpu       no device, the CPU worker (tessera-crossover)
#   WHAT fortran P Debian's reference tester xblat3P (P = s, d, c, z) under LD_PRELOAD
#        cblas P   the CBLAS tester xPcblat3 under LD_PRELOAD, with netlib's libblas.so.3
#                  (the tester needs its RowMajorStrg; OpenBLAS's libblas has none)
#        program X a test program X linked to LIB (no preload)
#        lapack X NEXT  tests/test_dropin_lapack.c's program X linked to LIB (no preload):
#                  LAPACK's Cholesky and LU routines; NEXT = next: X links OpenBLAS after LIB, so
#                  every call kept on the CPU must have run on it (the program's own LAPACK,
#                  the summary's "on the program's own" count); alone: X links no LAPACK, none
#                  may have (tessera's CPU LAPACK took them)
#        wheel X EXT  tests/test_wheel.c's program X on the extension stand-in EXT (numpy's
#                  and scipy's pip wheels without numpy), under LD_PRELOAD
#        numpy     tests/dropin_numpy.py: C = A B (d, z), A A^T (dsyrk),
#                  numpy.linalg.cholesky (d, z: dpotrf_, zpotrf_), numpy.linalg.solve (d, z:
#                  dgesv_, zgesv_) and slogdet (d: dgetrf_), LD_PRELOAD
#        octave    tests/dropin_octave.m: A * B, A' * A (dsyrk) and A \ b of a general A
#                  (dgetrf_, dgetrs_), LD_PRELOAD
#        crossover X  tessera-crossover X on a tiny grid: it exits 0 and prints the fitted
#                  model (export lines and the C snippet), and X --selftest passes; no
#                  drop-in summary is read
#        errors    bad CBLAS calls from a program of the reference CBLAS (python3's ctypes on
#                  netlib's libblas.so.3, which defines no handler of its own): stderr and
#                  exit status the same with the drop-in preloaded as without (the
#                  reference's own handlers print and exit 255); calls the reference's C
#                  layer lets through run, and reach the drop-in (its summary)
# The mode's knobs are set below; CTest's ENVIRONMENT adds only what the build decides (a
# sanitizer runtime to preload first, TESS_TEST_PRELOAD_FIRST; paths). The table `expect`
# below says, for each mode and WHAT, what the drop-in's summary must show: tokens
# ROUTINE:WHERE (routine as printed, e.g. dgemm, zher2k, or "all" for every routine of the
# tester's precision):
#   tessera  every call that did work went to tessera (tessera >= 1, cpu = 0)
#   big      at least one call went to tessera (the large ones)
#   mixed    some calls went to tessera, some to the CPU BLAS
#   cpu      every call went to the CPU BLAS (tessera = 0, cpu >= 1)
# A routine without a tessera entry point yet ("route cpu" in the summary) can only meet
# "cpu": for it, tessera and big mean "reached the drop-in" (cpu >= 1) until it has one.
# Exit 0 pass, 1 fail, 77 skip (tester, numpy or Octave not installed).
set -uo pipefail
lib=$1 mode=$2 what=$3 arg=${4:-} arg2=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
blasdir=/usr/lib/x86_64-linux-gnu/blas   # Debian's libblas-test and libblas3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# ---- the mode's knobs ----------------------------------------------------------------------
emu2="TESSERA_DEVICES=none TESSERA_EMULATE=2 TESSERA_EMULATE_MEM=16M TESSERA_CPU_WORKER=0"
case $mode in
default) knobs=$emu2 ;;
model) knobs="$emu2 TESSERA_BLAS_EMULATED=1 TESSERA_BLAS_CPU_GFLOPS=1,1,100,100
  TESSERA_BLAS_DEV_GFLOPS=1000 TESSERA_BLAS_DEV_HALF=1 TESSERA_BLAS_LINK_GBS=1000
  TESSERA_BLAS_OVERHEAD_US=1000 TESSERA_BLAS_MARGIN=1.5 TESSERA_BLAS_POTRF_N=256
  TESSERA_BLAS_GETRF_N=256" ;;
force) knobs="$emu2 TESSERA_BLAS_FORCE=1 TESSERA_TILE=7" ;;
cpu) knobs="TESSERA_DEVICES=none TESSERA_EMULATE=0 TESSERA_CPU_WORKER=1" ;;
*) fail "unknown MODE '$mode'" ;;
esac
# shellcheck disable=SC2086 # a list of VAR=value words
export $knobs

# ---- what each run must show, by mode and WHAT (and the knobs the run adds) -----------------
case $mode:$what in
# the reference testers: the tiny calls stay on the CPU BLAS by default, and every call
# that does work reaches tessera when forced
default:fortran | default:cblas) expect=all:cpu ;;
force:fortran | force:cblas) expect=all:tessera ;;
# tests/test_blas.c: its dgemm and zgemm calls
default:program) expect=dgemm:cpu,zgemm:cpu ;;
# the model: dgemm from 130 x 140 x 150 on tessera, below on the CPU; the 150 x 140 x 160
# zgemm on the CPU (its rate is 100 times the dgemm's here)
model:program) export TESSERA_TILE=32; expect=dgemm:mixed,zgemm:cpu ;;
force:program) export TESSERA_TILE=32; expect=dgemm:tessera,zgemm:tessera ;;
# tests/test_dropin_lapack.c: by default every call on the CPU (the program's LAPACK, or
# tessera's CPU LAPACK when it links none); the model: potrf/posv and getrf/gesv from n = 256
# (the program calls n = 100 and 300; getrf by min(m, n)), potrs and getrs by their two TRSMs
# (5 right-hand sides stay, 300 go in d; z's rate keeps zgetrs on the CPU); forced, every
# call that does work on the emulated devices
default:lapack)
  expect=spotrf:cpu,dpotrf:cpu,cpotrf:cpu,zpotrf:cpu,dpotrs:cpu,zpotrs:cpu,dposv:cpu,zposv:cpu
  expect+=,sgetrf:cpu,dgetrf:cpu,cgetrf:cpu,zgetrf:cpu,sgetrs:cpu,dgetrs:cpu,cgetrs:cpu
  expect+=,zgetrs:cpu,sgesv:cpu,dgesv:cpu,cgesv:cpu,zgesv:cpu
  own=$([ "$arg2" = next ] && echo all || echo none) ;;
model:lapack)
  expect=spotrf:cpu,cpotrf:cpu,dpotrf:mixed,zpotrf:mixed,dposv:mixed,dpotrs:mixed,zposv:mixed
  expect+=,sgetrf:cpu,cgetrf:cpu,dgetrf:mixed,zgetrf:mixed,sgesv:cpu,cgesv:cpu,dgesv:mixed
  expect+=,zgesv:mixed,dgetrs:mixed,zgetrs:cpu
  own=$([ "$arg2" = next ] && echo all || echo none) ;;
force:lapack)
  export TESSERA_TILE=32
  expect=spotrf:tessera,dpotrf:tessera,cpotrf:tessera,zpotrf:tessera,spotrs:tessera,dpotrs:tessera
  expect+=,cpotrs:tessera,zpotrs:tessera,sposv:tessera,dposv:tessera,cposv:tessera,zposv:tessera
  expect+=,sgetrf:tessera,dgetrf:tessera,cgetrf:tessera,zgetrf:tessera,sgetrs:tessera
  expect+=,dgetrs:tessera,cgetrs:tessera,zgetrs:tessera,sgesv:tessera,dgesv:tessera
  expect+=,cgesv:tessera,zgesv:tessera ;;
# numpy and Octave: by default every call on the CPU BLAS; under the model the large
# products, the SYRKs, numpy's Cholesky factorizations, its solves (dgesv: n = 1024 on
# tessera, n = 100 on the CPU) and its slogdet's LU went to tessera
default:numpy)
  expect=dgemm:cpu,zgemm:cpu,dsyrk:cpu,dpotrf:cpu,zpotrf:cpu,dgesv:cpu,zgesv:cpu,dgetrf:cpu ;;
model:numpy)
  expect=dgemm:big,zgemm:big,dsyrk:big,dpotrf:big,zpotrf:big,dgesv:mixed,zgesv:big,dgetrf:big ;;
# (Octave's g \ r: dgetrf_ of n = 1024 on tessera under the model, the one-column dgetrs_
# on the CPU)
default:octave) expect=dgemm:cpu,dsyrk:cpu,dgetrf:cpu,dgetrs:cpu ;;
model:octave) expect=dgemm:big,dsyrk:big,dgetrf:big,dgetrs:cpu ;;
# the wheel's calls (scipy_cblas_<p>gemm64_ / syrk64_, scipy_<p>potrf_64_ / getrf_64_ /
# gesv_64_, scipy's scipy_<p>getrf_): by default every one on the stand-in (test_wheel
# checks, TEST_WHEEL_EXPECT), forced every one on tessera
default:wheel)
  export TEST_WHEEL_EXPECT=wheel
  expect=dgemm:cpu,zgemm:cpu,ssyrk:cpu,csyrk:cpu,spotrf:cpu,dpotrf:cpu,cpotrf:cpu,zpotrf:cpu
  expect+=,sgetrf:cpu,dgetrf:cpu,cgetrf:cpu,zgetrf:cpu,sgesv:cpu,dgesv:cpu,cgesv:cpu,zgesv:cpu ;;
force:wheel)
  export TESSERA_TILE=16 TEST_WHEEL_EXPECT=tessera
  expect=sgemm:tessera,dgemm:tessera,cgemm:tessera,zgemm:tessera,ssyrk:tessera,dsyrk:tessera,csyrk:tessera,zsyrk:tessera
  expect+=,spotrf:tessera,dpotrf:tessera,cpotrf:tessera,zpotrf:tessera,sgetrf:tessera
  expect+=,dgetrf:tessera,cgetrf:tessera,zgetrf:tessera,sgesv:tessera,dgesv:tessera
  expect+=,cgesv:tessera,zgesv:tessera ;;
# these check their own verdicts (no summary tokens)
default:errors | cpu:crossover) expect= ;;
*) fail "no expectation for MODE $mode with WHAT $what" ;;
esac

# A sanitized library needs its runtime loaded first in a foreign program.
preload="$lib"
[ -n "${TESS_TEST_PRELOAD_FIRST:-}" ] && preload="$TESS_TEST_PRELOAD_FIRST $lib"
export TESSERA_BLAS_VERBOSE=2

# run_logged LOG CMD...: run with the summary on; the verdict is the command's status.
run_logged() { local log=$1; shift; "$@" >"$log" 2>&1; rc=$?; return $rc; }
rc=0

routines=()
own=${own:-}
case $what in
fortran | cblas)
  p=$arg
  case $p in
  s | d) routines=(gemm symm trmm trsm syrk syr2k) ;;
  c | z) routines=(gemm hemm symm trmm trsm herk syrk her2k syr2k) ;;
  *) fail "precision '$p'" ;;
  esac
  if [ "$what" = fortran ]; then
    exe=$blasdir/xblat3$p input=$blasdir/${p}blat3.in
  else
    exe=$blasdir/x${p}cblat3 input=$blasdir/${p}in3
  fi
  [ -x "$exe" ] && [ -r "$input" ] || skip "$exe not installed (Debian package libblas-test)"
  if [ "$what" = fortran ]; then
    run_logged log env LD_PRELOAD="$preload" "$exe" <"$input" || { cat log; fail "$exe exited $rc"; }
    out=${p}blat3.out   # the summary file its input names
    [ -s "$out" ] || fail "$exe wrote no $out"
    want=("PASSED THE TESTS OF ERROR-EXITS" "PASSED THE COMPUTATIONAL TESTS")
    name() { echo "$p$1" | tr a-z A-Z; }
  else
    run_logged log env LD_LIBRARY_PATH="$blasdir" LD_PRELOAD="$preload" "$exe" <"$input" ||
      { cat log; fail "$exe exited $rc"; }
    out=log
    want=("PASSED THE TESTS OF ERROR-EXITS" "PASSED THE COLUMN-MAJOR COMPUTATIONAL TESTS"
          "PASSED THE ROW-MAJOR    COMPUTATIONAL TESTS")
    name() { echo "cblas_$p$1"; }
  fi
  bad=$(grep -E "FAIL|SUSPECT|\*\*\*\*\*|ERROR" "$out" | grep -v "PASSED" | head -5)
  [ -z "$bad" ] || { cat "$out"; fail "$exe: $bad"; }
  for r in "${routines[@]}"; do
    for w in "${want[@]}"; do
      grep -qE "^ *$(name "$r") +$w" "$out" || { cat "$out"; fail "$(name "$r") did not print '$w'"; }
    done
  done
  echo "$exe: ${#routines[@]} routines PASSED"
  ;;
program | lapack)
  run_logged log "$arg" || { cat log; fail "$arg exited $rc"; }
  cat log
  ;;
wheel)
  run_logged log env LD_PRELOAD="$preload" "$arg" "$arg2" || { cat log; fail "$arg $arg2 exited $rc"; }
  cat log
  ;;
numpy)
  py=/usr/bin/python3   # Debian's, which has python3-numpy
  "$py" -c "import numpy" 2>/dev/null || skip "python3-numpy not installed"
  "$py" "$here/dropin_numpy.py" compute ref.npz || fail "numpy without the drop-in"
  run_logged log env LD_PRELOAD="$preload" "$py" "$here/dropin_numpy.py" compute tess.npz ||
    { cat log; fail "numpy with the drop-in exited $rc"; }
  "$py" "$here/dropin_numpy.py" compare ref.npz tess.npz || fail "numpy results differ"
  ;;
octave)
  command -v octave-cli >/dev/null || skip "octave not installed (Debian package octave)"
  oct() { octave-cli -q --norc --no-history "$here/dropin_octave.m"; }
  DROPIN_MODE=compute DROPIN_OUT=ref.bin oct >ref.log 2>&1 || { cat ref.log; fail "octave without the drop-in"; }
  run_logged log env DROPIN_MODE=compute DROPIN_OUT=tess.bin LD_PRELOAD="$preload" \
    octave-cli -q --norc --no-history "$here/dropin_octave.m" || { cat log; fail "octave with the drop-in exited $rc"; }
  DROPIN_MODE=compare DROPIN_REF=ref.bin DROPIN_OUT=tess.bin oct || fail "octave results differ"
  ;;
crossover)
  "$arg" --max-n 128 --skinny 256 -p dz --reps 1 --time-limit 30 >log 2>&1 ||
    { cat log; fail "$arg exited $?"; }
  cat log
  for v in CPU_GFLOPS DEV_GFLOPS DEV_HALF LINK_GBS OVERHEAD_US MARGIN; do
    grep -qE "^export TESSERA_BLAS_$v=[0-9]" log || fail "no export line for TESSERA_BLAS_$v"
    grep -qE "^#define TESS__BLAS_DEF_$v \"[0-9]" log || fail "no #define for TESS__BLAS_DEF_$v"
  done
  "$arg" --selftest >selftest.log 2>&1 || { cat selftest.log; fail "$arg --selftest"; }
  tail -6 selftest.log
  echo "PASS (tessera-crossover printed the fitted model; its fit passed --selftest)"
  exit 0
  ;;
errors)
  py=/usr/bin/python3
  ref=$blasdir/libblas.so.3
  [ -x "$py" ] || skip "python3 not installed"
  [ -r "$ref" ] && nm -D "$ref" 2>/dev/null | grep " T cblas_dgemm$" >/dev/null ||
    skip "$ref (Debian package libblas3, netlib's CBLAS) not installed"
  cat >errors.py <<'PY'
import ctypes, sys
I, D, F, P = ctypes.c_int, ctypes.c_double, ctypes.c_float, ctypes.c_void_p
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # the reference, its globals and handlers
g = ctypes.CDLL(None)  # the global scope: a preloaded drop-in's symbols first
A, B, C = (ctypes.cast((ctypes.c_double * 128)(), P) for _ in range(3))
one, half = (ctypes.c_double * 2)(1, 0), (ctypes.c_double * 2)(0.5, 0)
ROW, COL, NT, TR, CT, UP, LO, LE, NU = 101, 102, 111, 112, 113, 121, 122, 141, 131
case = sys.argv[2]
if case == "dgemm_row_lda":  # the Fortran routine rejects lda of the folded call
    g.cblas_dgemm(I(ROW), I(NT), I(NT), I(2), I(2), I(2), D(1), A, I(1), B, I(2), D(0), C, I(2))
elif case == "dgemm_col_ldc":
    g.cblas_dgemm(I(COL), I(NT), I(NT), I(2), I(2), I(2), D(1), A, I(2), B, I(2), D(0), C, I(1))
elif case == "dgemm_row_transb":  # the C layer: position 2 in row major
    g.cblas_dgemm(I(ROW), I(NT), I(99), I(2), I(2), I(2), D(1), A, I(2), B, I(2), D(0), C, I(2))
elif case == "dsyrk_row_uplo":  # the C layer: position 3 in row major
    g.cblas_dsyrk(I(ROW), I(99), I(NT), I(2), I(2), D(1), A, I(2), D(0), C, I(2))
elif case == "zsyrk_col_conj":  # the Fortran routine rejects ConjTrans
    g.cblas_zsyrk(I(COL), I(UP), I(CT), I(2), I(2), one, A, I(2), half, C, I(2))
elif case == "zsyrk_row_conj":  # row major takes it: runs
    g.cblas_zsyrk(I(ROW), I(UP), I(CT), I(2), I(2), one, A, I(2), half, C, I(2))
elif case == "cherk_row_trans":  # row major takes Trans: runs
    g.cblas_cherk(I(ROW), I(LO), I(TR), I(2), I(2), F(1), A, I(2), F(0.5), C, I(2))
elif case == "dtrsm_row_m":  # m < 0 is n of the folded call
    g.cblas_dtrsm(I(ROW), I(LE), I(UP), I(NT), I(NU), I(-1), I(2), D(1), A, I(2), B, I(2))
print("returned")
PY
  n=0
  for c in dgemm_row_lda dgemm_col_ldc dgemm_row_transb dsyrk_row_uplo zsyrk_col_conj \
           zsyrk_row_conj cherk_row_trans dtrsm_row_m; do
    "$py" errors.py "$ref" "$c" >want 2>&1; want_rc=$?
    env LD_PRELOAD="$preload" "$py" errors.py "$ref" "$c" >log 2>&1; got_rc=$?
    grep -v "^tessera-blas" log >got
    if [ "$want_rc" -eq 0 ]; then
      grep -qE "^tessera-blas: tessera [0-9]+ calls" log || { cat log; fail "$c: the call did not reach $lib"; }
    fi
    if [ "$got_rc" -ne "$want_rc" ] || ! cmp -s want got; then
      echo "--- the reference alone (exit $want_rc):"; cat want
      echo "--- with the drop-in (exit $got_rc):"; cat log
      fail "$c: not as the reference"
    fi
    echo "$c: as the reference (exit $want_rc): $(head -1 want)"
    n=$((n + 1))
  done
  echo "PASS ($n calls as the reference CBLAS)"
  exit 0
  ;;
*) fail "unknown WHAT '$what'" ;;
esac

# ---- where the calls went: the parent's summary lines ------------------------------------
grep "^tessera-blas" log | grep -v "^tessera-blas: [sdcz][a-z0-9]* tessera" || true
total=$(grep -E "^tessera-blas: tessera [0-9]+ calls" log) || fail "no drop-in summary: the calls did not go through $lib"
# the line of one routine: "tessera-blas: dgemm tessera N F cpu N F quick N route R"
line() { grep -E "^tessera-blas: $1 tessera " log; }
read -r tess_total cpu_total < <(echo "$total" | sed -E 's/.*tessera ([0-9]+) calls.*cpu ([0-9]+) calls.*/\1 \2/')
[ $((tess_total + cpu_total)) -gt 0 ] || fail "no call did work through the drop-in"

for tok in ${expect//,/ }; do
  r=${tok%%:*} where=${tok#*:}
  if [ "$r" = all ]; then
    [ ${#routines[@]} -gt 0 ] || fail "'all' needs a tester"
    names=(); for x in "${routines[@]}"; do names+=("$p$x"); done
  else
    names=("$r")
  fi
  for nm in "${names[@]}"; do
    l=$(line "$nm") || fail "$nm never reached the drop-in"
    read -r t c q route < <(echo "$l" | sed -E 's/.* tessera ([0-9]+) [^ ]+ cpu ([0-9]+) [^ ]+ quick ([0-9]+) route ([a-z]+)$/\1 \2 \3 \4/')
    if [ "$route" = cpu ] && [ "$where" != cpu ]; then
      where=reached   # no tessera entry point yet
    fi
    case $where in
    tessera) [ "$t" -ge 1 ] && [ "$c" -eq 0 ] || fail "$nm: expected all on tessera: $l" ;;
    big) [ "$t" -ge 1 ] || fail "$nm: expected the large calls on tessera: $l" ;;
    mixed) [ "$t" -ge 1 ] && [ "$c" -ge 1 ] || fail "$nm: expected calls on both sides: $l" ;;
    cpu) [ "$t" -eq 0 ] && [ "$c" -ge 1 ] || fail "$nm: expected all on the CPU BLAS: $l" ;;
    reached) [ "$t" -eq 0 ] && [ "$c" -ge 1 ] || fail "$nm: (CPU only for now) expected cpu calls: $l" ;;
    *) fail "unknown expectation '$tok'" ;;
    esac
    where=${tok#*:}
  done
done
# own: the LAPACK calls kept on the CPU that ran on the program's own LAPACK (the door's next
# definition; level-3 calls that LAPACK makes back through the library go to the CPU BLAS)
own_calls=$(echo "$total" | sed -nE "s/.*; ([0-9]+) on the program's own .*/\1/p")
lapack_cpu=$(grep -E "^tessera-blas: [sdcz](potrf|potrs|posv|getrf|getrs|gesv) tessera " log |
  sed -E 's/.* cpu ([0-9]+) .*/\1/' | awk '{s += $1} END {print s + 0}')
case $own in
all) [ "${own_calls:-0}" -eq "$lapack_cpu" ] && [ "$lapack_cpu" -gt 0 ] ||
  fail "expected every LAPACK call kept on the CPU on the program's own LAPACK: ${own_calls:-0} of $lapack_cpu" ;;
none) [ -z "$own_calls" ] || fail "expected no call on the program's own library: $total" ;;
esac
# a forked child, if any, used the CPU BLAS only
if child=$(grep -E "^tessera-blas \(forked child\): tessera [0-9]+ calls" log); then
  echo "$child" | grep -qE "tessera 0 calls" || fail "a forked child used the runtime: $child"
fi
echo "PASS ($total)"
