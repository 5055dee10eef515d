/* src/level3/symm.c: tess_?symm and tess_?hemm. Checks the arguments (CBLAS order: layout,
 * side, uplo, m, n, lda, ldb, ldc, then pointers), folds row-major into column-major (swap
 * side and uplo, swap m and n), takes the quick returns on the host, and turns the rest
 * into a job of one task per C tile; symm_step below gives the steps (docs/level3.md).
 * Owns the SYMM/HEMM tile algorithm only; the runtime (node/) runs it.
 * Invariants: step s is term k = s: a GEMM on the stored block (or its mirror, 'T'/'C') off
 * the diagonal, a SYMM/HEMM tile kernel on the diagonal block; beta goes to step 0 only.
 * Only the diagonal kernels read A's diagonal, so HEMM's rule (its imaginary parts taken
 * as zero) is the kernel's.
 */
#include <string.h>

#include "level3.h"

struct symm_job {
    struct tess__job base; /* first: the step callback casts back */
    char side, uplo;       /* column-major, after folding */
    int herm;              /* HEMM */
};

/* Step s of task t: term k = s of the sums above. */
static void symm_step(const struct tess__job *job, const struct tess__task *t, int s,
                      struct tess__step *out) {
    const struct symm_job *sj = (const struct symm_job *)job;
    int64_t T = job->tile, i = t->i, j = t->j, k = s;
    char mirror = sj->herm ? 'C' : 'T';

    memset(out, 0, sizeof *out);
    out->nops = 2;
    out->m = t->m;
    out->n = t->n;
    out->alpha = &job->alpha;
    out->beta = s == 0 ? (const void *)&job->beta : (const void *)tess__scalar_one(job->dt);
    if (sj->side == 'L') {
        int64_t kk = TESS__MIN(T, job->m - k * T); /* rows of B_kj */
        tess__l3_tile(job, &out->b, job->B, job->ldb, k * T, j * T, kk, t->n);
        if (k == i) {
            out->kind = sj->herm ? TESS__K_HEMM : TESS__K_SYMM;
            out->side = 'L';
            out->uplo = sj->uplo;
            tess__l3_tile(job, &out->a, job->A, job->lda, i * T, i * T, t->m, t->m);
            return;
        }
        out->kind = TESS__K_GEMM;
        out->tb = 'N';
        out->k = kk;
        if ((sj->uplo == 'U') == (k > i)) {
            out->ta = 'N';
            tess__l3_tile(job, &out->a, job->A, job->lda, i * T, k * T, t->m, kk);
        } else {
            out->ta = mirror;
            tess__l3_tile(job, &out->a, job->A, job->lda, k * T, i * T, kk, t->m);
        }
    } else {
        int64_t kk = TESS__MIN(T, job->n - k * T); /* columns of B_ik */
        if (k == j) {
            out->kind = sj->herm ? TESS__K_HEMM : TESS__K_SYMM;
            out->side = 'R';
            out->uplo = sj->uplo;
            tess__l3_tile(job, &out->a, job->A, job->lda, j * T, j * T, t->n, t->n);
            tess__l3_tile(job, &out->b, job->B, job->ldb, i * T, j * T, t->m, t->n);
            return;
        }
        out->kind = TESS__K_GEMM;
        out->ta = 'N';
        out->k = kk;
        tess__l3_tile(job, &out->a, job->B, job->ldb, i * T, k * T, t->m, kk);
        if ((sj->uplo == 'U') == (k < j)) {
            out->tb = 'N';
            tess__l3_tile(job, &out->b, job->A, job->lda, k * T, j * T, kk, t->n);
        } else {
            out->tb = mirror;
            tess__l3_tile(job, &out->b, job->A, job->lda, j * T, k * T, t->n, kk);
        }
    }
}

static const struct tess__job_ops symm_ops = {.name = "symm", .step = symm_step};
static const struct tess__job_ops hemm_ops = {.name = "hemm", .step = symm_step};

