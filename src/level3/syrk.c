/* src/level3/syrk.c: tess_?syrk, tess_?herk, tess_?syr2k, tess_?her2k. Checks the arguments
 * (CBLAS order: layout, uplo, trans, n, k, lda, [ldb,] ldc, then pointers), folds row-major
 * into column-major (swap uplo and trans; HER2K conjugates alpha), takes the quick returns
 * on the host (beta C on the triangle; HERK/HER2K zero the imaginary parts of C's diagonal
 * unless beta = 1), and turns the rest into a job of one task per C tile of the triangle
 * uplo; syrk_step below gives the steps (docs/level3.md). Owns these tile algorithms only.
 * Invariants: off-diagonal tiles are GEMM steps (two per k for SYR2K/HER2K), diagonal tiles
 * one SYRK-family kernel per k that reads and writes the triangle uplo only, and are always
 * loaded (their other triangle survives the write-back). beta goes to step 0 only; HERK's
 * alpha and beta and HER2K's beta are real: complex (x, 0) for the GEMM steps.
 */
#include <string.h>

#include "level3.h"

enum syrk_kind { SYRK, HERK, SYR2K, HER2K };

struct syrk_job {
    struct tess__job base;              /* first: the step callback casts back; base.alpha/beta are
                                * the GEMM steps' scalars (complex (x, 0) for HERK) */
    char uplo, trans;                   /* column-major, after folding; trans 'N', 'T' or 'C' */
    char mirror;                        /* op of the right factor: 'T', or 'C' for HERK/HER2K */
    int rank2;                          /* SYR2K/HER2K: a second operand B */
    enum tess__kernel_kind kkind;       /* the diagonal tiles' kernel */
    tess__scalar_t kalpha, kbeta, kone; /* the diagonal kernels' scalars (real for HERK's) */
    tess__scalar_t alpha2;              /* the second GEMM step's alpha: alpha or conj(alpha) */
};

/* op(X)_{r, c} of the n x k op(X): the stored block and how the GEMM reads it. */
static void op_tile(const struct syrk_job *sj, struct tess__tile *out, const void *X, int64_t ld,
                    int64_t r, int64_t c, int64_t rows, int64_t cols) {
    int64_t T = sj->base.tile;
    if (sj->trans == 'N')
        tess__l3_tile(&sj->base, out, X, ld, r * T, c * T, rows, cols);
    else
        tess__l3_tile(&sj->base, out, X, ld, c * T, r * T, cols, rows);
}

/* Step s of task t (see the formulas above). */
static void syrk_step(const struct tess__job *job, const struct tess__task *t, int s,
                      struct tess__step *out) {
    const struct syrk_job *sj = (const struct syrk_job *)job;
    int64_t T = job->tile;
    bool diag = t->i == t->j, pair = sj->rank2 && !diag;
    int64_t ks = pair ? s / 2 : s;
    int half = pair ? s % 2 : 0;
    int64_t kk = TESS__MIN(T, job->k - ks * T);
    const void *X = half ? job->B : job->A, *Y = sj->rank2 && !half ? job->B : job->A;
    int64_t ldx = half ? job->ldb : job->lda, ldy = sj->rank2 && !half ? job->ldb : job->lda;

    memset(out, 0, sizeof *out);
    out->m = t->m;
    out->n = t->n;
    out->k = kk;
    if (diag) {
        out->kind = sj->kkind;
        out->uplo = sj->uplo;
        out->ta = sj->trans;
        out->alpha = &sj->kalpha;
        out->beta = s == 0 ? &sj->kbeta : &sj->kone;
        out->nops = sj->rank2 ? 2 : 1;
        op_tile(sj, &out->a, job->A, job->lda, t->i, ks, t->m, kk);
        if (sj->rank2) op_tile(sj, &out->b, job->B, job->ldb, t->i, ks, t->m, kk);
        return;
    }
    out->kind = TESS__K_GEMM;
    out->nops = 2;
    out->alpha = half ? (const void *)&sj->alpha2 : (const void *)&job->alpha;
    out->beta = s == 0 ? (const void *)&job->beta : (const void *)tess__scalar_one(job->dt);
    /* a = op(X)_ik (t->m x kk), b = op(Y)_jk^* (kk x t->n) */
    op_tile(sj, &out->a, X, ldx, t->i, ks, t->m, kk);
    op_tile(sj, &out->b, Y, ldy, t->j, ks, t->n, kk);
    if (sj->trans == 'N') {
        out->ta = 'N';
        out->tb = sj->mirror;
    } else {
        out->ta = sj->trans;
        out->tb = 'N';
    }
}

