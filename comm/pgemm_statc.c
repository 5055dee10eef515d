/* comm/pgemm_statc.c: stationary C, the distributed GEMM's default variant. Each rank
 * updates the part of sub(C) it owns, in place, with one node-runtime job per pass over k
 * (tess__gemm_start): every C tile goes to a device once per pass and is written back
 * once. What the job reads of op(A) (its rows of C) and op(B) (its columns of C) lands in
 * panels (device memory or the grid's host buffer, by the grid's transport) unit by unit
 * while the job runs; tasks whose part has not landed wait (tess__gemm_opts.ready). An
 * operand every rank holds in local order is used in place and never moves. When the
 * panels of all of k exceed the budget (TESSERA_PGEMM_MEM, the device heap), k is split
 * into passes, one job each. Each pass ends with an agreement on the job's and the
 * exchange's status: every rank returns the same one, none waits for a rank that gave up.
 * Owns the call's plan and counters; the panels are the transport's.
 */
#include <stdint.h>
#include <string.h>

#include "level3.h"
#include "pgemm.h"
#include "xport.h"

/* One call: its plan (fixed before the passes) and its counters. */
struct statc {
    struct tess__comm_grid *g;
    const struct tess__pgemm_call *c;
    struct tess__redist_op *ops; /* [2]: op(A), op(B) */
    struct tess__xport *xp;      /* the grid's transport; NULL when nothing moves */
    size_t es;
    int64_t mloc, nloc; /* this rank's part of sub(C), at Cloc */
    char *Cloc;
    int64_t mmax, nmax;        /* the most rows / columns of sub(C) any rank holds */
    int64_t kpass, kc, cbytes; /* k per pass, per unit (mode 'k'), bytes per unit */
    int64_t heap;              /* the panels' device heap (0: host memory) */
    size_t abytes, bbytes;     /* the panels of a pass */
    void *panel_h;             /* their handle (tess__xport_free) */
    bool moving;               /* an operand moves */
    double tcomm;
    int passes, units;
};

/* The transport, the budget and k per pass, the panels; begin the exchange. Agreed. */
static int plan(struct statc *s) {
    struct tess__comm_grid *g = s->g;
    struct tess__redist_op *ops = s->ops;
    const int64_t k = s->c->k, es = (int64_t)s->es;
    int st = TESS_OK;
    bool begun = false;
    /* k per pass: the panels of the largest rank fit the budget */
    for (int r = 0; r < g->at.nprow; r++)
        s->mmax = TESS__MAX(s->mmax, tess__redist_sel_count(&ops[0], r));
    for (int c = 0; c < g->at.npcol; c++)
        s->nmax = TESS__MAX(s->nmax, tess__redist_sel_count(&ops[1], c));
    const int64_t per_k = ((ops[0].in_place ? 0 : s->mmax) + (ops[1].in_place ? 0 : s->nmax)) * es;
    /* the grid's transport (xport.h): chosen at its first exchange, kept */
    if (s->moving) st = tess__xport_get(g, &s->xp);
    struct tess__xport *xp = s->xp;
    int64_t budget = 0;
    s->kpass = k;
    s->cbytes = 128 << 20;
    int cst0 = tess__pgemm_chunk(g, &s->cbytes); /* collective: every rank gets here */
    if (xp) s->cbytes = TESS__MAX(s->cbytes, xp->min_unit);
    /* device panels: what the job and the exchange leave of the heap (st is agreed here:
     * every rank or none takes the collective budget) */
    s->heap = xp ? (int64_t)xp->heap : 0;
    const int64_t inplace = (ops[0].in_place ? s->mloc : ops[1].in_place ? s->nloc : 0) * k * es;
    if (!st)
        st = tess__pgemm_budget(
            g,
            s->heap > 0 ? tess__pgemm_panel_cap(s->heap, inplace, xp->unit_buffers, s->cbytes) : 0,
            &budget);
    if (!st) st = cst0;
    if (!st && per_k > 0) s->kpass = TESS__MAX(1, TESS__MIN(k, budget / per_k));
    s->kc = per_k > 0 ? TESS__MAX(1, TESS__MIN(s->kpass, s->cbytes / per_k)) : s->kpass;
    /* the panels of one pass, from the transport: device memory from the runtime's heap,
     * or host memory cached on the grid */
    s->abytes = ops[0].in_place ? 0
                                : ((size_t)s->mloc * (size_t)s->kpass * s->es + 255) & ~(size_t)255;
    s->bbytes = ops[1].in_place ? 0 : (size_t)s->nloc * (size_t)s->kpass * s->es;
    void *panel = NULL;
    if (!st && xp) st = tess__xport_alloc(xp, s->abytes + s->bbytes, &panel, &s->panel_h);
    if (!st && xp) begun = !(st = tess__xport_begin(xp, ops, 2));
    st = tess__comm_agree(g, st);
    if (st) {
        if (begun) tess__xport_end(xp);
        if (s->panel_h) tess__xport_free(xp, s->panel_h);
        return st;
    }
    ops[0].buf = panel;
    ops[1].buf = (char *)panel + s->abytes;
    return TESS_OK;
}

