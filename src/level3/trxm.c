/* src/level3/trxm.c: tess_?trmm and tess_?trsm. Checks the arguments (CBLAS order: layout,
 * side, uplo, transa, diag, m, n, lda, ldb, then pointers), folds row-major into
 * column-major (swap side and uplo, swap m and n, keep transa), takes the quick returns on
 * the host (alpha = 0: B = 0), and turns the rest into a job of one task per B tile,
 * chained along each column (side L) or row (side R) of tiles; trxm_step below gives the
 * steps (docs/level3.md, "TRMM, TRSM"). An A held at a corner of the hold's square tiles
 * or in a factorization's column strips is read in place (held_a); B, and any other held
 * A, are served as if nothing were held. Owns these two tile algorithms only; the runtime
 * (node/) runs them and orders the chains.
 * Invariants: a TRSM task (its terms, farthest first, then the diagonal solve) runs after
 * the tasks that solve the tiles it reads (by default it starts once its chain predecessor
 * is done; with TESSERA_DATAFLOW=1 once it has started, each GEMM step then waiting for the
 * task solving its tile) and publishes its solved tile (MESI-X E);
 * a TRMM task runs after every task that reads its tile's original values (the diagonal
 * kernel first, then its terms) and publishes nothing.
 */
#include <string.h>

#include "level3.h"

struct trxm_job {
    struct tess__job base;     /* first: the step callback casts back; base.C/ldc is B */
    char side, uplo, ta, diag; /* column-major, after folding; ta 'N', 'T' or 'C' */
    int solve;                 /* TRSM (else TRMM) */
    int high;                  /* a task's terms are the tiles k above its own index */
    tess__scalar_t minus_one;
};

/* Number of GEMM terms of the task at index a (of `at` along its chain). */
static int64_t nterms(const struct trxm_job *xj, int64_t a, int64_t at) {
    return xj->high ? at - 1 - a : a;
}

/* The stored block of A at (r0, c0), rows x cols, as the step's a operand: A's own tile,
 * or, A held (job->hv_a), the held tile holding it, the block at (*ro, *co) inside it (0, 0
 * in square tiles, whose edge is the job's; a row offset in a column strip). */
static void a_tile(const struct tess__job *job, struct tess__tile *out, int64_t *ro, int64_t *co,
                   int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
    *ro = *co = 0;
    if (!job->hv_a) {
        tess__l3_tile(job, out, job->A, job->lda, r0, c0, rows, cols);
        return;
    }
    tess__hview_tile(job->hv_a, r0, c0, out, ro, co);
}

/* The tile op(A)_rc (rows x cols of op(A)) as a GEMM operand: stored block (at *ro, *co
 * of the tile named, as a_tile) and op. */
static char opa_tile(const struct trxm_job *xj, struct tess__tile *out, int64_t *ro, int64_t *co,
                     int64_t r, int64_t c, int64_t rows, int64_t cols) {
    const struct tess__job *job = &xj->base;
    int64_t T = job->tile;
    if (xj->ta == 'N') {
        a_tile(job, out, ro, co, r * T, c * T, rows, cols);
        return 'N';
    }
    a_tile(job, out, ro, co, c * T, r * T, cols, rows);
    return xj->ta;
}