/* pos: 1-based position of `layout` in the caller's signature (typed: 1, generic: 2). */
static int symm_impl(const char *fn, int pos, tess_dtype_t dt, bool herm, tess_layout_t layout,
                     tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n, const void *alpha,
                     const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                     void *C, int64_t ldc) {
    tess__clear_error();
    int rc = tess__l3_check_head(fn, pos, layout, true, side, uplo);
    if (rc) return rc;
    if (m < 0) return TESS__L3_BAD("(m = %lld) must be >= 0", fn, pos + 3, (long long)m);
    if (n < 0) return TESS__L3_BAD("(n = %lld) must be >= 0", fn, pos + 4, (long long)n);
    bool row = layout == TESS_ROW_MAJOR;
    int64_t ka = side == TESS_LEFT ? m : n, cr = row ? n : m;
    if (lda < TESS__MAX(1, ka))
        return TESS__L3_BAD("(lda = %lld) must be >= max(1, %s) = %lld", fn, pos + 7,
                            (long long)lda, side == TESS_LEFT ? "m" : "n",
                            (long long)TESS__MAX(1, ka));
    if (ldb < TESS__MAX(1, cr))
        return TESS__L3_BAD("(ldb = %lld) must be >= max(1, %s) = %lld", fn, pos + 9,
                            (long long)ldb, row ? "n" : "m", (long long)TESS__MAX(1, cr));
    if (ldc < TESS__MAX(1, cr))
        return TESS__L3_BAD("(ldc = %lld) must be >= max(1, %s) = %lld", fn, pos + 12,
                            (long long)ldc, row ? "n" : "m", (long long)TESS__MAX(1, cr));
    if (!alpha) return TESS__L3_BAD("(alpha) must not be NULL", fn, pos + 5);
    if (!beta) return TESS__L3_BAD("(beta) must not be NULL", fn, pos + 10);
    if (m == 0 || n == 0) return TESS_OK;
    if (!C) return TESS__L3_BAD("(C) must not be NULL", fn, pos + 11);

    tess__scalar_t al, be;
    tess__scalar_load(dt, &al, alpha);
    tess__scalar_load(dt, &be, beta);
    bool no_ab = tess__scalar_is_zero(dt, &al);
    if (!no_ab && !A) return TESS__L3_BAD("(A) must not be NULL", fn, pos + 6);
    if (!no_ab && !B) return TESS__L3_BAD("(B) must not be NULL", fn, pos + 8);
    /* every array the call touches can be addressed (stored B and C: cr x cc) */
    int64_t cc = row ? m : n;
    if (!no_ab && ((rc = tess__l3_check_span(fn, pos + 6, "A", A, ka, ka, lda, dt)) ||
                   (rc = tess__l3_check_span(fn, pos + 8, "B", B, cr, cc, ldb, dt))))
        return rc;
    if ((rc = tess__l3_check_span(fn, pos + 11, "C", C, cr, cc, ldc, dt))) return rc;
    /* held matrices it touches: served as if nothing were held (node/hold.c) */
    if ((!no_ab && ((rc = tess__l3_unhold(fn, A, ka, ka, lda, dt, false)) ||
                    (rc = tess__l3_unhold(fn, B, cr, cc, ldb, dt, false)))) ||
        (rc = tess__l3_unhold(fn, C, cr, cc, ldc, dt, true)))
        return rc;

    /* Row-major: the column-major views hold C^T, B^T and A^T (symmetric/Hermitian, in the
     * other triangle): C^T = B^T A^T (side L) or A^T B^T (side R). */
    char sd = side == TESS_LEFT ? 'L' : 'R', ul = uplo == TESS_UPPER ? 'U' : 'L';
    if (row) {
        sd = sd == 'L' ? 'R' : 'L';
        ul = ul == 'U' ? 'L' : 'U';
        int64_t t = m;
        m = n, n = t;
    }
    if (no_ab) {
        tess__host_scale(dt, m, n, &be, C, ldc); /* beta = 1: nothing; 0: zeros, C not read */
        return TESS_OK;
    }

    struct tess__rt *rt;
    struct symm_job sj;
    int64_t ka_ = sd == 'L' ? m : n;
    rc = tess__l3_begin(fn, &sj.base, herm ? &hemm_ops : &symm_ops, dt, m, n, ka_, C, ldc, &rt);
    if (rc) return rc;
    sj.side = sd, sj.uplo = ul, sj.herm = herm;
    struct tess__job *job = &sj.base;
    job->alpha = al, job->beta = be;
    job->A = A, job->B = B, job->lda = lda, job->ldb = ldb;

    int64_t T = job->tile;
    int64_t mt = TESS__CEILDIV(m, T), nt = TESS__CEILDIV(n, T), kt = TESS__CEILDIV(ka_, T);
    if ((rc = tess__l3_alloc(fn, job, tess__l3_count_mul(mt, nt), kt))) {
        tess__rt_put(rt);
        return rc;
    }
    int load_c = !tess__scalar_is_zero(dt, &be);
    for (int64_t j = 0; j < nt; j++)
        for (int64_t i = 0; i < mt; i++) tess__l3_task(job, i, j, m, n, (int)kt, load_c);
    return tess__l3_run(rt, job);
}

int tess_symm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
              int64_t m, int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
              int64_t ldb, const void *beta, void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_symm", dtype, false);
    if (rc) return rc;
    return symm_impl("tess_symm", 2, dtype, false, layout, side, uplo, m, n, alpha, A, lda, B, ldb,
                     beta, C, ldc);
}

int tess_hemm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
              int64_t m, int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
              int64_t ldb, const void *beta, void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_hemm", dtype, true);
    if (rc) return rc;
    return symm_impl("tess_hemm", 2, dtype, true, layout, side, uplo, m, n, alpha, A, lda, B, ldb,
                     beta, C, ldc);
}

int tess_ssymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
               float *C, int64_t ldc) {
    return symm_impl("tess_ssymm", 1, TESS_S, false, layout, side, uplo, m, n, &alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}

int tess_dsymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
               double beta, double *C, int64_t ldc) {
    return symm_impl("tess_dsymm", 1, TESS_D, false, layout, side, uplo, m, n, &alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}

int tess_csymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return symm_impl("tess_csymm", 1, TESS_C, false, layout, side, uplo, m, n, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}

int tess_zsymm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return symm_impl("tess_zsymm", 1, TESS_Z, false, layout, side, uplo, m, n, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}

int tess_chemm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return symm_impl("tess_chemm", 1, TESS_C, true, layout, side, uplo, m, n, alpha, A, lda, B, ldb,
                     beta, C, ldc);
}

int tess_zhemm(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, int64_t m, int64_t n,
               const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return symm_impl("tess_zhemm", 1, TESS_Z, true, layout, side, uplo, m, n, alpha, A, lda, B, ldb,
                     beta, C, ldc);
}
