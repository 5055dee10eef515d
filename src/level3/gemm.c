/* src/level3/gemm.c: tess_?gemm. Checks the arguments (CBLAS order: layout, transa, transb, m, n,
 * k, lda, ldb, ldc, then pointers), folds row-major into column-major (C^T = op(B)^T
 * op(A)^T keeps both transpose flags), takes the quick returns on the host, and turns the
 * rest into a job of one task per C tile whose k steps the step function below describes.
 * The same code serves s, d, c and z: precision is only an element size and a scalar. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "level3.h"

/* Start of segment i along dimension d (0 m, 1 n, 2 k) of extent ext: the job's cuts (held
 * operands) or multiples of its tile; *len its length. */
static int64_t seg(const struct tess__job *job, int d, int64_t i, int64_t ext, int64_t *len) {
    if (job->cut[d]) {
        *len = job->cut[d][i + 1] - job->cut[d][i];
        return job->cut[d][i];
    }
    *len = TESS__MIN(job->tile, ext - i * job->tile);
    return i * job->tile;
}

/* Step s of task t: C_ij (+)= op(A_is) op(B_sj), tiles named by their stored blocks, or by
 * the held tiles holding them (the kernel then starts inside the copy). */
static void gemm_step(const struct tess__job *job, const struct tess__task *t, int s,
                      struct tess__step *out) {
    uint32_t es = (uint32_t)tess__dtypes[job->dt].size;
    int64_t kk, len;
    int64_t i0 = seg(job, 0, t->i, job->m, &len), j0 = seg(job, 1, t->j, job->n, &len);
    int64_t k0 = seg(job, 2, s, job->k, &kk);
    const char *A = job->A, *B = job->B;

    memset(out, 0, sizeof *out);
    out->kind = TESS__K_GEMM;
    out->nops = 2;
    out->a.key.space = out->b.key.space = job->space;
    out->a.key.esize = out->b.key.esize = es;
    out->a.home = out->b.home = TESS__HOME_HOST;
    if (job->ta == 'N') {
        out->a.key.addr = (uintptr_t)(A + (size_t)(i0 + k0 * job->lda) * es);
        out->a.key.rows = (int32_t)t->m, out->a.key.cols = (int32_t)kk;
    } else {
        out->a.key.addr = (uintptr_t)(A + (size_t)(k0 + i0 * job->lda) * es);
        out->a.key.rows = (int32_t)kk, out->a.key.cols = (int32_t)t->m;
    }
    out->a.key.ld = job->lda;
    if (job->tb == 'N') {
        out->b.key.addr = (uintptr_t)(B + (size_t)(k0 + j0 * job->ldb) * es);
        out->b.key.rows = (int32_t)kk, out->b.key.cols = (int32_t)t->n;
    } else {
        out->b.key.addr = (uintptr_t)(B + (size_t)(j0 + k0 * job->ldb) * es);
        out->b.key.rows = (int32_t)t->n, out->b.key.cols = (int32_t)kk;
    }
    out->b.key.ld = job->ldb;
    if (job->hv_a)
        tess__hview_tile(job->hv_a, job->ta == 'N' ? i0 : k0, job->ta == 'N' ? k0 : i0, &out->a,
                         &out->a_ro, &out->a_co);
    if (job->hv_b)
        tess__hview_tile(job->hv_b, job->tb == 'N' ? k0 : j0, job->tb == 'N' ? j0 : k0, &out->b,
                         &out->b_ro, &out->b_co);
    /* operands in device memory (the distributed GEMM's panels): homed there */
    if (job->a_dev >= 0) tess__l3_dev_home(&out->a, job->a_dev, job->homes_stable);
    if (job->b_dev >= 0) tess__l3_dev_home(&out->b, job->b_dev, job->homes_stable);
    out->ta = job->ta;
    out->tb = job->tb;
    out->m = t->m;
    out->n = t->n;
    out->k = kk;
    out->alpha = &job->alpha;
    out->beta = s == 0 ? (const void *)&job->beta : (const void *)tess__scalar_one(job->dt);
}

static const struct tess__job_ops gemm_ops = {.name = "gemm", .step = gemm_step};

static char trans_char(tess_trans_t t) {
    return t == TESS_NO_TRANS ? 'N' : t == TESS_TRANS ? 'T' : 'C';
}

