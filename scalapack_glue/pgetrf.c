/* scalapack_glue/pgetrf.c: p?getrf_ on a 1 x Q grid (Q > 1) whose transport is the device
 * one on one node (GPUs and NCCL; emulated devices with TESSERA_PGEMM_NCCL=2), sub(A)
 * starting a block: a right-looking block LU with partial pivoting, its panels and updates
 * on each process's devices. Each process holds its local part of sub(A) (every row: P = 1,
 * so a panel's pivot search needs no other process) as column strips, tile a multiple of
 * nb, for the whole call. Step k: the owner of block column k factors its panel (bpanel
 * GETRF, queued at step k - 1 behind the update of that block: the lookahead), whose task
 * then copies L out; INFO, the pivots and the owner's status go to every process in one
 * broadcast, L over the device transport; every process interchanges the rows of its other
 * columns, solves its U rows by L's unit lower block and updates the rows below (bpanel
 * UPDATE: the three as the steps of one task per strip part, L read in device memory,
 * U where it is, in the task's own tile): urgent, the owner of block k + 1 that
 * block, then its GETRF, and L's rows in the strip of the first trailing column; lazy, the
 * rest of the update (earlier columns first), then L's rows in strips all factored.
 * IPIV comes out as ScaLAPACK's on every process (local row = global row here).
 * Invariants: every process reaches each reduction and agreement of every step (a status
 * fails all of them alike: a process's status reaches the others at the next step's
 * reduction, or at the end, and one queued exchange is agreed before anyone waits for it); buffer L of step k (k % 3) is rewritten at step k + 3 only
 * after step k's jobs are done (step k + 2 starts by waiting for them), and the panel
 * k + 1 copied at step k lands in a buffer step k - 2 used; a failure after A was
 * written stops the job (the caller: glue_route_failed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "lapack.h"
#include "level3.h"

struct pl {
    tess_grid_t *g;
    tess_dtype_t dt;
    size_t es;
    int64_t m, n, nb, ja, T, lld, nloc, nk;
    struct tess__comm_bc C;
    int Q, me;
    char *Ah; /* sub(A)'s local part: m x nloc, ld lld */
    struct tess__dpanel *dp;
    int dev;
    int *piv;   /* each panel's pivots, relative to its first row (1-based) */
    int *hdr;   /* the broadcast: status, INFO, a panel's pivots */
    char *L[3]; /* device memory: panel k's L */
    void *h[3];
    struct tess__bp **jobs[3]; /* the jobs of step k at k % 3 */
    int nj[3], jcap;
    struct tess__bp *hg; /* the next panel's GETRF (and L's copy) on its owner */
    int64_t ginfo;       /* that GETRF's INFO */
    struct tess__dpiece *pc;
    double t[4]; /* panel and broadcast, L's exchange, queueing, waiting (VERBOSE=2) */
};

/* Local columns of sub(A)'s columns [s0, s1) on process column c, relative to sub(A)'s
 * local part: [*l0, *l0 + *cnt). */
static void cols_of(const struct pl *p, int64_t s0, int64_t s1, int c, int64_t *l0, int64_t *cnt) {
    tess__comm_bc_range(&p->C, p->ja + s0, s1 - s0, c, l0, cnt);
    *l0 -= tess__comm_bc_count(&p->C, p->ja, c);
}

static char *at(const struct pl *p, int64_t r, int64_t c) {
    return p->Ah + ((size_t)r + (size_t)c * (size_t)p->lld) * p->es;
}

/* Start one job on a region of the local part; added to step b's jobs unless *keep
 * is wanted (the lookahead's GETRF). */
static int job(struct pl *p, int b, struct tess__bp_args a, struct tess__bp **keep) {
    a.dt = p->dt;
    a.ldx = p->lld;
    a.uplo = 'L';
    struct tess__bp *h = NULL;
    int st = tess__bp_start(&a, &h);
    if (st) return st;
    if (keep)
        *keep = h;
    else
        p->jobs[b][p->nj[b]++] = h;
    return TESS_OK;
}

