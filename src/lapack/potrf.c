/* src/lapack/potrf.c: tess_?potrf, LAPACK's Cholesky factorization on the tile runtime
 * (docs/lapack.md). Checks the arguments (LAPACKE order), folds row-major into column-major
 * (the same memory read as the transpose: uplo swaps), sends a small matrix or a runtime
 * without device memory to the CPU LAPACK, and otherwise factors the matrix on its held
 * tiles (the caller's hold, or one for the call's length): a right-looking tile Cholesky
 * whose panel k is three jobs, submitted together for every panel at once:
 *   POTRF  the diagonal tile (k, k)
 *   TRSM   the tiles below it (L; right of it for U) by that factor
 *   UPDATE the trailing triangle: SYRK/HERK on its diagonal tiles, GEMM elsewhere.
 * The held tiles' dependency tables (node/hold.c) order the tasks by tile, so panel k + 1
 * starts as soon as the tiles it reads are final, while panel k's updates still run.
 * Invariants: every task writes one held tile and lies inside it; the tiles of the other
 * strict triangle are never named, hence never read or written back; a POTRF whose INFO is
 * > 0 fails its job (TESS__EINFO), which cancels every task that depends on it and no
 * other; the leading columns its panel's TRSM would have finished are finished after the
 * wait (finish_leading), so the first INFO - 1 columns are final, as LAPACK says. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "lapack.h"

enum pj_kind { PJ_POTRF, PJ_TRSM, PJ_UPDATE };

/* One job of one panel. */
struct pjob {
    struct tess__job base; /* first: the step callback casts back */
    enum pj_kind kind;
    int64_t k;  /* the panel */
    int64_t nt; /* tiles along the matrix */
    char uplo;  /* 'L' or 'U', column-major */
    char ct;    /* 'C' (complex) or 'T' */
    int info;   /* PJ_POTRF: the tile kernel's INFO */
    bool herk;  /* complex: HERK on the diagonal tiles (else SYRK) */
    const struct tess__hview *hv;
    tess__scalar_t minus_one;
};

/* Rows (or columns) of tile index i of the n x n matrix. */
static int64_t tlen(const struct tess__job *job, int64_t i) {
    return TESS__MIN(job->tile, job->n - i * job->tile);
}

static void held(const struct pjob *pj, int64_t ti, int64_t tj, struct tess__tile *out, int64_t *ro,
                 int64_t *co) {
    tess__hview_tile(pj->hv, ti * pj->base.tile, tj * pj->base.tile, out, ro, co);
}

static void pj_step(const struct tess__job *job, const struct tess__task *t, int s,
                    struct tess__step *out) {
    const struct pjob *pj = (const struct pjob *)job;
    const void *one = tess__scalar_one(job->dt);
    int64_t k = pj->k, tk = tlen(job, k);
    bool low = pj->uplo == 'L';
    (void)s;
    memset(out, 0, sizeof *out);
    out->m = t->m;
    out->n = t->n;
    out->uplo = pj->uplo;
    out->beta = one;
    out->alpha = one;
    switch (pj->kind) {
    case PJ_POTRF:
        out->kind = TESS__K_POTRF;
        out->nops = 0;
        out->k = t->n;
        out->info = (int *)&pj->info;
        return;
    case PJ_TRSM:
        /* L: A_ik := A_ik L_kk^-H; U: A_kj := U_kk^-H A_kj */
        out->kind = TESS__K_TRSM;
        out->nops = 1;
        out->side = low ? 'R' : 'L';
        out->ta = pj->ct;
        out->diag = 'N';
        held(pj, k, k, &out->a, &out->a_ro, &out->a_co);
        return;
    case PJ_UPDATE:
        out->alpha = &pj->minus_one;
        out->k = tk;
        if (t->i == t->j) {
            /* L: A_ii -= A_ik A_ik^H; U: A_ii -= A_ki^H A_ki */
            out->kind = pj->herk ? TESS__K_HERK : TESS__K_SYRK;
            out->nops = 1;
            out->ta = low ? 'N' : pj->ct;
            if (low)
                held(pj, t->i, k, &out->a, &out->a_ro, &out->a_co);
            else
                held(pj, k, t->i, &out->a, &out->a_ro, &out->a_co);
            return;
        }
        /* L: A_ij -= A_ik A_jk^H (i > j); U: A_ij -= A_ki^H A_kj (i < j) */
        out->kind = TESS__K_GEMM;
        out->nops = 2;
        if (low) {
            out->ta = 'N', out->tb = pj->ct;
            held(pj, t->i, k, &out->a, &out->a_ro, &out->a_co);
            held(pj, t->j, k, &out->b, &out->b_ro, &out->b_co);
        } else {
            out->ta = pj->ct, out->tb = 'N';
            held(pj, k, t->i, &out->a, &out->a_ro, &out->a_co);
            held(pj, k, t->j, &out->b, &out->b_ro, &out->b_co);
        }
        return;
    }
}