/* pos: 1-based position of `layout` in the caller's signature (typed: 1, generic: 2). */
static int gemm_impl(const char *fn, int pos, tess_dtype_t dt, tess_layout_t layout,
                     tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n, int64_t k,
                     const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                     const void *beta, void *C, int64_t ldc) {
    tess__clear_error();
#define BAD(...) tess__fail(TESS_EINVAL, "%s: argument %d " __VA_ARGS__)
    if (layout != TESS_ROW_MAJOR && layout != TESS_COL_MAJOR)
        return BAD("(layout = %d) must be TESS_ROW_MAJOR or TESS_COL_MAJOR", fn, pos, (int)layout);
    if (transa != TESS_NO_TRANS && transa != TESS_TRANS && transa != TESS_CONJ_TRANS)
        return BAD("(transa = %d) must be a tess_trans_t", fn, pos + 1, (int)transa);
    if (transb != TESS_NO_TRANS && transb != TESS_TRANS && transb != TESS_CONJ_TRANS)
        return BAD("(transb = %d) must be a tess_trans_t", fn, pos + 2, (int)transb);
    if (m < 0) return BAD("(m = %lld) must be >= 0", fn, pos + 3, (long long)m);
    if (n < 0) return BAD("(n = %lld) must be >= 0", fn, pos + 4, (long long)n);
    if (k < 0) return BAD("(k = %lld) must be >= 0", fn, pos + 5, (long long)k);
    bool row = layout == TESS_ROW_MAJOR;
    /* rows of the stored arrays: column-major stores op(A) = A as m x k, row-major as k
     * columns per row, etc. */
    int64_t a_rows = (transa == TESS_NO_TRANS) != row ? m : k;
    int64_t b_rows = (transb == TESS_NO_TRANS) != row ? k : n;
    int64_t c_rows = row ? n : m;
    if (lda < TESS__MAX(1, a_rows))
        return BAD("(lda = %lld) must be >= max(1, %s) = %lld", fn, pos + 8, (long long)lda,
                   a_rows == m ? "m" : "k", (long long)TESS__MAX(1, a_rows));
    if (ldb < TESS__MAX(1, b_rows))
        return BAD("(ldb = %lld) must be >= max(1, %s) = %lld", fn, pos + 10, (long long)ldb,
                   b_rows == k ? "k" : "n", (long long)TESS__MAX(1, b_rows));
    if (ldc < TESS__MAX(1, c_rows))
        return BAD("(ldc = %lld) must be >= max(1, %s) = %lld", fn, pos + 13, (long long)ldc,
                   row ? "n" : "m", (long long)TESS__MAX(1, c_rows));
    if (!alpha) return BAD("(alpha) must not be NULL", fn, pos + 6);
    if (!beta) return BAD("(beta) must not be NULL", fn, pos + 11);
    if (m == 0 || n == 0) return TESS_OK;
    if (!C) return BAD("(C) must not be NULL", fn, pos + 12);

    tess__scalar_t al, be;
    tess__scalar_load(dt, &al, alpha);
    tess__scalar_load(dt, &be, beta);
    bool no_ab = k == 0 || tess__scalar_is_zero(dt, &al);
    if (!no_ab && !A) return BAD("(A) must not be NULL", fn, pos + 7);
    if (!no_ab && !B) return BAD("(B) must not be NULL", fn, pos + 9);
#undef BAD
    /* Every array the call touches can be addressed (no extent, tile count or pointer
     * computed below can overflow), checked before anything is written or queued. */
    int64_t a_cols = (transa == TESS_NO_TRANS) != row ? k : m;
    int64_t b_cols = (transb == TESS_NO_TRANS) != row ? n : k;
    int64_t c_cols = row ? m : n;
    int rc;
    if (!no_ab && ((rc = tess__l3_check_span(fn, pos + 7, "A", A, a_rows, a_cols, lda, dt)) ||
                   (rc = tess__l3_check_span(fn, pos + 9, "B", B, b_rows, b_cols, ldb, dt))))
        return rc;
    if ((rc = tess__l3_check_span(fn, pos + 12, "C", C, c_rows, c_cols, ldc, dt))) return rc;

    /* Row-major: C^T = op(B)^T op(A)^T on the column-major views, flags unchanged. */
    char ta = trans_char(transa), tb = trans_char(transb);
    if (row) {
        const void *tp = A;
        A = B, B = tp;
        int64_t ti = lda;
        lda = ldb, ldb = ti;
        ti = m, m = n, n = ti;
        char tc = ta;
        ta = tb, tb = tc;
    }
    if (tess__dtypes[dt].complex_ == 0) {
        if (ta == 'C') ta = 'T';
        if (tb == 'C') tb = 'T';
    }
    if (no_ab && (rc = tess__l3_unhold(fn, C, m, n, ldc, dt, true))) return rc;
    if (no_ab) {
        tess__host_scale(dt, m, n, &be, C, ldc); /* beta = 0: zeros, C not read */
        return TESS_OK;
    }

    struct tess__gemm_async *h;
    rc = tess__gemm_start(dt, ta, tb, m, n, k, &al, A, lda, B, ldb, &be, C, ldc, NULL, &h);
    return rc || !h ? rc : tess__gemm_finish(h); /* no h: it runs on (held operands) */
}

