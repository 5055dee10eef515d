/* src/level3/level3.c: the helpers of level3.h shared by SYMM/HEMM (symm.c), SYRK/HERK/SYR2K/
 * HER2K (syrk.c) and TRMM/TRSM (trxm.c): option characters, host tiles, task lists, the
 * host-side beta * C on a triangle. No tile algorithm lives here. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "level3.h"

char tess__l3_trans(tess_trans_t t) {
    return t == TESS_NO_TRANS ? 'N' : t == TESS_TRANS ? 'T' : 'C';
}

bool tess__l3_is_uplo(int v) { return v == TESS_UPPER || v == TESS_LOWER; }
bool tess__l3_is_side(int v) { return v == TESS_LEFT || v == TESS_RIGHT; }
bool tess__l3_is_diag(int v) { return v == TESS_NON_UNIT || v == TESS_UNIT; }
bool tess__l3_is_trans(int v) {
    return v == TESS_NO_TRANS || v == TESS_TRANS || v == TESS_CONJ_TRANS;
}

int tess__l3_check_head(const char *fn, int pos, tess_layout_t layout, bool has_side,
                        tess_side_t side, tess_uplo_t uplo) {
    if (layout != TESS_ROW_MAJOR && layout != TESS_COL_MAJOR)
        return TESS__L3_BAD("(layout = %d) must be TESS_ROW_MAJOR or TESS_COL_MAJOR", fn, pos,
                            (int)layout);
    if (has_side && !tess__l3_is_side((int)side))
        return TESS__L3_BAD("(side = %d) must be TESS_LEFT or TESS_RIGHT", fn, pos + 1, (int)side);
    if (!tess__l3_is_uplo((int)uplo))
        return TESS__L3_BAD("(uplo = %d) must be TESS_UPPER or TESS_LOWER", fn,
                            pos + (has_side ? 2 : 1), (int)uplo);
    return TESS_OK;
}

int tess__l3_check_dtype(const char *fn, tess_dtype_t dt, bool complex_only) {
    tess__clear_error();
    if ((unsigned)dt > TESS_Z)
        return TESS__L3_BAD("(dtype = %d) must be a tess_dtype_t", fn, 1, (int)dt);
    if (complex_only && !tess__dtypes[dt].complex_)
        return TESS__L3_BAD("(dtype = %d) must be TESS_C or TESS_Z", fn, 1, (int)dt);
    return TESS_OK;
}

int tess__l3_check_span(const char *fn, int pos, const char *name, const void *X, int64_t rows,
                        int64_t cols, int64_t ld, tess_dtype_t dt) {
    size_t es = tess__dtypes[dt].size;
    if (rows <= 0 || cols <= 0 || tess__span_ok(X, rows, cols, ld, es, NULL)) return TESS_OK;
    return TESS__L3_BAD("(%s: %lld x %lld with leading dimension %lld, %zu-byte elements) "
                        "spans more than the address space",
                        fn, pos, name, (long long)rows, (long long)cols, (long long)ld, es);
}

int tess__l3_unhold(const char *fn, const void *X, int64_t rows, int64_t cols, int64_t ld,
                    tess_dtype_t dt, bool written) {
    if (!tess__holds_any() || !X || rows <= 0 || cols <= 0) return TESS_OK;
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    rc = tess__hold_unheld(rt, fn, X, rows, cols, ld, tess__dtypes[dt].size, written);
    tess__rt_put(rt);
    return rc;
}

int64_t tess__l3_count_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

void tess__l3_tile(const struct tess__job *job, struct tess__tile *t, const void *X, int64_t ld,
                   int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
    uint32_t es = (uint32_t)tess__dtypes[job->dt].size;
    memset(t, 0, sizeof *t);
    t->key.space = job->space;
    t->key.addr = (uintptr_t)((const char *)X + (size_t)(r0 + c0 * ld) * es);
    t->key.ld = ld;
    t->key.rows = (int32_t)rows;
    t->key.cols = (int32_t)cols;
    t->key.esize = es;
    t->home = TESS__HOME_HOST;
}

void tess__l3_dev_home(struct tess__tile *t, int dev, bool stable) {
    t->home = TESS__HOME_DEV;
    t->home_dev = dev;
    t->home_ptr = (void *)t->key.addr;
    t->home_ld = t->key.ld;
    t->home_stable = stable;
}

int tess__l3_begin(const char *fn, struct tess__job *job, const struct tess__job_ops *ops,
                   tess_dtype_t dt, int64_t m, int64_t n, int64_t k, void *C, int64_t ldc,
                   struct tess__rt **rt) {
    (void)fn;
    memset(job, 0, sizeof *job);
    int rc = tess__rt_get(rt);
    if (rc) return rc;
    job->ops = ops;
    job->dt = dt;
    job->C = C;
    job->ldc = ldc;
    job->m = m, job->n = n, job->k = k;
    job->tile = tess__rt_tile(*rt, dt, m, n, k, 0); /* chains and triangles: fixed rule */
    if (job->tile > INT32_MAX) job->tile = INT32_MAX;
    int64_t T = job->tile;
    /* every copy reserves a full tile, rounded to the heap's alignment (no fragmentation) */
    job->blk_bytes = tess__blk_bytes(T, tess__dtypes[dt].size);
    return TESS_OK;
}

