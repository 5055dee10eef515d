/* src/level3/gemm.c: tess_?gemm. Checks the arguments (CBLAS order: layout, transa, transb, m, n,
 * k, lda, ldb, ldc, then pointers), folds row-major into column-major (C^T = op(B)^T
 * op(A)^T keeps both transpose flags), takes the quick returns on the host, and turns the
 * rest into a job of one task per C tile whose k steps the step function below describes.
 * The same code serves s, d, c and z: precision is only an element size and a scalar. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "level3.h"

/* Step s of task t: C_ij (+)= op(A_is) op(B_sj), tiles named by their stored blocks. */
static void gemm_step(const struct tess__job *job, const struct tess__task *t, int s,
                      struct tess__step *out) {
    int64_t T = job->tile;
    uint32_t es = (uint32_t)tess__dtypes[job->dt].size;
    int64_t i0 = (int64_t)t->i * T, j0 = (int64_t)t->j * T, k0 = (int64_t)s * T;
    int64_t kk = TESS__MIN(T, job->k - k0);
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
    /* operands in device memory (the distributed GEMM's panels): homed there */
    if (job->a_dev >= 0) {
        out->a.home = TESS__HOME_DEV;
        out->a.home_dev = job->a_dev;
        out->a.home_ptr = (void *)out->a.key.addr;
        out->a.home_ld = job->lda;
    }
    if (job->b_dev >= 0) {
        out->b.home = TESS__HOME_DEV;
        out->b.home_dev = job->b_dev;
        out->b.home_ptr = (void *)out->b.key.addr;
        out->b.home_ld = job->ldb;
    }
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
    if (no_ab) {
        tess__host_scale(dt, m, n, &be, C, ldc); /* beta = 0: zeros, C not read */
        return TESS_OK;
    }

    struct tess__gemm_async *h;
    rc = tess__gemm_start(dt, ta, tb, m, n, k, &al, A, lda, B, ldb, &be, C, ldc, NULL, &h);
    return rc ? rc : tess__gemm_finish(h);
}

/* ---- the job itself, also run by the distributed GEMM (comm/pgemm.c) ------------------- */

struct tess__gemm_async {
    struct tess__rt *rt;
    struct tess__job job;
};

static bool gemm_ready(const struct tess__job *job, const struct tess__task *t, int s) {
    int64_t T = job->tile, end;
    switch (job->ready_dim) {
    case 'm': end = (int64_t)t->i * T + t->m; break;
    case 'n': end = (int64_t)t->j * T + t->n; break;
    default: end = TESS__MIN(job->k, ((int64_t)s + 1) * T); break;
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
    job->dt = dt;
    /* the tuned edge for every GEMM job: plain calls and the distributed GEMM's local jobs
     * (streamed or device panels too: 2 x H200, 2 ranks, n = 65536, edge 8192 ran at 0.912
     * of 2 x in-core where the fixed rule's 4096 gave 0.865, docs/benchmarks.md); device
     * panels take part of the heap, so the model sees the rest */
    const int dev_panels = opts && (opts->a_dev >= 0 || opts->b_dev >= 0);
    const double pshare = dev_panels && opts->panel_share > 0 ? TESS__MIN(opts->panel_share, 0.95)
                                                              : TESS__PANEL_HEAP_SHARE;
    job->tile = tess__rt_tile(rt, dt, m, n, k, dev_panels ? 1.0 - pshare : 1.0);
    int64_t T = job->tile;
    if (T > INT32_MAX) T = job->tile = INT32_MAX;
    /* every copy of this job reserves a full tile, rounded to the heap's alignment: uniform
     * blocks cannot fragment the heap */
    job->blk_bytes = tess__blk_bytes(T, tess__dtypes[dt].size);
    job->alpha = *al;
    job->beta = *be;
    job->ta = ta, job->tb = tb;
    job->m = m, job->n = n, job->k = k;
    job->A = A, job->B = B, job->C = C;
    job->lda = lda, job->ldb = ldb, job->ldc = ldc;

    /* checked: the task count is formed before it is compared */
    int64_t mt = TESS__CEILDIV(m, T), nt = TESS__CEILDIV(n, T), kt = TESS__CEILDIV(k, T);
    int64_t ntasks = tess__l3_count_mul(mt, nt);
    if (ntasks > TESS__TASKS_MAX || kt > TESS__STEPS_MAX) {
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
        t->m = TESS__MIN(T, m - i * T);
        t->n = TESS__MIN(T, n - j * T);
        t->c = (char *)C + (size_t)(i * T + j * T * ldc) * es;
        t->load_c = !tess__scalar_is_zero(dt, be);
    }
    rc = tess__rt_submit(rt, job);
    if (rc) {
        free(job->tasks);
        free(h);
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
    tess__rt_put(h->rt);
    free(h->job.tasks);
    free(h);
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