/* ---- the job itself, also run by the distributed GEMM (comm/pgemm.c) ------------------- */

struct tess__gemm_async {
    struct tess__rt *rt;
    struct tess__job job;
    struct tess__hview hv[3]; /* A, B, C in held matrices (job.hv_*) */
    int64_t *cuts;            /* job.cut[0..2], one allocation */
    size_t held_blk;          /* bytes of the largest tile it names (held jobs), else 0 */
};

/* Free a job that is done and waited for (out of the tile dependency tables first). */
static void gemm_release(void *arg) {
    struct tess__gemm_async *h = arg;
    if (h->job.held_deps) tess__hold_deps_clear(h->rt, &h->job);
    free(h->job.tasks);
    free(h->cuts);
    free(h);
}

/* ---- held operands (node/hold.c) --------------------------------------------------------- */

/* The boundaries along an extent ext of a grid of edge T whose lines lie at phase + q T in
 * the operand's coordinates' frame (phase: the operand's offset in the held grid): 0, the
 * first line after 0, ..., ext; into out (NULL: count only). Returns the segment count. */
int64_t tess__l3_grid_cuts(int64_t ext, int64_t phase, int64_t T, int64_t *out) {
    int64_t n = 0, p = T - phase % T;
    if (out) out[0] = 0;
    for (; p < ext; p += T)
        if (out)
            out[++n] = p;
        else
            n++;
    if (out) out[n + 1] = ext;
    return n + 1;
}

/* Whether held views a and b cut dimension positions alike (da, db: which of each view's
 * coordinates, 0 row or 1 column, runs along that dimension). */
static bool same_grid(const struct tess__hview *a, int da, const struct tess__hview *b, int db) {
    return a->T == b->T && (da ? a->c0 : a->r0) % a->T == (db ? b->c0 : b->r0) % b->T;
}

/* Whether views a and b of the same held matrix share a tile (a tile both read and
 * written by one call cannot be held in both roles). */
static bool share_tile(const struct tess__hview *a, int64_t ar, int64_t ac,
                       const struct tess__hview *b, int64_t br, int64_t bc) {
    if (a->space != b->space) return false;
    int64_t T = a->T;
    return a->r0 / T <= (b->r0 + br - 1) / T && b->r0 / T <= (a->r0 + ar - 1) / T &&
           a->c0 / T <= (b->c0 + bc - 1) / T && b->c0 / T <= (a->c0 + ac - 1) / T;
}

/* Which operands of the call lie in held matrices and how the job is cut. Operands that
 * touch a held matrix without a usable view are served stateless (tess__hold_unheld).
 * opts (the distributed GEMM's local jobs): A and B are not looked up (the caller wrote
 * them back), nor C unless opts->keep_c: no check of the contract runs between the
 * caller's write-back of a C the host writes and those writes. Sets job->hv_*,
 * job->cut[], h->cuts. */
