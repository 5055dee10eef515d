#!/usr/bin/env bash
# jobs/numpy-bench.sh: numpy through the drop-in library against numpy on OpenBLAS (issue 5,
# "On the GPU machines"). Two fresh python3 processes run the same script, one plain and one
# under LD_PRELOAD=libtessera_blas.so:
#   - a @ b, float64, n = NB_N (16384), random normal operands: the time to the first
#     result (the process's first BLAS call: for the drop-in, the runtime's start included),
#     then NB_REPS (3) more calls, median;
#   - each result checked in its own process (C x against A (B x) for a random x), and the
#     two results compared with each other on a sample of C;
#   - small products n in NB_SMALL ("64 128 256 512"): time per call, median of 5 batches of
#     about 0.2 s each after a warm-up (issue 5: drop-in <= 1.05 x OpenBLAS there; a
#     benchmark, not a test: reported, never failed on).
# NB_OP=solve times numpy.linalg.solve(a, b) instead (b one column; LAPACK's ?gesv, issue
# 24: >= 10x OpenBLAS at n = 16384 with the time to the first result, <= 1.05x for n <=
# 512), each result checked by its residual ||a x - b|| / (||a|| ||x||) and the two x
# compared. NB_ORDER=F makes a Fortran-ordered (numpy then copies it without a transpose:
# a C-ordered a costs numpy itself seconds at n = 16384 before LAPACK is called).
# Prints a short table and the drop-in's own summary line (where the calls went).
#
# Environment: BUILD (build-gpu if it exists, else build), LIB (default
# $BUILD/libtessera_blas.so), PYTHON (python3), NB_N, NB_REPS, NB_SMALL; the TESSERA_* knobs
# (e.g. the export lines of tessera-crossover) apply to the drop-in run.
# The baseline must be OpenBLAS: when numpy's own BLAS is not, libopenblas.so.0 is preloaded
# in both runs (behind the drop-in in the second).
# Exit status: 0 done (results agree), 1 results differ or a run failed, 77 no numpy, or a
# numpy whose BLAS calls cannot reach the drop-in. numpy's pip wheels (bundled OpenBLAS,
# renamed scipy_cblas_*64_) are reached through src/blas/scipy64.c: their own OpenBLAS is
# then the baseline.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
[ -d "$BUILD" ] || BUILD=build
lib=$(readlink -f "${LIB:-$BUILD/libtessera_blas.so}")
py=${PYTHON:-python3}
export NB_N=${NB_N:-16384} NB_REPS=${NB_REPS:-3} NB_SMALL=${NB_SMALL:-"64 128 256 512"}
export NB_OP=${NB_OP:-matmul} NB_ORDER=${NB_ORDER:-C}
say() { echo "numpy-bench: $*"; }

# the default python3 first, then the system's (a pyenv or venv python3 may lack numpy)
if [ -z "${PYTHON:-}" ] && ! "$py" -c "import numpy" 2>/dev/null && [ -x /usr/bin/python3 ]; then
  py=/usr/bin/python3
fi
command -v "$py" >/dev/null || { say "no $py: skipped"; exit 77; }
"$py" -c "import numpy" 2>/dev/null ||
  { say "numpy is not installed for $py ($("$py" --version 2>&1)): skipped"; exit 77; }