static const struct tess__job_ops syrk_ops = {.name = "syrk", .step = syrk_step};
static const struct tess__job_ops herk_ops = {.name = "herk", .step = syrk_step};
static const struct tess__job_ops syr2k_ops = {.name = "syr2k", .step = syrk_step};
static const struct tess__job_ops her2k_ops = {.name = "her2k", .step = syrk_step};

/* pos: 1-based position of `layout` in the caller's signature (typed: 1, generic: 2).
 * alpha points to a scalar of dt (HERK: of the real type); beta too (HERK, HER2K: real).
 * B and ldb are ignored by SYRK/HERK. */
static int syrk_impl(const char *fn, int pos, tess_dtype_t dt, enum syrk_kind kind,
                     tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                     int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                     int64_t ldb, const void *beta, void *C, int64_t ldc) {
    bool herm = kind == HERK || kind == HER2K, rank2 = kind == SYR2K || kind == HER2K;
    bool cplx = tess__dtypes[dt].complex_;
    /* positions after lda: [B, ldb,] beta, C, ldc */
    int p_beta = pos + (rank2 ? 10 : 8), p_c = p_beta + 1, p_ldc = p_beta + 2;
    tess__clear_error();
    int rc = tess__l3_check_head(fn, pos, layout, false, (tess_side_t)0, uplo);
    if (rc) return rc;
    if (herm) {
        if (trans != TESS_NO_TRANS && trans != TESS_CONJ_TRANS)
            return TESS__L3_BAD("(trans = %d) must be TESS_NO_TRANS or TESS_CONJ_TRANS", fn,
                                pos + 2, (int)trans);
    } else if (cplx) {
        if (trans != TESS_NO_TRANS && trans != TESS_TRANS)
            return TESS__L3_BAD("(trans = %d) must be TESS_NO_TRANS or TESS_TRANS", fn, pos + 2,
                                (int)trans);
    } else if (!tess__l3_is_trans((int)trans)) {
        return TESS__L3_BAD("(trans = %d) must be a tess_trans_t", fn, pos + 2, (int)trans);
    }
    if (n < 0) return TESS__L3_BAD("(n = %lld) must be >= 0", fn, pos + 3, (long long)n);
    if (k < 0) return TESS__L3_BAD("(k = %lld) must be >= 0", fn, pos + 4, (long long)k);
    bool row = layout == TESS_ROW_MAJOR;
    /* stored rows of A (and B): column-major n x k for 'N', k x n otherwise; row-major the
     * other way round */
    int64_t ar = (trans == TESS_NO_TRANS) != row ? n : k;
    const char *arn = ar == n ? "n" : "k";
    if (lda < TESS__MAX(1, ar))
        return TESS__L3_BAD("(lda = %lld) must be >= max(1, %s) = %lld", fn, pos + 7,
                            (long long)lda, arn, (long long)TESS__MAX(1, ar));
    if (rank2 && ldb < TESS__MAX(1, ar))
        return TESS__L3_BAD("(ldb = %lld) must be >= max(1, %s) = %lld", fn, pos + 9,
                            (long long)ldb, arn, (long long)TESS__MAX(1, ar));
    if (ldc < TESS__MAX(1, n))
        return TESS__L3_BAD("(ldc = %lld) must be >= max(1, n) = %lld", fn, p_ldc, (long long)ldc,
                            (long long)TESS__MAX(1, n));
    if (!alpha) return TESS__L3_BAD("(alpha) must not be NULL", fn, pos + 5);
    if (!beta) return TESS__L3_BAD("(beta) must not be NULL", fn, p_beta);
    if (n == 0) return TESS_OK;
    if (!C) return TESS__L3_BAD("(C) must not be NULL", fn, p_c);

    /* Scalars: the GEMM steps' (of dt) and the diagonal kernels'. */
    struct syrk_job sj;
    tess__scalar_t al, be;
    if (kind == HERK) {
        tess__l3_from_real(dt, &al, alpha);
    } else {
        tess__scalar_load(dt, &al, alpha);
    }
    if (herm)
        tess__l3_from_real(dt, &be, beta);
    else
        tess__scalar_load(dt, &be, beta);
    bool alpha0 = tess__scalar_is_zero(dt, &al), beta1 = tess__scalar_is_one(dt, &be);
    if ((alpha0 || k == 0) && beta1) return TESS_OK;
    bool no_ab = alpha0 || k == 0;
    if (!no_ab && !A) return TESS__L3_BAD("(A) must not be NULL", fn, pos + 6);
    if (!no_ab && rank2 && !B) return TESS__L3_BAD("(B) must not be NULL", fn, pos + 8);
    /* every array the call touches can be addressed (stored A and B: ar x ac) */
    int64_t ac = (trans == TESS_NO_TRANS) != row ? k : n;
    if (!no_ab && ((rc = tess__l3_check_span(fn, pos + 6, "A", A, ar, ac, lda, dt)) ||
                   (rank2 && (rc = tess__l3_check_span(fn, pos + 8, "B", B, ar, ac, ldb, dt)))))
        return rc;
    if ((rc = tess__l3_check_span(fn, p_c, "C", C, n, n, ldc, dt))) return rc;
    /* held matrices it touches: served as if nothing were held (node/hold.c) */
    if ((!no_ab && ((rc = tess__l3_unhold(fn, A, ar, ac, lda, dt, false)) ||
                    (rank2 && (rc = tess__l3_unhold(fn, B, ar, ac, ldb, dt, false))))) ||
        (rc = tess__l3_unhold(fn, C, n, n, ldc, dt, true)))
        return rc;

    /* Row-major: the column-major view of C is C^T; A^T (B^T) is stored for op = 'N'. */
    char ul = uplo == TESS_UPPER ? 'U' : 'L';
    char tr = tess__l3_trans(trans);
    if (!cplx && tr == 'C') tr = 'T';
    if (row) {
        ul = ul == 'U' ? 'L' : 'U';
        tr = tr != 'N' ? 'N' : herm ? 'C' : 'T';
        if (kind == HER2K) tess__l3_conj(dt, &al);
    }
    if (no_ab) {
        tess__l3_scale_tri(dt, ul, n, &be, herm, C, ldc);
        return TESS_OK;
    }

    static const struct tess__job_ops *const ops[4] = {
        [SYRK] = &syrk_ops, [HERK] = &herk_ops, [SYR2K] = &syr2k_ops, [HER2K] = &her2k_ops};
    static const enum tess__kernel_kind kkinds[4] = {[SYRK] = TESS__K_SYRK,
                                                     [HERK] = TESS__K_HERK,
                                                     [SYR2K] = TESS__K_SYR2K,
                                                     [HER2K] = TESS__K_HER2K};
    struct tess__rt *rt;
    rc = tess__l3_begin(fn, &sj.base, ops[kind], dt, n, n, k, C, ldc, &rt);
    if (rc) return rc;
    struct tess__job *job = &sj.base;
    job->alpha = al, job->beta = be;
    job->A = A, job->B = rank2 ? B : NULL;
    job->lda = lda, job->ldb = rank2 ? ldb : 0;
    sj.uplo = ul, sj.trans = tr, sj.mirror = herm ? 'C' : 'T';
    sj.rank2 = rank2;
    sj.kkind = kkinds[kind];
    sj.alpha2 = al;
    if (kind == HER2K) tess__l3_conj(dt, &sj.alpha2);
    /* the Hermitian kernels' real scalars: HERK's alpha and beta, HER2K's beta */
    tess_dtype_t rdt = dt == TESS_C ? TESS_S : TESS_D;
    sj.kalpha = al;
    sj.kbeta = be;
    sj.kone = *tess__scalar_one(dt);
    if (herm) {
        if (kind == HERK) tess__l3_from_real(rdt, &sj.kalpha, alpha);
        tess__l3_from_real(rdt, &sj.kbeta, beta);
        sj.kone = *tess__scalar_one(rdt);
    }

    int64_t T = job->tile;
    int64_t nt = TESS__CEILDIV(n, T), kt = TESS__CEILDIV(k, T);
    int64_t steps_off = rank2 ? 2 * kt : kt;
    /* checked: nt (nt + 1) / 2 tasks, formed before they are compared */
    int64_t ntri = tess__l3_count_mul(nt, nt + 1);
    if ((rc = tess__l3_alloc(fn, job, ntri == INT64_MAX ? INT64_MAX : ntri / 2, steps_off))) {
        tess__rt_put(rt);
        return rc;
    }
    int load_off = !tess__scalar_is_zero(dt, &be);
    for (int64_t j = 0; j < nt; j++) {
        int64_t i0 = ul == 'U' ? 0 : j, i1 = ul == 'U' ? j : nt - 1;
        for (int64_t i = i0; i <= i1; i++)
            tess__l3_task(job, i, j, n, n, (int)(i == j ? kt : steps_off), i == j ? 1 : load_off);
    }
    return tess__l3_run(rt, job);
}