static int held_setup(struct tess__gemm_async *h, tess_dtype_t dt,
                      const struct tess__gemm_opts *opts) {
    struct tess__job *job = &h->job;
    struct tess__rt *rt = h->rt;
    size_t es = tess__dtypes[dt].size;
    char fn[16];
    snprintf(fn, sizeof fn, opts ? "tess_pgemm" : "tess_%cgemm", "sdcz"[dt]);
    int64_t m = job->m, n = job->n, k = job->k;
    int64_t ar = job->ta == 'N' ? m : k, ac = job->ta == 'N' ? k : m;
    int64_t br = job->tb == 'N' ? k : n, bc = job->tb == 'N' ? n : k;
    int va = opts ? 0 : tess__hold_view(rt, fn, job->A, ar, ac, job->lda, es, &h->hv[0]);
    int vb = opts ? 0 : tess__hold_view(rt, fn, job->B, br, bc, job->ldb, es, &h->hv[1]);
    int vc = opts && !opts->keep_c ? 0
                                   : tess__hold_view(rt, fn, job->C, m, n, job->ldc, es, &h->hv[2]);
    if (va < -1 || vb < -1 || vc < -1) return TESS_EINVAL; /* the checker's message */
    const struct tess__hview *A = &h->hv[0], *B = &h->hv[1], *C = &h->hv[2];
    /* A's m dimension is its rows ('N') or columns; its k dimension the other; B's k
     * dimension is its rows ('N') or columns */
    int am = job->ta == 'N' ? 0 : 1, bn = job->tb == 'N' ? 1 : 0;
    if (va == 1 && ((vc == 1 && (!same_grid(A, am, C, 0) || share_tile(A, ar, ac, C, m, n)))))
        va = -1;
    if (vb == 1 && ((vc == 1 && (!same_grid(B, bn, C, 1) || share_tile(B, br, bc, C, m, n)))))
        vb = -1;
    if (va == 1 && vb == 1 && !same_grid(A, 1 - am, B, 1 - bn)) vb = -1;
    /* An operand read from the host while C's tiles in the same held matrix are written back
     * (evictions, write-behind: whole tiles) would race with those writes: C is served
     * stateless too then. */
    if (vc == 1 && ((va == -1 && tess__hview_overlaps(C, job->A, ar, ac, job->lda, es)) ||
                    (vb == -1 && tess__hview_overlaps(C, job->B, br, bc, job->ldb, es))))
        vc = -1;
    int rc = TESS_OK;
    /* C last: a held matrix the call writes on the host is recorded anew by the checker at
     * the next call, not at this call's own later checks */
    if (va == -1) rc = tess__hold_unheld(rt, fn, job->A, ar, ac, job->lda, es, false);
    if (!rc && vb == -1) rc = tess__hold_unheld(rt, fn, job->B, br, bc, job->ldb, es, false);
    if (!rc && vc == -1) rc = tess__hold_unheld(rt, fn, job->C, m, n, job->ldc, es, true);
    if (rc || (va != 1 && vb != 1 && vc != 1)) return rc;
    job->hv_a = va == 1 ? A : NULL;
    job->hv_b = vb == 1 ? B : NULL;
    job->hv_c = vc == 1 ? C : NULL;
    job->device_only = true; /* the CPU worker computes in place: it would miss dirty tiles */
    job->held_deps = true;   /* ordered by tile after earlier calls on held data */
    /* the cuts: m from C or else A, n from C or else B, k from A or else B; a dimension no
     * held operand cuts, by the largest held edge */
    int64_t ext[3] = {m, n, k}, T[3], ph[3];
    const struct tess__hview *by[3] = {vc == 1   ? C
                                       : va == 1 ? A
                                                 : NULL,
                                       vc == 1   ? C
                                       : vb == 1 ? B
                                                 : NULL,
                                       va == 1   ? A
                                       : vb == 1 ? B
                                                 : NULL};
    int coord[3] = {vc == 1 ? 0 : am, vc == 1 ? 1 : bn, va == 1 ? 1 - am : 1 - bn};
    /* the held tiles' edge for the other dimensions too: copies reserve the largest */
    int64_t total = 0, cnt[3], tmax = 0;
    for (int d = 0; d < 3; d++) tmax = by[d] ? TESS__MAX(tmax, by[d]->T) : tmax;
    for (int d = 0; d < 3; d++) {
        T[d] = by[d] ? by[d]->T : tmax;
        ph[d] = by[d] ? (coord[d] ? by[d]->c0 : by[d]->r0) % T[d] : 0;
        cnt[d] = tess__l3_grid_cuts(ext[d], ph[d], T[d], NULL);
        total += cnt[d] + 1;
        tmax = TESS__MAX(tmax, T[d]);
    }
    h->cuts = malloc((size_t)total * sizeof *h->cuts);
    if (!h->cuts) return tess__fail(TESS_ENOMEM, "%s: out of host memory", fn);
    int64_t *p = h->cuts;
    for (int d = 0; d < 3; d++) {
        tess__l3_grid_cuts(ext[d], ph[d], T[d], p);
        job->cut[d] = p;
        p += cnt[d] + 1;
    }
    job->tile = tmax;
    /* copies reserve the largest tile the job names: a held tile (clipped to its matrix)
     * or a segment-sized one of an operand not held; not tmax squared, which a small
     * matrix under a large edge would waste */
    int64_t big = 0, seg_m = TESS__MIN(tmax, m), seg_n = TESS__MIN(tmax, n),
            seg_k = TESS__MIN(tmax, k);
    const struct tess__hview *v3[3] = {job->hv_a, job->hv_b, job->hv_c};
    int64_t own[3] = {seg_m * seg_k, seg_k * seg_n, seg_m * seg_n};
    for (int i = 0; i < 3; i++)
        big = TESS__MAX(big,
                        v3[i] ? TESS__MIN(v3[i]->T, v3[i]->rows) * TESS__MIN(v3[i]->T, v3[i]->cols)
                              : own[i]);
    h->held_blk = ((size_t)big * es + 255) & ~(size_t)255; /* the heap's alignment */
    return TESS_OK;
}

