/* tests/wheel_blas.c: a stand-in for the OpenBLAS that numpy's pip wheels bundle
 * (numpy.libs/libscipy_openblas64_-*.so): the twelve names numpy calls that the drop-in
 * takes, scipy_cblas_<p>gemm64_ and scipy_cblas_<p>syrk64_ (<cblas.h>'s prototypes, 64-bit
 * integers) and scipy_<p>potrf_64_ (LAPACK's ?POTRF, 64-bit INTEGERs; INFO as LAPACK's,
 * -pos for a bad argument), computed naively in double complex, plus what the test reads:
 * how often each exported name was called (wheel_calls), how many calls it refused
 * (wheel_errors), and the same computation under names the drop-in does not export
 * (wheel_gemm, wheel_syrk, wheel_potrf), the test's reference. Built as
 * libtest_wheel_blas.so for test_wheel (tests/wheel_ext.c). */
#pragma GCC visibility push(default) /* the build hides symbols by default */
#include <complex.h>
#include <math.h>
#include <stdint.h>

typedef int64_t i64;
enum { ROW = 101, COL = 102, NT = 111, TR = 112, CT = 113, UP = 121, LO = 122 };

long wheel_calls, wheel_errors;

static double complex get(int dt, const void *p, i64 i) {
    switch (dt) {
    case 0: return ((const float *)p)[i];
    case 1: return ((const double *)p)[i];
    case 2: return CMPLX(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
    default: return CMPLX(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
    }
}
static void put(int dt, void *p, i64 i, double complex v) {
    switch (dt) {
    case 0: ((float *)p)[i] = (float)creal(v); break;
    case 1: ((double *)p)[i] = creal(v); break;
    case 2: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
    default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
    }
}
/* element (i, j) of a stored matrix; op(X)(i, j) for a transpose code */
static i64 at(int o, i64 i, i64 j, i64 ld) { return o == COL ? i + j * ld : i * ld + j; }
static double complex op(int dt, int o, int t, const void *X, i64 ld, i64 i, i64 j) {
    if (t == NT) return get(dt, X, at(o, i, j, ld));
    double complex v = get(dt, X, at(o, j, i, ld));
    return t == CT && dt >= 2 ? conj(v) : v;
}
static i64 max1(i64 x) { return x > 1 ? x : 1; }

/* returns 0, or 1 for a refused call (C untouched) */
int wheel_gemm(int dt, int o, int ta, int tb, i64 m, i64 n, i64 k, double complex alpha,
               const void *A, i64 lda, const void *B, i64 ldb, double complex beta, void *C,
               i64 ldc) {
    i64 ar = ta == NT ? m : k, ac = ta == NT ? k : m, br = tb == NT ? k : n, bc = tb == NT ? n : k;
    if ((o != ROW && o != COL) || m < 0 || n < 0 || k < 0 || lda < max1(o == COL ? ar : ac) ||
        ldb < max1(o == COL ? br : bc) || ldc < max1(o == COL ? m : n))
        return 1;
    for (i64 j = 0; j < n; j++)
        for (i64 i = 0; i < m; i++) {
            double complex s = 0;
            for (i64 l = 0; l < k; l++)
                s += op(dt, o, ta, A, lda, i, l) * op(dt, o, tb, B, ldb, l, j);
            double complex c = beta == 0 ? 0 : beta * get(dt, C, at(o, i, j, ldc));
            put(dt, C, at(o, i, j, ldc), alpha * s + c);
        }
    return 0;
}
int wheel_syrk(int dt, int o, int u, int t, i64 n, i64 k, double complex alpha, const void *A,
               i64 lda, double complex beta, void *C, i64 ldc) {
    i64 ar = t == NT ? n : k, ac = t == NT ? k : n;
    if ((o != ROW && o != COL) || n < 0 || k < 0 || lda < max1(o == COL ? ar : ac) || ldc < max1(n))
        return 1;
    int tt = t == NT ? TR : NT; /* op(A)^T, never conjugated (SYRK) */
    for (i64 j = 0; j < n; j++)
        for (i64 i = u == UP ? 0 : j; u == UP ? i <= j : i < n; i++) {
            double complex s = 0;
            for (i64 l = 0; l < k; l++)
                s += op(dt, o, t == CT ? TR : t, A, lda, i, l) * op(dt, o, tt, A, lda, l, j);
            double complex c = beta == 0 ? 0 : beta * get(dt, C, at(o, i, j, ldc));
            put(dt, C, at(o, i, j, ldc), alpha * s + c);
        }
    return 0;
}

#define RS(x) (x)
#define CS(p) CMPLX(((const float *)(p))[0], ((const float *)(p))[1])
#define ZS(p) CMPLX(((const double *)(p))[0], ((const double *)(p))[1])
#define GEMM64(p, DT, ST, S)                                                                     \
    void scipy_cblas_##p##gemm64_(int o, int ta, int tb, i64 m, i64 n, i64 k, ST alpha,          \
                                  const void *A, i64 lda, const void *B, i64 ldb, ST beta,       \
                                  void *C, i64 ldc) {                                            \
        wheel_calls++;                                                                           \
        wheel_errors += wheel_gemm(DT, o, ta, tb, m, n, k, S(alpha), A, lda, B, ldb, S(beta), C, \
                                   ldc);                                                         \
    }
#define SYRK64(p, DT, ST, S)                                                                  \
    void scipy_cblas_##p##syrk64_(int o, int u, int t, i64 n, i64 k, ST alpha, const void *A, \
                                  i64 lda, ST beta, void *C, i64 ldc) {                       \
        wheel_calls++;                                                                        \
        wheel_errors += wheel_syrk(DT, o, u, t, n, k, S(alpha), A, lda, S(beta), C, ldc);     \
    }