/* ---- entry points ------------------------------------------------------------------- */

int tess_syrk(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans,
              int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *beta,
              void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_syrk", dtype, false);
    if (rc) return rc;
    return syrk_impl("tess_syrk", 2, dtype, SYRK, layout, uplo, trans, n, k, alpha, A, lda, NULL, 0,
                     beta, C, ldc);
}

int tess_herk(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans,
              int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *beta,
              void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_herk", dtype, true);
    if (rc) return rc;
    return syrk_impl("tess_herk", 2, dtype, HERK, layout, uplo, trans, n, k, alpha, A, lda, NULL, 0,
                     beta, C, ldc);
}

int tess_syr2k(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans,
               int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
               int64_t ldb, const void *beta, void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_syr2k", dtype, false);
    if (rc) return rc;
    return syrk_impl("tess_syr2k", 2, dtype, SYR2K, layout, uplo, trans, n, k, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}

int tess_her2k(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans,
               int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
               int64_t ldb, const void *beta, void *C, int64_t ldc) {
    int rc = tess__l3_check_dtype("tess_her2k", dtype, true);
    if (rc) return rc;
    return syrk_impl("tess_her2k", 2, dtype, HER2K, layout, uplo, trans, n, k, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}

/* Typed SYRK/SYR2K: real scalars arrive by value (AL, BE = &alpha, &beta), complex ones by
 * pointer (alpha, beta). */
#define SYRK_TYPED(p, DT, SC, E, AL, BE)                                                           \
    int tess_##p##syrk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,      \
                       int64_t k, SC alpha, const E *A, int64_t lda, SC beta, E *C, int64_t ldc) { \
        return syrk_impl("tess_" #p "syrk", 1, DT, SYRK, layout, uplo, trans, n, k, AL, A, lda,    \
                         NULL, 0, BE, C, ldc);                                                     \
    }
#define SYR2K_TYPED(p, DT, SC, E, AL, BE)                                                         \
    int tess_##p##syr2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n,    \
                        int64_t k, SC alpha, const E *A, int64_t lda, const E *B, int64_t ldb,    \
                        SC beta, E *C, int64_t ldc) {                                             \
        return syrk_impl("tess_" #p "syr2k", 1, DT, SYR2K, layout, uplo, trans, n, k, AL, A, lda, \
                         B, ldb, BE, C, ldc);                                                     \
    }
