/* src/lapack/getrs.c: tess_?getrs and tess_?gesv, LAPACK's solves with an LU factorization.
 * Checks the arguments (LAPACKE order and numbering, and every pivot in 1..n), applies the
 * row interchanges to B on the host (O(n nrhs) moves; a held B written back and dropped
 * first) and runs the two triangular solves as tess_trsm calls in the caller's layout; gesv
 * runs tess_?getrf first, whose strips stay held through the solves (column-major: they
 * read the factor on the devices). Owns no tile algorithm: the solves are level-3 jobs.
 * Invariants: nothing is read or written before every argument passed; gesv leaves B as it
 * was when the factorization finds an exact zero pivot (INFO > 0). */
#include <string.h>

#include "lapack.h"

/* The arguments of getrs (trans_pos > 0) or gesv (trans_pos 0: no trans; the positions
 * after it one lower); TESS_OK or TESS_EINVAL with *info = -(typed position). */
static int check(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout, bool has_trans,
                 tess_trans_t trans, int64_t n, int64_t nrhs, const void *A, int64_t lda,
                 const int64_t *ipiv, bool check_piv, const void *B, int64_t ldb, int64_t *info) {
    int o = has_trans; /* positions after layout shift by one with trans */
    if (!info)
        return tess__fail(TESS_EINVAL, "%s: argument %d (info) must not be NULL", fn, 9 + o + gen);
#define BAD TESS__LA_BAD
    if (layout != TESS_ROW_MAJOR && layout != TESS_COL_MAJOR)
        return BAD(1, "(layout = %d) must be TESS_ROW_MAJOR or TESS_COL_MAJOR", (int)layout);
    if (has_trans && trans != TESS_NO_TRANS && trans != TESS_TRANS && trans != TESS_CONJ_TRANS)
        return BAD(2, "(trans = %d) must be TESS_NO_TRANS, TESS_TRANS or TESS_CONJ_TRANS",
                   (int)trans);
    if (n < 0) return BAD(2 + o, "(n = %lld) must be >= 0", (long long)n);
    if (nrhs < 0) return BAD(3 + o, "(nrhs = %lld) must be >= 0", (long long)nrhs);
    if (n > 0 && !A) return BAD(4 + o, "(A = %p) must not be NULL", A);
    if (lda < TESS__MAX(1, n))
        return BAD(5 + o, "(lda = %lld) must be >= max(1, n) = %lld", (long long)lda,
                   (long long)TESS__MAX(1, n));
    if (n > 0 && !ipiv) return BAD(6 + o, "(ipiv = %p) must not be NULL", (const void *)ipiv);
    for (int64_t i = 0; check_piv && i < n; i++)
        if (ipiv[i] < 1 || ipiv[i] > n)
            return BAD(6 + o, "(ipiv[%lld] = %lld) must be in 1..n = %lld", (long long)i,
                       (long long)ipiv[i], (long long)n);
    if (n > 0 && nrhs > 0 && !B) return BAD(7 + o, "(B = %p) must not be NULL", B);
    bool row = layout == TESS_ROW_MAJOR;
    int64_t brows = row ? nrhs : n, bcols = row ? n : nrhs;
    if (ldb < TESS__MAX(1, brows))
        return BAD(8 + o, "(ldb = %lld) must be >= max(1, %s) = %lld", (long long)ldb,
                   row ? "nrhs" : "n", (long long)TESS__MAX(1, brows));
    size_t es = tess__dtypes[dt].size;
    if (n > 0 && !tess__span_ok(A, n, n, lda, es, NULL))
        return BAD(4 + o,
                   "(A: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)n, (long long)n, (long long)lda);
    if (n > 0 && nrhs > 0 && !tess__span_ok(B, brows, bcols, ldb, es, NULL))
        return BAD(7 + o,
                   "(B: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)brows, (long long)bcols, (long long)ldb);
#undef BAD
    *info = 0;
    return TESS_OK;
}

/* Interchange rows i and p of B (n x nrhs in the caller's layout), es-byte elements. */
static void swap_rows(char *B, int64_t ldb, bool row, int64_t nrhs, size_t es, int64_t i,
                      int64_t p) {
    unsigned char t[16];
    if (row) {
        char *x = B + (size_t)(i * ldb) * es, *y = B + (size_t)(p * ldb) * es;
        for (int64_t c = 0; c < nrhs; c++, x += es, y += es) {
            memcpy(t, x, es);
            memcpy(x, y, es);
            memcpy(y, t, es);
        }
        return;
    }
    char *x = B + (size_t)i * es, *y = B + (size_t)p * es;
    for (int64_t c = 0; c < nrhs; c++, x += (size_t)ldb * es, y += (size_t)ldb * es) {
        memcpy(t, x, es);
        memcpy(x, y, es);
        memcpy(y, t, es);
    }
}

/* B := P^T B (forward: rows 0, 1, ... as LAPACK's xLASWP with incx 1) or P B (backward). */
static void permute(char *B, int64_t ldb, bool row, int64_t n, int64_t nrhs, size_t es,
                    const int64_t *ipiv, bool forward) {
    /* columns in blocks, as xLASWP does, so each block's rows stay in cache */
    enum { NB = 32 };
    for (int64_t c0 = 0; c0 < nrhs; c0 += NB) {
        int64_t nc = TESS__MIN(NB, nrhs - c0);
        char *b = B + (size_t)(row ? c0 : c0 * ldb) * es;
        for (int64_t x = 0; x < n; x++) {
            int64_t i = forward ? x : n - 1 - x, p = ipiv[i] - 1;
            if (p != i) swap_rows(b, ldb, row, nc, es, i, p);
        }
    }
}

/* A = P L U: trans N: L Y = P^T B, U X = Y; T/C: U^T Y = B, L^T Z = Y, X = P Z. */
static int solve(const char *fn, tess_dtype_t dt, tess_layout_t layout, tess_trans_t trans,
                 int64_t n, int64_t nrhs, const void *A, int64_t lda, const int64_t *ipiv, void *B,
                 int64_t ldb) {
    if (n == 0 || nrhs == 0) return TESS_OK;
    const void *one = tess__scalar_one(dt);
    bool row = layout == TESS_ROW_MAJOR;
    size_t es = tess__dtypes[dt].size;
    int rc;
    /* the host interchanges B's rows: a held B is written back and dropped first */
    struct tess__rt *rt;
    if ((rc = tess__rt_get(&rt))) return rc;
    rc = tess__hold_unheld(rt, fn, B, row ? nrhs : n, row ? n : nrhs, ldb, es, true);
    tess__rt_put(rt);
    if (rc) return rc;
    if (trans == TESS_NO_TRANS) {
        permute(B, ldb, row, n, nrhs, es, ipiv, true);
        rc = tess_trsm(dt, layout, TESS_LEFT, TESS_LOWER, TESS_NO_TRANS, TESS_UNIT, n, nrhs, one, A,
                       lda, B, ldb);
        if (!rc)
            rc = tess_trsm(dt, layout, TESS_LEFT, TESS_UPPER, TESS_NO_TRANS, TESS_NON_UNIT, n, nrhs,
                           one, A, lda, B, ldb);
    } else {
        rc = tess_trsm(dt, layout, TESS_LEFT, TESS_UPPER, trans, TESS_NON_UNIT, n, nrhs, one, A,
                       lda, B, ldb);
        if (!rc)
            rc = tess_trsm(dt, layout, TESS_LEFT, TESS_LOWER, trans, TESS_UNIT, n, nrhs, one, A,
                           lda, B, ldb);
        if (!rc) permute(B, ldb, row, n, nrhs, es, ipiv, false);
    }
    return rc ? tess__la_fail_in(fn, rc) : TESS_OK;
}

static int getrs_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout,
                      tess_trans_t trans, int64_t n, int64_t nrhs, const void *A, int64_t lda,
                      const int64_t *ipiv, void *B, int64_t ldb, int64_t *info) {
    tess__clear_error();
    int rc = check(fn, gen, dt, layout, true, trans, n, nrhs, A, lda, ipiv, true, B, ldb, info);
    return rc ? rc : solve(fn, dt, layout, trans, n, nrhs, A, lda, ipiv, B, ldb);
}

static int gesv_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout, int64_t n,
                     int64_t nrhs, void *A, int64_t lda, int64_t *ipiv, void *B, int64_t ldb,
                     int64_t *info) {
    tess__clear_error();
    int rc = check(fn, gen, dt, layout, false, TESS_NO_TRANS, n, nrhs, A, lda, ipiv, false, B, ldb,
                   info);
    if (rc || n == 0) return rc;
    bool kept = false;
    if ((rc = tess__getrf_kept(dt, layout, n, n, A, lda, ipiv, info, &kept))) {
        *info = 0;
        return tess__la_fail_in(fn, rc);
    }
    if (*info > 0) return TESS_OK; /* singular: no solution, B untouched */
    /* the factor still held (column-major): the solves read it on the devices */
    rc = solve(fn, dt, layout, TESS_NO_TRANS, n, nrhs, A, lda, ipiv, B, ldb);
    return kept ? tess__la_release_own(A, rc, info) : rc;
}

