/* src/lapack/getrf.c: tess_?getrf, LAPACK's LU factorization with partial pivoting on the
 * tile runtime (docs/lapack.md). Checks the arguments (LAPACKE order), factors a row-major
 * matrix through a column-major copy (as LAPACKE does), sends a small matrix or a runtime
 * without device memory to the CPU LAPACK, and otherwise factors the matrix held as column
 * strips (every row, tile columns; tess__hold_strips; a held matrix it overlaps is written
 * back and dropped first), so that a panel and its row interchanges stay inside one tile.
 * Panel k is two jobs, submitted for every panel at once and ordered by the strips'
 * dependency tables (node/hold.c):
 *   PANEL  strip k's update by panel k - 1 (below), then GETRF on its rows kT.. (its
 *          pivots, relative, in the call's piv[kT..]): one task, so that the critical
 *          path's kernels queue back to back on one stream
 *   UPDATE per strip j > k + 1 (j > k for the last panel): LASWP of its rows kT.. by panel
 *          k's pivots, TRSM of its rows kT..kT+d by the unit lower L_kk, GEMM of the rows
 *          below by L_k's rest; per strip j < k: LASWP of its rows kT.. (LAPACK's dlaswp
 *          on columns 1:k-1), after PANEL k through a dependency-only operand
 * Invariants: every task writes one strip and lies inside it; a PANEL's INFO > 0 (an exact
 * zero pivot) fails nothing: the factorization completes, the first such pivot is INFO; a
 * strip's PANEL, its last write and the swaps after which fewer than half the rows of its
 * last write-back remain to change are final (written back at once, the changed rows
 * only: put's row range), so the tail writes about T rows of each strip. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "lapack.h"

enum lj_kind { LJ_PANEL, LJ_UPDATE };

/* One job: a panel's factorization or its update. */
struct ljob {
    struct tess__job base; /* first: the step callback casts back */
    enum lj_kind kind;
    int64_t k;  /* the panel */
    int64_t nk; /* panels: ceil(min(m, n) / T) */
    int64_t nt; /* strips: ceil(n / T) */
    int info;   /* LJ_PANEL: the tile kernel's INFO */
    int *piv;   /* the call's pivots, panel p's relative to its row pT at piv + pT */
    const struct tess__hview *hv;
    tess__scalar_t minus_one;
};

/* Panel p's shape: its rows below pT (mk), its width (wk), its pivots (dk = min). */
static void panel_dims(const struct tess__job *job, int64_t p, int64_t *mk, int64_t *wk,
                       int64_t *dk) {
    int64_t T = job->tile;
    *mk = job->m - p * T;
    *wk = TESS__MIN(T, job->n - p * T);
    *dk = TESS__MIN(*mk, *wk);
}

static void strip_operand(const struct ljob *lj, int64_t p, int64_t row, struct tess__step *out) {
    tess__hview_tile(lj->hv, row, p * lj->base.tile, &out->a, &out->a_ro, &out->a_co);
}

/* Steps of a strip's update by panel p (right of it): LASWP, TRSM and, with rows below the
 * pivots, GEMM. */
static int update_steps(const struct tess__job *job, int64_t p) {
    int64_t mk, wk, dk;
    panel_dims(job, p, &mk, &wk, &dk);
    return mk > dk ? 3 : 2;
}

/* Steps before PANEL k's GETRF: strip k's update by panel k - 1. */
static int panel_pre(const struct ljob *lj) {
    return lj->k > 0 ? update_steps(&lj->base, lj->k - 1) : 0;
}

