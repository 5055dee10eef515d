/* tests/test_dropin_lapack.c: LAPACK's Cholesky and LU routines through the drop-in library
 * (libtessera_blas.so linked first, so ?potrf_, ?potrs_, ?posv_, ?getrf_, ?getrs_ and ?gesv_
 * are its symbols), as a Fortran or C program calls them: results against OpenBLAS called
 * directly (its ?potrf_, cblas_?trsm, ?getrf_, ?getrs_ and ?gesv_ taken from its own handle),
 * both triangles, every TRANS, square and rectangular LU, padded leading dimensions, the other
 * triangle, the padding and the IPIV entries past min(m, n) untouched; the pivots as
 * OpenBLAS's; INFO > 0 as OpenBLAS's for matrices that are not positive definite and for
 * exactly singular ones (the LU factorization completed; ?posv_ and ?gesv_ then leave B as it
 * was); bad arguments: INFO = -pos and the program's xerbla_ called once with reference
 * LAPACK's name ('DPOTRF', 'ZPOSV ', 'DGESV ') and position, nothing else written; quick
 * returns. Where the calls went (tessera, the program's LAPACK, tessera's CPU LAPACK) is read
 * by tests/test_dropin.sh from the exit summary. Built twice: test_dropin_lapack, linked to
 * OpenBLAS after the drop-in (the program's own LAPACK is the CPU path), and
 * test_dropin_lapack_alone, linked to no LAPACK (the CPU path is tessera's CPU LAPACK;
 * OpenBLAS is opened for the references only after the drop-in looked for a next definition,
 * at main's first call).
 */
#include <complex.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>

#include "harness.h"

typedef void potrf_fn(const char *uplo, const int *n, void *A, const int *lda, int *info, size_t);
typedef void solve_fn(const char *uplo, const int *n, const int *nrhs, void *A, const int *lda,
                      void *B, const int *ldb, int *info, size_t);

typedef void getrf_fn(const int *m, const int *n, void *A, const int *lda, int *ipiv, int *info);
typedef void getrs_fn(const char *trans, const int *n, const int *nrhs, const void *A,
                      const int *lda, const int *ipiv, void *B, const int *ldb, int *info, size_t);
typedef void gesv_fn(const int *n, const int *nrhs, void *A, const int *lda, int *ipiv, void *B,
                     const int *ldb, int *info);

/* (?potrs_ reads A only; declared here with the type of the table below) */
#define DECL(p)                   \
    potrf_fn p##potrf_;           \
    solve_fn p##potrs_, p##posv_; \
    getrf_fn p##getrf_;           \
    getrs_fn p##getrs_;           \
    gesv_fn p##gesv_;
DECL(s)
DECL(d)
DECL(c)
DECL(z)

/* the drop-in's symbols (the program's own, as the linker resolved them), by precision */
static potrf_fn *const tess_potrf_[4] = {spotrf_, dpotrf_, cpotrf_, zpotrf_};
static solve_fn *const tess_potrs_[4] = {spotrs_, dpotrs_, cpotrs_, zpotrs_};
static solve_fn *const tess_posv_[4] = {sposv_, dposv_, cposv_, zposv_};
static getrf_fn *const tess_getrf_[4] = {sgetrf_, dgetrf_, cgetrf_, zgetrf_};
static getrs_fn *const tess_getrs_[4] = {sgetrs_, dgetrs_, cgetrs_, zgetrs_};
static gesv_fn *const tess_gesv_[4] = {sgesv_, dgesv_, cgesv_, zgesv_};

/* OpenBLAS's, from its own handle: ?potrf_ (OpenBLAS's own code; its ?potrs_ and ?posv_ are
 * reference LAPACK's, which call ?trsm_ and ?potrf_ through the global scope, so the drop-in
 * in front of them), and cblas_?trsm for the solves (OpenBLAS's own). */
static potrf_fn *ref_potrf[4];
/* and its LU routines, OpenBLAS's own code (interface/lapack: getrf, getrs, gesv) */
static getrf_fn *ref_getrf[4];
static getrs_fn *ref_getrs[4];
static gesv_fn *ref_gesv[4];
typedef void trsm_fn(int order, int side, int uplo, int trans, int diag, int m, int n, ...);
static void *ref_trsm[4];
static const char pre[4] = {'s', 'd', 'c', 'z'};
static const size_t esz[4] = {4, 8, 8, 16};

static void load_reference(void) {
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "test_dropin_lapack: %s\n", dlerror());
        exit(1);
    }
    for (int d = 0; d < 4; d++) {
        char name[16];
        snprintf(name, sizeof name, "%cpotrf_", pre[d]);
        void *f = dlsym(h, name);
        memcpy(&ref_potrf[d], &f, sizeof f);
        snprintf(name, sizeof name, "cblas_%ctrsm", pre[d]);
        ref_trsm[d] = dlsym(h, name);
        if (!f || !ref_trsm[d]) {
            fprintf(stderr,
                    "test_dropin_lapack: libopenblas.so.0 has no %cpotrf_ or cblas_%ctrsm\n",
                    pre[d], pre[d]);
            exit(1);
        }
        const char *lu[3] = {"getrf", "getrs", "gesv"};
        void *g[3];
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%c%s_", pre[d], lu[k]);
            if (!(g[k] = dlsym(h, name))) {
                fprintf(stderr, "test_dropin_lapack: libopenblas.so.0 has no %s\n", name);
                exit(1);
            }
        }
        memcpy(&ref_getrf[d], &g[0], sizeof g[0]);
        memcpy(&ref_getrs[d], &g[1], sizeof g[1]);
        memcpy(&ref_gesv[d], &g[2], sizeof g[2]);
    }
}