/* A POTRF tile that is not positive definite fails its job, and with it what depends on it. */
static int pj_finished(const struct tess__job *job, const struct tess__task *t) {
    const struct pjob *pj = (const struct pjob *)job;
    (void)t;
    return pj->kind == PJ_POTRF && pj->info != 0 ? TESS__EINFO : TESS_OK;
}

/* one table per job kind, named for traces */
static const struct tess__job_ops potrf_ops[3] = {
    {.name = "potrf", .step = pj_step, .finished = pj_finished},
    {.name = "potrf-trsm", .step = pj_step},
    {.name = "potrf-update", .step = pj_step}};

/* Append the task writing tile (i, j); urgent: on the critical path. Its priority: the
 * sooner the panel that consumes its tile (the panel min(i, j)), the higher; within a
 * panel POTRF, then TRSM, then the updates. */
static void add_task(struct pjob *pj, int64_t i, int64_t j, bool urgent) {
    struct tess__job *job = &pj->base;
    int64_t T = job->tile;
    size_t es = tess__dtypes[job->dt].size;
    struct tess__task *t = &job->tasks[job->ntasks++];
    t->job = job;
    t->i = (int32_t)i, t->j = (int32_t)j;
    t->nsteps = 1;
    t->m = tlen(job, i), t->n = tlen(job, j);
    t->row = i * T, t->col = j * T;
    t->c = (char *)job->C + (size_t)(t->row + t->col * job->ldc) * es;
    t->load_c = 1;
    t->urgent = urgent;
    int64_t pri = 3 * (pj->nt - TESS__MIN(i, j)) + (pj->kind == PJ_POTRF ? 2 : pj->kind == PJ_TRSM);
    t->pri = (int16_t)TESS__MIN(pri, INT16_MAX);
    t->final = pj->kind != PJ_UPDATE; /* the factor's tile: written back at once */
    atomic_init(&t->ndeps, 0);
    atomic_init(&t->released, 0);
}

/* The tasks of pj in queue order: for an update, the next panel's tiles first. */
static int fill(struct pjob *pj) {
    int64_t k = pj->k, nt = pj->nt, cnt;
    bool low = pj->uplo == 'L';
    if (pj->kind == PJ_POTRF)
        cnt = 1;
    else if (pj->kind == PJ_TRSM)
        cnt = nt - k - 1;
    else
        cnt = (nt - k - 1) * (nt - k) / 2;
    pj->base.tasks = calloc((size_t)TESS__MAX(cnt, 1), sizeof *pj->base.tasks);
    if (!pj->base.tasks) return TESS_ENOMEM;
    pj->base.ntasks = 0;
    /* the critical path: the panels (POTRF, TRSM) and the updates of the next panel's
     * tiles, which a lookahead runs ahead of the rest of the trailing update */
    if (pj->kind == PJ_POTRF) {
        add_task(pj, k, k, true);
    } else if (pj->kind == PJ_TRSM) {
        for (int64_t x = k + 1; x < nt; x++)
            low ? add_task(pj, x, k, true) : add_task(pj, k, x, true);
    } else {
        /* column (L) or row (U) j of the trailing triangle, j = k + 1 first */
        for (int64_t j = k + 1; j < nt; j++)
            for (int64_t i = j; i < nt; i++)
                low ? add_task(pj, i, j, j == k + 1) : add_task(pj, j, i, j == k + 1);
    }
    return TESS_OK;
}

/* ---- the tile factorization --------------------------------------------------------------- */

/* The tile edge of a factorization of order n (no caller's hold): TESSERA_TILE, else about
 * eight tile columns per device (four on emulated devices) and never tiny tiles on GPUs,
 * within a twelfth of the smallest heap. On an H100, n = 32768 ran at 0.882 of in-core
 * cuSOLVER with 4096 tiles, 0.847 with 2048, 0.614 with 1024 (docs/benchmarks.md). */
