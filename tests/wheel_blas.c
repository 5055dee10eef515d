/* tests/wheel_blas.c: a stand-in for the OpenBLAS that numpy's and scipy's pip wheels bundle
 * (numpy.libs/libscipy_openblas64_-*.so, scipy.libs/libscipy_openblas-*.so): the 28 names
 * the wheels call that the drop-in takes, scipy_cblas_<p>gemm64_ and scipy_cblas_<p>syrk64_
 * (<cblas.h>'s prototypes, 64-bit integers), scipy_<p>potrf_64_, scipy_<p>getrf_64_ and
 * scipy_<p>gesv_64_ (LAPACK's ?POTRF, ?GETRF, ?GESV with 64-bit INTEGERs) and scipy's
 * scipy_<p>getrf_ (?GETRF, 32-bit INTEGERs), INFO as LAPACK's (-pos for a bad argument),
 * computed naively in double complex, plus what the test reads: how often each exported name
 * was called (wheel_calls), how many calls it refused (wheel_errors), and the same
 * computation under names the drop-in does not export (wheel_gemm, wheel_syrk, wheel_potrf,
 * wheel_getrf, wheel_getrs), the test's reference. Built as libtest_wheel_blas.so for
 * test_wheel (tests/wheel_ext.c). */
#pragma GCC visibility push(default) /* the build hides symbols by default */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

/* LU with partial pivoting, column by column as LAPACK's ?GETF2: the pivot is the first entry
 * of largest |x| (|re| + |im| for complex, as LAPACK's I?AMAX); an exactly zero pivot column
 * is left as it is and the factorization goes on. 0, i > 0 for the first U(i, i) = 0, -pos
 * for a bad argument (nothing written); ipiv[0 .. min(m, n) - 1] 1-based. */
i64 wheel_getrf(int dt, i64 m, i64 n, void *A, i64 lda, i64 *ipiv) {
    if (m < 0) return -1;
    if (n < 0) return -2;
    if (lda < max1(m)) return -4;
    i64 info = 0, d = m < n ? m : n;
    for (i64 j = 0; j < d; j++) {
        i64 p = j;
        double best = -1;
        for (i64 i = j; i < m; i++) {
            double complex v = get(dt, A, i + j * lda);
            double a = dt >= 2 ? fabs(creal(v)) + fabs(cimag(v)) : fabs(creal(v));
            if (a > best) best = a, p = i;
        }
        ipiv[j] = p + 1;
        if (p != j)
            for (i64 c = 0; c < n; c++) {
                double complex t = get(dt, A, j + c * lda);
                put(dt, A, j + c * lda, get(dt, A, p + c * lda));
                put(dt, A, p + c * lda, t);
            }
        double complex piv = get(dt, A, j + j * lda);
        if (piv == 0) {
            if (!info) info = j + 1;
            continue;
        }
        for (i64 i = j + 1; i < m; i++) put(dt, A, i + j * lda, get(dt, A, i + j * lda) / piv);
        for (i64 c = j + 1; c < n; c++) {
            double complex u = get(dt, A, j + c * lda);
            for (i64 i = j + 1; i < m; i++)
                put(dt, A, i + c * lda, get(dt, A, i + c * lda) - get(dt, A, i + j * lda) * u);
        }
    }
    return info;
}

/* A X = B with wheel_getrf's factors and pivots (n x n, B n x nrhs): P^T B, L, then U. */
void wheel_getrs(int dt, i64 n, i64 nrhs, const void *A, i64 lda, const i64 *ipiv, void *B,
                 i64 ldb) {
    for (i64 c = 0; c < nrhs; c++) {
        for (i64 i = 0; i < n; i++) {
            i64 p = ipiv[i] - 1;
            double complex t = get(dt, B, i + c * ldb);
            put(dt, B, i + c * ldb, get(dt, B, p + c * ldb));
            put(dt, B, p + c * ldb, t);
        }
        for (i64 i = 0; i < n; i++) {
            double complex s = get(dt, B, i + c * ldb);
            for (i64 l = 0; l < i; l++) s -= get(dt, A, i + l * lda) * get(dt, B, l + c * ldb);
            put(dt, B, i + c * ldb, s);
        }
        for (i64 i = n - 1; i >= 0; i--) {
            double complex s = get(dt, B, i + c * ldb);
            for (i64 l = i + 1; l < n; l++) s -= get(dt, A, i + l * lda) * get(dt, B, l + c * ldb);
            put(dt, B, i + c * ldb, s / get(dt, A, i + i * lda));
        }
    }
}

/* scipy_<p>getrf_64_ and scipy_<p>gesv_64_ (numpy's), scipy_<p>getrf_ (scipy's, 32-bit) */
#define LU64(p, DT)                                                                             \
    void scipy_##p##getrf_64_(const i64 *m, const i64 *n, void *A, const i64 *lda, i64 *ipiv,   \
                              i64 *info) {                                                      \
        wheel_calls++;                                                                          \
        *info = wheel_getrf(DT, *m, *n, A, *lda, ipiv);                                         \
        wheel_errors += *info < 0;                                                              \
    }                                                                                           \
    void scipy_##p##gesv_64_(const i64 *n, const i64 *nrhs, void *A, const i64 *lda, i64 *ipiv, \
                             void *B, const i64 *ldb, i64 *info) {                              \
        wheel_calls++;                                                                          \
        *info = *n < 0 ? -1 : *nrhs < 0 ? -2 : *lda < max1(*n) ? -4 : *ldb < max1(*n) ? -7 : 0; \
        if (!*info) *info = wheel_getrf(DT, *n, *n, A, *lda, ipiv);                             \
        if (!*info) wheel_getrs(DT, *n, *nrhs, A, *lda, ipiv, B, *ldb);                         \
        wheel_errors += *info < 0;                                                              \
    }                                                                                           \
    void scipy_##p##getrf_(const int *m, const int *n, void *A, const int *lda, int *ipiv,      \
                           int *info) {                                                         \
        wheel_calls++;                                                                          \
        i64 d = *m < *n ? *m : *n, *piv = malloc(sizeof *piv * (size_t)(d > 0 ? d : 1));        \
        *info = (int)wheel_getrf(DT, *m, *n, A, *lda, piv);                                     \
        for (i64 i = 0; *info >= 0 && i < d; i++) ipiv[i] = (int)piv[i];                        \
        free(piv);                                                                              \
        wheel_errors += *info < 0;                                                              \
    }
LU64(s, 0)
LU64(d, 1)
LU64(c, 2)
LU64(z, 3)
