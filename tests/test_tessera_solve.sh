#!/usr/bin/env bash
# tests/test_tessera_solve.sh: runs COMMAND (tessera-solve under a launcher, or
# jobs/mpirun-solve.sh) and checks its output: exit status 0, no run FAILED, a median line per
# routine (ROUTINES of them, default 2), and on each of the NP ranks the glue's counters
# showing the factorizations taken by tessera with their panels on the devices (getrf and
# potrf: "t/d/..." with d >= 1). Usage: test_tessera_solve.sh NP COMMAND...
np=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 0 ] || fail "exit status $rc"
! printf '%s\n' "$out" | grep -q 'FAILED' || fail "a run FAILED"
med=$(printf '%s\n' "$out" | grep -c 'median of .* verified$')
[ "$med" -eq "${ROUTINES:-2}" ] || fail "$med median lines, not ${ROUTINES:-2}"
for ((r = 0; r < np; r++)); do
  line=$(printf '%s\n' "$out" | grep "^  rank $r:") || fail "no counters of rank $r"
  for w in ${DEVICE_ROUTINES:-getrf potrf}; do
    d=$(printf '%s\n' "$line" | sed -n "s|.* $w [0-9]*/\([0-9]*\)/.*|\1|p")
    if [ -z "$d" ] || [ "$d" -lt 1 ]; then fail "rank $r: $w not on the devices ($line)"; fi
  done
done
echo "tessera-solve ok"