static int bad_dtype(const char *fn, tess_dtype_t dt) {
    tess__clear_error();
    return tess__fail(TESS_EINVAL, "%s: argument 1 (dtype = %d) must be a tess_dtype_t", fn,
                      (int)dt);
}

int tess_getrs(tess_dtype_t dtype, tess_layout_t layout, tess_trans_t trans, int64_t n,
               int64_t nrhs, const void *A, int64_t lda, const int64_t *ipiv, void *B, int64_t ldb,
               int64_t *info) {
    if ((unsigned)dtype > TESS_Z) return bad_dtype("tess_getrs", dtype);
    return getrs_impl("tess_getrs", 1, dtype, layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info);
}

int tess_gesv(tess_dtype_t dtype, tess_layout_t layout, int64_t n, int64_t nrhs, void *A,
              int64_t lda, int64_t *ipiv, void *B, int64_t ldb, int64_t *info) {
    if ((unsigned)dtype > TESS_Z) return bad_dtype("tess_gesv", dtype);
    return gesv_impl("tess_gesv", 1, dtype, layout, n, nrhs, A, lda, ipiv, B, ldb, info);
}

#define SOLVES_TYPED(X, DT, E)                                                                     \
    int tess_##X##getrs(tess_layout_t layout, tess_trans_t trans, int64_t n, int64_t nrhs,         \
                        const E *A, int64_t lda, const int64_t *ipiv, E *B, int64_t ldb,           \
                        int64_t *info) {                                                           \
        return getrs_impl("tess_" #X "getrs", 0, DT, layout, trans, n, nrhs, A, lda, ipiv, B, ldb, \
                          info);                                                                   \
    }                                                                                              \
    int tess_##X##gesv(tess_layout_t layout, int64_t n, int64_t nrhs, E *A, int64_t lda,           \
                       int64_t *ipiv, E *B, int64_t ldb, int64_t *info) {                          \
        return gesv_impl("tess_" #X "gesv", 0, DT, layout, n, nrhs, A, lda, ipiv, B, ldb, info);   \
    }
SOLVES_TYPED(s, TESS_S, float)
SOLVES_TYPED(d, TESS_D, double)
SOLVES_TYPED(c, TESS_C, void)
SOLVES_TYPED(z, TESS_Z, void)
