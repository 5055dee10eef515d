/* tests/test_dropin_lapack.c: LAPACK's Cholesky routines through the drop-in library
 * (libtessera_blas.so linked first, so ?potrf_, ?potrs_ and ?posv_ are its symbols), as a
 * Fortran or C program calls them: results against OpenBLAS called directly (its ?potrf_
 * and cblas_?trsm taken from its own handle), both triangles, padded leading dimensions, the
 * other triangle and the padding untouched; INFO > 0 as OpenBLAS's for matrices that are not
 * positive definite (?posv_ then leaves B as it was); bad arguments: INFO = -pos and the
 * program's xerbla_ called once with reference LAPACK's name ('DPOTRF', 'ZPOSV ') and
 * position, nothing else written; quick returns. Where the calls went (tessera, the
 * program's LAPACK, tessera's CPU LAPACK) is read by tests/test_dropin.sh from the exit
 * summary. Built twice: test_dropin_lapack, linked to OpenBLAS after the drop-in (the
 * program's own LAPACK is the CPU path), and test_dropin_lapack_alone, linked to no LAPACK
 * (the CPU path is tessera's CPU LAPACK; OpenBLAS is opened for the references only after
 * the drop-in looked for a next definition, at main's first call).
 */
#include <complex.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>

#include "harness.h"

typedef void potrf_fn(const char *uplo, const int *n, void *A, const int *lda, int *info, size_t);
typedef void solve_fn(const char *uplo, const int *n, const int *nrhs, void *A, const int *lda,
                      void *B, const int *ldb, int *info, size_t);

/* (?potrs_ reads A only; declared here with the type of the table below) */
#define DECL(p)         \
    potrf_fn p##potrf_; \
    solve_fn p##potrs_, p##posv_;
DECL(s)
DECL(d)
DECL(c)
DECL(z)

/* the drop-in's symbols (the program's own, as the linker resolved them), by precision */
static potrf_fn *const tess_potrf_[4] = {spotrf_, dpotrf_, cpotrf_, zpotrf_};
static solve_fn *const tess_potrs_[4] = {spotrs_, dpotrs_, cpotrs_, zpotrs_};
static solve_fn *const tess_posv_[4] = {sposv_, dposv_, cposv_, zposv_};

/* OpenBLAS's, from its own handle: ?potrf_ (OpenBLAS's own code; its ?potrs_ and ?posv_ are
 * reference LAPACK's, which call ?trsm_ and ?potrf_ through the global scope, so the drop-in
 * in front of them), and cblas_?trsm for the solves (OpenBLAS's own). */
static potrf_fn *ref_potrf[4];
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
