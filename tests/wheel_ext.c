/* tests/wheel_ext.c: plays numpy's (and scipy's) extension modules for test_wheel. Built as
 * libtest_wheel_ext.so, linked to the wheel stand-in (tests/wheel_blas.c) and dlopen'ed
 * RTLD_LOCAL by test_wheel, as python loads numpy: the wheel's library is then outside the
 * global scope, and the drop-in preloaded in front must still find it for its CPU path.
 * wheel_ext_run calls the eight scipy_cblas_*64_ names (s, d, c, z; GEMM in both layouts and
 * all transposes, SYRK both triangles and transposes; sizes no tile divides, padded leading
 * dimensions, beta = 0 over NaN), scipy_<p>potrf_64_ (numpy.linalg.cholesky's; both
 * triangles, INFO > 0 for a matrix that is not positive definite), scipy_<p>getrf_64_ and
 * scipy_<p>gesv_64_ (numpy.linalg.det/slogdet's and solve/inv's; 64-bit IPIV, INFO > 0 for
 * an exactly singular matrix, gesv's B then untouched) and scipy_<p>getrf_ (scipy's
 * lu_factor, 32-bit IPIV; rectangular), compares each result (and the pivots) with the
 * stand-in's own computation (never with itself) and checks that the other triangle, the
 * padding and IPIV past min(m, n) are untouched, and that bad calls reached the stand-in,
 * which refused them. `expect_wheel`: 1 when every call should have run on the stand-in (the
 * drop-in kept it on the CPU), 0 when none should have (the drop-in sent it to tessera).
 * Returns the number of failures. */
#pragma GCC visibility push(default) /* the build hides symbols by default */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;
enum { ROW = 101, COL = 102, NT = 111, TR = 112, CT = 113, UP = 121, LO = 122 };
extern long wheel_calls, wheel_errors;
int wheel_gemm(int dt, int o, int ta, int tb, i64 m, i64 n, i64 k, double complex alpha,
               const void *A, i64 lda, const void *B, i64 ldb, double complex beta, void *C,
               i64 ldc);
int wheel_syrk(int dt, int o, int u, int t, i64 n, i64 k, double complex alpha, const void *A,
               i64 lda, double complex beta, void *C, i64 ldc);
void scipy_cblas_sgemm64_(int, int, int, i64, i64, i64, float, const void *, i64, const void *, i64,
                          float, void *, i64);
void scipy_cblas_dgemm64_(int, int, int, i64, i64, i64, double, const void *, i64, const void *,
                          i64, double, void *, i64);
void scipy_cblas_cgemm64_(int, int, int, i64, i64, i64, const void *, const void *, i64,
                          const void *, i64, const void *, void *, i64);
void scipy_cblas_zgemm64_(int, int, int, i64, i64, i64, const void *, const void *, i64,
                          const void *, i64, const void *, void *, i64);
void scipy_cblas_ssyrk64_(int, int, int, i64, i64, float, const void *, i64, float, void *, i64);
void scipy_cblas_dsyrk64_(int, int, int, i64, i64, double, const void *, i64, double, void *, i64);
void scipy_cblas_csyrk64_(int, int, int, i64, i64, const void *, const void *, i64, const void *,
                          void *, i64);
void scipy_cblas_zsyrk64_(int, int, int, i64, i64, const void *, const void *, i64, const void *,
                          void *, i64);
i64 wheel_potrf(int dt, char uplo, i64 n, void *A, i64 lda);
typedef void potrf64_fn(const char *uplo, const i64 *n, void *A, const i64 *lda, i64 *info);
potrf64_fn scipy_spotrf_64_, scipy_dpotrf_64_, scipy_cpotrf_64_, scipy_zpotrf_64_;
static potrf64_fn *const potrf64[4] = {scipy_spotrf_64_, scipy_dpotrf_64_, scipy_cpotrf_64_,
                                       scipy_zpotrf_64_};