static int finish_jobs(struct pl *p, int b) {
    int st = TESS_OK;
    for (int i = 0; i < p->nj[b]; i++) {
        int r = tess__bp_finish(p->jobs[b][i], NULL);
        if (!st) st = r;
    }
    p->nj[b] = 0;
    return st;
}

/* Panel k's GETRF and the copy of its L on its owner: local columns [x, x + w). */
static int panel(struct pl *p, int64_t k, int64_t x, int64_t w) {
    const int64_t s0 = k * p->nb, mk = p->m - s0;
    struct tess__bp_args a = {.kind = TESS__BP_GETRF,
                              .X = at(p, s0, x),
                              .m = mk,
                              .n = w,
                              .ipiv = p->piv + s0,
                              .to = p->L[k % 3],
                              .ld_to = mk,
                              .to_dev = p->dev};
    return job(p, 0, a, &p->hg);
}

static int panel_end(struct pl *p) {
    int st = p->hg ? tess__bp_finish(p->hg, &p->ginfo) : TESS_OK;
    p->hg = NULL;
    return st;
}

/* Step k's update of my local columns [x, x + w) (trailing): rows interchanged, U solved,
 * the rows below updated (bpanel UPDATE: one task per strip part); swaps: the interchanges
 * alone (L's columns, bpanel LASWP). Lazy: below the critical path, an update above the
 * interchanges of L's columns. */
static int update(struct pl *p, int64_t k, int64_t x, int64_t w, bool lazy, bool swaps) {
    const int64_t s0 = k * p->nb, mk = p->m - s0, dk = TESS__MIN(mk, TESS__MIN(p->nb, p->n - s0));
    if (w <= 0) return TESS_OK;
    struct tess__bp_args a = {.kind = swaps ? TESS__BP_LASWP : TESS__BP_UPDATE,
                              .X = at(p, s0, x),
                              .m = mk,
                              .n = w,
                              .k = dk,
                              .ipiv = p->piv + s0,
                              .F = swaps ? NULL : p->L[k % 3],
                              .ldf = mk,
                              .f_dev = p->dev,
                              .lazy = lazy,
                              .pri = swaps ? 0 : 500};
    return job(p, (int)(k % 3), a, NULL);
}

/* Step k. *carry: this process's status not yet agreed (from the step before, and this
 * step's), which the next step's reduction makes everyone's; the return: an agreed one. */
static int step(struct pl *p, int64_t k, int64_t *info, int *carry) {
    tess_grid_t *g = p->g;
    const int b = (int)(k % 3);
    const int64_t s0 = k * p->nb, bk = TESS__MIN(p->nb, p->n - s0), s1 = s0 + bk, mk = p->m - s0,
                  dk = TESS__MIN(mk, bk);
    const int pc = tess__comm_bc_g2p(&p->C, p->ja + s0);
    const bool owner = p->me == pc;
    int64_t lft, n_, l0c, cntc;
    cols_of(p, s0, p->n, p->me, &lft, &n_); /* my columns left of the panel: [0, lft) */
    cols_of(p, s1, p->n, p->me, &l0c, &cntc);
    int st = TESS_OK;

    /* 1. every process's status, and the panel's INFO and pivots from its owner, in one
     * reduction (the others give zeros) */
    double t0 = tess__now();
    if (owner) {
        int r = panel_end(p);
        if (!*carry) *carry = r;
    }
    memset(p->hdr, 0, sizeof *p->hdr * (size_t)(2 + dk));
    p->hdr[0] = *carry != TESS_OK;
    if (owner && !*carry) {
        p->hdr[1] = (int)p->ginfo;
        memcpy(p->hdr + 2, p->piv + s0, sizeof *p->piv * (size_t)dk);
    }
    int mst = TESS__MPI(
        MPI_Allreduce(MPI_IN_PLACE, p->hdr, (int)(2 + dk), MPI_INT, MPI_MAX, g->comm));
    if (mst) return tess__comm_agree(g, mst);
    if (p->hdr[0]) return tess__comm_agree(g, *carry); /* the failed ones' word */
    if (!owner) memcpy(p->piv + s0, p->hdr + 2, sizeof *p->piv * (size_t)dk);
    if (p->hdr[1] > 0 && *info == 0) *info = s0 + p->hdr[1];
    double t1 = tess__now();
    p->t[0] += t1 - t0;

    /* 2. L to every process, where there are columns right of the panel */
    if (s1 < p->n) {
        struct tess__dpiece *s = p->pc, *r = p->pc + p->Q;
        int ns = 0, nr = 0;
        size_t bytes = (size_t)(mk * dk) * p->es;
        for (int q = 0; q < p->Q && owner; q++)
            if (q != p->me)
                s[ns++] = (struct tess__dpiece){tess__comm_grid_rank(g, 0, q), p->L[b], bytes};
        if (!owner) r[nr++] = (struct tess__dpiece){tess__comm_grid_rank(g, 0, pc), p->L[b], bytes};
        /* (queued everywhere, or nobody waits for it) */
        if ((st = tess__comm_agree(g, tess__dpanel_exchange(p->dp, s, ns, r, nr)))) return st;
        if ((*carry = tess__dpanel_sync(p->dp))) return TESS_OK;
    }
    double t2 = tess__now();
    p->t[1] += t2 - t1;

    /* 3. block k + 1 first where it is mine, then its panel, then the rest; L's rows: those
     * in the strip of my first trailing column at once (later blocks of that strip wait for
     * them), those in strips all factored below everything */
    int64_t next = 0, cs = lft / p->T * p->T;
    if (k + 1 < p->nk && tess__comm_bc_g2p(&p->C, p->ja + s1) == p->me)
        next = TESS__MIN(p->nb, p->n - s1);
    st = update(p, k, l0c, next, false, false);
    if (!st && next) st = panel(p, k + 1, l0c, next);
    if (!st) st = update(p, k, cs, lft - cs, false, true);
    if (!st) st = update(p, k, l0c + next, cntc - next, true, false);
    if (!st) st = update(p, k, 0, cs, true, true);
    p->t[2] += tess__now() - t2;
    *carry = st;
    return TESS_OK;
}

