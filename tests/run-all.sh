#!/usr/bin/env bash
# tests/run-all.sh: the README's second command and what CI runs. Installs what is missing,
# builds and runs the whole suite three ways: a Release build (every test), an
# AddressSanitizer + UndefinedBehaviorSanitizer build (every test), and a ThreadSanitizer
# build (the runtime tests: labels unit and runtime). CUDA tests skip (77) without a GPU.
# Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash jobs/install-deps.sh || exit 1
jobs=$(nproc)
pass=0; fail=0
run_suite() { # name, build dir, cmake args, ctest args
  local name=$1 dir=$2 cargs=$3 targs=$4
  echo "== $name"
  if ! cmake -S . -B "$dir" $cargs >"$dir.configure.log" 2>&1 || \
     ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    cat "$dir.configure.log" "$dir.build.log" 2>/dev/null | tail -40
    fail=$((fail + 1)); return
  fi
  local out
  out=$(ctest --test-dir "$dir" --output-on-failure -j"$jobs" $targs 2>&1)
  local rc=$?
  echo "$out" | grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|Failed|Not Run|\*\*\*" | tail -80
  local p f
  p=$(echo "$out" | grep -cE "Test +#[0-9]+: .* (Passed|\*\*\*Skipped)")
  f=$(echo "$out" | grep -cE "Test +#[0-9]+: .* (\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Not Run)")
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f))
}
run_suite "Release" build-ci "-DCMAKE_BUILD_TYPE=Release" ""
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run_suite "ASan+UBSan" build-asan "-DCMAKE_BUILD_TYPE=Debug -DTESS_SANITIZE=address,undefined" ""
OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  run_suite "TSan" build-tsan "-DCMAKE_BUILD_TYPE=Debug -DTESS_SANITIZE=thread" "-L unit|runtime"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