static void lj_step(const struct tess__job *job, const struct tess__task *t, int s,
                    struct tess__step *out) {
    const struct ljob *lj = (const struct ljob *)job;
    const void *one = tess__scalar_one(job->dt);
    int64_t T = job->tile, p = lj->k, mk, wk, dk;
    bool panel = lj->kind == LJ_PANEL && s == panel_pre(lj);
    if (lj->kind == LJ_PANEL && !panel) p = lj->k - 1; /* the update before the GETRF */
    panel_dims(job, p, &mk, &wk, &dk);
    memset(out, 0, sizeof *out);
    out->n = t->n;
    out->alpha = one;
    out->beta = one;
    if (panel) {
        out->kind = TESS__K_GETRF;
        out->m = mk, out->n = wk, out->k = wk;
        out->c_ro = p * T;
        out->info = (int *)&lj->info;
        out->ipiv = lj->piv + p * T;
        return;
    }
    /* this strip's rows pT.. interchanged as panel p's were (left of the panel: after it,
     * through the panel's strip, which nothing reads), then U_pj := L_pp^-1 A_pj, then
     * A_ij -= L_ip U_pj below the panel's pivots */
    tess__lu_update_step(s, p * T, mk, dk, lj->piv + p * T, &lj->minus_one, out);
    if (s == 0 && t->j >= p) return;
    if (s == 0) out->nops = 1, out->a_dep_only = true;
    strip_operand(lj, p, p * T + (s == 2 ? dk : 0), out);
}

void tess__lu_update_step(int s, int64_t r0, int64_t m, int64_t k, int *ipiv, const void *minus_one,
                          struct tess__step *out) {
    out->c_ro = r0;
    if (s == 0) {
        out->kind = TESS__K_LASWP;
        out->m = m, out->k = k;
        out->ipiv = ipiv;
        return;
    }
    out->nops = 1;
    if (s == 1) {
        out->kind = TESS__K_TRSM;
        out->side = 'L', out->uplo = 'L', out->ta = 'N', out->diag = 'U';
        out->m = k;
        return;
    }
    out->kind = TESS__K_GEMM;
    out->ta = 'N', out->tb = 'N';
    out->m = m - k, out->k = k;
    out->alpha = minus_one;
    out->c_ro = r0 + k;
    out->b_in_c = true;
    out->b_ro = r0;
}

static const struct tess__job_ops getrf_ops[2] = {{.name = "getrf", .step = lj_step},
                                                  {.name = "getrf-update", .step = lj_step}};

/* Append the task writing strip j with nsteps steps; urgent: on the critical path. Its
 * priority: the sooner the panel that consumes the strip (panel j), the higher; a panel
 * first. final: written back at once (the PANEL, swap_final, the last panel). */
static void add_task(struct ljob *lj, int64_t j, int nsteps, bool urgent, bool final) {
    struct tess__job *job = &lj->base;
    int64_t T = job->tile;
    size_t es = tess__dtypes[job->dt].size;
    struct tess__task *t = &job->tasks[job->ntasks++];
    t->job = job;
    t->i = 0, t->j = (int32_t)j;
    t->nsteps = nsteps;
    t->m = job->m, t->n = TESS__MIN(T, job->n - j * T);
    t->row = 0, t->col = j * T;
    t->c = (char *)job->C + (size_t)(t->col * job->ldc) * es;
    t->load_c = 1;
    t->urgent = urgent;
    int64_t pri = j < lj->k ? 0 : 3 * (lj->nt - j) + (lj->kind == LJ_PANEL ? 2 : urgent);
    t->pri = (int16_t)TESS__MIN(pri, INT16_MAX);
    t->final = final;
    atomic_init(&t->ndeps, 0);
    atomic_init(&t->released, 0);
}

/* Whether panel k's swaps leave strip j < k final (written back): at its last panel, or
 * when the rows later panels may still change (m - (k + 1) T) are at most half of those
 * changed since its last write-back (its PANEL's, final; then rows from (j + 1) T), so the
 * strip's write-backs shrink geometrically: about twice its rows below (j + 1) T in all,
 * and about 2 T rows left for the end. */
static bool swap_final(const struct ljob *lj, int64_t j) {
    int64_t k = lj->k, T = lj->base.tile, m = lj->base.m, from = (j + 1) * T;
    if (k == lj->nk - 1) return true;
    for (int64_t p = j + 1; p < k; p++)
        if (2 * (m - (p + 1) * T) <= m - from) from = (p + 1) * T; /* written back at p */
    return 2 * (m - (k + 1) * T) <= m - from;
}

