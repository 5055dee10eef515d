/* scalapack_glue/ppotrf_dev.c: the glue's distributed Cholesky with its panels on the
 * devices, where the grid's ranks share one node and the grid's device transport (comm
 * dpanel.c: NCCL on GPUs, MPI between emulated devices' arenas): the held local part never
 * goes back to the host during the call. Step k (L; U swaps rows and columns): the owner
 * of diagonal block k factors it on its held tile (bpanel POTRF); the processes of its
 * process column solve their rows of the panel on their held tiles (bpanel TRSM, by the
 * held factor when that column is the owner alone, else by a copy sent to them) and copy
 * them out packed (bpanel COPY: Wr); the packs go along the process rows, then across the
 * process column (full), the columns' rows are gathered from them (Wc), and one GEMM per
 * hold tile column updates the trailing part on its held tiles, Wr and Wc read in device
 * memory. Each job waits for the tiles it reads by the hold's dependency tables, so step
 * k + 1's panel starts once its own tiles are updated while step k's other GEMMs run.
 * Invariants: every rank agrees on the status before each exchange and once it is queued,
 * before anything waits for it (a rank that failed never leaves a peer waiting on one);
 * buffer b = k % 2 is rewritten at step k only after step k - 2's GEMMs, which read it,
 * are done.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lapack.h"
#include "ppotrf.h"

struct dv {
    struct pp *p;
    struct tess__dpanel *dp;
    char *Wr[2], *Wc[2], *full, *D; /* device memory */
    void *h[6];
    int64_t *off;                    /* per process of the gather: its pack in full */
    struct tess__gemm_async **gj[2]; /* the GEMMs of the step that used buffer b */
    int ng[2];
    int64_t gcap;
    struct tess__dpiece *pc_s, *pc_r; /* pieces of one exchange */
    /* seconds the caller spent: the diagonal block and INFO, the panel's solve and copy,
     * the exchanges, queueing the updates, waiting for them (TESSERA_SCALAPACK_VERBOSE=2) */
    double t[5];
};

static int finish_gemms(struct dv *v, int b) {
    int st = TESS_OK;
    for (int i = 0; i < v->ng[b]; i++) {
        int r = tess__gemm_finish(v->gj[b][i]);
        if (!st) st = r;
    }
    v->ng[b] = 0;
    return st;
}

/* (the panel's copy-out is the last job on its tiles: their write-behind starts there) */
static int bp(enum tess__bp_kind kind, const struct pp *p, char *X, int64_t m, int64_t n,
              const void *F, int64_t ldf, int f_dev, void *to, int64_t ld_to, int to_dev, bool fin,
              struct tess__bp **h) {
    struct tess__bp_args a = {.kind = kind,
                              .dt = p->dt,
                              .uplo = p->up ? 'U' : 'L',
                              .X = X,
                              .ldx = p->lld,
                              .m = m,
                              .n = n,
                              .F = F,
                              .ldf = ldf,
                              .f_dev = f_dev,
                              .to = to,
                              .ld_to = ld_to,
                              .to_dev = to_dev,
                              .final = fin};
    return tess__bp_start(&a, h);
}

static int bp_end(struct tess__bp **h, int64_t *info, int st) {
    if (!*h) return st;
    int r = tess__bp_finish(*h, info);
    *h = NULL;
    return st ? st : r;
}

/* Process (r, c)'s grid rank. */
static int rank_of(const struct pp *p, int r, int c) { return tess__comm_grid_rank(p->g, r, c); }

/* Step 4's copies (pp_other_w) in device memory, from my own pack or the gathered ones: U,
 * Wr's columns of my trailing rows, a bk x w block; L, Wc's rows of my trailing columns,
 * bk columns of w. */