/* The steps, on p's hold; collective, the same status everywhere. */
static int steps(struct pl *p, int64_t *info) {
    const size_t es = p->es, nbb = (size_t)p->nb;
    p->jcap = 4; /* a step's: two updates, two of L's interchanges */
    int st = TESS_OK;
    for (int b = 0; b < 3; b++)
        if (!(p->jobs[b] = calloc((size_t)p->jcap, sizeof *p->jobs[b]))) st = TESS_ENOMEM;
    p->piv = calloc((size_t)TESS__MIN(p->m, p->n), sizeof *p->piv);
    p->hdr = calloc(nbb + 2, sizeof *p->hdr);
    p->pc = calloc(2 * (size_t)p->Q, sizeof *p->pc);
    if (!p->piv || !p->hdr || !p->pc) st = TESS_ENOMEM;
    if (st) st = tess__fail(st, "p?getrf: out of host memory");
    void *ptr[3] = {0};
    for (int i = 0; i < 3 && !st; i++)
        st = tess__dpanel_alloc(p->dp, (size_t)p->m * nbb * es, &ptr[i], &p->h[i]);
    for (int i = 0; i < 3; i++) p->L[i] = ptr[i];
    /* panel 0 on its owner */
    int64_t x0, w0;
    cols_of(p, 0, TESS__MIN(p->nb, p->n), p->me, &x0, &w0);
    if (!st && w0 > 0) st = panel(p, 0, x0, w0);
    st = tess__comm_agree(p->g, st);
    int carry = TESS_OK;
    for (int64_t k = 0; !st && k < p->nk; k++) {
        double t0 = tess__now();
        int r = k >= 2 ? finish_jobs(p, (int)((k - 2) % 3)) : TESS_OK;
        p->t[3] += tess__now() - t0;
        if (!carry) carry = r;
        st = step(p, k, info, &carry);
    }
    int r = panel_end(p);
    if (!st) st = carry ? carry : r;
    double t0 = tess__now();
    for (int b = 0; b < 3; b++) {
        r = p->jobs[b] ? finish_jobs(p, b) : TESS_OK;
        if (!st) st = r;
    }
    p->t[3] += tess__now() - t0;
    (void)tess__dpanel_sync(p->dp);
    for (int i = 0; i < 3; i++) tess__dpanel_free(p->dp, p->h[i]);
    for (int b = 0; b < 3; b++) free(p->jobs[b]);
    free(p->hdr), free(p->pc);
    return tess__comm_agree(p->g, st);
}