i64 wheel_getrf(int dt, i64 m, i64 n, void *A, i64 lda, i64 *ipiv);
void wheel_getrs(int dt, i64 n, i64 nrhs, const void *A, i64 lda, const i64 *ipiv, void *B,
                 i64 ldb);
typedef void getrf64_fn(const i64 *m, const i64 *n, void *A, const i64 *lda, i64 *ipiv, i64 *info);
typedef void gesv64_fn(const i64 *n, const i64 *nrhs, void *A, const i64 *lda, i64 *ipiv, void *B,
                       const i64 *ldb, i64 *info);
typedef void getrf32_fn(const int *m, const int *n, void *A, const int *lda, int *ipiv, int *info);
getrf64_fn scipy_sgetrf_64_, scipy_dgetrf_64_, scipy_cgetrf_64_, scipy_zgetrf_64_;
gesv64_fn scipy_sgesv_64_, scipy_dgesv_64_, scipy_cgesv_64_, scipy_zgesv_64_;
getrf32_fn scipy_sgetrf_, scipy_dgetrf_, scipy_cgetrf_, scipy_zgetrf_;
static getrf64_fn *const getrf64[4] = {scipy_sgetrf_64_, scipy_dgetrf_64_, scipy_cgetrf_64_,
                                       scipy_zgetrf_64_};
static gesv64_fn *const gesv64[4] = {scipy_sgesv_64_, scipy_dgesv_64_, scipy_cgesv_64_,
                                     scipy_zgesv_64_};
static getrf32_fn *const getrf32[4] = {scipy_sgetrf_, scipy_dgetrf_, scipy_cgetrf_, scipy_zgetrf_};

static const size_t esz[4] = {4, 8, 8, 16};
static int failures;

static void *rnd(int dt, i64 n, unsigned *seed) {
    size_t reals = (size_t)n * (dt >= 2 ? 2 : 1);
    void *p = malloc(esz[dt] * (size_t)n);
    for (size_t i = 0; i < reals; i++) {
        double v = (double)rand_r(seed) / RAND_MAX - 0.5;
        if (dt == 0 || dt == 2)
            ((float *)p)[i] = (float)v;
        else
            ((double *)p)[i] = v;
    }
    return p;
}
static double cabs_at(int dt, const void *p, i64 i) {
    return dt == 0   ? fabs(((const float *)p)[i])
           : dt == 1 ? fabs(((const double *)p)[i])
           : dt == 2 ? cabsf(((const float complex *)p)[i])
                     : cabs(((const double complex *)p)[i]);
}
static double complex val(int dt, const void *p, i64 i) {
    return dt == 0   ? ((const float *)p)[i]
           : dt == 1 ? ((const double *)p)[i]
           : dt == 2 ? ((const float complex *)p)[i]
                     : ((const double complex *)p)[i];
}

static void store(int dt, void *p, i64 i, double complex v) {
    switch (dt) {
    case 0: ((float *)p)[i] = (float)creal(v); break;
    case 1: ((double *)p)[i] = creal(v); break;
    case 2: ((float complex *)p)[i] = (float complex)v; break;
    default: ((double complex *)p)[i] = v; break;
    }
}

/* got vs want over n elements: `inside` says which are results (compared within tol) and
 * which must be bit-identical to the input (padding, the other triangle) */
static void compare(const char *what, int dt, const void *got, const void *want, i64 n,
                    int (*inside)(i64, const i64 *), const i64 *shape, double tol) {
    double worst = 0;
    for (i64 i = 0; i < n; i++) {
        if (!inside(i, shape)) {
            if (memcmp((const char *)got + i * esz[dt], (const char *)want + i * esz[dt],
                       esz[dt])) {
                printf("FAIL %s: element %lld outside the result was written\n", what,
                       (long long)i);
                failures++;
                return;
            }
            continue;
        }
        double e = cabs(val(dt, got, i) - val(dt, want, i)) / (1 + cabs_at(dt, want, i));
        if (!(e <= worst)) worst = e; /* NaN makes worst NaN */
    }
    if (!(worst <= tol)) {
        printf("FAIL %s: relative error %g > %g\n", what, worst, tol);
        failures++;
    }
}