int tess__l3_alloc(const char *fn, struct tess__job *job, int64_t ntasks, int64_t maxsteps) {
    if (ntasks > TESS__TASKS_MAX || maxsteps > TESS__STEPS_MAX)
        return tess__fail(TESS_ENOMEM,
                          "%s: %lld tasks of up to %lld steps (tile %lld): too many; raise "
                          "TESSERA_TILE",
                          fn, (long long)ntasks, (long long)maxsteps, (long long)job->tile);
    job->ntasks = 0;
    job->tasks = calloc((size_t)(ntasks > 0 ? ntasks : 1), sizeof *job->tasks);
    if (!job->tasks) return tess__fail(TESS_ENOMEM, "%s: task list: out of host memory", fn);
    return TESS_OK;
}

struct tess__task *tess__l3_task(struct tess__job *job, int64_t i, int64_t j, int64_t m, int64_t n,
                                 int nsteps, int load_c) {
    int64_t T = job->tile;
    size_t es = tess__dtypes[job->dt].size;
    struct tess__task *t = &job->tasks[job->ntasks++];
    t->job = job;
    t->i = (int32_t)i, t->j = (int32_t)j;
    t->nsteps = nsteps;
    t->m = TESS__MIN(T, m - i * T);
    t->n = TESS__MIN(T, n - j * T);
    t->c = (char *)job->C + (size_t)(i * T + j * T * job->ldc) * es;
    t->load_c = load_c;
    atomic_init(&t->ndeps, 0);
    atomic_init(&t->released, 0);
    t->succ = NULL;
    return t;
}

void tess__l3_chain(struct tess__task *before, struct tess__task *after) {
    before->succ = after;
    atomic_fetch_add(&after->ndeps, 1);
}

int tess__l3_run(struct tess__rt *rt, struct tess__job *job) {
    int rc = tess__rt_run(rt, job);
    if (job->held_deps) tess__hold_deps_clear(rt, job);
    tess__rt_put(rt);
    free(job->tasks);
    job->tasks = NULL;
    return rc;
}

void tess__l3_scale_tri(tess_dtype_t dt, char uplo, int64_t n, const tess__scalar_t *beta,
                        bool herm, void *C, int64_t ldc) {
    tess__host_scale_tri(dt, uplo, n, beta, herm, C, ldc);
}

void tess__l3_from_real(tess_dtype_t dt, tess__scalar_t *out, const void *r) {
    memset(out, 0, sizeof *out);
    if (dt == TESS_C)
        out->c[0] = *(const float *)r;
    else if (dt == TESS_Z)
        out->z[0] = *(const double *)r;
    else if (dt == TESS_S)
        out->s = *(const float *)r;
    else
        out->d = *(const double *)r;
}

tess__scalar_t tess__l3_minus_one(tess_dtype_t dt) {
    tess__scalar_t m1 = *tess__scalar_one(dt);
    switch (dt) {
    case TESS_S: m1.s = -1.0f; break;
    case TESS_D: m1.d = -1.0; break;
    case TESS_C: m1.c[0] = -1.0f; break;
    case TESS_Z: m1.z[0] = -1.0; break;
    }
    return m1;
}

void tess__l3_conj(tess_dtype_t dt, tess__scalar_t *x) {
    if (dt == TESS_C)
        x->c[1] = -x->c[1];
    else if (dt == TESS_Z)
        x->z[1] = -x->z[1];
}

bool tess__l3_real_is(tess_dtype_t dt, const void *p, double v) {
    return (dt == TESS_C || dt == TESS_S) ? *(const float *)p == (float)v : *(const double *)p == v;
}