/* The units of pass [p0, p1) through the transport, at most xp->in_flight of them queued:
 * unit u is posted once unit u - in_flight landed, and each landing raises *ready to the
 * extent in place (k, or rows / columns up to lim). Returns the first failure. */
static int exchange(struct statc *s, int64_t p0, int64_t p1, char mode, int64_t unit,
                    int64_t nunits, _Atomic int64_t *ready, int64_t lim) {
    struct tess__xport *xp = s->xp;
    const int W = xp->in_flight;
    int cst = TESS_OK;
    for (int64_t u = 0; u < nunits + W && !cst; u++) {
        int wst = TESS_OK;
        if (u >= W) { /* unit u - W landed: its tasks may go */
            wst = tess__xport_wait(xp, (int)(u - W));
            if (!wst)
                atomic_store_explicit(ready, TESS__MIN(lim, (u - W + 1) * unit),
                                      memory_order_release);
        }
        if (u >= nunits) {
            cst = wst;
            continue;
        }
        struct tess__xport_unit xu = {
            .k0 = p0, .k1 = p1, .kbase = p0, .s0 = 0, .s1 = INT64_MAX, .slot = (int)u};
        if (mode == 'k')
            xu.k0 = p0 + u * unit, xu.k1 = TESS__MIN(p1, p0 + (u + 1) * unit);
        else
            xu.s0 = u * unit, xu.s1 = (u + 1) * unit;
        /* a transport that agrees on every unit (a wait that failed here included) stops
         * all ranks at the same one */
        cst = tess__xport_post(xp, &xu, wst);
    }
    return cst;
}

/* Where the job reads operand i (0: op(A), 1: op(B)) in pass p0 of kp k indices: in place
 * (addressed only where the job runs: a rank with no part of C may hold none of it and
 * pass NULL) or its panel, with the panel's leading dimension. */
static const void *pass_operand(struct statc *s, int i, int64_t p0, int64_t kp, int64_t *ld) {
    struct tess__redist_op *op = &s->ops[i];
    const bool job_here = s->mloc > 0 && s->nloc > 0;
    if (op->in_place) {
        *ld = op->ldx;
        return job_here ? tess__redist_in_place_ptr(op, s->g->at.myrow, s->g->at.mycol, p0) : NULL;
    }
    const bool kfirst = i == 0 ? s->c->ta != 'N' : s->c->tb == 'N'; /* k along the panel's rows */
    op->ldbuf = kfirst ? TESS__MAX(1, kp) : TESS__MAX(1, i == 0 ? s->mloc : s->nloc);
    *ld = op->ldbuf;
    return op->buf;
}

/* Pass [p0, p1): the job over this rank's C, and the exchange whatever happened to the job
 * (the other ranks count on it). Agreed. */
