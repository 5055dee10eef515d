/* src/lapack/bpanel.c: the block jobs of a distributed factorization on a process's held
 * local part (scalapack_glue's p?potrf_ and p?getrf_ on a process grid): POTRF or GETRF of
 * one block (GETRF with the copy-out of its L), TRSM of a panel by a factor (held, or in
 * device memory), LASWP of rows, an LU step's UPDATE of a region (interchanges, TRSM, GEMM
 * as the three steps of one task per tile part) and COPY of a region into device memory
 * (a panel on its way to the other processes). Each is one job over the held tiles its
 * region meets, one task per tile part, ordered after earlier calls by tile (held_deps),
 * urgent (the factorization's critical path) unless lazy, and run on devices only.
 * Invariants: a region lies in one held matrix (square tiles or column strips); a POTRF or
 * GETRF region lies in one held tile, a TRSM region in one tile column (L) or row (U), a
 * LASWP or UPDATE region in one tile row, so that no solve or interchange is split along
 * its order; a job that copies into device memory runs only on that memory's device and
 * leaves its tiles' values as they were.
 */
#include <stdlib.h>
#include <string.h>

#include "lapack.h"

struct tess__bp {
    struct tess__job job; /* first: the step callback casts back */
    struct tess__bp_args a;
    struct tess__rt *rt;
    struct tess__hview hv, hf; /* the region; a held factor */
    bool held_f;
    int info; /* POTRF, GETRF: the kernel's INFO */
    char ct;
    tess__scalar_t m1; /* GEMM's alpha */
};

/* Operand tile of device memory p (rows x cols, ld) on runtime device dev, stable until the
 * job is done (the caller's): its own device reads it in place. */
static void dev_tile(const struct tess__job *job, const void *p, int64_t rows, int64_t cols,
                     int64_t ld, int dev, struct tess__tile *out) {
    tess__l3_tile(job, out, p, ld, 0, 0, rows, cols);
    tess__l3_dev_home(out, dev, true);
}

static void bp_step(const struct tess__job *job, const struct tess__task *t, int s,
                    struct tess__step *out) {
    const struct tess__bp *h = (const struct tess__bp *)job;
    const struct tess__bp_args *a = &h->a;
    (void)s;
    memset(out, 0, sizeof *out);
    out->m = t->m;
    out->n = t->n;
    out->uplo = a->uplo;
    out->alpha = out->beta = tess__scalar_one(job->dt);
    switch (a->kind) {
    case TESS__BP_POTRF:
        out->kind = TESS__K_POTRF;
        out->k = t->n;
        out->info = (int *)&h->info;
        return;
    case TESS__BP_TRSM: {
        /* L: X := X L^-H (side R); U: X := U^-H X (side L) */
        out->kind = TESS__K_TRSM;
        out->nops = 1;
        out->side = a->uplo == 'L' ? 'R' : 'L';
        out->ta = h->ct;
        out->diag = 'N';
        int64_t order = a->uplo == 'L' ? a->n : a->m;
        if (h->held_f) {
            tess__hview_tile(&h->hf, 0, 0, &out->a, &out->a_ro, &out->a_co);
            struct tess__tile ct;
            int64_t ro, co;
            tess__hview_tile(&h->hv, t->row, t->col, &ct, &ro, &co);
            if (ct.key.addr == out->a.key.addr) { /* the factor shares the task's own tile */
                out->a_in_c = true;
                out->nops = 0;
                out->a_ro -= ro, out->a_co -= co;
            }
            return;
        }
        dev_tile(job, a->F, order, order, a->ldf, a->f_dev, &out->a);
        return;
    }
    case TESS__BP_COPY:
        out->kind = TESS__K_GEMM; /* k = 0: no flops */
        out->copy_to = (char *)a->to +
                       (size_t)(t->row + t->col * a->ld_to) * tess__dtypes[job->dt].size;
        out->copy_ld = a->ld_to;
        return;
    case TESS__BP_GETRF:
        if (s == 1) {                 /* L out: the first min(m, n) columns */
            out->kind = TESS__K_GEMM; /* k = 0: no flops */
            out->n = TESS__MIN(t->m, t->n);
            out->copy_to = a->to;
            out->copy_ld = a->ld_to;
            return;
        }
        out->kind = TESS__K_GETRF;
        out->k = t->n;
        out->info = (int *)&h->info;
        out->ipiv = a->ipiv;
        return;
    case TESS__BP_LASWP:
        out->kind = TESS__K_LASWP;
        out->k = a->k;
        out->ipiv = a->ipiv;
        return;
    case TESS__BP_UPDATE: { /* interchanges, U := L^-1 X[0:k, :], X[k:, :] -= F[k:, :] U */
        size_t es = tess__dtypes[job->dt].size;
        tess__lu_update_step(s, 0, t->m, a->k, a->ipiv, &h->m1, out);
        if (s > 0)
            dev_tile(job, (const char *)a->F + (size_t)(s == 2 ? a->k : 0) * es,
                     s == 2 ? t->m - a->k : a->k, a->k, a->ldf, a->f_dev, &out->a);
        return;
    }
    }
}