struct dev_w {
    struct dv *v;
    int b;
    int64_t bk, l0r, l0c, cntc;
};
static int dev_run(void *arg, int q, int64_t l, int64_t off, int64_t w, int64_t c0) {
    const struct dev_w *d = arg;
    const struct pp *p = d->v->p;
    const size_t es = p->es, bk = (size_t)d->bk;
    if (p->up) {
        const char *src = q == p->me_c ? d->v->Wc[d->b] : d->v->full + d->v->off[q];
        return tess__dpanel_copy(d->v->dp, TESS__D2D,
                                 d->v->Wr[d->b] + (size_t)(l - d->l0r) * bk * es,
                                 (size_t)w * bk * es, src + (size_t)off * bk * es,
                                 (size_t)w * bk * es, (size_t)w * bk * es, 1);
    }
    const char *src = q == p->me_r ? d->v->Wr[d->b] : d->v->full + d->v->off[q];
    return tess__dpanel_copy(d->v->dp, TESS__D2D, d->v->Wc[d->b] + (size_t)(l - d->l0c) * es,
                             (size_t)d->cntc * es, src + (size_t)off * es, (size_t)c0 * es,
                             (size_t)w * es, bk);
}

/* Step k (the buffers b = k % 2 free). */
static int step(struct dv *v, int64_t k, int64_t *info) {
    struct pp *p = v->p;
    tess_grid_t *g = p->g;
    const bool up = p->up;
    const size_t es = p->es;
    const int dev = v->dp->dev, b = (int)(k % 2);
    const int64_t s0 = k * p->nb, bk = TESS__MIN(p->nb, p->n - s0), s1 = s0 + bk;
    const int pr = tess__comm_bc_g2p(&p->R, p->ia + s0), pc = tess__comm_bc_g2p(&p->C, p->ja + s0);
    int64_t lr, cr, lc, cc, l0r, cntr, l0c, cntc;
    rows_of(p, s0, s1, pr, &lr, &cr);
    cols_of(p, s0, s1, pc, &lc, &cc);
    rows_of(p, s1, p->n, p->me_r, &l0r, &cntr);
    cols_of(p, s1, p->n, p->me_c, &l0c, &cntc);
    const bool owner = p->me_r == pr && p->me_c == pc;
    /* the panel's processes (L: process column pc; U: process row pr); the factor's users
     * are those of the owner's column (row): alone when there is one process row (column) */
    const bool panel = up ? p->me_r == pr : p->me_c == pc;
    const bool alone = (up ? p->Q : p->P) == 1;
    const int64_t pn = up ? cntc : cntr;   /* my part of the panel, packed: L pn x bk, U bk x pn */
    char *mine = up ? v->Wc[b] : v->Wr[b]; /* the pack: mine, or the panel process's */
    char *X = up ? at(p, p->Ah, lr, l0c, p->lld) : at(p, p->Ah, l0r, lc, p->lld);
    char *Dk = at(p, p->Ah, lr, lc, p->lld);
    int st = TESS_OK;
    int64_t dinfo = 0;
    struct tess__bp *hp = NULL, *hs0 = NULL, *hs = NULL, *hc = NULL, *hd = NULL;

    double t0 = tess__now();
    /* 1. the diagonal block on its owner; alone, its panel at once (held factor) */
    if (owner) {
        st = bp(TESS__BP_POTRF, p, Dk, bk, bk, NULL, 0, -1, NULL, 0, -1, false, &hp);
        if (!st && alone && pn > 0 && s1 < p->n) {
            /* the part in the factor's own tile first (its tasks read the factor there),
             * then the rest, which reads that tile once it is written */
            int64_t first = up ? l0c : l0r;
            first = first % p->T ? TESS__MIN(pn, p->T - first % p->T) : 0;
            char *X2 = up ? at(p, X, 0, first, p->lld) : at(p, X, first, 0, p->lld);
            if (first)
                st = up ? bp(TESS__BP_TRSM, p, X, bk, first, Dk, p->lld, -1, NULL, 0, -1, false,
                             &hs0)
                        : bp(TESS__BP_TRSM, p, X, first, bk, Dk, p->lld, -1, NULL, 0, -1, false,
                             &hs0);
            if (!st && pn > first)
                st = up ? bp(TESS__BP_TRSM, p, X2, bk, pn - first, Dk, p->lld, -1, NULL, 0, -1,
                             false, &hs)
                        : bp(TESS__BP_TRSM, p, X2, pn - first, bk, Dk, p->lld, -1, NULL, 0, -1,
                             false, &hs);
            if (!st)
                st = up ? bp(TESS__BP_COPY, p, X, bk, pn, NULL, 0, -1, mine, bk, dev, true, &hc)
                        : bp(TESS__BP_COPY, p, X, pn, bk, NULL, 0, -1, mine, pn, dev, true, &hc);
        } else if (!st && !alone && s1 < p->n) {
            st = bp(TESS__BP_COPY, p, Dk, bk, bk, NULL, 0, -1, v->D, bk, dev, false, &hd);
        }
        st = bp_end(&hp, &dinfo, st);
        st = bp_end(&hd, NULL, st);
    }
    long long mine2[2] = {st != TESS_OK, dinfo}, all[2];
    int mst = TESS__MPI(MPI_Allreduce(mine2, all, 2, MPI_LONG_LONG, MPI_MAX, g->comm));
    double t1 = tess__now();
    v->t[0] += t1 - t0;
    if (mst || all[0] || all[1] > 0 || s1 == p->n) {
        st = bp_end(&hs0, NULL, st);
        st = bp_end(&hs, NULL, st);
        st = bp_end(&hc, NULL, st);
        if (mst) return mst;
        if (all[0])
            return st ? st
                      : tess__fail(TESS_EDEVICE,
                                   "p?potrf: the diagonal block %lld failed on "
                                   "another process",
                                   (long long)k);
        if (all[1] > 0) *info = s0 + all[1];
        return st;
    }

    /* 2. not alone: the factor to the panel's processes, which solve their part */
    if (!alone && panel) {
        struct tess__dpiece *s = v->pc_s, *r = v->pc_r;
        int ns = 0, nr = 0, np = up ? p->Q : p->P;
        for (int q = 0; q < np; q++) {
            int rk = up ? rank_of(p, pr, q) : rank_of(p, q, pc);
            if (rk == g->rank) continue;
            if (owner) s[ns++] = (struct tess__dpiece){rk, v->D, (size_t)(bk * bk) * es};
        }
        if (!owner)
            r[nr++] = (struct tess__dpiece){rank_of(p, pr, pc), v->D, (size_t)(bk * bk) * es};
        st = tess__dpanel_exchange(v->dp, s, ns, r, nr);
    }
    /* (queued everywhere, or nobody waits for it: a rank whose exchange failed to queue
     * must not leave its peers waiting on theirs) */
    if (!alone && (st = tess__comm_agree(g, st))) return st;
    if (!alone && panel) {
        st = tess__dpanel_sync(v->dp);
        if (!st && pn > 0)
            st = up ? bp(TESS__BP_TRSM, p, X, bk, pn, v->D, bk, dev, NULL, 0, -1, false, &hs)
                    : bp(TESS__BP_TRSM, p, X, pn, bk, v->D, bk, dev, NULL, 0, -1, false, &hs);
        if (!st && pn > 0)
            st = up ? bp(TESS__BP_COPY, p, X, bk, pn, NULL, 0, -1, mine, bk, dev, true, &hc)
                    : bp(TESS__BP_COPY, p, X, pn, bk, NULL, 0, -1, mine, pn, dev, true, &hc);
    }
    st = bp_end(&hs0, NULL, st);
    st = bp_end(&hs, NULL, st);
    st = bp_end(&hc, NULL, st);
    if ((st = tess__comm_agree(g, st))) return st;
    double t2 = tess__now();
    v->t[1] += t2 - t1;

    /* 3. the pack along the process rows (L; U: down the process columns), from the panel's
     * process: Wr (U: Wc) */
    {
        struct tess__dpiece *s = v->pc_s, *r = v->pc_r;
        int ns = 0, nr = 0, np = up ? p->P : p->Q;
        size_t bytes = (size_t)(pn * bk) * es;
        for (int q = 0; q < np && panel && bytes; q++) {
            int rk = up ? rank_of(p, q, p->me_c) : rank_of(p, p->me_r, q);
            if (rk != g->rank) s[ns++] = (struct tess__dpiece){rk, mine, bytes};
        }
        if (!panel && bytes)
            r[nr++] = (struct tess__dpiece){up ? rank_of(p, pr, p->me_c) : rank_of(p, p->me_r, pc),
                                            mine, bytes};
        st = tess__dpanel_exchange(v->dp, s, ns, r, nr);
    }
    if ((st = tess__comm_agree(g, st))) return st;
    /* 4. every pack of the other direction (L: the process rows' of my column; U: the
     * process columns' of my row) into full, then the other W a run of blocks at a time */
    const int np = up ? p->Q : p->P;
    if (!st && np > 1) {
        struct tess__dpiece *s = v->pc_s, *r = v->pc_r;
        int ns = 0, nr = 0;
        int64_t o = 0;
        for (int q = 0; q < np; q++) {
            int64_t l, c;
            if (up)
                cols_of(p, s1, p->n, q, &l, &c);
            else
                rows_of(p, s1, p->n, q, &l, &c);
            v->off[q] = o;
            int rk = up ? rank_of(p, p->me_r, q) : rank_of(p, q, p->me_c);
            size_t bytes = (size_t)(c * bk) * es;
            if (rk != g->rank && bytes) r[nr++] = (struct tess__dpiece){rk, v->full + o, bytes};
            if (rk != g->rank && pn > 0) /* my rows' (U: columns') panel */
                s[ns++] = (struct tess__dpiece){rk, mine, (size_t)(pn * bk) * es};
            o += (int64_t)bytes;
        }
        st = tess__dpanel_exchange(v->dp, s, ns, r, nr);
        if ((st = tess__comm_agree(g, st))) return st;
    }
    struct dev_w dw = {v, b, bk, l0r, l0c, cntc};
    if (!st) st = pp_other_w(p, s1, dev_run, &dw);
    if (!st) st = tess__dpanel_sync(v->dp);
    if ((st = tess__comm_agree(g, st))) return st;
    double t3 = tess__now();
    v->t[2] += t3 - t2;

    /* 5. the trailing update: one GEMM per hold tile column of my trailing columns, Wr and
     * Wc in device memory, C held (L: from the rows of its first block on; U: down to the
     * end of its last block: band()) */
    const tess__scalar_t m1 = tess__l3_minus_one(p->dt),
                         one = *(const tess__scalar_t *)tess__scalar_one(p->dt);
    const char ct = tess__dtypes[p->dt].complex_ ? 'C' : 'T';
    const struct tess__gemm_opts o = {.a_dev = dev, .b_dev = dev, .keep_c = true, .stable = true};
    for (int64_t x0 = l0c; !st && cntr > 0 && x0 < l0c + cntc;) {
        int64_t x1, rs, re;
        update_part(p, x0, l0c, cntc, l0r, cntr, &x1, &rs, &re);
        struct tess__gemm_async *h = NULL;
        if (re > rs)
            st = up ? tess__gemm_start(p->dt, ct, 'N', re - rs, x1 - x0, bk, &m1,
                                       v->Wr[b] + (size_t)((rs - l0r) * bk) * es, bk,
                                       v->Wc[b] + (size_t)((x0 - l0c) * bk) * es, bk, &one,
                                       at(p, p->Ah, rs, x0, p->lld), p->lld, &o, &h)
                    : tess__gemm_start(p->dt, 'N', ct, re - rs, x1 - x0, bk, &m1,
                                       v->Wr[b] + (size_t)(rs - l0r) * es, cntr,
                                       v->Wc[b] + (size_t)(x0 - l0c) * es, cntc, &one,
                                       at(p, p->Ah, rs, x0, p->lld), p->lld, &o, &h);
        if (h) v->gj[b][v->ng[b]++] = h;
        x0 = x1;
    }
    v->t[3] += tess__now() - t3;
    return tess__comm_agree(g, st);
}