static int run_pass(struct statc *s, int64_t p0, int64_t p1) {
    const struct tess__pgemm_call *c = s->c;
    const int64_t kp = p1 - p0;
    int64_t lda, ldb;
    const void *Ap = pass_operand(s, 0, p0, kp, &lda), *Bp = pass_operand(s, 1, p0, kp, &ldb);
    /* the pipeline's unit: a k chunk of both operands, or, when one operand moves, a range
     * of each destination's rows of op(A) ('m') or columns of op(B) ('n') with all of this
     * pass's k: tasks along that dimension start as their part lands */
    const bool ma = !s->ops[0].in_place, mb = !s->ops[1].in_place;
    const char mode = ma && mb ? 'k' : ma ? 'm' : 'n';
    int64_t unit, nunits;
    if (mode == 'k') {
        unit = s->kc;
        nunits = TESS__CEILDIV(kp, s->kc);
    } else {
        unit = TESS__MAX(1, s->cbytes / (kp * (int64_t)s->es));
        nunits = TESS__CEILDIV(mode == 'm' ? s->mmax : s->nmax, unit);
    }
    _Atomic int64_t ready = s->moving ? 0 : kp;
    const int pdev = s->xp ? s->xp->dev : -1;
    struct tess__gemm_opts jo = {
        .ready = s->moving ? &ready : NULL,
        .ready_dim = mode,
        .a_dev = ma ? pdev : -1,
        .b_dev = mb ? pdev : -1,
        .panel_share = s->heap > 0 ? (double)(s->abytes + s->bbytes) / (double)s->heap : 0,
        .keep_c = c->keep_c};
    struct tess__gemm_async *job = NULL;
    int jst = TESS_OK, cst = TESS_OK;
    if (s->mloc > 0 && s->nloc > 0)
        jst = tess__gemm_start(c->dt, c->ta, c->tb, s->mloc, s->nloc, kp, &c->alpha, Ap, lda, Bp,
                               ldb, p0 == 0 ? &c->beta : tess__scalar_one(c->dt), s->Cloc,
                               c->dc.lld, &jo, &job);
    if (s->moving) {
        double tc = tess__now();
        s->units += (int)nunits;
        cst = exchange(s, p0, p1, mode, unit, nunits, &ready,
                       mode == 'k'   ? kp
                       : mode == 'm' ? s->mloc
                                     : s->nloc);
        s->tcomm += tess__now() - tc;
        if (cst && job) tess__gemm_abort(job, cst);
    }
    if (job) jst = tess__gemm_finish(job); /* aborted: the exchange's message stands */
    return tess__comm_agree(s->g, cst ? cst : jst);
}

int tess__pgemm_statc(struct tess__comm_grid *g, const struct tess__pgemm_call *c,
                      struct tess__redist_op ops[2]) {
    struct statc s = {.g = g,
                      .c = c,
                      .ops = ops,
                      .es = tess__dtypes[c->dt].size,
                      .moving = !ops[0].in_place || !ops[1].in_place};
    int64_t r0, c0;
    const struct tess__comm_bc cr = tess__comm_desc_rows(&c->dc, g->at.nprow);
    const struct tess__comm_bc cc = tess__comm_desc_cols(&c->dc, g->at.npcol);
    tess__comm_bc_range(&cr, c->ic, c->m, g->at.myrow, &r0, &s.mloc);
    tess__comm_bc_range(&cc, c->jc, c->n, g->at.mycol, &c0, &s.nloc);
    /* C may be NULL where this rank holds none of it (then mloc or nloc is 0) */
    s.Cloc = c->C ? (char *)c->C + (size_t)(r0 + c0 * c->dc.lld) * s.es : NULL;
    int st = plan(&s);
    if (st) return st;
    const uint64_t d2d0 = s.xp ? s.xp->packed_d2d : 0;
    for (int64_t p0 = 0; p0 < c->k && !st; p0 += s.kpass) {
        s.passes++;
        st = run_pass(&s, p0, TESS__MIN(c->k, p0 + s.kpass));
    }
    struct tess_pgemm_stats *last = &g->pgemm.last;
    if (s.xp) {
        last->bytes_sent = s.xp->sent;
        last->bytes_received = s.xp->recvd;
        tess__xport_end(s.xp);
        if (s.panel_h) tess__xport_free(s.xp, s.panel_h);
        last->nccl = s.xp->dev >= 0;
        last->bytes_packed_d2d = s.xp->packed_d2d - d2d0;
        /* a device lost during an exchange ends the transport on every rank (st is agreed:
         * every rank gets here); the call's own status stands */
        if (st) (void)tess__xport_after_failure(g);
    }
    last->comm_seconds = s.tcomm;
    last->passes = s.passes;
    last->units = s.units;
    last->a_local = ops[0].in_place;
    last->b_local = ops[1].in_place;
    last->variant = 'C';
    return st;
}