/* Strips right of panel k whose update by it is urgent: the next panel's (PANEL k + 1's
 * first steps), and the one after, which PANEL k + 2's update of it waits for (on a
 * low-priority stream behind the bulk it would hold up panel k + 2). */
#define LOOKAHEAD 2

/* The tasks of lj in queue order: for an update, the next panel's strip first, the swaps
 * left of the panel last. */
static int fill(struct ljob *lj) {
    int64_t k = lj->k, nk = lj->nk, nt = lj->nt;
    int64_t cnt = lj->kind == LJ_PANEL ? 1 : nt - 1;
    lj->base.tasks = calloc((size_t)TESS__MAX(cnt, 1), sizeof *lj->base.tasks);
    if (!lj->base.tasks) return TESS_ENOMEM;
    lj->base.ntasks = 0;
    if (lj->kind == LJ_PANEL) {
        add_task(lj, k, panel_pre(lj) + 1, true, true);
    } else {
        /* strip k + 1's update is PANEL k + 1's first steps, when there is one */
        for (int64_t j = k + 1 + (k + 1 < nk); j < nt; j++)
            add_task(lj, j, update_steps(&lj->base, k), j <= k + LOOKAHEAD, k == nk - 1);
        for (int64_t j = 0; j < k; j++) add_task(lj, j, 1, false, swap_final(lj, j));
    }
    return TESS_OK;
}

/* ---- the tile factorization --------------------------------------------------------------- */

/* The strip width of an m x n factorization: TESSERA_TILE, else about eight strips per
 * device (four on emulated devices), never narrow on GPUs, and six strips within the
 * smallest heap. On GPUs 768 columns at most, 1024 where the matrix has 65536 rows or more
 * and each GPU's share of its columns is 32768 or more (measured best, docs/benchmarks.md:
 * 768 on one GPU at n = 32768 and on four at 65536, 1024 on two at 65536). */
static int64_t getrf_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t m, int64_t n) {
    if (rt->cfg.tile > 0) return rt->cfg.tile;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    int64_t ndev = TESS__MAX(1, ds.live), t = 256;
    if (ds.gpus) t = m >= 65536 && TESS__MIN(m, n) / ds.gpus >= 32768 ? 1024 : 768;
    while (t > (ds.gpus ? 256 : 16) && TESS__CEILDIV(TESS__MIN(m, n), t) < (ds.gpus ? 8 : 4) * ndev)
        t /= 2;
    size_t es = tess__dtypes[dt].size;
    while (t > 8 && ds.min_heap != SIZE_MAX && (size_t)(6 * m * t) * es > ds.min_heap) t /= 2;
    return t;
}

static void job_init(struct ljob *lj, enum lj_kind kind, int64_t k, tess_dtype_t dt, int64_t m,
                     int64_t n, int64_t T, void *A, int64_t lda, const struct tess__hview *hv,
                     int *piv) {
    struct tess__job *job = &lj->base;
    lj->kind = kind;
    lj->k = k;
    lj->nk = TESS__CEILDIV(TESS__MIN(m, n), T), lj->nt = TESS__CEILDIV(n, T);
    lj->piv = piv;
    lj->hv = hv;
    lj->minus_one = tess__l3_minus_one(dt);
    job->ops = &getrf_ops[kind];
    job->dt = dt;
    job->tile = T;
    job->blk_bytes = tess__blk_bytes_rc(m, T, tess__dtypes[dt].size); /* a strip */
    job->m = m, job->n = job->k = n;
    job->C = A, job->ldc = lda;
    job->A = A, job->lda = lda;
    job->a_dev = job->b_dev = -1;
    job->device_only = true; /* the CPU worker computes in place: it would miss dirty tiles */
    job->held_deps = true;
    job->hv_c = hv;
    job->hv_a = kind == LJ_UPDATE || k > 0 ? hv : NULL;
}