GEMM64(s, 0, float, RS)
GEMM64(d, 1, double, RS)
GEMM64(c, 2, const void *, CS)
GEMM64(z, 3, const void *, ZS)
SYRK64(s, 0, float, RS)
SYRK64(d, 1, double, RS)
SYRK64(c, 2, const void *, CS)
SYRK64(z, 3, const void *, ZS)

/* Cholesky, column by column (uplo 'L': A = L L^H; 'U': A = U^H U): 0, i > 0 when the
 * leading minor of order i is not positive definite, -pos for a bad argument (nothing
 * written). */
i64 wheel_potrf(int dt, char uplo, i64 n, void *A, i64 lda) {
    if (uplo != 'L' && uplo != 'U') return -1;
    if (n < 0) return -2;
    if (lda < max1(n)) return -4;
    int low = uplo == 'L';
    /* element (i, j) of L (i >= j), or U's (j, i) conjugated */
#define AT(i, j) (low ? (i) + (j)*lda : (j) + (i)*lda)
#define GETL(i, j) (low ? get(dt, A, AT(i, j)) : conj(get(dt, A, AT(i, j))))
    for (i64 j = 0; j < n; j++) {
        double d = creal(get(dt, A, AT(j, j)));
        for (i64 l = 0; l < j; l++) d -= creal(GETL(j, l) * conj(GETL(j, l)));
        if (!(d > 0)) {
            put(dt, A, AT(j, j), d);
            return j + 1;
        }
        d = sqrt(d);
        put(dt, A, AT(j, j), d);
        for (i64 i = j + 1; i < n; i++) {
            double complex s = GETL(i, j);
            for (i64 l = 0; l < j; l++) s -= GETL(i, l) * conj(GETL(j, l));
            s /= d;
            put(dt, A, AT(i, j), low ? s : conj(s));
        }
    }
#undef GETL
#undef AT
    return 0;
}

#define POTRF64(p, DT)                                                                 \
    void scipy_##p##potrf_64_(const char *uplo, const i64 *n, void *A, const i64 *lda, \
                              i64 *info) {                                             \
        wheel_calls++;                                                                 \
        *info = wheel_potrf(DT, *uplo, *n, A, *lda);                                   \
        wheel_errors += *info < 0;                                                     \
    }
POTRF64(s, 0)
POTRF64(d, 1)
POTRF64(c, 2)
POTRF64(z, 3)