/* Step s of task t (see the formulas above). */
static void trxm_step(const struct tess__job *job, const struct tess__task *t, int s,
                      struct tess__step *out) {
    const struct trxm_job *xj = (const struct trxm_job *)job;
    int64_t T = job->tile;
    bool left = xj->side == 'L';
    int64_t a = left ? t->i : t->j;
    int64_t at = TESS__CEILDIV(left ? job->m : job->n, T);
    int64_t nk = nterms(xj, a, at);
    /* which step is the kernel, and which term a GEMM step takes */
    int64_t ks = xj->solve ? nk : 0;
    const void *one = tess__scalar_one(job->dt);

    memset(out, 0, sizeof *out);
    out->m = t->m;
    out->n = t->n;
    if (s == ks) {
        int64_t d = left ? t->m : t->n;
        out->kind = xj->solve ? TESS__K_TRSM : TESS__K_TRMM;
        out->nops = 1;
        out->side = xj->side;
        out->uplo = xj->uplo;
        out->ta = xj->ta;
        out->diag = xj->diag;
        out->alpha = xj->solve && nk > 0 ? one : (const void *)&job->alpha;
        out->beta = one;
        a_tile(job, &out->a, &out->a_ro, &out->a_co, a * T, a * T, d, d);
        return;
    }
    /* the g-th GEMM term, farthest from the task first */
    int64_t g = xj->solve ? s : s - 1;
    int64_t k = xj->high ? at - 1 - g : g;
    out->kind = TESS__K_GEMM;
    out->nops = 2;
    if (xj->solve) {
        out->alpha = &xj->minus_one;
        out->beta = g == 0 ? (const void *)&job->alpha : one;
    } else {
        out->alpha = &job->alpha;
        out->beta = one;
    }
    if (left) {
        int64_t kk = TESS__MIN(T, job->m - k * T);
        out->k = kk;
        out->ta = opa_tile(xj, &out->a, &out->a_ro, &out->a_co, t->i, k, t->m, kk);
        out->tb = 'N';
        tess__l3_tile(job, &out->b, job->C, job->ldc, k * T, t->j * T, kk, t->n);
    } else {
        int64_t kk = TESS__MIN(T, job->n - k * T);
        out->k = kk;
        out->ta = 'N';
        tess__l3_tile(job, &out->a, job->C, job->ldc, t->i * T, k * T, t->m, kk);
        out->tb = opa_tile(xj, &out->b, &out->b_ro, &out->b_co, k, t->j, kk, t->n);
    }
}

/* TRSM: the task whose solved tile GEMM step s of t reads (the solve reads none). */
static const struct tess__task *trsm_awaits(const struct tess__job *job, const struct tess__task *t,
                                            int s) {
    const struct trxm_job *xj = (const struct trxm_job *)job;
    int64_t T = job->tile;
    bool left = xj->side == 'L';
    int64_t a = left ? t->i : t->j, at = TESS__CEILDIV(left ? job->m : job->n, T);
    if (s >= nterms(xj, a, at)) return NULL;
    int64_t k = xj->high ? at - 1 - s : s, mt = TESS__CEILDIV(job->m, T);
    return left ? &job->tasks[k + t->j * mt] : &job->tasks[t->i + k * mt];
}

static const struct tess__job_ops trmm_ops = {.name = "trmm", .publish = 0, .step = trxm_step};
static const struct tess__job_ops trsm_ops = {.name = "trsm", .publish = 1, .step = trxm_step};
/* TESSERA_DATAFLOW=1: by step (off by default: on one H100 it ran DTRSM n = 32768 at 0.88
 * of in-core against 0.93 by whole tasks, docs/benchmarks.md) */
static const struct tess__job_ops trsm_flow_ops = {
    .name = "trsm", .publish = 1, .step = trxm_step, .awaits = trsm_awaits};

/* A (ka x ka stored) inside a held matrix, at a corner of its square tiles or at a column
 * strip's first column (a factorization's, tess__hold_view_read): the job reads the held
 * tiles (*hv; the job's tile becomes the hold's edge, its copies the held tile's size) on
 * devices with their own memory, ordered by tile after earlier calls on them (A is every
 * step's a operand on side L; on side R the solve's a and the terms' b: hv_a and hv_b).
 * Otherwise a held matrix A touches is written back first and A is read from the host. */
static int held_a(struct tess__rt *rt, const char *fn, struct trxm_job *xj, struct tess__hview *hv,
                  int64_t ka) {
    struct tess__job *job = &xj->base;
    if (!tess__holds_any()) return TESS_OK;
    size_t es = tess__dtypes[job->dt].size;
    int v = tess__hold_view_read(rt, fn, job->A, ka, ka, job->lda, es, hv);
    if (v < -1) return TESS_EINVAL; /* the contract checker's message */
    if (v == 1 && ((hv->TR == hv->T && hv->r0 % hv->T) || hv->c0 % hv->T)) v = -1;
    if (v == -1) return tess__hold_unheld(rt, fn, job->A, ka, ka, job->lda, es, false);
    if (v == 0) return TESS_OK;
    job->tile = hv->T;
    job->blk_bytes = tess__blk_bytes_rc(hv->TR, hv->T, es); /* a held tile */
    job->hv_a = hv;
    if (xj->side == 'R') job->hv_b = hv;
    job->device_only = true; /* the CPU worker reads the host: it would miss dirty tiles */
    job->held_deps = true;
    return TESS_OK;
}