/* Submit lj (filled); false if it failed (rc set). */
static bool submit(struct tess__rt *rt, const char *fn, struct ljob *lj, int *rc) {
    if (fill(lj)) {
        *rc = tess__fail(TESS_ENOMEM, "%s: task list: out of host memory", fn);
        return false;
    }
    if (lj->base.ntasks == 0) {
        free(lj->base.tasks);
        lj->base.tasks = NULL;
        return true;
    }
    if ((*rc = tess__rt_submit(rt, &lj->base))) {
        free(lj->base.tasks);
        lj->base.tasks = NULL;
        return false;
    }
    return true;
}

/* Wait for lj (if submitted) and free its tasks; its status, or the first one in *first. */
static void reap(struct tess__rt *rt, struct ljob *lj, int *first) {
    if (!lj->base.tasks) return;
    int st = tess__rt_wait(rt, &lj->base);
    if (st && *first == TESS_OK) *first = st;
    tess__hold_deps_clear(rt, &lj->base);
    free(lj->base.tasks);
    lj->base.tasks = NULL;
}

/* Factor the column-major m x n matrix A held as strips (view hv, strip width hv->T): every
 * panel's jobs submitted, then waited for in order. ipiv and *info as LAPACK's. */
static int tile_getrf(struct tess__rt *rt, const char *fn, tess_dtype_t dt, int64_t m, int64_t n,
                      void *A, int64_t lda, const struct tess__hview *hv, int64_t *ipiv,
                      int64_t *info) {
    int64_t T = hv->T, nk = TESS__CEILDIV(TESS__MIN(m, n), T), nt = TESS__CEILDIV(n, T);
    int64_t njobs = 2 * nk;
    if (tess__l3_count_mul(nk, nt) > TESS__TASKS_MAX)
        return tess__fail(TESS_ENOMEM,
                          "%s: %lld strips of %lld columns: too many; raise "
                          "TESSERA_TILE",
                          fn, (long long)nt, (long long)T);
    struct ljob *jobs = calloc((size_t)njobs, sizeof *jobs);
    int *piv = calloc((size_t)TESS__MIN(m, n), sizeof *piv);
    if (!jobs || !piv) {
        free(jobs);
        free(piv);
        return tess__fail(TESS_ENOMEM, "%s: out of host memory", fn);
    }
    int rc = TESS_OK, first = TESS_OK;
    int64_t submitted = 0;
    atomic_fetch_add(&rt->crit_live, 1); /* the devices keep a stream for its panels */
    atomic_fetch_add(&rt->batching, 1);  /* no idle write-behind until every job is in */
    for (int64_t x = 0; x < njobs; x++) {
        job_init(&jobs[x], x % 2 ? LJ_UPDATE : LJ_PANEL, x / 2, dt, m, n, T, A, lda, hv, piv);
        if (!submit(rt, fn, &jobs[x], &rc)) break;
        submitted = x + 1;
    }
    atomic_fetch_sub(&rt->batching, 1);
    /* later jobs depend on earlier ones, never the reverse */
    for (int64_t x = 0; x < submitted; x++) reap(rt, &jobs[x], &first);
    atomic_fetch_sub(&rt->crit_live, 1);
    *info = 0;
    if (!rc && !first) {
        for (int64_t k = 0; k < nk; k++) {
            if (jobs[2 * k].info > 0 && *info == 0) *info = k * T + jobs[2 * k].info;
            int64_t mk, wk, dk;
            panel_dims(&jobs[0].base, k, &mk, &wk, &dk);
            for (int64_t i = 0; i < dk; i++) ipiv[k * T + i] = k * T + piv[k * T + i];
        }
    }
    free(jobs);
    free(piv);
    if (rc) return rc;
    if (first) return first; /* the wait said why */
    return TESS_OK;
}

/* ---- the CPU LAPACK ----------------------------------------------------------------------- */