int glue_ppotrf_dev(struct pp *p, struct tess__dpanel *dp, int64_t *info) {
    struct dv v = {.p = p, .dp = dp};
    const size_t es = p->es, nbb = (size_t)p->nb;
    int np = p->up ? p->Q : p->P, nx = TESS__MAX(p->P, p->Q);
    int64_t all = 0;
    for (int q = 0; q < np; q++) {
        int64_t l, c;
        tess__comm_bc_range(p->up ? &p->C : &p->R, p->up ? p->ja : p->ia, p->n, q, &l, &c);
        all += c;
    }
    v.gcap = p->nloc / p->T + 2;
    v.off = calloc((size_t)np, sizeof *v.off);
    v.pc_s = calloc((size_t)nx, sizeof *v.pc_s);
    v.pc_r = calloc((size_t)nx, sizeof *v.pc_r);
    for (int b = 0; b < 2; b++) v.gj[b] = calloc((size_t)v.gcap, sizeof *v.gj[b]);
    int st = v.off && v.pc_s && v.pc_r && v.gj[0] && v.gj[1]
                 ? TESS_OK
                 : tess__fail(TESS_ENOMEM, "p?potrf: out of host memory");
    size_t bytes[6] = {
        (size_t)TESS__MAX(1, p->mloc) * nbb * es,          (size_t)TESS__MAX(1, p->mloc) * nbb * es,
        (size_t)TESS__MAX(1, p->nloc) * nbb * es,          (size_t)TESS__MAX(1, p->nloc) * nbb * es,
        (size_t)TESS__MAX(1, np > 1 ? all : 1) * nbb * es, nbb * nbb * es};
    void *ptr[6] = {0};
    for (int i = 0; i < 6 && !st; i++) st = tess__dpanel_alloc(dp, bytes[i], &ptr[i], &v.h[i]);
    v.Wr[0] = ptr[0], v.Wr[1] = ptr[1], v.Wc[0] = ptr[2], v.Wc[1] = ptr[3];
    v.full = ptr[4], v.D = ptr[5];
    if ((st = tess__comm_agree(p->g, st)) == TESS_OK)
        for (int64_t k = 0; !st && !*info && k * p->nb < p->n; k++) {
            double t0 = tess__now();
            int r = finish_gemms(&v, (int)(k % 2));
            v.t[4] += tess__now() - t0;
            st = tess__comm_agree(p->g, r);
            if (!st) st = step(&v, k, info);
        }
    for (int b = 0; b < 2; b++) {
        int r = v.gj[b] ? finish_gemms(&v, b) : TESS_OK;
        if (!st) st = r;
    }
    (void)tess__dpanel_sync(dp);
    if (glue_knobs()->verbose >= 2)
        fprintf(stderr,
                "tessera-scalapack: rank %d: p?potrf, panels on the devices (n %lld, nb %lld): "
                "diagonal %.3f s, panel %.3f s, exchange %.3f s, update queueing %.3f s, "
                "update wait %.3f s\n",
                glue_world_rank(), (long long)p->n, (long long)p->nb, v.t[0], v.t[1], v.t[2],
                v.t[3], v.t[4]);
    for (int i = 0; i < 6; i++) tess__dpanel_free(dp, v.h[i]);
    free(v.off), free(v.pc_s), free(v.pc_r), free(v.gj[0]), free(v.gj[1]);
    return tess__comm_agree(p->g, st);
}
