#!/usr/bin/env bash
# tests/run-all.sh: the README's second command and what CI runs. Installs what is missing,
# builds and runs the whole suite three ways: a Release build (every test), an
# AddressSanitizer + UndefinedBehaviorSanitizer build (every test), and a ThreadSanitizer
# build (the runtime tests: labels unit and runtime). Every build has TESS_WERROR=ON: a
# compiler warning fails it. CUDA tests skip (77) without a GPU. First, tests/check_style.sh
# (the layout of .clang-format, commit subjects) counts as one test.
# While a suite runs, each test's result line is printed as it finishes (a failing test's
# output after it); each suite ends with its counts and one line per skipped test with the
# reason the test gave (its "SKIP: ..." line). Ends with one line
# "N passed, N failed, N skipped" (a build that fails counts as one failure).
set -uo pipefail
cd "$(dirname "$0")/.."
bash jobs/install-deps.sh || exit 1
jobs=$(nproc)
pass=0; fail=0; skip=0

# ctest's output, filtered as it comes: the per-test result lines ("12/291 Test #40: name
# .....   Passed    1.20 sec"), and the output --output-on-failure prints after a failing
# one, up to the next test's line.
progress() {
  awk '
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
      show = ($0 !~ /(  Passed|\*\*\*Skipped) /); print; fflush(); next
    }
    /^ *Start +[0-9]+: / { show = 0; next }
    /^(The following tests|[0-9]+% tests passed|Total Test time|Label Time Summary)/ { show = 0 }
    show { print "    " $0; fflush() }'
}

# The reason a skipped test gave: its first "SKIP: " line in ctest's LastTest.log.
skip_reason() { # log, test name
  awk -v t="$2" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); cur = $0; next }
    cur == t && /^SKIP: / { sub(/^SKIP: /, ""); print; exit }' "$1"
}

run_suite() { # name, build dir, cmake args, ctest args
  local name=$1 dir=$2 cargs=$3 targs=$4
  echo "== $name"
  # shellcheck disable=SC2086 # cargs/targs are argument lists
  if ! cmake -S . -B "$dir" $cargs -DTESS_WERROR=ON >"$dir.configure.log" 2>&1 || \
     ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    cat "$dir.configure.log" "$dir.build.log" 2>/dev/null | tail -40
    echo "== $name: the build failed"
    fail=$((fail + 1)); return
  fi
  local log="$dir.ctest.log" rc
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" $targs 2>&1 | tee "$log" | progress
  rc=${PIPESTATUS[0]}
  # one result line per test: its name and status (Passed, Skipped, Failed, Timeout,
  # Exception: ..., Not Run, ...)
  local results p f s
  results=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .]*(\*\*\*)?(.*[^ ]) +[0-9.]+ sec$/\1 \3/p' "$log")
  local ok="^[^ ]+ (Passed|Skipped|Not Run \(Disabled\))$"
  p=$(echo "$results" | grep -cE "^[^ ]+ Passed$")
  s=$(echo "$results" | grep -cE "^[^ ]+ (Skipped|Not Run \(Disabled\))$")
  f=$(echo "$results" | grep -vE "$ok" | grep -c .)
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "== $name: ctest exited $rc with no failed test:"; tail -20 "$log"
    f=1
  fi
  local t why
  for t in $(echo "$results" | awk '$2 == "Skipped" {print $1}'); do
    why=$(skip_reason "$dir/Testing/Temporary/LastTest.log" "$t" || true)
    echo "skipped: $t: ${why:-(exit 77 without a SKIP line)}"
  done
  if [ "$f" -gt 0 ]; then
    echo "failed: $(echo "$results" | grep -vE "$ok" | awk 'NF {printf "%s%s (%s)", sep, $1, substr($0, length($1) + 2); sep = ", "}')"
  fi
  echo "== $name: $p passed, $f failed, $s skipped"
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}
# the house rules a machine checks (layout, commit subjects): one test
echo "== style"
if bash tests/check_style.sh; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
run_suite "Release" build-ci "-DCMAKE_BUILD_TYPE=Release" ""
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run_suite "ASan+UBSan" build-asan "-DCMAKE_BUILD_TYPE=Debug -DTESS_SANITIZE=address,undefined" ""
OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  run_suite "TSan" build-tsan "-DCMAKE_BUILD_TYPE=Debug -DTESS_SANITIZE=thread" "-L unit|runtime"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