/* OpenBLAS's cblas_?trsm(ColMajor, Left, uplo, trans, NonUnit, n, nrhs, 1, A, lda, B, ldb) */
static void ref_trsm_call(int dt, char uplo, char trans, int n, int nrhs, const void *A, int lda,
                          void *B, int ldb) {
    enum { COL = 102, NT = 111, CT = 113, UP = 121, LO = 122, LEFT = 141, NONUNIT = 131 };
    int u = uplo == 'U' ? UP : LO, t = trans == 'N' ? NT : CT;
    float one_c[2] = {1, 0};
    double one_z[2] = {1, 0};
    switch (dt) {
    case 0: {
        void (*f)(int, int, int, int, int, int, int, float, const void *, int, void *, int);
        memcpy(&f, &ref_trsm[0], sizeof f);
        f(COL, LEFT, u, t, NONUNIT, n, nrhs, 1.0f, A, lda, B, ldb);
        break;
    }
    case 1: {
        void (*f)(int, int, int, int, int, int, int, double, const void *, int, void *, int);
        memcpy(&f, &ref_trsm[1], sizeof f);
        f(COL, LEFT, u, t, NONUNIT, n, nrhs, 1.0, A, lda, B, ldb);
        break;
    }
    default: {
        void (*f)(int, int, int, int, int, int, int, const void *, const void *, int, void *, int);
        memcpy(&f, &ref_trsm[dt], sizeof f);
        f(COL, LEFT, u, t, NONUNIT, n, nrhs, dt == 2 ? (void *)one_c : (void *)one_z, A, lda, B,
          ldb);
        break;
    }
    }
}

/* LAPACK's ?POTRS on OpenBLAS: L: L Y = B, L^H X = Y; U: U^H Y = B, U X = Y. */
static void ref_potrs(int dt, char uplo, int n, int nrhs, const void *A, int lda, void *B,
                      int ldb) {
    ref_trsm_call(dt, uplo, uplo == 'L' ? 'N' : 'C', n, nrhs, A, lda, B, ldb);
    ref_trsm_call(dt, uplo, uplo == 'L' ? 'C' : 'N', n, nrhs, A, lda, B, ldb);
}

/* ---- the program's XERBLA -------------------------------------------------------------- */

#define VISIBLE __attribute__((visibility("default")))
static char last_srname[16];
static int last_info, last_len, xerbla_calls;

VISIBLE void xerbla_(const char *srname, const int *info, size_t len) {
    size_t n = len < sizeof last_srname - 1 ? len : sizeof last_srname - 1;
    memcpy(last_srname, srname, n);
    last_srname[n] = '\0';
    last_len = (int)len;
    last_info = *info;
    xerbla_calls++;
}

/* ---- matrices ---------------------------------------------------------------------------- */

static double rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((double)(*s >> 8) / 16777216.0) - 0.5;
}
static double complex get(int dt, const void *p, size_t i) {
    switch (dt) {
    case 0: return ((const float *)p)[i];
    case 1: return ((const double *)p)[i];
    case 2: return CMPLX(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
    default: return CMPLX(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
    }
}
static void put(int dt, void *p, size_t i, double complex v) {
    switch (dt) {
    case 0: ((float *)p)[i] = (float)creal(v); break;
    case 1: ((double *)p)[i] = creal(v); break;
    case 2: ((float *)p)[2 * i] = (float)creal(v), ((float *)p)[2 * i + 1] = (float)cimag(v); break;
    default: ((double *)p)[2 * i] = creal(v), ((double *)p)[2 * i + 1] = cimag(v); break;
    }
}

/* The n x n Hermitian positive definite M M^H / n + I (both triangles) in an lda x n array;
 * the padding rows hold 777. bad >= 0: A(bad, bad) = -1, so the leading minor of order
 * bad + 1 is the first that is not positive definite. */
static void *hpd(int dt, int n, int lda, unsigned seed, int bad) {
    int cx = dt >= 2;
    double complex *M = malloc(sizeof *M * (size_t)n * (size_t)n);
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++)
        M[i] = CMPLX(rnd(&seed), cx ? rnd(&seed) : 0);
    void *A = malloc(esz[dt] * (size_t)lda * (size_t)n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < lda; i++) {
            double complex s = 0;
            if (i < n) {
                for (int l = 0; l < n; l++) s += M[i + (size_t)l * n] * conj(M[j + (size_t)l * n]);
                s = s / n + (i == j ? 1 : 0);
                if (i == j) s = creal(s);
                if (i == j && i == bad) s = -1;
            } else {
                s = 777;
            }
            put(dt, A, i + (size_t)j * lda, s);
        }
    free(M);
    return A;
}
static void *rnd_mat(int dt, int rows, int cols, int ld, unsigned seed) {
    void *B = malloc(esz[dt] * (size_t)ld * (size_t)cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < ld; i++)
            put(dt, B, i + (size_t)j * ld,
                i < rows ? CMPLX(rnd(&seed), dt >= 2 ? rnd(&seed) : 0) : 777);
    return B;
}
static void *dup(int dt, const void *X, size_t elems) {
    void *Y = malloc(esz[dt] * elems);
    memcpy(Y, X, esz[dt] * elems);
    return Y;
}

/* got against want, lda x n: the result part (rows < rows_used; uplo 'L'/'U': that triangle
 * only, 'A' all) within tol of the largest entry, everything else bit for bit. */
static void compare(const char *what, int dt, const void *got, const void *want, int rows_used,
                    int ld, int n, char uplo, double tol) {
    double worst = 0, big = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ld; i++) {
            size_t k = i + (size_t)j * ld;
            int in = i < rows_used && (uplo == 'A' || (uplo == 'L' ? i >= j : i <= j));
            if (!in) {
                ASSERT_MSG(!memcmp((const char *)got + k * esz[dt],
                                   (const char *)want + k * esz[dt], esz[dt]),
                           "%s: element (%d, %d) outside the result was written", what, i, j);
                continue;
            }
            double e = cabs(get(dt, got, k) - get(dt, want, k)), w = cabs(get(dt, want, k));
            if (!(e <= worst)) worst = e;
            if (w > big) big = w;
        }
    ASSERT_MSG(worst <= tol * (big > 0 ? big : 1), "%s: largest difference %g (largest entry %g)",
               what, worst, big);
}
static double tol_of(int dt) { return dt == 0 || dt == 2 ? 2e-4 : 1e-11; }

