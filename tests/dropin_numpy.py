"""tests/dropin_numpy.py: numpy work for tests/test_dropin.sh. `compute OUT` does a large
matrix product in double and complex double (cblas_dgemm, cblas_zgemm) and a symmetric
rank-k update (numpy computes a @ a.T with cblas_dsyrk) and saves them; `compare REF OUT`
checks that two saved runs agree to rounding (tessera sums the k dimension tile by tile, so
the last bits may differ from OpenBLAS)."""
import sys

import numpy as np

N = 1024


def compute(out):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((N, N))
    b = rng.standard_normal((N, N))
    z = (a[:, : N // 2] + 1j * b[:, : N // 2]) @ (b[: N // 2, :] - 2j * a[: N // 2, :])
    np.savez(out, c=a @ b, s=a @ a.T, z=z)


def compare(ref, out):
    r, t = np.load(ref), np.load(out)
    ok = True
    for key in ("c", "s", "z"):
        err = np.abs(r[key] - t[key]).max() / np.abs(r[key]).max()
        print(f"{key}: relative difference {err:.3g}")
        ok &= bool(err < 1e-12)
    # the SYRK result is symmetric in both runs
    ok &= bool(np.array_equal(t["s"], t["s"].T))
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "compute":
        compute(sys.argv[2])
    else:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