/* Segments of the job along dimension d. */
static int64_t nseg(const struct tess__job *job, int d, int64_t ext) {
    if (!job->cut[d]) return TESS__CEILDIV(ext, job->tile);
    int64_t n = 0;
    while (job->cut[d][n] < ext) n++;
    return n;
}

static bool gemm_ready(const struct tess__job *job, const struct tess__task *t, int s) {
    int64_t end, len;
    switch (job->ready_dim) {
    case 'm': end = t->row + t->m; break;
    case 'n': end = t->col + t->n; break;
    default: end = seg(job, 2, s, job->k, &len) + len; break;
    }
    return atomic_load_explicit(job->ready, memory_order_acquire) >= end;
}

static const struct tess__job_ops gemm_stream_ops = {
    .name = "gemm", .step = gemm_step, .ready = gemm_ready};

int tess__gemm_start(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                     const tess__scalar_t *al, const void *A, int64_t lda, const void *B,
                     int64_t ldb, const tess__scalar_t *be, void *C, int64_t ldc,
                     const struct tess__gemm_opts *opts, struct tess__gemm_async **out) {
    *out = NULL;
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    struct tess__gemm_async *h = calloc(1, sizeof *h);
    if (!h) {
        tess__rt_put(rt);
        return tess__fail(TESS_ENOMEM, "gemm: out of host memory");
    }
    h->rt = rt; /* the call reference, released by tess__gemm_finish */
    struct tess__job *job = &h->job;
    const _Atomic int64_t *ready = opts ? opts->ready : NULL;
    job->ops = ready ? &gemm_stream_ops : &gemm_ops;
    job->ready = ready;
    job->ready_dim = opts ? opts->ready_dim : 0;
    job->a_dev = opts ? opts->a_dev : -1;
    job->b_dev = opts ? opts->b_dev : -1;
    job->device_only = job->a_dev >= 0 || job->b_dev >= 0;
    job->homes_stable = opts && opts->stable;
    job->dt = dt;
    /* the tuned edge for every GEMM job: plain calls and the distributed GEMM's local jobs
     * (streamed or device panels too: 2 x H200, 2 ranks, n = 65536, edge 8192 ran at 0.912
     * of 2 x in-core where the fixed rule's 4096 gave 0.865, docs/benchmarks.md); device
     * panels take part of the heap, so the model sees the rest */
    const int dev_panels = opts && (opts->a_dev >= 0 || opts->b_dev >= 0);
    const double pshare = dev_panels && opts->panel_share > 0 ? TESS__MIN(opts->panel_share, 0.95)
                                                              : TESS__PANEL_HEAP_SHARE;
    job->tile = tess__rt_tile(rt, dt, m, n, k, dev_panels ? 1.0 - pshare : 1.0);
    if (job->tile > INT32_MAX) job->tile = INT32_MAX;
    job->alpha = *al;
    job->beta = *be;
    job->ta = ta, job->tb = tb;
    job->m = m, job->n = n, job->k = k;
    job->A = A, job->B = B, job->C = C;
    job->lda = lda, job->ldb = ldb, job->ldc = ldc;
    if (tess__holds_any()) {
        /* held operands, or operands a held matrix overlaps (of the distributed GEMM's
         * local jobs, opts, only C stays held) */
        rc = held_setup(h, dt, opts);
        if (rc) {
            free(h->cuts);
            free(h);
            tess__rt_put(rt);
            return rc;
        }
    }
    int64_t T = job->tile;
    /* every copy of this job reserves a full tile, rounded to the heap's alignment: uniform
     * blocks cannot fragment the heap */
    job->blk_bytes = h->held_blk ? h->held_blk : tess__blk_bytes(T, tess__dtypes[dt].size);

    /* checked: the task count is formed before it is compared */
    int64_t mt = nseg(job, 0, m), nt = nseg(job, 1, n), kt = nseg(job, 2, k);
    int64_t ntasks = tess__l3_count_mul(mt, nt);
    if (ntasks > TESS__TASKS_MAX || kt > TESS__STEPS_MAX) {
        free(h->cuts);
        free(h);
        tess__rt_put(rt);
        return tess__fail(TESS_ENOMEM,
                          "gemm: %lld x %lld tiles of %lld, %lld steps each: too "
                          "many tasks or steps; raise TESSERA_TILE",
                          (long long)mt, (long long)nt, (long long)T, (long long)kt);
    }
    job->ntasks = (int)ntasks;
    job->tasks = calloc((size_t)job->ntasks, sizeof *job->tasks);
    if (!job->tasks) {
        free(h->cuts);
        free(h);
        tess__rt_put(rt);
        return tess__fail(TESS_ENOMEM, "gemm: task list: out of host memory");
    }
    size_t es = tess__dtypes[dt].size;
    /* queue order: column by column, or row by row when op(A) arrives by rows */
    bool by_row = ready && job->ready_dim == 'm';
    for (int64_t x = 0; x < ntasks; x++) {
        int64_t i = by_row ? x / nt : x % mt, j = by_row ? x % nt : x / mt;
        struct tess__task *t = &job->tasks[x];
        t->job = job;
        t->i = (int32_t)i, t->j = (int32_t)j;
        t->nsteps = (int32_t)kt;
        t->row = seg(job, 0, i, m, &t->m);
        t->col = seg(job, 1, j, n, &t->n);
        t->c = (char *)C + (size_t)(t->row + t->col * ldc) * es;
        t->load_c = !tess__scalar_is_zero(dt, be);
    }
    rc = tess__rt_submit(rt, job);
    if (rc) {
        free(job->tasks);
        free(h->cuts);
        free(h);
        tess__rt_put(rt);
        return rc;
    }
    if (job->hv_a && job->hv_b && job->hv_c) {
        /* Every operand held: the host does not touch them until a sync (the contract),
         * so the call returns now; its tasks wait for earlier calls by tile. */
        char desc[224];
        snprintf(desc, sizeof desc,
                 "tess_%cgemm(transa %c, transb %c, m %lld, n %lld, k %lld, A %p, lda %lld, "
                 "B %p, ldb %lld, C %p, ldc %lld)",
                 "sdcz"[dt], ta, tb, (long long)m, (long long)n, (long long)k, A, (long long)lda, B,
                 (long long)ldb, (void *)C, (long long)ldc);
        rc = tess__hold_async(rt, job, gemm_release, h, desc);
        tess__rt_put(rt);
        return rc;
    }
    *out = h;
    return TESS_OK;
}