static int host_getrf(const char *fn, tess_dtype_t dt, int64_t m, int64_t n, void *A, int64_t lda,
                      int64_t *ipiv, int64_t *info) {
    tess__getrf_fn *f;
    int rc = tess__hostblas_getrf((int)dt, fn, &f);
    if (rc) return rc;
    if (m > INT_MAX || n > INT_MAX || lda > INT_MAX)
        return tess__fail(TESS_ENOSYS,
                          "%s: m = %lld, n = %lld, lda = %lld: past the CPU LAPACK's 32-bit "
                          "integers and no device to factor it",
                          fn, (long long)m, (long long)n, (long long)lda);
    int64_t d = TESS__MIN(m, n);
    int *p = malloc((size_t)TESS__MAX(d, 1) * sizeof *p);
    if (!p) return tess__fail(TESS_ENOMEM, "%s: out of host memory", fn);
    int m32 = (int)m, n32 = (int)n, lda32 = (int)lda, inf = 0;
    f(&m32, &n32, A, &lda32, p, &inf);
    for (int64_t i = 0; i < d; i++) ipiv[i] = p[i];
    free(p);
    *info = inf;
    return TESS_OK;
}

/* ---- row-major: through a column-major copy ----------------------------------------------- */

/* dst (cols x rows, ld ldd) := src^T (rows x cols, ld lds), es-byte elements, in blocks. */
static void transpose(char *dst, int64_t ldd, const char *src, int64_t lds, int64_t rows,
                      int64_t cols, size_t es) {
    enum { B = 32 };
    for (int64_t c0 = 0; c0 < cols; c0 += B)
        for (int64_t r0 = 0; r0 < rows; r0 += B)
            for (int64_t c = c0; c < TESS__MIN(cols, c0 + B); c++)
                for (int64_t r = r0; r < TESS__MIN(rows, r0 + B); r++)
                    memcpy(dst + (size_t)(c + r * ldd) * es, src + (size_t)(r + c * lds) * es, es);
}

/* ---- entry points ------------------------------------------------------------------------ */

/* Smallest min(m, n) the devices factor when GPUs are present (below it the CPU LAPACK is
 * faster than the trip over the link). */
#define GETRF_GPU_MIN_N 512

/* The column-major m x n matrix A (lda): on the devices or the CPU LAPACK. kept (not NULL):
 * the strips stay held after a factorization with INFO 0 (*kept set; the caller releases
 * A: gesv solves on the held factor first). */
static int getrf_col(struct tess__rt *rt, const char *fn, tess_dtype_t dt, int64_t m, int64_t n,
                     void *A, int64_t lda, int64_t *ipiv, int64_t *info, bool *kept) {
    size_t es = tess__dtypes[dt].size;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    struct tess__hview hv;
    int v = tess__hold_view(rt, fn, A, m, n, lda, es, &hv);
    if (v < -1) return TESS_EINVAL; /* the contract checker's message */
    /* any held matrix A overlaps is written back and dropped first: its tiles are square,
     * the factorization's are strips (it stays held; its next use fetches the result) */
    int rc = v != 0 ? tess__hold_unheld(rt, fn, A, m, n, lda, es, true) : TESS_OK;
    if (rc) return rc;
    if (ds.live == 0 || (ds.gpus > 0 && TESS__MIN(m, n) < GETRF_GPU_MIN_N))
        return host_getrf(fn, dt, m, n, A, lda, ipiv, info);
    rc = tess__hold_strips(rt, dt, A, lda, m, n, getrf_tile(rt, dt, m, n), &hv);
    if (rc) return rc;
    rc = tile_getrf(rt, fn, dt, m, n, A, lda, &hv, ipiv, info);
    if (kept && !rc && *info == 0) {
        *kept = true; /* the caller releases A */
        return TESS_OK;
    }
    return tess__la_release_own(A, rc, info);
}

/* gen: 1 for the generic entry (its messages count dtype as argument 1), 0 typed; *info
 * numbers a bad argument as the typed entry does (LAPACKE: layout 1, m 2, n 3, A 4, lda 5,
 * ipiv 6). */