[ -f "$lib" ] || { say "$lib not found (build the target tessera_blas)"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/bench.py" <<'EOF'
import json, os, statistics, sys, time
import numpy as np

def blas_libs():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            base = os.path.basename(p)
            if p.startswith("/") and ("blas" in base or "lapack" in base):
                libs.add(p)
    return sorted(libs)

def info():
    x = np.ones((64, 64))
    x @ x                          # loads whatever numpy's BLAS loads
    print(json.dumps({"numpy": np.__version__, "python": sys.version.split()[0],
                      "libs": blas_libs()}))

SOLVE = os.environ["NB_OP"] == "solve"
op = (lambda a, b: np.linalg.solve(a, b)) if SOLVE else (lambda a, b: a @ b)

def run(out):
    n, reps = int(os.environ["NB_N"]), int(os.environ["NB_REPS"])
    rng = np.random.default_rng(20261122)
    a = rng.standard_normal((n, n))
    if os.environ["NB_ORDER"] == "F": a = np.asfortranarray(a)
    b = rng.standard_normal(n) if SOLVE else rng.standard_normal((n, n))
    t = time.perf_counter(); c = op(a, b); first = time.perf_counter() - t
    times = []
    for _ in range(reps):
        t = time.perf_counter(); c = op(a, b); times.append(time.perf_counter() - t)
    if SOLVE:  # the residual, by level 2 (the program's BLAS, never the drop-in)
        check = float(np.abs(a @ c - b).max() / (np.abs(a).sum(axis=1).max() * np.abs(c).max()))
        np.save(out, c)
    else:
        x = rng.standard_normal(n)
        ref = a @ (b @ x)          # level 2: the program's BLAS, never the drop-in
        check = float(np.abs(c @ x - ref).max() / np.abs(ref).max())
        np.save(out, c[::97, ::89])
    del a, b, c
    small = {}
    for s in map(int, os.environ["NB_SMALL"].split()):
        x = rng.standard_normal((s, s))
        y = rng.standard_normal(s) if SOLVE else rng.standard_normal((s, s))
        for _ in range(20): op(x, y)
        t = time.perf_counter(); cnt = 0
        while time.perf_counter() - t < 0.05: op(x, y); cnt += 1
        per = (time.perf_counter() - t) / cnt
        calls = max(1, int(0.2 / per))
        v = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(calls): op(x, y)
            v.append((time.perf_counter() - t) / calls)
        small[s] = statistics.median(v)
    print(json.dumps({"first": first, "median": statistics.median(times), "times": times,
                      "check": check, "small": small, "libs": blas_libs()}))

def compare(x, y):
    r, t = np.load(x), np.load(y)
    d = float(np.abs(r - t).max() / np.abs(r).max())
    print(json.dumps({"diff": d}))

{"info": info, "run": lambda: run(sys.argv[2]),
 "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
EOF

# ---- which BLAS numpy uses; make the baseline OpenBLAS ------------------------------------
plain=$("$py" "$work/bench.py" info) || { say "numpy failed"; exit 1; }
say "numpy $(echo "$plain" | "$py" -c 'import json,sys; d=json.load(sys.stdin); print(d["numpy"], "python", d["python"], "BLAS:", " ".join(d["libs"]) or "?")')"
base_preload=""
if ! echo "$plain" | grep -qi openblas; then
  ob=""
  for d in ${LD_LIBRARY_PATH//:/ } /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
    [ -e "$d/libopenblas.so.0" ] && { ob=$d/libopenblas.so.0; break; }
  done
  [ -n "$ob" ] || ob=$(ldconfig -p 2>/dev/null | awk '/libopenblas\.so\.0 /{print $NF; exit}')
  [ -n "$ob" ] || { say "numpy's BLAS is not OpenBLAS and no libopenblas.so.0 was found: skipped"; exit 77; }
  base_preload=$(readlink -f "$ob")
  say "numpy's BLAS is not OpenBLAS: $base_preload preloaded in both runs"
fi
# the calls must reach the drop-in (a numpy linked to another BLAS under renamed symbols
# would not)
probe=$(env LD_PRELOAD="$lib${base_preload:+ $base_preload}" TESSERA_BLAS_VERBOSE=1 "$py" "$work/bench.py" info 2>&1)
echo "$probe" | grep -qE "^tessera-blas: tessera [0-9]+ calls .*cpu [1-9][0-9]* calls|^tessera-blas: tessera [1-9]" ||
  { say "numpy's BLAS calls do not reach $lib (numpy's BLAS: $(echo "$plain" | grep -o '"libs": .*')): skipped"; exit 77; }

# ---- the two runs -----------------------------------------------------------------------
say "n = $NB_N, $NB_REPS timed calls after the first; small n: $NB_SMALL"
base=$(env ${base_preload:+LD_PRELOAD="$base_preload"} "$py" "$work/bench.py" run "$work/base.npy") ||
  { say "the OpenBLAS run failed"; exit 1; }
tess=$(env LD_PRELOAD="$lib${base_preload:+ $base_preload}" TESSERA_BLAS_VERBOSE=1 \
       "$py" "$work/bench.py" run "$work/tess.npy" 2>"$work/tess.err") ||
  { cat "$work/tess.err"; say "the drop-in run failed"; exit 1; }
cmp=$("$py" "$work/bench.py" compare "$work/base.npy" "$work/tess.npy") || { say "compare failed"; exit 1; }

BASE=$base TESS=$tess CMP=$cmp "$py" - <<'EOF'
import json, os
b, t, c = (json.loads(os.environ[k]) for k in ("BASE", "TESS", "CMP"))
n = os.environ["NB_N"]
what = "solve(a, b)" if os.environ["NB_OP"] == "solve" else "a @ b"
what += ", a in Fortran order" if os.environ["NB_ORDER"] == "F" else ""
rows = [("%s, n = %s, float64: median (s)" % (what, n), b["median"], t["median"]),
        ("  time to first result, incl. start (s)", b["first"], t["first"])]
for s in b["small"]:
    rows.append(("  n = %s: per call (us)" % s, b["small"][s] * 1e6, t["small"][s] * 1e6))
print("%-42s %12s %12s %14s" % ("", "OpenBLAS", "drop-in", "drop-in/OpenBLAS"))
for name, x, y in rows:
    r = y / x
    note = ""
    if "per call" in name:
        note = "  ok (<= 1.05)" if r <= 1.05 else "  OVER 1.05"
    elif "median" in name or "first" in name:
        note = "  (speedup %.2fx)" % (x / y)
    print("%-42s %12.4g %12.4g %14.3f%s" % (name, x, y, r, note))
print("timed calls (s): OpenBLAS %s; drop-in %s" % (
    " ".join("%.3f" % v for v in b["times"]), " ".join("%.3f" % v for v in t["times"])))
solve = os.environ["NB_OP"] == "solve"
print("checks: %s: OpenBLAS %.2g, drop-in %.2g; the two %s differ by %.2g"
      % ("residual |a x - b| / (|a| |x|)" if solve else "C x vs A (B x)", b["check"],
         t["check"], "x" if solve else "C (sample)", c["diff"]))
ok = b["check"] < 1e-8 and t["check"] < 1e-8 and c["diff"] < (1e-6 if solve else 1e-9)
print("results:", "agree" if ok else "DIFFER")
raise SystemExit(0 if ok else 1)
EOF
rc=$?
grep "^tessera-blas" "$work/tess.err" | sed 's/^/drop-in summary: /'
exit $rc