/* A block that is not positive definite fails its job (what depends on it is cancelled); a
 * GETRF's zero pivot fails nothing (LAPACK's LU goes on). */
static int bp_finished(const struct tess__job *job, const struct tess__task *t) {
    const struct tess__bp *h = (const struct tess__bp *)job;
    (void)t;
    return h->a.kind == TESS__BP_POTRF && h->info != 0 ? TESS__EINFO : TESS_OK;
}

static const struct tess__job_ops bp_ops[6] = {
    {.name = "bpanel-potrf", .step = bp_step, .finished = bp_finished},
    {.name = "bpanel-trsm", .step = bp_step},
    {.name = "bpanel-copy", .step = bp_step},
    {.name = "bpanel-getrf", .step = bp_step},
    {.name = "bpanel-laswp", .step = bp_step},
    {.name = "bpanel-update", .step = bp_step}};

static int fill(struct tess__bp *h) {
    struct tess__job *job = &h->job;
    const struct tess__bp_args *a = &h->a;
    const struct tess__hview *v = &h->hv;
    int64_t nr = tess__l3_grid_cuts(a->m, v->r0, v->TR, NULL),
            nc = tess__l3_grid_cuts(a->n, v->c0, v->T, NULL);
    bool one_tile = a->kind == TESS__BP_POTRF || a->kind == TESS__BP_GETRF;
    bool one_row = a->kind == TESS__BP_LASWP || a->kind == TESS__BP_UPDATE ||
                   (a->kind == TESS__BP_TRSM && a->uplo == 'U');
    bool one_col = a->kind == TESS__BP_TRSM && a->uplo == 'L';
    if ((one_tile && (nr != 1 || nc != 1)) || (one_row && nr != 1) || (one_col && nc != 1))
        return tess__fail(TESS_EINVAL, "bpanel: a %s region of %lld x %lld across held tiles",
                          bp_ops[a->kind].name, (long long)a->m, (long long)a->n);
    int64_t *rc = malloc(sizeof *rc * (size_t)(nr + nc + 2));
    job->tasks = calloc((size_t)(nr * nc), sizeof *job->tasks);
    if (!rc || !job->tasks) {
        free(rc);
        return tess__fail(TESS_ENOMEM, "bpanel: out of host memory");
    }
    int64_t *rcut = rc, *ccut = rc + nr + 1;
    tess__l3_grid_cuts(a->m, v->r0, v->TR, rcut);
    tess__l3_grid_cuts(a->n, v->c0, v->T, ccut);
    size_t es = tess__dtypes[job->dt].size;
    job->ntasks = 0;
    for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) {
            struct tess__task *t = &job->tasks[job->ntasks++];
            t->job = job;
            t->i = (int32_t)i, t->j = (int32_t)j;
            t->nsteps = a->kind == TESS__BP_UPDATE           ? (a->m > a->k ? 3 : 2)
                        : a->kind == TESS__BP_GETRF && a->to ? 2
                                                             : 1;
            t->row = rcut[i], t->col = ccut[j];
            t->m = rcut[i + 1] - rcut[i], t->n = ccut[j + 1] - ccut[j];
            t->c = (char *)a->X + (size_t)(t->row + t->col * a->ldx) * es;
            t->load_c = 1;
            t->urgent = !a->lazy;
            t->pri = a->lazy ? (int)TESS__MAX(0, a->pri - j) : 1000;
            /* a tile is final once the last block it holds is: written behind at once
             * (L: its last columns; U: its last rows) */
            if (a->final) {
                int64_t e = a->uplo == 'L' ? v->c0 + t->col + t->n : v->r0 + t->row + t->m;
                int64_t edge = a->uplo == 'L' ? v->T : v->TR,
                        ext = a->uplo == 'L' ? v->cols : v->rows;
                t->final = e % edge == 0 || e == ext;
            }
            atomic_init(&t->ndeps, 0);
            atomic_init(&t->released, 0);
        }
    free(rc);
    return TESS_OK;
}

