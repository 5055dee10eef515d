/* src/lapack/potrs.c: tess_?potrs and tess_?posv, LAPACK's solves with a Cholesky factor.
 * Checks the arguments (LAPACKE order and numbering), then runs the two triangular solves
 * as tess_trsm calls in the caller's layout (CBLAS row-major semantics match LAPACKE's), and
 * for posv tess_?potrf first, whose hold of A lasts through the solves (they read the
 * factor on the devices). Owns no tile algorithm: the solves are level-3 jobs.
 * Invariants: nothing is read or written before every argument passed; posv leaves B as it
 * was when the factorization stops with INFO > 0. */
#include "lapack.h"

/* The arguments of potrs/posv (gen: 1 for the generic entries, whose messages count dtype
 * as argument 1); TESS_OK or TESS_EINVAL with *info = -(typed position). */
static int check(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo,
                 int64_t n, int64_t nrhs, const void *A, int64_t lda, const void *B, int64_t ldb,
                 int64_t *info) {
    int rc = tess__la_check_head(fn, gen, 9, layout, uplo, info);
    if (rc) return rc;
#define BAD TESS__LA_BAD
    if (n < 0) return BAD(3, "(n = %lld) must be >= 0", (long long)n);
    if (nrhs < 0) return BAD(4, "(nrhs = %lld) must be >= 0", (long long)nrhs);
    if (n > 0 && !A) return BAD(5, "(A = %p) must not be NULL", A);
    if (lda < TESS__MAX(1, n))
        return BAD(6, "(lda = %lld) must be >= max(1, n) = %lld", (long long)lda,
                   (long long)TESS__MAX(1, n));
    if (n > 0 && nrhs > 0 && !B) return BAD(7, "(B = %p) must not be NULL", B);
    bool row = layout == TESS_ROW_MAJOR;
    int64_t brows = row ? nrhs : n, bcols = row ? n : nrhs;
    if (ldb < TESS__MAX(1, brows))
        return BAD(8, "(ldb = %lld) must be >= max(1, %s) = %lld", (long long)ldb,
                   row ? "nrhs" : "n", (long long)TESS__MAX(1, brows));
    size_t es = tess__dtypes[dt].size;
    if (n > 0 && !tess__span_ok(A, n, n, lda, es, NULL))
        return BAD(5,
                   "(A: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)n, (long long)n, (long long)lda);
    if (n > 0 && nrhs > 0 && !tess__span_ok(B, brows, bcols, ldb, es, NULL))
        return BAD(7,
                   "(B: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)brows, (long long)bcols, (long long)ldb);
#undef BAD
    *info = 0;
    return TESS_OK;
}

/* The solves: A = L L^H: L Y = B, L^H X = Y; A = U^H U: U^H Y = B, U X = Y. */
static int solve(const char *fn, tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo, int64_t n,
                 int64_t nrhs, const void *A, int64_t lda, void *B, int64_t ldb) {
    if (n == 0 || nrhs == 0) return TESS_OK;
    const void *one = tess__scalar_one(dt);
    tess_trans_t first = uplo == TESS_LOWER ? TESS_NO_TRANS : TESS_CONJ_TRANS;
    tess_trans_t second = uplo == TESS_LOWER ? TESS_CONJ_TRANS : TESS_NO_TRANS;
    int rc = tess_trsm(dt, layout, TESS_LEFT, uplo, first, TESS_NON_UNIT, n, nrhs, one, A, lda, B,
                       ldb);
    if (!rc)
        rc = tess_trsm(dt, layout, TESS_LEFT, uplo, second, TESS_NON_UNIT, n, nrhs, one, A, lda, B,
                       ldb);
    return rc ? tess__la_fail_in(fn, rc) : TESS_OK;
}

static int potrs_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout,
                      tess_uplo_t uplo, int64_t n, int64_t nrhs, const void *A, int64_t lda,
                      void *B, int64_t ldb, int64_t *info) {
    tess__clear_error();
    int rc = check(fn, gen, dt, layout, uplo, n, nrhs, A, lda, B, ldb, info);
    return rc ? rc : solve(fn, dt, layout, uplo, n, nrhs, A, lda, B, ldb);
}

static int posv_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout,
                     tess_uplo_t uplo, int64_t n, int64_t nrhs, void *A, int64_t lda, void *B,
                     int64_t ldb, int64_t *info) {
    tess__clear_error();
    int rc = check(fn, gen, dt, layout, uplo, n, nrhs, A, lda, B, ldb, info);
    if (rc || n == 0) return rc;
    bool kept = false;
    if ((rc = tess__potrf_kept(dt, layout, uplo, n, A, lda, info, &kept))) {
        *info = 0;
        return tess__la_fail_in(fn, rc);
    }
    if (*info > 0) return TESS_OK; /* not positive definite: no solution, B untouched */
    /* the factor still held (when the call held A): the solves read it on the devices */
    rc = solve(fn, dt, layout, uplo, n, nrhs, A, lda, B, ldb);
    return kept ? tess__la_release_own(A, rc, info) : rc;
}

static int bad_dtype(const char *fn, tess_dtype_t dt) {
    tess__clear_error();
    return tess__fail(TESS_EINVAL, "%s: argument 1 (dtype = %d) must be a tess_dtype_t", fn,
                      (int)dt);
}

int tess_potrs(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
               const void *A, int64_t lda, void *B, int64_t ldb, int64_t *info) {
    if ((unsigned)dtype > TESS_Z) return bad_dtype("tess_potrs", dtype);
    return potrs_impl("tess_potrs", 1, dtype, layout, uplo, n, nrhs, A, lda, B, ldb, info);
}

int tess_posv(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,
              void *A, int64_t lda, void *B, int64_t ldb, int64_t *info) {
    if ((unsigned)dtype > TESS_Z) return bad_dtype("tess_posv", dtype);
    return posv_impl("tess_posv", 1, dtype, layout, uplo, n, nrhs, A, lda, B, ldb, info);
}

#define SOLVES_TYPED(X, DT, E)                                                                     \
    int tess_##X##potrs(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs,           \
                        const E *A, int64_t lda, E *B, int64_t ldb, int64_t *info) {               \
        return potrs_impl("tess_" #X "potrs", 0, DT, layout, uplo, n, nrhs, A, lda, B, ldb, info); \
    }                                                                                              \
    int tess_##X##posv(tess_layout_t layout, tess_uplo_t uplo, int64_t n, int64_t nrhs, E *A,      \
                       int64_t lda, E *B, int64_t ldb, int64_t *info) {                            \
        return posv_impl("tess_" #X "posv", 0, DT, layout, uplo, n, nrhs, A, lda, B, ldb, info);   \
    }
SOLVES_TYPED(s, TESS_S, float)
SOLVES_TYPED(d, TESS_D, double)
SOLVES_TYPED(c, TESS_C, void)
SOLVES_TYPED(z, TESS_Z, void)