void tess__gemm_abort(struct tess__gemm_async *h, int status) {
    tess__rt_job_fail(h->rt, &h->job, status);
}

int tess__gemm_finish(struct tess__gemm_async *h) {
    int rc = tess__rt_wait(h->rt, &h->job);
    struct tess__rt *rt = h->rt;
    gemm_release(h);
    tess__rt_put(rt);
    return rc;
}

int tess_gemm(tess_dtype_t dtype, tess_layout_t layout, tess_trans_t transa, tess_trans_t transb,
              int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
              const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc) {
    if ((unsigned)dtype > TESS_Z) {
        tess__clear_error();
        return tess__fail(TESS_EINVAL, "tess_gemm: argument 1 (dtype = %d) must be a tess_dtype_t",
                          (int)dtype);
    }
    return gemm_impl("tess_gemm", 2, dtype, layout, transa, transb, m, n, k, alpha, A, lda, B, ldb,
                     beta, C, ldc);
}

int tess_sgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n,
               int64_t k, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc) {
    return gemm_impl("tess_sgemm", 1, TESS_S, layout, transa, transb, m, n, k, &alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}

int tess_dgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n,
               int64_t k, double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
               double beta, double *C, int64_t ldc) {
    return gemm_impl("tess_dgemm", 1, TESS_D, layout, transa, transb, m, n, k, &alpha, A, lda, B,
                     ldb, &beta, C, ldc);
}

int tess_cgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n,
               int64_t k, const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return gemm_impl("tess_cgemm", 1, TESS_C, layout, transa, transb, m, n, k, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}

int tess_zgemm(tess_layout_t layout, tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n,
               int64_t k, const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
               const void *beta, void *C, int64_t ldc) {
    return gemm_impl("tess_zgemm", 1, TESS_Z, layout, transa, transb, m, n, k, alpha, A, lda, B,
                     ldb, beta, C, ldc);
}