static int getrf_impl(const char *fn, int gen, tess_dtype_t dt, tess_layout_t layout, int64_t m,
                      int64_t n, void *A, int64_t lda, int64_t *ipiv, int64_t *info, bool *kept) {
    tess__clear_error();
    if (kept) *kept = false;
    if (!info)
        return tess__fail(TESS_EINVAL, "%s: argument %d (info) must not be NULL", fn, 7 + gen);
#define BAD TESS__LA_BAD
    if (layout != TESS_ROW_MAJOR && layout != TESS_COL_MAJOR)
        return BAD(1, "(layout = %d) must be TESS_ROW_MAJOR or TESS_COL_MAJOR", (int)layout);
    if (m < 0) return BAD(2, "(m = %lld) must be >= 0", (long long)m);
    if (n < 0) return BAD(3, "(n = %lld) must be >= 0", (long long)n);
    bool row = layout == TESS_ROW_MAJOR;
    if (m > 0 && n > 0 && !A) return BAD(4, "(A = %p) must not be NULL", A);
    int64_t need = TESS__MAX(1, row ? n : m);
    if (lda < need)
        return BAD(5, "(lda = %lld) must be >= max(1, %s) = %lld", (long long)lda, row ? "n" : "m",
                   (long long)need);
    if (m > 0 && n > 0 && !ipiv) return BAD(6, "(ipiv = %p) must not be NULL", (void *)ipiv);
    size_t es = tess__dtypes[dt].size;
    if (m > 0 && n > 0 && !tess__span_ok(A, row ? n : m, row ? m : n, lda, es, NULL))
        return BAD(4,
                   "(A: %lld x %lld with leading dimension %lld) spans more than the address "
                   "space",
                   (long long)m, (long long)n, (long long)lda);
#undef BAD
    *info = 0;
    if (m == 0 || n == 0) return TESS_OK;
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    if (!row) {
        rc = getrf_col(rt, fn, dt, m, n, A, lda, ipiv, info, kept);
    } else {
        /* LAPACKE's way: factor a column-major copy, then copy the factors back (a held A
         * written back and dropped first: the host reads and writes it) */
        char *tmp = malloc((size_t)m * (size_t)n * es);
        if (!tmp) {
            tess__rt_put(rt);
            return tess__fail(TESS_ENOMEM, "%s: no host memory for a column-major copy of A", fn);
        }
        if ((rc = tess__hold_unheld(rt, fn, A, n, m, lda, es, true))) {
            free(tmp);
            tess__rt_put(rt);
            return rc;
        }
        transpose(tmp, m, A, lda, n, m, es);
        rc = getrf_col(rt, fn, dt, m, n, tmp, m, ipiv, info, NULL);
        if (!rc) transpose(A, lda, tmp, m, m, n, es);
        free(tmp);
    }
    tess__rt_put(rt);
    return rc;
}

int tess_getrf(tess_dtype_t dtype, tess_layout_t layout, int64_t m, int64_t n, void *A, int64_t lda,
               int64_t *ipiv, int64_t *info) {
    if ((unsigned)dtype > TESS_Z) {
        tess__clear_error();
        return tess__fail(TESS_EINVAL, "tess_getrf: argument 1 (dtype = %d) must be a tess_dtype_t",
                          (int)dtype);
    }
    return getrf_impl("tess_getrf", 1, dtype, layout, m, n, A, lda, ipiv, info, NULL);
}

int tess__getrf_kept(tess_dtype_t dt, tess_layout_t layout, int64_t m, int64_t n, void *A,
                     int64_t lda, int64_t *ipiv, int64_t *info, bool *kept) {
    return getrf_impl("tess_getrf", 1, dt, layout, m, n, A, lda, ipiv, info, kept);
}

#define GETRF_TYPED(X, DT, E)                                                                 \
    int tess_##X##getrf(tess_layout_t layout, int64_t m, int64_t n, E *A, int64_t lda,        \
                        int64_t *ipiv, int64_t *info) {                                       \
        return getrf_impl("tess_" #X "getrf", 0, DT, layout, m, n, A, lda, ipiv, info, NULL); \
    }
GETRF_TYPED(s, TESS_S, float)
GETRF_TYPED(d, TESS_D, double)
GETRF_TYPED(c, TESS_C, void)
GETRF_TYPED(z, TESS_Z, void)