static int64_t potrf_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t n) {
    if (rt->cfg.tile > 0) return rt->cfg.tile;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    int64_t ndev = TESS__MAX(1, ds.live), t = ds.gpus ? 4096 : 256;
    while (t > (ds.gpus ? 512 : 32) && TESS__CEILDIV(n, t) < (ds.gpus ? 8 : 4) * ndev) t /= 2;
    size_t es = tess__dtypes[dt].size;
    while (t > 16 && ds.min_heap != SIZE_MAX && (size_t)(12 * t * t) * es > ds.min_heap) t /= 2;
    return t;
}

/* Factor the column-major n x n matrix on its held view hv (tile edge hv->T, A at a tile
 * corner): every panel's jobs submitted, then waited for in order. *info as LAPACK's. */
static int tile_potrf(struct tess__rt *rt, const char *fn, tess_dtype_t dt, char uplo, int64_t n,
                      void *A, int64_t lda, const struct tess__hview *hv, int64_t *info) {
    int64_t T = hv->T, nt = TESS__CEILDIV(n, T);
    size_t es = tess__dtypes[dt].size;
    int64_t njobs = 3 * nt - 2; /* the last panel has only its POTRF */
    if (nt > INT32_MAX / 4 || tess__l3_count_mul(nt, nt) / 2 > TESS__TASKS_MAX)
        return tess__fail(TESS_ENOMEM,
                          "%s: %lld tiles of %lld along n: too many; raise TESSERA_TILE", fn,
                          (long long)nt, (long long)T);
    struct pjob *jobs = calloc((size_t)njobs, sizeof *jobs);
    if (!jobs) return tess__fail(TESS_ENOMEM, "%s: out of host memory", fn);
    tess__scalar_t m1 = tess__l3_minus_one(dt); /* also HERK's real alpha (.s, .d) */
    int rc = TESS_OK;
    int64_t submitted = 0;
    atomic_fetch_add(&rt->crit_live, 1); /* the devices keep a stream for its panels */
    atomic_fetch_add(&rt->batching, 1);  /* no idle write-behind until every job is in */
    for (int64_t x = 0; x < njobs; x++) {
        struct pjob *pj = &jobs[x];
        struct tess__job *job = &pj->base;
        pj->kind = x % 3 == 0 ? PJ_POTRF : x % 3 == 1 ? PJ_TRSM : PJ_UPDATE;
        pj->k = x / 3, pj->nt = nt, pj->uplo = uplo;
        pj->ct = tess__dtypes[dt].complex_ ? 'C' : 'T';
        pj->herk = tess__dtypes[dt].complex_;
        pj->hv = hv;
        pj->minus_one = m1;
        job->ops = &potrf_ops[pj->kind];
        job->dt = dt;
        job->tile = T;
        job->blk_bytes = tess__blk_bytes(T, es);
        job->m = job->n = job->k = n;
        job->C = A, job->ldc = lda;
        job->A = A, job->lda = lda;
        job->a_dev = job->b_dev = -1;
        job->device_only = true; /* the CPU worker computes in place: it would miss dirty tiles */
        job->held_deps = true;
        job->hv_c = hv;
        job->hv_a = pj->kind == PJ_POTRF ? NULL : hv;
        job->hv_b = pj->kind == PJ_UPDATE ? hv : NULL;
        if (fill(pj)) {
            rc = tess__fail(TESS_ENOMEM, "%s: task list: out of host memory", fn);
            break;
        }
        if (job->ntasks == 0) {
            free(job->tasks);
            job->tasks = NULL;
            continue;
        }
        if ((rc = tess__rt_submit(rt, job))) {
            free(job->tasks);
            job->tasks = NULL;
            break;
        }
        submitted = x + 1;
    }
    atomic_fetch_sub(&rt->batching, 1);
    /* Wait for everything submitted (later jobs depend on earlier ones, never the reverse);
     * the first POTRF that met a minor not positive definite gives INFO. */
    int first = TESS_OK;
    *info = 0;
    for (int64_t x = 0; x < submitted; x++) {
        struct pjob *pj = &jobs[x];
        if (!pj->base.tasks) continue;
        int st = tess__rt_wait(rt, &pj->base);
        if (pj->kind == PJ_POTRF && pj->info > 0 && *info == 0)
            *info = pj->k * T + pj->info;
        else if (st && st != TESS__EINFO && first == TESS_OK)
            first = st;
        tess__hold_deps_clear(rt, &pj->base);
        free(pj->base.tasks);
    }
    for (int64_t x = submitted; x < njobs; x++) free(jobs[x].base.tasks);
    free(jobs);
    atomic_fetch_sub(&rt->crit_live, 1);
    if (rc) return rc;
    if (first) {
        *info = 0;
        return first; /* the wait said why */
    }
    tess__clear_error(); /* the waits' words for the tasks INFO cancelled */
    return TESS_OK;
}

