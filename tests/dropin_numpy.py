"""tests/dropin_numpy.py: numpy work for tests/test_dropin.sh. `compute OUT` does a large
matrix product in double and complex double (cblas_dgemm, cblas_zgemm), a symmetric rank-k
update (numpy computes a @ a.T with cblas_dsyrk), Cholesky factorizations
(numpy.linalg.cholesky: LAPACK's dpotrf and zpotrf), solves of general systems
(numpy.linalg.solve: dgesv at n = 1024 and 100, zgesv at 512) and a log-determinant
(numpy.linalg.slogdet: dgetrf) and saves them; `compare REF OUT` checks that two saved runs
agree to rounding (tessera sums the k dimension tile by tile, so the last bits may differ from
OpenBLAS; a solve's differences scale with its matrix's condition number)."""
import sys

import numpy as np

N = 1024


def compute(out):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((N, N))
    b = rng.standard_normal((N, N))
    z = (a[:, : N // 2] + 1j * b[:, : N // 2]) @ (b[: N // 2, :] - 2j * a[: N // 2, :])
    # Hermitian positive definite, well conditioned: the diagonal dominates
    h = N // 2
    spd = a @ a.T / N + np.eye(N)
    w = a[:h, :h] + 1j * b[:h, :h]
    hpd = w @ w.conj().T / h + np.eye(h)
    # general (not symmetric) systems: LU with row interchanges; b has 2 columns
    g = rng.standard_normal((N, N))
    rhs = rng.standard_normal((N, 2))
    gz = g[:h, :h] + 1j * a[:h, :h]
    rz = rhs[:h] - 1j * b[:h, :2]
    sign, logdet = np.linalg.slogdet(g)
    np.savez(
        out,
        c=a @ b,
        s=a @ a.T,
        z=z,
        l=np.linalg.cholesky(spd),
        lz=np.linalg.cholesky(hpd),
        x=np.linalg.solve(g, rhs),
        xz=np.linalg.solve(gz, rz),
        xs=np.linalg.solve(g[:100, :100], rhs[:100]),
        det=np.array([sign, logdet]),
    )


def compare(ref, out):
    r, t = np.load(ref), np.load(out)
    ok = True
    # the solves' matrices are random (condition numbers about 1e3 to 1e4): 1e-10
    for key, tol in (("c", 1e-12), ("s", 1e-12), ("z", 1e-12), ("l", 1e-12), ("lz", 1e-12),
                     ("x", 1e-10), ("xz", 1e-10), ("xs", 1e-10), ("det", 1e-12)):
        err = np.abs(r[key] - t[key]).max() / np.abs(r[key]).max()
        print(f"{key}: relative difference {err:.3g}")
        ok &= bool(err < tol)
    # the SYRK result is symmetric in both runs; the Cholesky factors are lower triangular
    ok &= bool(np.array_equal(t["s"], t["s"].T))
    ok &= bool(not np.triu(t["l"], 1).any() and not np.triu(t["lz"], 1).any())
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "compute":
        compute(sys.argv[2])
    else:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