/* ---- results against OpenBLAS --------------------------------------------------------- */

/* ?potrf_, both triangles (the letters in either case), orders below and above the model
 * mode's TESSERA_BLAS_POTRF_N (256; d and z only above), lda padded: the factor as OpenBLAS's
 * within rounding, the other triangle and the padding untouched, INFO 0. */
TEST(potrf_as_openblas) {
    const int sizes[2] = {100, 300};
    for (int dt = 0; dt < 4; dt++)
        for (int s = 0; s < (dt % 2 ? 2 : 1); s++)
            for (int u = 0; u < 2; u++) {
                int n = sizes[s], lda = n + 3, info = 99, rinfo = 99;
                const char *uplo = u ? "u" : "L";
                void *A = hpd(dt, n, lda, 11u + (unsigned)(dt * 7 + s), -1);
                void *R = dup(dt, A, (size_t)lda * n);
                tess_potrf_[dt](uplo, &n, A, &lda, &info, 1);
                ref_potrf[dt](uplo, &n, R, &lda, &rinfo, 1);
                char what[64];
                snprintf(what, sizeof what, "%cpotrf_ n=%d uplo=%s", pre[dt], n, uplo);
                ASSERT_EQ(rinfo, 0);
                ASSERT_EQ(info, 0);
                compare(what, dt, A, R, n, lda, n, u ? 'U' : 'L', tol_of(dt));
                free(A), free(R);
            }
    ASSERT_EQ(xerbla_calls, 0);
}

/* ?posv_ and then ?potrs_ with its factor, both triangles, padded lda and ldb: the factor
 * and the solutions as OpenBLAS's; in d also n = 300 (above the model mode's
 * TESSERA_BLAS_POTRF_N) and a solve with 300 right-hand sides (the model sends that one to
 * the devices, the 5-column ones to the CPU). */
TEST(posv_potrs_as_openblas) {
    struct {
        int dt, n, nrhs;
    } cases[] = {{0, 100, 5}, {1, 100, 5}, {2, 100, 5}, {3, 100, 5}, {1, 300, 5}, {1, 300, 300}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int u = 0; u < 2; u++) {
            int dt = cases[c].dt, n = cases[c].n, nrhs = cases[c].nrhs, lda = n + 1, ldb = n + 2;
            int info = 99, rinfo = 99;
            const char *uplo = u ? "U" : "l";
            void *A = hpd(dt, n, lda, 21u + (unsigned)c, -1), *RA = dup(dt, A, (size_t)lda * n);
            void *B = rnd_mat(dt, n, nrhs, ldb, 31u + (unsigned)c);
            void *RB = dup(dt, B, (size_t)ldb * nrhs), *B2 = dup(dt, B, (size_t)ldb * nrhs);
            void *RB2 = dup(dt, B, (size_t)ldb * nrhs);
            tess_posv_[dt](uplo, &n, &nrhs, A, &lda, B, &ldb, &info, 1);
            ref_potrf[dt](uplo, &n, RA, &lda, &rinfo, 1);
            ref_potrs(dt, u ? 'U' : 'L', n, nrhs, RA, lda, RB, ldb);
            char what[80];
            snprintf(what, sizeof what, "%cposv_ n=%d nrhs=%d uplo=%s", pre[dt], n, nrhs, uplo);
            ASSERT_EQ(rinfo, 0);
            ASSERT_EQ(info, 0);
            compare(what, dt, A, RA, n, lda, n, u ? 'U' : 'L', tol_of(dt));
            compare(what, dt, B, RB, n, ldb, nrhs, 'A', tol_of(dt));
            /* the solve alone, with OpenBLAS's factor on both sides */
            info = 99;
            tess_potrs_[dt](uplo, &n, &nrhs, RA, &lda, B2, &ldb, &info, 1);
            ref_potrs(dt, u ? 'U' : 'L', n, nrhs, RA, lda, RB2, ldb);
            snprintf(what, sizeof what, "%cpotrs_ n=%d nrhs=%d uplo=%s", pre[dt], n, nrhs, uplo);
            ASSERT_EQ(info, 0);
            compare(what, dt, B2, RB2, n, ldb, nrhs, 'A', tol_of(dt));
            free(A), free(RA), free(B), free(RB), free(B2), free(RB2);
        }
    ASSERT_EQ(xerbla_calls, 0);
}