/* pos: 1-based position of `layout` in the caller's signature (typed: 1, generic: 2). */
static int trxm_impl(const char *fn, int pos, tess_dtype_t dt, bool solve, tess_layout_t layout,
                     tess_side_t side, tess_uplo_t uplo, tess_trans_t transa, tess_diag_t diag,
                     int64_t m, int64_t n, const void *alpha, const void *A, int64_t lda, void *B,
                     int64_t ldb) {
    tess__clear_error();
    int rc = tess__l3_check_head(fn, pos, layout, true, side, uplo);
    if (rc) return rc;
    if (!tess__l3_is_trans((int)transa))
        return TESS__L3_BAD("(transa = %d) must be a tess_trans_t", fn, pos + 3, (int)transa);
    if (!tess__l3_is_diag((int)diag))
        return TESS__L3_BAD("(diag = %d) must be TESS_NON_UNIT or TESS_UNIT", fn, pos + 4,
                            (int)diag);
    if (m < 0) return TESS__L3_BAD("(m = %lld) must be >= 0", fn, pos + 5, (long long)m);
    if (n < 0) return TESS__L3_BAD("(n = %lld) must be >= 0", fn, pos + 6, (long long)n);
    bool row = layout == TESS_ROW_MAJOR;
    int64_t ka = side == TESS_LEFT ? m : n, br = row ? n : m;
    if (lda < TESS__MAX(1, ka))
        return TESS__L3_BAD("(lda = %lld) must be >= max(1, %s) = %lld", fn, pos + 9,
                            (long long)lda, side == TESS_LEFT ? "m" : "n",
                            (long long)TESS__MAX(1, ka));
    if (ldb < TESS__MAX(1, br))
        return TESS__L3_BAD("(ldb = %lld) must be >= max(1, %s) = %lld", fn, pos + 11,
                            (long long)ldb, row ? "n" : "m", (long long)TESS__MAX(1, br));
    if (!alpha) return TESS__L3_BAD("(alpha) must not be NULL", fn, pos + 7);
    if (m == 0 || n == 0) return TESS_OK;
    if (!B) return TESS__L3_BAD("(B) must not be NULL", fn, pos + 10);

    tess__scalar_t al;
    tess__scalar_load(dt, &al, alpha);
    bool alpha0 = tess__scalar_is_zero(dt, &al);
    if (!alpha0 && !A) return TESS__L3_BAD("(A) must not be NULL", fn, pos + 8);
    /* every array the call touches can be addressed (stored B: br x bc) */
    int64_t bc = row ? m : n;
    if (!alpha0 && (rc = tess__l3_check_span(fn, pos + 8, "A", A, ka, ka, lda, dt))) return rc;
    if ((rc = tess__l3_check_span(fn, pos + 10, "B", B, br, bc, ldb, dt))) return rc;
    /* a held matrix B touches: served as if nothing were held (node/hold.c); A's below */
    if ((rc = tess__l3_unhold(fn, B, br, bc, ldb, dt, true))) return rc;

    /* Row-major: B^T := alpha B^T op(A)^T (or op(A)^T B^T), A^T in the other triangle. */
    char sd = side == TESS_LEFT ? 'L' : 'R', ul = uplo == TESS_UPPER ? 'U' : 'L';
    char ta = tess__l3_trans(transa);
    if (!tess__dtypes[dt].complex_ && ta == 'C') ta = 'T';
    if (row) {
        sd = sd == 'L' ? 'R' : 'L';
        ul = ul == 'U' ? 'L' : 'U';
        int64_t t = m;
        m = n, n = t;
    }
    if (alpha0) {
        tess__host_scale(dt, m, n, tess__scalar_zero(), B, ldb); /* B = 0, B not read */
        return TESS_OK;
    }

    struct tess__rt *rt;
    struct trxm_job xj;
    int64_t ka_ = sd == 'L' ? m : n;
    rc = tess__l3_begin(fn, &xj.base, solve ? &trsm_ops : &trmm_ops, dt, m, n, ka_, B, ldb, &rt);
    if (rc) return rc;
    struct tess__job *job = &xj.base;
    if (solve && rt->cfg.dataflow) job->ops = &trsm_flow_ops;
    job->alpha = al;
    job->beta = *tess__scalar_one(dt);
    job->A = A, job->lda = lda;
    job->ta = ta;
    xj.side = sd, xj.uplo = ul, xj.ta = ta, xj.diag = diag == TESS_UNIT ? 'U' : 'N';
    xj.solve = solve;
    bool eff_upper = (ul == 'U') == (ta == 'N');
    xj.high = (sd == 'L') == eff_upper;
    xj.minus_one = tess__l3_minus_one(dt);
    struct tess__hview hv;
    if ((rc = held_a(rt, fn, &xj, &hv, ka_))) {
        tess__rt_put(rt);
        return rc;
    }

    int64_t T = job->tile;
    int64_t mt = TESS__CEILDIV(m, T), nt = TESS__CEILDIV(n, T), at = TESS__CEILDIV(ka_, T);
    if ((rc = tess__l3_alloc(fn, job, tess__l3_count_mul(mt, nt), at))) {
        tess__rt_put(rt);
        return rc;
    }
    for (int64_t j = 0; j < nt; j++)
        for (int64_t i = 0; i < mt; i++) {
            int64_t a = sd == 'L' ? i : j;
            tess__l3_task(job, i, j, m, n, (int)(nterms(&xj, a, at) + 1), 1);
        }
    /* Chains along each column (side L: task (i, j) is tasks[i + j mt]) or row (side R:
     * tasks[i + j mt] too, stepping mt). TRSM runs from the end whose terms are empty;
     * TRMM from the other end. */
    bool up = solve ? !xj.high : xj.high; /* chain a-1 -> a */
    int64_t stride = sd == 'L' ? 1 : mt, chains = sd == 'L' ? nt : mt;
    for (int64_t c = 0; c < chains; c++) {
        struct tess__task *base = &job->tasks[sd == 'L' ? c * mt : c];
        for (int64_t a = 1; a < at; a++) {
            struct tess__task *lo = base + (a - 1) * stride, *hi = base + a * stride;
            if (up)
                tess__l3_chain(lo, hi);
            else
                tess__l3_chain(hi, lo);
        }
    }
    return tess__l3_run(rt, job);
}