/* shape: {layout, rows, cols, ld, uplo (0 = full)} */
static int in_mat(i64 i, const i64 *s) {
    i64 row = s[0] == COL ? i % s[3] : i / s[3], col = s[0] == COL ? i / s[3] : i % s[3];
    if (row >= s[1] || col >= s[2]) return 0;
    if (s[4] == UP) return row <= col;
    if (s[4] == LO) return row >= col;
    return 1;
}

static void gemm_call(int dt, int o, int ta, int tb, i64 m, i64 n, i64 k, const double *al,
                      const void *A, i64 lda, const void *B, i64 ldb, const double *be, void *C,
                      i64 ldc) {
    float fa[2] = {(float)al[0], (float)al[1]}, fb[2] = {(float)be[0], (float)be[1]};
    switch (dt) {
    case 0: scipy_cblas_sgemm64_(o, ta, tb, m, n, k, fa[0], A, lda, B, ldb, fb[0], C, ldc); break;
    case 1: scipy_cblas_dgemm64_(o, ta, tb, m, n, k, al[0], A, lda, B, ldb, be[0], C, ldc); break;
    case 2: scipy_cblas_cgemm64_(o, ta, tb, m, n, k, fa, A, lda, B, ldb, fb, C, ldc); break;
    default: scipy_cblas_zgemm64_(o, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc); break;
    }
}
static void syrk_call(int dt, int o, int u, int t, i64 n, i64 k, const double *al, const void *A,
                      i64 lda, const double *be, void *C, i64 ldc) {
    float fa[2] = {(float)al[0], (float)al[1]}, fb[2] = {(float)be[0], (float)be[1]};
    switch (dt) {
    case 0: scipy_cblas_ssyrk64_(o, u, t, n, k, fa[0], A, lda, fb[0], C, ldc); break;
    case 1: scipy_cblas_dsyrk64_(o, u, t, n, k, al[0], A, lda, be[0], C, ldc); break;
    case 2: scipy_cblas_csyrk64_(o, u, t, n, k, fa, A, lda, fb, C, ldc); break;
    default: scipy_cblas_zsyrk64_(o, u, t, n, k, al, A, lda, be, C, ldc); break;
    }
}

static void plant_nan(int dt, void *C, i64 n) {
    for (i64 i = 0; i < n * (dt >= 2 ? 2 : 1); i++) {
        if (dt == 0 || dt == 2)
            ((float *)C)[i] = NAN;
        else
            ((double *)C)[i] = NAN;
    }
}