/* A matrix whose leading minor of order k + 1 is not positive definite: INFO = k + 1 from
 * ?potrf_ (OpenBLAS's too) and ?posv_, which leaves B as it was; no XERBLA. */
TEST(not_positive_definite) {
    struct {
        int dt, n, bad;
    } cases[] = {{1, 100, 57}, {3, 100, 0}, {1, 300, 201}, {3, 300, 99}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int u = 0; u < 2; u++) {
            int dt = cases[c].dt, n = cases[c].n, lda = n + 2, nrhs = 3, ldb = n, info = 0,
                rinfo = 0;
            const char *uplo = u ? "U" : "L";
            void *A = hpd(dt, n, lda, 41u + (unsigned)c, cases[c].bad);
            void *RA = dup(dt, A, (size_t)lda * n), *A2 = dup(dt, A, (size_t)lda * n);
            tess_potrf_[dt](uplo, &n, A, &lda, &info, 1);
            ref_potrf[dt](uplo, &n, RA, &lda, &rinfo, 1);
            ASSERT_EQ(rinfo, cases[c].bad + 1);
            ASSERT_EQ(info, cases[c].bad + 1);
            void *B = rnd_mat(dt, n, nrhs, ldb, 51u), *B0 = dup(dt, B, (size_t)ldb * nrhs);
            info = 0;
            tess_posv_[dt](uplo, &n, &nrhs, A2, &lda, B, &ldb, &info, 1);
            ASSERT_EQ(info, cases[c].bad + 1);
            ASSERT_MSG(!memcmp(B, B0, esz[dt] * (size_t)ldb * nrhs),
                       "%cposv_ n=%d: B written although A is not positive definite", pre[dt], n);
            free(A), free(RA), free(A2), free(B), free(B0);
        }
    ASSERT_EQ(xerbla_calls, 0);
}

/* Bad arguments, reference LAPACK's checks in its order: INFO = -pos, the program's xerbla_
 * once with the routine's name blank-padded to 6 ('DPOSV ') and pos, A and B untouched. Then
 * arrays whose span cannot be addressed (the drop-in's own check, as for its BLAS), reported
 * at the array's position before anything is read. */