SYRK_TYPED(s, TESS_S, float, float, &alpha, &beta)
SYRK_TYPED(d, TESS_D, double, double, &alpha, &beta)
SYRK_TYPED(c, TESS_C, const void *, void, alpha, beta)
SYRK_TYPED(z, TESS_Z, const void *, void, alpha, beta)
SYR2K_TYPED(s, TESS_S, float, float, &alpha, &beta)
SYR2K_TYPED(d, TESS_D, double, double, &alpha, &beta)
SYR2K_TYPED(c, TESS_C, const void *, void, alpha, beta)
SYR2K_TYPED(z, TESS_Z, const void *, void, alpha, beta)

int tess_cherk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n, int64_t k,
               float alpha, const void *A, int64_t lda, float beta, void *C, int64_t ldc) {
    return syrk_impl("tess_cherk", 1, TESS_C, HERK, layout, uplo, trans, n, k, &alpha, A, lda, NULL,
                     0, &beta, C, ldc);
}

int tess_zherk(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n, int64_t k,
               double alpha, const void *A, int64_t lda, double beta, void *C, int64_t ldc) {
    return syrk_impl("tess_zherk", 1, TESS_Z, HERK, layout, uplo, trans, n, k, &alpha, A, lda, NULL,
                     0, &beta, C, ldc);
}

int tess_cher2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n, int64_t k,
                const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                float beta, void *C, int64_t ldc) {
    return syrk_impl("tess_cher2k", 1, TESS_C, HER2K, layout, uplo, trans, n, k, alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}

int tess_zher2k(tess_layout_t layout, tess_uplo_t uplo, tess_trans_t trans, int64_t n, int64_t k,
                const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                double beta, void *C, int64_t ldc) {
    return syrk_impl("tess_zher2k", 1, TESS_Z, HER2K, layout, uplo, trans, n, k, alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}