int wheel_ext_run(int expect_wheel) {
    unsigned seed = 7;
    long calls = 0, before = wheel_calls;
    const char *pn = "sdcz";
    const int trans[3] = {NT, TR, CT};
    for (int dt = 0; dt < 4; dt++) {
        double tol = (dt == 0 || dt == 2 ? FLT_EPSILON : DBL_EPSILON) * 200;
        double al[2] = {1.5, dt >= 2 ? -0.5 : 0}, be[2] = {0.5, dt >= 2 ? 0.25 : 0};
        double zero[2] = {0, 0};
        for (int o = ROW; o <= COL; o++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    i64 m = 37, n = 29, k = 23, ta = trans[a], tb = trans[b];
                    i64 ar = ta == NT ? m : k, ac = ta == NT ? k : m;
                    i64 br = tb == NT ? k : n, bc = tb == NT ? n : k;
                    i64 lda = (o == COL ? ar : ac) + 3, ldb = (o == COL ? br : bc) + 2;
                    i64 ldc = (o == COL ? m : n) + 5, cn = ldc * (o == COL ? n : m);
                    void *A = rnd(dt, lda * (o == COL ? ac : ar), &seed);
                    void *B = rnd(dt, ldb * (o == COL ? bc : br), &seed);
                    void *C = rnd(dt, cn, &seed), *W = malloc(esz[dt] * (size_t)cn);
                    for (int z = 0; z < 2; z++) { /* beta, then beta = 0 over NaN */
                        const double *bb = z ? zero : be;
                        if (z) plant_nan(dt, C, cn);
                        memcpy(W, C, esz[dt] * (size_t)cn);
                        gemm_call(dt, o, ta, tb, m, n, k, al, A, lda, B, ldb, bb, C, ldc);
                        calls++;
                        wheel_gemm(dt, o, ta, tb, m, n, k, CMPLX(al[0], al[1]), A, lda, B, ldb,
                                   z ? 0 : CMPLX(be[0], be[1]), W, ldc);
                        char what[64];
                        snprintf(what, sizeof what, "%cgemm o=%d ta=%lld tb=%lld beta%s", pn[dt], o,
                                 (long long)ta, (long long)tb, z ? "=0 over NaN" : "");
                        i64 shape[5] = {o, m, n, ldc, 0};
                        compare(what, dt, C, W, cn, in_mat, shape, tol * (double)k);
                    }
                    free(A), free(B), free(C), free(W);
                }
        for (int o = ROW; o <= COL; o++)
            for (int u = UP; u <= LO; u++)
                for (int t = 0; t < 2; t++) {
                    i64 n = 31, k = 19, tt = trans[t];
                    i64 ar = tt == NT ? n : k, ac = tt == NT ? k : n;
                    i64 lda = (o == COL ? ar : ac) + 1, ldc = n + 4, cn = ldc * n;
                    void *A = rnd(dt, lda * (o == COL ? ac : ar), &seed);
                    void *C = rnd(dt, cn, &seed), *W = malloc(esz[dt] * (size_t)cn);
                    memcpy(W, C, esz[dt] * (size_t)cn);
                    syrk_call(dt, o, u, (int)tt, n, k, al, A, lda, be, C, ldc);
                    calls++;
                    wheel_syrk(dt, o, u, (int)tt, n, k, CMPLX(al[0], al[1]), A, lda,
                               CMPLX(be[0], be[1]), W, ldc);
                    char what[64];
                    snprintf(what, sizeof what, "%csyrk o=%d uplo=%d trans=%lld", pn[dt], o, u,
                             (long long)tt);
                    i64 shape[5] = {o, n, n, ldc, u};
                    compare(what, dt, C, W, cn, in_mat, shape, tol * (double)k);
                    free(A), free(C), free(W);
                }
    }
    /* numpy.linalg.cholesky: n x n Hermitian positive definite (diagonal n), both
     * triangles; then one whose leading minor of order 21 is not (INFO = 21) */
    for (int dt = 0; dt < 4; dt++)
        for (int u = 0; u < 2; u++)
            for (int bad = 0; bad < (dt % 2 ? 2 : 1); bad++) {
                double tol = (dt == 0 || dt == 2 ? FLT_EPSILON : DBL_EPSILON) * 200;
                i64 n = 37, lda = n + 3, cn = lda * n, info = -99;
                void *A = rnd(dt, cn, &seed), *W = malloc(esz[dt] * (size_t)cn);
                for (i64 j = 0; j < n; j++) /* Hermitian, diagonally dominant */
                    for (i64 i = 0; i <= j; i++) {
                        double complex v = val(dt, A, i + j * lda);
                        if (i == j) v = bad && i == 20 ? -1.0 : (double)n;
                        store(dt, A, i + j * lda, v);
                        store(dt, A, j + i * lda, conj(v));
                    }
                memcpy(W, A, esz[dt] * (size_t)cn);
                char uplo = u ? 'U' : 'L';
                potrf64[dt](&uplo, &n, A, &lda, &info);
                calls++;
                i64 want = wheel_potrf(dt, uplo, n, W, lda);
                char what[64];
                snprintf(what, sizeof what, "%cpotrf uplo=%c%s", pn[dt], uplo,
                         bad ? " not positive definite" : "");
                if (info != want) {
                    printf("FAIL %s: INFO %lld, the stand-in's %lld\n", what, (long long)info,
                           (long long)want);
                    failures++;
                } else if (!bad) {
                    i64 shape[5] = {COL, n, n, lda, u ? UP : LO};
                    compare(what, dt, A, W, cn, in_mat, shape, tol * (double)n);
                }
                free(A), free(W);
            }
    /* numpy's LU names: the n x n A (a zero column 20 when singular: INFO = 21), its factors
     * and pivots (scipy_<p>getrf_64_), then A X = B (scipy_<p>gesv_64_; B untouched when
     * singular); scipy's 32-bit scipy_<p>getrf_ on a tall and a wide matrix */
    for (int dt = 0; dt < 4; dt++)
        for (int sing = 0; sing < 2; sing++) {
            double tol = (dt == 0 || dt == 2 ? FLT_EPSILON : DBL_EPSILON) * 200;
            i64 n = 37, lda = n + 3, ldb = n + 1, nrhs = 3, cn = lda * n, bn = ldb * nrhs;
            void *A0 = rnd(dt, cn, &seed), *B0 = rnd(dt, bn, &seed);
            for (i64 i = 0; sing && i < n; i++) store(dt, A0, i + 20 * lda, 0);
            for (int g = 0; g < 2; g++) { /* getrf, then gesv */
                void *A = malloc(esz[dt] * (size_t)cn), *W = malloc(esz[dt] * (size_t)cn);
                void *B = malloc(esz[dt] * (size_t)bn), *WB = malloc(esz[dt] * (size_t)bn);
                memcpy(A, A0, esz[dt] * (size_t)cn), memcpy(W, A0, esz[dt] * (size_t)cn);
                memcpy(B, B0, esz[dt] * (size_t)bn), memcpy(WB, B0, esz[dt] * (size_t)bn);
                i64 ip[38], wp[37], info = -99, want;
                ip[n] = -7;
                if (!g)
                    getrf64[dt](&n, &n, A, &lda, ip, &info);
                else
                    gesv64[dt](&n, &nrhs, A, &lda, ip, B, &ldb, &info);
                calls++;
                want = wheel_getrf(dt, n, n, W, lda, wp);
                if (g && !want) wheel_getrs(dt, n, nrhs, W, lda, wp, WB, ldb);
                char what[64];
                snprintf(what, sizeof what, "%c%s%s", pn[dt], g ? "gesv" : "getrf",
                         sing ? " singular" : "");
                i64 shape[5] = {COL, n, n, lda, 0}, bshape[5] = {COL, n, nrhs, ldb, 0};
                if (info != want || memcmp(ip, wp, sizeof wp) || ip[n] != -7) {
                    printf("FAIL %s: INFO %lld (the stand-in's %lld) or the pivots differ\n", what,
                           (long long)info, (long long)want);
                    failures++;
                } else {
                    compare(what, dt, A, W, cn, in_mat, shape, tol * (double)n);
                    if (g) compare(what, dt, B, WB, bn, in_mat, bshape, tol * (double)n);
                    if (g && sing && memcmp(B, B0, esz[dt] * (size_t)bn)) {
                        printf("FAIL %s: B written\n", what);
                        failures++;
                    }
                }
                free(A), free(W), free(B), free(WB);
            }
            free(A0), free(B0);
            /* scipy.linalg.lu_factor: m x n, 32-bit IPIV */
            int m = sing ? 29 : 41, n32 = sing ? 41 : 29, lda32 = m + 2, info32 = -99;
            i64 cn32 = (i64)lda32 * n32, wp[29];
            int ip32[30];
            ip32[29] = -7;
            void *A = rnd(dt, cn32, &seed), *W = malloc(esz[dt] * (size_t)cn32);
            memcpy(W, A, esz[dt] * (size_t)cn32);
            getrf32[dt](&m, &n32, A, &lda32, ip32, &info32);
            calls++;
            i64 want = wheel_getrf(dt, m, n32, W, lda32, wp);
            char what[64];
            snprintf(what, sizeof what, "scipy's %cgetrf m=%d n=%d", pn[dt], m, n32);
            int same = ip32[29] == -7;
            for (int i = 0; i < 29; i++) same &= ip32[i] == wp[i];
            if (info32 != want || !same) {
                printf("FAIL %s: INFO %d (the stand-in's %lld) or the pivots differ\n", what,
                       info32, (long long)want);
                failures++;
            } else {
                i64 shape[5] = {COL, m, n32, lda32, 0};
                compare(what, dt, A, W, cn32, in_mat, shape, tol * (double)m);
            }
            free(A), free(W);
        }
    /* a bad call (ldc < m): passed to the stand-in, which refuses it; C untouched */
    double a1 = 1, b1 = 0, A[4] = {1, 2, 3, 4}, C[4] = {5, 6, 7, 8};
    long errs = wheel_errors, seen = wheel_calls;
    scipy_cblas_dgemm64_(COL, NT, NT, 2, 2, 2, a1, A, 2, A, 2, b1, C, 1);
    if (wheel_errors != errs + 1 || wheel_calls != seen + 1 || C[0] != 5 || C[3] != 8) {
        printf(
            "FAIL bad call: the stand-in saw %ld calls and %ld refusals (want 1 and 1), C[0] %g\n",
            wheel_calls - seen, wheel_errors - errs, C[0]);
        failures++;
    }
    /* a bad cholesky call (lda < n): passed to the stand-in, which sets INFO = -4 */
    i64 n4 = 4, lda3 = 3, info = 0;
    errs = wheel_errors;
    scipy_dpotrf_64_("L", &n4, A, &lda3, &info);
    if (wheel_errors != errs + 1 || wheel_calls != seen + 2 || info != -4 || A[0] != 1) {
        printf("FAIL bad potrf: the stand-in saw %ld calls and %ld refusals (want 1 and 1), "
               "INFO %lld\n",
               wheel_calls - seen - 1, wheel_errors - errs, (long long)info);
        failures++;
    }
    /* bad LU calls, each passed to the stand-in, which refuses it: numpy's getrf with
     * lda < m (INFO = -4), gesv with ldb < n (-7); scipy's getrf with m < 0 (-1) */
    i64 n2 = 2, ld1 = 1, ip2[2] = {0, 0}, want_info[3] = {-4, -7, -1};
    int mneg = -1, n32 = 2, lda2 = 2, ip32[2] = {0, 0}, info32 = 0;
    for (int b = 0; b < 3; b++) {
        errs = wheel_errors, info = 0, info32 = 0;
        if (b == 0) scipy_dgetrf_64_(&n2, &n2, A, &ld1, ip2, &info);
        if (b == 1) scipy_zgesv_64_(&n2, &n2, A, &n2, ip2, C, &ld1, &info);
        if (b == 2) scipy_sgetrf_(&mneg, &n32, A, &lda2, ip32, &info32), info = info32;
        if (wheel_errors != errs + 1 || wheel_calls != seen + 3 + b || info != want_info[b] ||
            A[0] != 1 || C[0] != 5 || ip2[0] || ip32[0]) {
            printf("FAIL bad LU call %d: the stand-in saw %ld refusals (want 1), INFO %lld\n", b,
                   wheel_errors - errs, (long long)info);
            failures++;
        }
    }
    long on_wheel = seen - before;
    if (on_wheel != (expect_wheel ? calls : 0)) {
        printf("FAIL %ld of %ld calls ran on the stand-in; expected %s\n", on_wheel, calls,
               expect_wheel ? "all" : "none");
        failures++;
    }
    printf("wheel_ext: %ld calls, %ld on the stand-in, %d failures\n", calls, on_wheel, failures);
    return failures;
}