/* ---- entry points ------------------------------------------------------------------- */

int tess_trmm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
              tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, const void *alpha,
              const void *A, int64_t lda, void *B, int64_t ldb) {
    int rc = tess__l3_check_dtype("tess_trmm", dtype, false);
    if (rc) return rc;
    return trxm_impl("tess_trmm", 2, dtype, false, layout, side, uplo, transa, diag, m, n, alpha, A,
                     lda, B, ldb);
}

int tess_trsm(tess_dtype_t dtype, tess_layout_t layout, tess_side_t side, tess_uplo_t uplo,
              tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n, const void *alpha,
              const void *A, int64_t lda, void *B, int64_t ldb) {
    int rc = tess__l3_check_dtype("tess_trsm", dtype, false);
    if (rc) return rc;
    return trxm_impl("tess_trsm", 2, dtype, true, layout, side, uplo, transa, diag, m, n, alpha, A,
                     lda, B, ldb);
}

/* Typed entries: real alpha by value (AL = &alpha), complex by pointer (AL = alpha). */
#define TRXM_TYPED(name, SOLVE, DT, SC, E, AL)                                                     \
    int tess_##name(tess_layout_t layout, tess_side_t side, tess_uplo_t uplo, tess_trans_t transa, \
                    tess_diag_t diag, int64_t m, int64_t n, SC alpha, const E *A, int64_t lda,     \
                    E *B, int64_t ldb) {                                                           \
        return trxm_impl("tess_" #name, 1, DT, SOLVE, layout, side, uplo, transa, diag, m, n, AL,  \
                         A, lda, B, ldb);                                                          \
    }
TRXM_TYPED(strmm, false, TESS_S, float, float, &alpha)
TRXM_TYPED(dtrmm, false, TESS_D, double, double, &alpha)
TRXM_TYPED(ctrmm, false, TESS_C, const void *, void, alpha)
TRXM_TYPED(ztrmm, false, TESS_Z, const void *, void, alpha)
TRXM_TYPED(strsm, true, TESS_S, float, float, &alpha)
TRXM_TYPED(dtrsm, true, TESS_D, double, double, &alpha)
TRXM_TYPED(ctrsm, true, TESS_C, const void *, void, alpha)
TRXM_TYPED(ztrsm, true, TESS_Z, const void *, void, alpha)