/* After INFO = k T + p (tile k's POTRF stopped at its column p): its first p - 1 columns
 * (L; rows for U) are final in the diagonal tile, but the panel's TRSM was cancelled, so
 * finish them beyond it as LAPACK's INFO promises (the rest stays unspecified). The tiles
 * there hold their inputs (panel k - 1's update): a TRSM by the leading block. */
static int finish_leading(const char *fn, tess_dtype_t dt, char uplo, int64_t n, void *A,
                          int64_t lda, int64_t T, int64_t info) {
    int64_t k = (info - 1) / T, p = info - k * T, rest = n - (k + 1) * T;
    if (p <= 1 || rest <= 0) return TESS_OK;
    size_t es = tess__dtypes[dt].size;
    char *base = A;
    const char *akk = base + (size_t)(k * T) * (size_t)(lda + 1) * es;
    char *b = uplo == 'L' ? base + (size_t)((k + 1) * T + k * T * lda) * es
                          : base + (size_t)(k * T + (k + 1) * T * lda) * es;
    int rc = uplo == 'L'
                 ? tess_trsm(dt, TESS_COL_MAJOR, TESS_RIGHT, TESS_LOWER, TESS_CONJ_TRANS,
                             TESS_NON_UNIT, rest, p - 1, tess__scalar_one(dt), akk, lda, b, lda)
                 : tess_trsm(dt, TESS_COL_MAJOR, TESS_LEFT, TESS_UPPER, TESS_CONJ_TRANS,
                             TESS_NON_UNIT, p - 1, rest, tess__scalar_one(dt), akk, lda, b, lda);
    if (rc) return tess__fail(rc, "%s: finishing the leading columns: %s", fn, tess_last_error());
    return TESS_OK;
}

/* ---- the CPU LAPACK ----------------------------------------------------------------------- */

static int host_potrf(const char *fn, tess_dtype_t dt, char uplo, int64_t n, void *A, int64_t lda,
                      int64_t *info) {
    tess__potrf_fn *f;
    int rc = tess__hostblas_potrf((int)dt, fn, &f);
    if (rc) return rc;
    if (n > INT_MAX || lda > INT_MAX)
        return tess__fail(TESS_ENOSYS,
                          "%s: n = %lld, lda = %lld: past the CPU LAPACK's 32-bit "
                          "integers and no device to factor it",
                          fn, (long long)n, (long long)lda);
    int n32 = (int)n, lda32 = (int)lda, inf = 0;
    f(&uplo, &n32, A, &lda32, &inf, 1);
    *info = inf;
    return TESS_OK;
}

/* ---- entry points ------------------------------------------------------------------------ */

/* Smallest order the devices factor when GPUs are present (below it the CPU LAPACK is
 * faster than the trip over the link). */
#define POTRF_GPU_MIN_N 512

/* gen: 1 for the generic entry (its messages count dtype as argument 1), 0 typed; *info
 * numbers a bad argument as the typed entry does. kept (not NULL): a hold the call takes
 * for its length stays after a factorization with INFO 0 (*kept set; the caller releases
 * it: posv solves on the held factor first). */