TEST(bad_arguments_reach_xerbla) {
    enum { POTRF, POTRS, POSV };
    struct {
        int kind, dt;
        const char *uplo;
        int n, nrhs, lda, ldb;
        const char *name;
        int pos;
    } cases[] = {
        {POTRF, 1, "X", 4, 0, 4, 0, "DPOTRF", 1},  {POTRF, 1, "L", -1, 0, 4, 0, "DPOTRF", 2},
        {POTRF, 1, "X", -1, 0, 0, 0, "DPOTRF", 1}, {POTRF, 1, "U", 4, 0, 3, 0, "DPOTRF", 4},
        {POTRF, 3, "L", 4, 0, 3, 0, "ZPOTRF", 4},  {POTRF, 0, "?", 4, 0, 4, 0, "SPOTRF", 1},
        {POTRS, 1, " ", 4, 2, 4, 4, "DPOTRS", 1},  {POTRS, 1, "L", -2, 2, 4, 4, "DPOTRS", 2},
        {POTRS, 1, "L", 4, -1, 4, 4, "DPOTRS", 3}, {POTRS, 1, "U", 4, 2, 3, 4, "DPOTRS", 5},
        {POTRS, 1, "U", 4, 2, 4, 3, "DPOTRS", 7},  {POTRS, 2, "L", 4, 2, 4, 1, "CPOTRS", 7},
        {POSV, 1, "L", -1, 2, 4, 4, "DPOSV ", 2},  {POSV, 1, "L", 4, 2, 4, 3, "DPOSV ", 7},
        {POSV, 3, "U", 4, -3, 4, 4, "ZPOSV ", 3},  {POSV, 3, "L", 4, 2, 1, 1, "ZPOSV ", 5},
        {POSV, 0, "Z", 4, 2, 4, 4, "SPOSV ", 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int dt = cases[c].dt, n = cases[c].n, nrhs = cases[c].nrhs, lda = cases[c].lda;
        int ldb = cases[c].ldb, info = 12345;
        void *A = hpd(dt, 4, 4, 61u, -1), *A0 = dup(dt, A, 16);
        void *B = rnd_mat(dt, 4, 4, 4, 71u), *B0 = dup(dt, B, 16);
        xerbla_calls = 0;
        if (cases[c].kind == POTRF)
            tess_potrf_[dt](cases[c].uplo, &n, A, &lda, &info, 1);
        else if (cases[c].kind == POTRS)
            tess_potrs_[dt](cases[c].uplo, &n, &nrhs, A, &lda, B, &ldb, &info, 1);
        else
            tess_posv_[dt](cases[c].uplo, &n, &nrhs, A, &lda, B, &ldb, &info, 1);
        ASSERT_MSG(xerbla_calls == 1 && last_len == 6 && !strcmp(last_srname, cases[c].name) &&
                       last_info == cases[c].pos && info == -cases[c].pos,
                   "case %zu: xerbla_ called %d times, last ('%s' length %d, %d), INFO %d; want "
                   "('%s', %d), INFO %d",
                   c, xerbla_calls, last_srname, last_len, last_info, info, cases[c].name,
                   cases[c].pos, -cases[c].pos);
        ASSERT_MSG(!memcmp(A, A0, esz[dt] * 16) && !memcmp(B, B0, esz[dt] * 16),
                   "case %zu: an operand was written", c);
        free(A), free(A0), free(B), free(B0);
    }
    /* spans: A of 2^30 x 2^30 doubles (2^63 bytes), B of 2^31 - 1 columns of 2^30 */
    double a[4] = {1, 0, 0, 1}, b[4] = {1, 2, 3, 4};
    int big = 1 << 30, n1 = 1, info = 0, wide = INT_MAX;
    xerbla_calls = 0;
    dpotrf_("L", &big, a, &big, &info, 1);
    ASSERT_MSG(xerbla_calls == 1 && !strcmp(last_srname, "DPOTRF") && last_info == 3 && info == -3,
               "dpotrf_ over the address space: xerbla_ %d times ('%s', %d), INFO %d", xerbla_calls,
               last_srname, last_info, info);
    dposv_("U", &n1, &wide, a, &n1, b, &big, &info, 1);
    ASSERT_MSG(xerbla_calls == 2 && !strcmp(last_srname, "DPOSV ") && last_info == 6 && info == -6,
               "dposv_ with B over the address space: xerbla_ %d times ('%s', %d), INFO %d",
               xerbla_calls, last_srname, last_info, info);
    ASSERT(a[0] == 1 && a[3] == 1 && b[0] == 1 && b[3] == 4);
    xerbla_calls = 0;
}

/* LAPACK's quick returns: N = 0 (?potrs_: or NRHS = 0) sets INFO = 0 and touches nothing;
 * ?posv_ with NRHS = 0 still factors A, as reference LAPACK does. */
TEST(quick_returns) {
    int zero = 0, four = 4, info = 7;
    double A[16], B[16];
    for (int i = 0; i < 16; i++) A[i] = B[i] = NAN;
    dpotrf_("L", &zero, A, &four, &info, 1);
    ASSERT_EQ(info, 0);
    info = 7;
    dpotrs_("U", &four, &zero, A, &four, B, &four, &info, 1);
    ASSERT_EQ(info, 0);
    info = 7;
    zposv_("L", &zero, &four, A, &four, B, &four, &info, 1);
    ASSERT_EQ(info, 0);
    ASSERT(isnan(A[0]) && isnan(A[15]) && isnan(B[0]) && isnan(B[15]));
    void *M = hpd(1, 4, 4, 81u, -1), *R = dup(1, M, 16);
    int rinfo = 7;
    info = 7;
    dposv_("L", &four, &zero, M, &four, B, &four, &info, 1);
    ref_potrf[1]("L", &four, R, &four, &rinfo, 1);
    ASSERT_EQ(info, 0);
    compare("dposv_ nrhs=0", 1, M, R, 4, 4, 4, 'L', 1e-12);
    free(M), free(R);
    ASSERT_EQ(xerbla_calls, 0);
}

/* ---- LU: ?getrf_, ?getrs_, ?gesv_ ---------------------------------------------------------- */

/* IPIV of d pivots and two sentinels after them (never written) */
static int *pivots(int d) {
    int *p = malloc(sizeof *p * (size_t)(d + 2));
    for (int i = 0; i < d + 2; i++) p[i] = -7;
    return p;
}
static void compare_pivots(const char *what, const int *got, const int *want, int d) {
    for (int i = 0; i < d; i++)
        ASSERT_MSG(got[i] == want[i], "%s: IPIV(%d) = %d, OpenBLAS's %d", what, i + 1, got[i],
                   want[i]);
    ASSERT_MSG(got[d] == -7 && got[d + 1] == -7, "%s: IPIV written past min(m, n) = %d", what, d);
}
/* the m x n general matrix (lda >= m, padding 777) with column zero_col (>= 0) all zeros:
 * U(zero_col, zero_col) comes out exactly zero whatever the order of the updates */
static void *general(int dt, int m, int n, int lda, unsigned seed, int zero_col) {
    void *A = rnd_mat(dt, m, n, lda, seed);
    for (int i = 0; zero_col >= 0 && i < m; i++) put(dt, A, i + (size_t)zero_col * lda, 0);
    return A;
}

/* ?getrf_, square orders below and above the model mode's TESSERA_BLAS_GETRF_N (256; d and z
 * only above) and rectangular (m > n, m < n), lda padded: the factors and the pivots as
 * OpenBLAS's, the padding and IPIV past min(m, n) untouched, INFO 0. */
TEST(getrf_as_openblas) {
    struct {
        int dt, m, n;
    } cases[] = {{0, 100, 100}, {1, 100, 100}, {2, 100, 100}, {3, 100, 100}, {1, 300, 300},
                 {3, 300, 300}, {1, 300, 280}, {1, 120, 90},  {2, 90, 120},  {0, 70, 110}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int dt = cases[c].dt, m = cases[c].m, n = cases[c].n, lda = m + 3, d = m < n ? m : n;
        int info = 99, rinfo = 99;
        void *A = general(dt, m, n, lda, 91u + (unsigned)c, -1);
        void *R = dup(dt, A, (size_t)lda * n);
        int *ip = pivots(d), *rp = pivots(d);
        tess_getrf_[dt](&m, &n, A, &lda, ip, &info);
        ref_getrf[dt](&m, &n, R, &lda, rp, &rinfo);
        char what[64];
        snprintf(what, sizeof what, "%cgetrf_ m=%d n=%d", pre[dt], m, n);
        ASSERT_EQ(rinfo, 0);
        ASSERT_EQ(info, 0);
        compare_pivots(what, ip, rp, d);
        compare(what, dt, A, R, m, lda, n, 'A', tol_of(dt));
        free(A), free(R), free(ip), free(rp);
    }
    ASSERT_EQ(xerbla_calls, 0);
}

/* ?gesv_ against OpenBLAS's ?gesv_ (factors, pivots, solution), then ?getrs_ with OpenBLAS's
 * factors and pivots for TRANS N, T and C (the letters in either case) against OpenBLAS's
 * ?getrs_; padded lda and ldb; in d and z also n = 300 (above the model mode's
 * TESSERA_BLAS_GETRF_N), in d a solve with 300 right-hand sides (the model sends that one to
 * the devices, the 5-column ones to the CPU). */
TEST(gesv_getrs_as_openblas) {
    struct {
        int dt, n, nrhs;
    } cases[] = {{0, 100, 5}, {1, 100, 5}, {2, 100, 5},  {3, 100, 5},
                 {1, 300, 5}, {3, 300, 5}, {1, 300, 300}};
    const char *trans[3] = {"N", "t", "C"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int dt = cases[c].dt, n = cases[c].n, nrhs = cases[c].nrhs, lda = n + 1, ldb = n + 2;
        int info = 99, rinfo = 99;
        void *A = general(dt, n, n, lda, 101u + (unsigned)c, -1), *RA = dup(dt, A, (size_t)lda * n);
        void *B = rnd_mat(dt, n, nrhs, ldb, 111u + (unsigned)c);
        void *RB = dup(dt, B, (size_t)ldb * nrhs);
        int *ip = pivots(n), *rp = pivots(n);
        tess_gesv_[dt](&n, &nrhs, A, &lda, ip, B, &ldb, &info);
        ref_gesv[dt](&n, &nrhs, RA, &lda, rp, RB, &ldb, &rinfo);
        char what[80];
        snprintf(what, sizeof what, "%cgesv_ n=%d nrhs=%d", pre[dt], n, nrhs);
        ASSERT_EQ(rinfo, 0);
        ASSERT_EQ(info, 0);
        compare_pivots(what, ip, rp, n);
        compare(what, dt, A, RA, n, lda, n, 'A', tol_of(dt));
        compare(what, dt, B, RB, n, ldb, nrhs, 'A', tol_of(dt));
        /* the solve alone, with OpenBLAS's factors and pivots on both sides */
        for (int t = 0; t < 3; t++) {
            void *B2 = rnd_mat(dt, n, nrhs, ldb, 121u + (unsigned)(c * 3 + t));
            void *RB2 = dup(dt, B2, (size_t)ldb * nrhs);
            info = rinfo = 99;
            tess_getrs_[dt](trans[t], &n, &nrhs, RA, &lda, rp, B2, &ldb, &info, 1);
            ref_getrs[dt](trans[t], &n, &nrhs, RA, &lda, rp, RB2, &ldb, &rinfo, 1);
            snprintf(what, sizeof what, "%cgetrs_ trans=%s n=%d nrhs=%d", pre[dt], trans[t], n,
                     nrhs);
            ASSERT_EQ(rinfo, 0);
            ASSERT_EQ(info, 0);
            compare(what, dt, B2, RB2, n, ldb, nrhs, 'A', tol_of(dt));
            free(B2), free(RB2);
        }
        free(A), free(RA), free(B), free(RB), free(ip), free(rp);
    }
    ASSERT_EQ(xerbla_calls, 0);
}

/* An exactly singular matrix (column k all zeros, so U(k, k) = 0): INFO = k + 1 from ?getrf_
 * (OpenBLAS's too) with the factorization completed (factors and pivots as OpenBLAS's), and
 * from ?gesv_, which leaves B as it was and A and IPIV factored; no XERBLA. */
TEST(lu_singular) {
    struct {
        int dt, m, n, zero;
    } cases[] = {{1, 100, 100, 57}, {3, 100, 100, 0}, {1, 300, 300, 201},
                 {3, 300, 300, 99}, {0, 120, 90, 30}, {2, 90, 120, 89}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int dt = cases[c].dt, m = cases[c].m, n = cases[c].n, lda = m + 2, d = m < n ? m : n;
        int info = 0, rinfo = 0;
        void *A = general(dt, m, n, lda, 131u + (unsigned)c, cases[c].zero);
        void *RA = dup(dt, A, (size_t)lda * n), *A2 = dup(dt, A, (size_t)lda * n);
        int *ip = pivots(d), *rp = pivots(d);
        tess_getrf_[dt](&m, &n, A, &lda, ip, &info);
        ref_getrf[dt](&m, &n, RA, &lda, rp, &rinfo);
        char what[64];
        snprintf(what, sizeof what, "%cgetrf_ m=%d n=%d singular", pre[dt], m, n);
        ASSERT_EQ(rinfo, cases[c].zero + 1);
        ASSERT_EQ(info, cases[c].zero + 1);
        compare_pivots(what, ip, rp, d);
        compare(what, dt, A, RA, m, lda, n, 'A', tol_of(dt));
        if (m == n) {
            int nrhs = 3, ldb = n;
            void *B = rnd_mat(dt, n, nrhs, ldb, 141u), *B0 = dup(dt, B, (size_t)ldb * nrhs);
            int *ip2 = pivots(n);
            info = 0;
            tess_gesv_[dt](&n, &nrhs, A2, &lda, ip2, B, &ldb, &info);
            snprintf(what, sizeof what, "%cgesv_ n=%d singular", pre[dt], n);
            ASSERT_EQ(info, cases[c].zero + 1);
            ASSERT_MSG(!memcmp(B, B0, esz[dt] * (size_t)ldb * nrhs),
                       "%s: B written although A is singular", what);
            compare_pivots(what, ip2, rp, n);
            compare(what, dt, A2, RA, n, lda, n, 'A', tol_of(dt));
            free(B), free(B0), free(ip2);
        }
        free(A), free(RA), free(A2), free(ip), free(rp);
    }
    ASSERT_EQ(xerbla_calls, 0);
}

/* Bad LU calls, reference LAPACK's checks in its order (GETRF: M 1, N 2, LDA 4; GETRS: TRANS
 * 1, N 2, NRHS 3, LDA 5, LDB 8; GESV: N 1, NRHS 2, LDA 4, LDB 7): INFO = -pos, the program's
 * xerbla_ once with 'DGETRF', 'DGETRS', 'DGESV ' (blank-padded to 6) and pos, A, B and IPIV
 * untouched. Then arrays whose span cannot be addressed (A, IPIV, B), at their positions. */
TEST(lu_bad_arguments_reach_xerbla) {
    enum { GETRF, GETRS, GESV };
    struct {
        int kind, dt;
        const char *trans;
        int m, n, nrhs, lda, ldb;
        const char *name;
        int pos;
    } cases[] = {
        {GETRF, 1, "", -1, 4, 0, 4, 0, "DGETRF", 1},  {GETRF, 1, "", 4, -1, 0, 4, 0, "DGETRF", 2},
        {GETRF, 1, "", -1, -1, 0, 0, 0, "DGETRF", 1}, {GETRF, 1, "", 4, 4, 0, 3, 0, "DGETRF", 4},
        {GETRF, 3, "", 4, 2, 0, 3, 0, "ZGETRF", 4},   {GETRF, 0, "", 4, -2, 0, 4, 0, "SGETRF", 2},
        {GETRS, 1, "X", 0, 4, 2, 4, 4, "DGETRS", 1},  {GETRS, 1, " ", 0, -1, 2, 4, 4, "DGETRS", 1},
        {GETRS, 1, "N", 0, -2, 2, 4, 4, "DGETRS", 2}, {GETRS, 1, "t", 0, 4, -1, 4, 4, "DGETRS", 3},
        {GETRS, 1, "c", 0, 4, 2, 3, 4, "DGETRS", 5},  {GETRS, 1, "T", 0, 4, 2, 4, 3, "DGETRS", 8},
        {GETRS, 2, "C", 0, 4, 2, 4, 1, "CGETRS", 8},  {GESV, 1, "", 0, -1, 2, 4, 4, "DGESV ", 1},
        {GESV, 1, "", 0, 4, -1, 4, 4, "DGESV ", 2},   {GESV, 1, "", 0, 4, 2, 3, 4, "DGESV ", 4},
        {GESV, 1, "", 0, 4, 2, 4, 3, "DGESV ", 7},    {GESV, 3, "", 0, 4, -3, 1, 4, "ZGESV ", 2},
        {GESV, 0, "", 0, 4, 2, 1, 1, "SGESV ", 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int dt = cases[c].dt, m = cases[c].m, n = cases[c].n, nrhs = cases[c].nrhs;
        int lda = cases[c].lda, ldb = cases[c].ldb, info = 12345;
        void *A = general(dt, 4, 4, 4, 151u, -1), *A0 = dup(dt, A, 16);
        void *B = rnd_mat(dt, 4, 4, 4, 161u), *B0 = dup(dt, B, 16);
        int ip[6] = {1, 2, 3, 4, -7, -7}, ip0[6];
        memcpy(ip0, ip, sizeof ip);
        xerbla_calls = 0;
        if (cases[c].kind == GETRF)
            tess_getrf_[dt](&m, &n, A, &lda, ip, &info);
        else if (cases[c].kind == GETRS)
            tess_getrs_[dt](cases[c].trans, &n, &nrhs, A, &lda, ip, B, &ldb, &info, 1);
        else
            tess_gesv_[dt](&n, &nrhs, A, &lda, ip, B, &ldb, &info);
        ASSERT_MSG(xerbla_calls == 1 && last_len == 6 && !strcmp(last_srname, cases[c].name) &&
                       last_info == cases[c].pos && info == -cases[c].pos,
                   "LU case %zu: xerbla_ called %d times, last ('%s' length %d, %d), INFO %d; "
                   "want ('%s', %d), INFO %d",
                   c, xerbla_calls, last_srname, last_len, last_info, info, cases[c].name,
                   cases[c].pos, -cases[c].pos);
        ASSERT_MSG(!memcmp(A, A0, esz[dt] * 16) && !memcmp(B, B0, esz[dt] * 16) &&
                       !memcmp(ip, ip0, sizeof ip),
                   "LU case %zu: an operand was written", c);
        free(A), free(A0), free(B), free(B0);
    }
    /* spans: A of 2^30 x 2^30 doubles (2^63 bytes); IPIV at the top of the address space;
     * B of 2^31 - 1 columns of 2^30 */
    double a[4] = {4, 1, 2, 3}, b[4] = {1, 2, 3, 4};
    int big = 1 << 30, n1 = 1, n2 = 2, info = 0, wide = INT_MAX, ip[2] = {1, 2};
    int *top = (int *)(UINTPTR_MAX - 7);
    struct {
        const char *name;
        int pos;
    } want[5] = {{"DGETRF", 3}, {"DGETRF", 5}, {"DGETRS", 6}, {"ZGESV ", 6}, {"DGETRS", 7}};
    for (int w = 0; w < 5; w++) {
        xerbla_calls = 0, info = 0;
        switch (w) {
        case 0: dgetrf_(&big, &big, a, &big, ip, &info); break;
        case 1: dgetrf_(&n2, &n2, a, &n2, top, &info); break;
        case 2: dgetrs_("N", &n2, &n1, a, &n2, top, b, &n2, &info, 1); break;
        case 3: zgesv_(&n1, &wide, a, &n1, ip, b, &big, &info); break;
        default: dgetrs_("T", &n1, &wide, a, &n1, ip, b, &big, &info, 1); break;
        }
        ASSERT_MSG(xerbla_calls == 1 && !strcmp(last_srname, want[w].name) &&
                       last_info == want[w].pos && info == -want[w].pos,
                   "span %d: xerbla_ %d times ('%s', %d), INFO %d; want ('%s', %d)", w,
                   xerbla_calls, last_srname, last_info, info, want[w].name, want[w].pos);
    }
    ASSERT(a[0] == 4 && a[3] == 3 && b[0] == 1 && b[3] == 4 && ip[0] == 1 && ip[1] == 2);
    xerbla_calls = 0;
}

/* LAPACK's LU quick returns: ?getrf_ with M = 0 or N = 0, ?getrs_ with N = 0 or NRHS = 0,
 * ?gesv_ with N = 0 set INFO = 0 and touch nothing (IPIV included); ?gesv_ with NRHS = 0
 * still factors A, as reference LAPACK does. */
TEST(lu_quick_returns) {
    int zero = 0, four = 4, info = 7;
    double A[16], B[16];
    int ip[4] = {-7, -7, -7, -7};
    for (int i = 0; i < 16; i++) A[i] = B[i] = NAN;
    dgetrf_(&zero, &four, A, &four, ip, &info);
    ASSERT_EQ(info, 0);
    info = 7;
    zgetrf_(&four, &zero, A, &four, ip, &info);
    ASSERT_EQ(info, 0);
    info = 7;
    dgetrs_("N", &four, &zero, A, &four, ip, B, &four, &info, 1);
    ASSERT_EQ(info, 0);
    info = 7;
    cgetrs_("C", &zero, &four, A, &four, ip, B, &four, &info, 1);
    ASSERT_EQ(info, 0);
    info = 7;
    zgesv_(&zero, &four, A, &four, ip, B, &four, &info);
    ASSERT_EQ(info, 0);
    ASSERT(isnan(A[0]) && isnan(A[15]) && isnan(B[0]) && isnan(B[15]));
    ASSERT(ip[0] == -7 && ip[3] == -7);
    void *M = general(1, 4, 4, 4, 171u, -1), *R = dup(1, M, 16);
    int rinfo = 7, rp[4];
    info = 7;
    dgesv_(&four, &zero, M, &four, ip, B, &four, &info);
    ref_getrf[1](&four, &four, R, &four, rp, &rinfo);
    ASSERT_EQ(info, 0);
    ASSERT(!memcmp(ip, rp, sizeof ip));
    compare("dgesv_ nrhs=0", 1, M, R, 4, 4, 4, 'A', 1e-12);
    free(M), free(R);
    ASSERT_EQ(xerbla_calls, 0);
}

int main(int argc, char **argv) {
    /* The drop-in looks for the program's own LAPACK at its first LAPACK call: make it here,
     * before OpenBLAS is opened for the references (test_dropin_lapack_alone: nothing to
     * find). */
    int zero = 0, one = 1, info = 1;
    double a = 1;
    dpotrf_("L", &zero, &a, &one, &info, 1);
    if (info != 0) return 1;
    load_reference();
    return test_main_(argc, argv);
}