int glue_pgetrf(tess_grid_t *g, tess_dtype_t dt, int64_t m, int64_t n, void *A, int64_t ia,
                int64_t ja, const f_int *d, bool local_ok, f_int *ipiv, int64_t *info,
                bool *wrote) {
    struct pl p = {.g = g,
                   .dt = dt,
                   .es = tess__dtypes[dt].size,
                   .m = m,
                   .n = n,
                   .nb = d[4],
                   .ja = ja,
                   .lld = d[8]};
    p.Q = g->at.npcol, p.me = g->at.mycol;
    p.C = (struct tess__comm_bc){.n = d[3], .ib = d[5], .nb = d[5], .src = d[7], .np = p.Q};
    p.nk = (TESS__MIN(m, n) + p.nb - 1) / p.nb;
    int64_t lc0;
    tess__comm_bc_range(&p.C, ja, n, p.me, &lc0, &p.nloc);
    p.Ah = (char *)A + ((size_t)ia + (size_t)lc0 * (size_t)p.lld) * p.es;
    struct tess__config cfg; /* TESSERA_TILE: the strips' width, in whole blocks */
    int64_t want = tess__config_load(&cfg) == TESS_OK && cfg.tile > 0 ? cfg.tile : 2048;
    p.T = p.nb * TESS__MAX(1, (want + p.nb - 1) / p.nb);
    *info = 0;
    *wrote = false;
    if (g->at.nprow != 1 || ia % p.nb || ja % p.nb) return TESS_ENOSYS; /* the same everywhere */
    struct tess__dpanel dp = {0};
    int st = tess__dpanel_open(g, &dp);
    if (st) {
        tess__clear_error();
        return st;
    }
    p.dp = &dp, p.dev = dp.dev;
    double t0 = tess__now();
    tess__autostart_enter();
    struct tess__rt *rt = NULL;
    bool held = false;
    if (!local_ok) st = tess__fail(TESS_EINVAL, "p?getrf: a local argument (LLD_A)");
    if (!st) st = tess__rt_get(&rt);
    if (!st && p.nloc > 0) {
        size_t es = p.es;
        int v = tess__hold_view(rt, "p?getrf", p.Ah, m, p.nloc, p.lld, es,
                                &(struct tess__hview){0});
        if (v < -1) st = TESS_EINVAL;
        if (!st && v != 0) st = tess__hold_unheld(rt, "p?getrf", p.Ah, m, p.nloc, p.lld, es, true);
        struct tess__hview hv;
        if (!st) st = tess__hold_strips(rt, dt, p.Ah, p.lld, m, p.nloc, p.T, &hv);
        held = !st;
    }
    st = tess__comm_agree(g, st);
    double t1 = tess__now();
    if (!st) {
        *wrote = true;
        st = steps(&p, info);
        glue_count_device(GLUE_GETRF, dt);
    }
    double t2 = tess__now();
    if (held) st = glue_release(p.Ah, st);
    if (rt) tess__rt_put(rt);
    double t3 = tess__now();
    st = tess__comm_agree(g, st);
    if (!st) /* ScaLAPACK's IPIV: local row = global row on one process row */
        for (int64_t i = 0; i < TESS__MIN(m, n); i++)
            ipiv[ia + i] = (f_int)(ia + i / p.nb * p.nb + p.piv[i]);
    if (glue_knobs()->verbose >= 2)
        fprintf(stderr,
                "tessera-scalapack: rank %d: p?getrf, panels on the devices (%lld x %lld, nb "
                "%lld): set-up %.3f s, steps %.3f s (panel %.3f, exchange %.3f, queueing %.3f, "
                "wait %.3f), write-back %.3f s\n",
                glue_world_rank(), (long long)m, (long long)n, (long long)p.nb, t1 - t0, t2 - t1,
                p.t[0], p.t[1], p.t[2], p.t[3], t3 - t2);
    tess__autostart_leave();
    free(p.piv);
    return st;
}