static int potrf_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout,
                      tess_uplo_t uplo, int64_t n, void *A, int64_t lda, int64_t *info,
                      bool *kept) {
    tess__clear_error();
    if (kept) *kept = false;
    int rc = tess__la_check_head(fn, gen, 6, layout, uplo, info);
    if (rc) return rc;
#define BAD TESS__LA_BAD
    if (n < 0) return BAD(3, "(n = %lld) must be >= 0", (long long)n);
    if (n > 0 && !A) return BAD(4, "(A = %p) must not be NULL", A);
    if (lda < TESS__MAX(1, n))
        return BAD(5, "(lda = %lld) must be >= max(1, n) = %lld", (long long)lda,
                   (long long)TESS__MAX(1, n));
    if (n > 0 && !tess__span_ok(A, n, n, lda, tess__dtypes[dt].size, NULL))
        return BAD(4,
                   "(A: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)n, (long long)n, (long long)lda);
#undef BAD
    *info = 0;
    if (n == 0) return TESS_OK;
    /* row-major: the same memory is the column-major transpose, whose other triangle holds
     * the factor (A^T = conj(A) = conj(L) L^T: U = L^T in place) */
    char ul = uplo == TESS_LOWER ? 'L' : 'U';
    if (layout == TESS_ROW_MAJOR) ul = ul == 'L' ? 'U' : 'L';

    struct tess__rt *rt;
    if ((rc = tess__rt_get(&rt))) return rc;
    size_t es = tess__dtypes[dt].size;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    struct tess__hview hv;
    int v = tess__hold_view(rt, fn, A, n, n, lda, es, &hv);
    if (v < -1) {
        tess__rt_put(rt);
        return TESS_EINVAL; /* the contract checker's message */
    }
    if (v == 1 && (hv.r0 % hv.T || hv.c0 % hv.T)) v = -1; /* not at a tile corner */
    bool host = v != 1 && (ds.live == 0 || (ds.gpus > 0 && n < POTRF_GPU_MIN_N));
    if (v == -1 || host) {
        /* the CPU LAPACK, after any held matrix it overlaps is written back and dropped */
        rc = v == -1 ? tess__hold_unheld(rt, fn, A, n, n, lda, es, true) : TESS_OK;
        if (!rc) rc = host_potrf(fn, dt, ul, n, A, lda, info);
        tess__rt_put(rt);
        return rc;
    }
    bool own = v == 0;
    if (own) {
        /* held for the call's length */
        if ((rc = tess_hold(dt, A, lda, n, n, potrf_tile(rt, dt, n))) ||
            tess__hold_view(rt, fn, A, n, n, lda, es, &hv) != 1) {
            if (!rc) {
                (void)tess_release(A);
                rc = tess__fail(TESS_EINTERNAL, "%s: the matrix could not be held", fn);
            }
            tess__rt_put(rt);
            return rc;
        }
    }
    rc = tile_potrf(rt, fn, dt, ul, n, A, lda, &hv, info);
    if (own && kept && !rc && *info == 0)
        *kept = true;
    else if (own)
        rc = tess__la_release_own(A, rc, info);
    if (!rc && *info > 0) rc = finish_leading(fn, dt, ul, n, A, lda, hv.T, *info);
    tess__rt_put(rt);
    return rc;
}

int tess__potrf_kept(tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A,
                     int64_t lda, int64_t *info, bool *kept) {
    return potrf_impl("tess_potrf", 1, dt, layout, uplo, n, A, lda, info, kept);
}

int tess_potrf(tess_dtype_t dtype, tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A,
               int64_t lda, int64_t *info) {
    if ((unsigned)dtype > TESS_Z) {
        tess__clear_error();
        return tess__fail(TESS_EINVAL, "tess_potrf: argument 1 (dtype = %d) must be a tess_dtype_t",
                          (int)dtype);
    }
    return potrf_impl("tess_potrf", 1, dtype, layout, uplo, n, A, lda, info, NULL);
}

int tess_spotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, float *A, int64_t lda,
                int64_t *info) {
    return potrf_impl("tess_spotrf", 0, TESS_S, layout, uplo, n, A, lda, info, NULL);
}
int tess_dpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, double *A, int64_t lda,
                int64_t *info) {
    return potrf_impl("tess_dpotrf", 0, TESS_D, layout, uplo, n, A, lda, info, NULL);
}
int tess_cpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A, int64_t lda,
                int64_t *info) {
    return potrf_impl("tess_cpotrf", 0, TESS_C, layout, uplo, n, A, lda, info, NULL);
}
int tess_zpotrf(tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A, int64_t lda,
                int64_t *info) {
    return potrf_impl("tess_zpotrf", 0, TESS_Z, layout, uplo, n, A, lda, info, NULL);
}