int tess__bp_start(const struct tess__bp_args *a, struct tess__bp **out) {
    *out = NULL;
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    struct tess__bp *h = calloc(1, sizeof *h);
    if (!h) {
        tess__rt_put(rt);
        return tess__fail(TESS_ENOMEM, "bpanel: out of host memory");
    }
    h->a = *a;
    h->rt = rt;
    h->ct = tess__dtypes[a->dt].complex_ ? 'C' : 'T';
    size_t es = tess__dtypes[a->dt].size;
    int64_t order = a->uplo == 'L' ? a->n : a->m;
    h->m1 = tess__l3_minus_one(a->dt);
    /* (a hold of column strips answers too: the call that made it runs these jobs) */
    if (tess__hold_view_read(rt, "bpanel", a->X, a->m, a->n, a->ldx, es, &h->hv) != 1) {
        struct tess__rt_devsum ds; /* (holds serve device memory only) */
        tess__rt_devsum(rt, &ds);
        rc = ds.live == 0
                 ? tess__fail(TESS_EDEVICE, "bpanel: no device left to hold the region")
                 : tess__fail(TESS_EINVAL, "bpanel: the region is not inside a held matrix");
    }
    if (!rc && a->kind == TESS__BP_TRSM && a->f_dev < 0) {
        h->held_f = true;
        if (tess__hold_view(rt, "bpanel", a->F, order, order, a->ldf, es, &h->hf) != 1 ||
            tess__l3_grid_cuts(order, h->hf.r0, h->hf.TR, NULL) != 1 ||
            tess__l3_grid_cuts(order, h->hf.c0, h->hf.T, NULL) != 1)
            rc = tess__fail(TESS_EINVAL, "bpanel: the factor is not inside one held tile");
    }
    struct tess__job *job = &h->job;
    job->ops = &bp_ops[a->kind];
    job->dt = a->dt;
    job->tile = TESS__MAX(h->hv.T, h->hv.TR);
    job->blk_bytes = tess__blk_bytes_rc(h->hv.TR, h->hv.T, es);
    job->m = a->m, job->n = a->n, job->k = order;
    job->C = a->X, job->ldc = a->ldx;
    job->A = a->F, job->lda = a->ldf;
    bool dev_f = (a->kind == TESS__BP_TRSM && !h->held_f) || a->kind == TESS__BP_UPDATE;
    job->a_dev = dev_f ? a->f_dev : -1;
    job->b_dev = -1;
    job->device_only = true; /* the CPU worker computes in place: it would miss dirty tiles */
    job->pin_dev = a->kind == TESS__BP_COPY || (a->kind == TESS__BP_GETRF && a->to) ? a->to_dev + 1
                                                                                    : 0;
    job->held_deps = true;
    job->hv_c = &h->hv;
    job->hv_a = h->held_f ? &h->hf : NULL;
    if (!rc) rc = fill(h);
    atomic_fetch_add(&rt->crit_live, 1); /* the devices keep a stream for urgent tasks */
    if (!rc) rc = tess__rt_submit(rt, job);
    if (rc) {
        atomic_fetch_sub(&rt->crit_live, 1);
        free(job->tasks);
        free(h);
        tess__rt_put(rt);
        return rc;
    }
    *out = h;
    return TESS_OK;
}

int tess__bp_finish(struct tess__bp *h, int64_t *info) {
    struct tess__rt *rt = h->rt;
    int rc = tess__rt_wait(rt, &h->job);
    if ((h->a.kind == TESS__BP_POTRF || h->a.kind == TESS__BP_GETRF) && info) *info = h->info;
    if (rc == TESS__EINFO) {
        rc = TESS_OK; /* INFO says it */
        tess__clear_error();
    }
    tess__hold_deps_clear(rt, &h->job);
    atomic_fetch_sub(&rt->crit_live, 1);
    free(h->job.tasks);
    free(h);
    tess__rt_put(rt);
    return rc;
}
