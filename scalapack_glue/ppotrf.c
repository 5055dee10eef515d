/* scalapack_glue/ppotrf.c: p?potrf_ on a grid of several processes: a right-looking block
 * Cholesky over the descriptor's blocks (nb = MB_ = NB_), UPLO 'L' (A = L L^H) or 'U' (A =
 * U^H U), whose trailing updates stay on each process's devices for the whole call. Owns
 * the call (buffers, the hold of each process's part of sub(A), tile a multiple of nb, the
 * band, the choice of path) and the path whose panels go through host memory; the path
 * whose panels stay on the devices is ppotrf_dev.c. Here, step k: the owner of diagonal
 * block k writes it back (only its tiles: tess__l3_unhold), factors it on the host
 * (tess_?potrf of a copy) and the grid agrees on INFO; the block goes to the processes of
 * its panel (L: block column k, its process column; U: block row k, its process row),
 * which solve their part of it (tess_?trsm: the panel's tiles written back and dropped);
 * the panel goes to the processes sharing those rows (L) or columns (U), and is gathered
 * across the other direction, so that every process has the panel rows of its trailing
 * rows (Wr) and columns (Wc); then one asynchronous GEMM per hold tile column updates the
 * trailing triangle, all three operands held on one tile grid, so the calls return at once
 * and run in tile order. Those GEMMs write some rows of the other triangle too (band()):
 * they are saved at the start and put back at the end (ScaLAPACK does not reference them).
 * INFO > 0 stops at that block, as ScaLAPACK does.
 * Invariants: every process takes this call and the same path or none (one agreement,
 * before anything is written); each MPI step is reached by every process of its
 * communicator; a failure of tessera after A was written stops the job
 * (glue_route_failed), since its input is lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppotrf.h"

/* The rows of local column x the updates may write in the other triangle: a GEMM covers the
 * local columns of one hold tile column, L: from the rows of its first block on, so in
 * column x the rows [row_from(the block start of the tile column's first column),
 * row_from(its own sub column)) are strict upper ones; U: down to the end of its last
 * block, so the rows [row_from(x's sub column + 1), row_from(that block's end)) are strict
 * lower ones. */
static void band(const struct pp *p, int64_t x, int64_t *r0, int64_t *r1) {
    int64_t sc = sub_col(p, x);
    if (!p->up) {
        *r0 = row_from(p, sub_col(p, x / p->T * p->T) / p->nb * p->nb);
        *r1 = row_from(p, sc);
        return;
    }
    int64_t last = sub_col(p, TESS__MIN(p->nloc, (x / p->T + 1) * p->T) - 1);
    *r0 = row_from(p, sc + 1);
    *r1 = row_from(p, TESS__MIN(p->n, (last / p->nb + 1) * p->nb));
}

/* Those rows of every local column: save (dir 0) or put back (dir 1). */
static void band_copy(struct pp *p, int dir) {
    size_t off = 0;
    for (int64_t x = 0; x < p->nloc; x++) {
        int64_t r0, r1;
        band(p, x, &r0, &r1);
        if (r1 <= r0) continue;
        char *a = at(p, p->Ah, r0, x, p->lld);
        size_t len = (size_t)(r1 - r0) * p->es;
        if (dir)
            memcpy(a, p->band + off, len);
        else
            memcpy(p->band + off, a, len);
        off += len;
    }
}

static size_t band_bytes(const struct pp *p) {
    size_t b = 0;
    for (int64_t x = 0; x < p->nloc; x++) {
        int64_t r0, r1;
        band(p, x, &r0, &r1);
        if (r1 > r0) b += (size_t)(r1 - r0) * p->es;
    }
    return b;
}

/* Step 4's copies (pp_other_w) into host memory: U, Wr's columns of my rows, a bk x w
 * block; L, Wc's rows of my columns, bk columns of w. */
struct host_w {
    const struct pp *p;
    const char *full;
    char *Wr, *Wc;
    int64_t bk;
};
static int host_run(void *arg, int q, int64_t l, int64_t off, int64_t w, int64_t c0) {
    const struct host_w *h = arg;
    const struct pp *p = h->p;
    const size_t es = p->es;
    const char *src = h->full + p->displ[q];
    if (p->up) {
        memcpy(at(p, h->Wr, 0, l, h->bk), src + (size_t)(off * h->bk) * es,
               (size_t)(w * h->bk) * es);
        return 0;
    }
    for (int64_t j = 0; j < h->bk; j++)
        memcpy(at(p, h->Wc, l, j, p->nloc), src + (size_t)(off + j * c0) * es, (size_t)w * es);
    return 0;
}

/* Step k's panel: factor, solve, exchange, update. *info: INFO > 0 of the diagonal block.
 * L: the panel is block column k, solved in its process column pc, sent along the process
 * rows (Wr) and gathered in each process column (Wc); U: block row k, solved in its
 * process row pr, sent down the process columns (Wc) and gathered in each process row. */
static int step(struct pp *p, int64_t k, int64_t *info) {
    tess_grid_t *g = p->g;
    const int64_t s0 = k * p->nb, bk = TESS__MIN(p->nb, p->n - s0), s1 = s0 + bk;
    const int pr = tess__comm_bc_g2p(&p->R, p->ia + s0), pc = tess__comm_bc_g2p(&p->C, p->ja + s0);
    const bool up = p->up;
    const tess_trans_t ct = tess__dtypes[p->dt].complex_ ? TESS_CONJ_TRANS : TESS_TRANS;
    const size_t es = p->es;
    int st = TESS_OK;
    int64_t lr, cr, lc, cc;
    rows_of(p, s0, s1, pr, &lr, &cr);
    cols_of(p, s0, s1, pc, &lc, &cc);

    /* 1. the diagonal block, on its owner (its tiles written back first) */
    int64_t dinfo = 0;
    if (p->me_r == pr && p->me_c == pc) {
        char *X = at(p, p->Ah, lr, lc, p->lld);
        st = tess__l3_unhold("p?potrf", X, bk, bk, p->lld, p->dt, true);
        for (int64_t j = 0; !st && j < bk; j++)
            memcpy(p->D + (size_t)(j * bk) * es, at(p, X, 0, j, p->lld), (size_t)bk * es);
        if (!st)
            st = tess_potrf(p->dt, TESS_COL_MAJOR, up ? TESS_UPPER : TESS_LOWER, bk, p->D, bk,
                            &dinfo);
        for (int64_t j = 0; !st && j < bk; j++)
            memcpy(at(p, X, 0, j, p->lld), p->D + (size_t)(j * bk) * es, (size_t)bk * es);
    }
    /* every process: the owner's INFO, and whether any failed */
    long long mine[2] = {st != TESS_OK, dinfo}, all[2];
    if ((st = TESS__MPI(MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, g->comm)))) return st;
    if (all[0])
        return tess__fail(TESS_EDEVICE, "p?potrf: the diagonal block %lld failed", (long long)k);
    if (all[1] > 0) {
        *info = s0 + all[1];
        return TESS_OK;
    }
    if (s1 == p->n) return TESS_OK;

    /* 2. the panel: L_ik = A_ik L_kk^-H below the diagonal block (in process column pc), or
     * U_kj = U_kk^-H A_kj right of it (in process row pr); packed: L cntr x bk, U bk x cntc */
    int64_t l0r, cntr, l0c, cntc; /* my trailing rows and columns */
    rows_of(p, s1, p->n, p->me_r, &l0r, &cntr);
    cols_of(p, s1, p->n, p->me_c, &l0c, &cntc);
    const int b = k % 2;
    char *Wr = p->Wr[b], *Wc = p->Wc[b];
    if (p->wheld[b]) { /* step k - 2's: its GEMMs are done (step k - 1 waited for them) */
        st = tess_release(Wr);
        if (!st) st = tess_release(Wc);
        p->wheld[b] = false;
    }
    const int64_t pn = up ? cntc : cntr; /* the packed panel's length */
    if (up ? p->me_r == pr : p->me_c == pc) {
        if (!st)
            st = TESS__MPI(MPI_Bcast(p->D, (int)(bk * bk * (int64_t)es), MPI_BYTE, up ? pc : pr,
                                     up ? g->row : g->col));
        char *X = up ? at(p, p->Ah, lr, l0c, p->lld) : at(p, p->Ah, l0r, lc, p->lld);
        if (!st && pn > 0)
            st = up ? tess_trsm(p->dt, TESS_COL_MAJOR, TESS_LEFT, TESS_UPPER, ct, TESS_NON_UNIT, bk,
                                cntc, tess__scalar_one(p->dt), p->D, bk, X, p->lld)
                    : tess_trsm(p->dt, TESS_COL_MAJOR, TESS_RIGHT, TESS_LOWER, ct, TESS_NON_UNIT,
                                cntr, bk, tess__scalar_one(p->dt), p->D, bk, X, p->lld);
        int64_t rows = up ? bk : cntr, cols = up ? cntc : bk;
        for (int64_t j = 0; !st && j < cols; j++)
            memcpy(p->pack + (size_t)(j * rows) * es, at(p, X, 0, j, p->lld), (size_t)rows * es);
    }
    if ((st = tess__comm_agree(g, st))) return st;

    /* 3. the pack to the processes that share my trailing rows (L) or columns (U): Wr's
     * (L) or Wc's (U) trailing part */
    if (pn > 0)
        st = TESS__MPI(MPI_Bcast(p->pack, (int)(pn * bk * (int64_t)es), MPI_BYTE, up ? pr : pc,
                                 up ? g->col : g->row));
    if (up && !st && cntc > 0) memcpy(at(p, Wc, 0, l0c, bk), p->pack, (size_t)(cntc * bk) * es);
    for (int64_t j = 0; !up && !st && j < bk; j++)
        memcpy(at(p, Wr, l0r, j, p->mloc), p->pack + (size_t)(j * cntr) * es, (size_t)cntr * es);

    /* 4. every pack of the other direction (L: the process rows', in my process column; U:
     * the process columns', in my process row); then the other W, a run of local blocks at
     * a time (pp_other_w: their panel rows one run of one process's pack) */
    const int np = up ? p->Q : p->P;
    for (int q = 0, d = 0; q < np; q++) {
        int64_t l, c;
        if (up)
            cols_of(p, s1, p->n, q, &l, &c);
        else
            rows_of(p, s1, p->n, q, &l, &c);
        p->cnt[q] = (int)(c * bk * (int64_t)es);
        p->displ[q] = d;
        d += p->cnt[q];
    }
    const char *full = np == 1 ? p->pack : p->full; /* one process: its own */
    if (!st && np > 1)
        st = TESS__MPI(MPI_Allgatherv(p->pack, p->cnt[up ? p->me_c : p->me_r], MPI_BYTE, p->full,
                                      p->cnt, p->displ, MPI_BYTE, up ? g->row : g->col));
    struct host_w hw = {p, full, Wr, Wc, bk};
    if (!st) st = pp_other_w(p, s1, host_run, &hw);
    if ((st = tess__comm_agree(g, st))) return st;

    /* 5. the trailing update: Wr and Wc held on the tile grid of A's hold, then one
     * asynchronous GEMM per hold tile column of my trailing columns: L: A_IJ -= L_Ik L_Jk^H
     * from the rows of its first block on; U: A_IJ -= U_kI^H U_kJ down to the end of its
     * last block (the rows of the other triangle they write: band()) */
    if (cntr > 0 && cntc > 0) {
        st = up ? tess_hold(p->dt, Wr, bk, bk, p->mloc, p->T)
                : tess_hold(p->dt, Wr, p->mloc, p->mloc, bk, p->T);
        if (!st && (st = up ? tess_hold(p->dt, Wc, bk, bk, p->nloc, p->T)
                            : tess_hold(p->dt, Wc, p->nloc, p->nloc, bk, p->T)))
            (void)tess_release(Wr);
        p->wheld[b] = !st;
    }
    const tess__scalar_t m1 = tess__l3_minus_one(p->dt);
    for (int64_t x0 = l0c; !st && cntr > 0 && x0 < l0c + cntc;) {
        int64_t x1, rs, re;
        update_part(p, x0, l0c, cntc, l0r, cntr, &x1, &rs, &re);
        if (re > rs)
            st = up ? tess_gemm(p->dt, TESS_COL_MAJOR, ct, TESS_NO_TRANS, re - rs, x1 - x0, bk, &m1,
                                at(p, Wr, 0, rs, bk), bk, at(p, Wc, 0, x0, bk), bk,
                                tess__scalar_one(p->dt), at(p, p->Ah, rs, x0, p->lld), p->lld)
                    : tess_gemm(p->dt, TESS_COL_MAJOR, TESS_NO_TRANS, ct, re - rs, x1 - x0, bk, &m1,
                                at(p, Wr, rs, 0, p->mloc), p->mloc, at(p, Wc, x0, 0, p->nloc),
                                p->nloc, tess__scalar_one(p->dt), at(p, p->Ah, rs, x0, p->lld),
                                p->lld);
        x0 = x1;
    }
    return tess__comm_agree(g, st);
}

int glue_ppotrf(tess_grid_t *g, tess_dtype_t dt, char uplo, int64_t n, void *A, int64_t ia,
                int64_t ja, const f_int *d, bool local_ok, int64_t *info, bool *wrote) {
    struct pp p = {.g = g,
                   .dt = dt,
                   .es = tess__dtypes[dt].size,
                   .n = n,
                   .nb = d[4],
                   .ia = ia,
                   .ja = ja,
                   .A = A,
                   .lld = d[8],
                   .up = uplo == 'U'};
    p.P = g->at.nprow, p.Q = g->at.npcol, p.me_r = g->at.myrow, p.me_c = g->at.mycol;
    p.R = (struct tess__comm_bc){.n = d[2], .ib = d[4], .nb = d[4], .src = d[6], .np = p.P};
    p.C = (struct tess__comm_bc){.n = d[3], .ib = d[5], .nb = d[5], .src = d[7], .np = p.Q};
    tess__comm_bc_range(&p.R, ia, n, p.me_r, &p.lr0, &p.mloc);
    tess__comm_bc_range(&p.C, ja, n, p.me_c, &p.lc0, &p.nloc);
    p.Ah = (char *)A + ((size_t)p.lr0 + (size_t)p.lc0 * (size_t)p.lld) * p.es;
    struct tess__config cfg; /* TESSERA_TILE: the hold's edge, in whole blocks */
    int64_t want = tess__config_load(&cfg) == TESS_OK && cfg.tile > 0 ? cfg.tile : 2048;
    p.T = p.nb * TESS__MAX(1, (want + p.nb - 1) / p.nb);
    *info = 0;
    *wrote = false;
    double t0 = tess__now();
    /* buffers and the hold, then one agreement: all go on, or all go to the reference */
    size_t es = p.es, nbb = (size_t)p.nb;
    size_t mrow = (size_t)TESS__MAX(1, p.mloc), ncol = (size_t)TESS__MAX(1, p.nloc);
    /* the packs: mine (L: my rows, U: my columns), and every process's of my process
     * column (L) or row (U) */
    int np = p.up ? p.Q : p.P;
    int64_t all = 0;
    for (int q = 0; q < np; q++) {
        int64_t l, c;
        tess__comm_bc_range(p.up ? &p.C : &p.R, p.up ? ja : ia, n, q, &l, &c);
        all += c;
    }
    size_t mine = p.up ? ncol : mrow;
    int st = TESS_OK;
    tess__autostart_enter();
    /* the panels on the devices (ppotrf_dev.c) where blocks start sub(A) and the grid's
     * transport is the device one on one node (the same answer everywhere) */
    struct tess__dpanel dp = {0};
    bool dev = ia % p.nb == 0 && ja % p.nb == 0 && tess__dpanel_open(g, &dp) == TESS_OK;
    if (!dev) tess__clear_error();
    for (int i = 0; i < 2 && !dev; i++) { /* pinned: the devices load them at every step */
        p.Wr[i] = tess_malloc_host(mrow * nbb * es);
        p.Wc[i] = tess_malloc_host(ncol * nbb * es);
        if (!p.Wr[i] || !p.Wc[i]) st = TESS_ENOMEM;
        if (p.Wr[i]) memset(p.Wr[i], 0, mrow * nbb * es);
        if (p.Wc[i]) memset(p.Wc[i], 0, ncol * nbb * es);
    }
    if (!dev) {
        p.D = malloc(nbb * nbb * es);
        p.pack = malloc(mine * nbb * es);
        p.full = malloc((size_t)TESS__MAX(1, all) * nbb * es);
        p.cnt = malloc(sizeof *p.cnt * (size_t)np);
        p.displ = malloc(sizeof *p.displ * (size_t)np);
        if (!p.D || !p.pack || !p.full || !p.cnt || !p.displ) st = TESS_ENOMEM;
        if (all * (int64_t)nbb * (int64_t)es > INT32_MAX || mine * nbb * es > INT32_MAX)
            st = TESS_ENOMEM; /* MPI counts are ints */
    }
    p.band = malloc(TESS__MAX(1, band_bytes(&p)));
    if (!p.band) st = TESS_ENOMEM;
    if (st == TESS_ENOMEM) tess__fail(st, "p?potrf: out of host memory");
    if (!st && !local_ok) st = tess__fail(TESS_EINVAL, "p?potrf: a local argument (LLD_A)");
    if (!st && p.mloc > 0 && p.nloc > 0) {
        st = tess_hold(dt, p.Ah, p.lld, p.mloc, p.nloc, p.T);
        p.held = !st;
    }
    st = tess__comm_agree(g, st);
    double t1 = tess__now();
    if (!st) {
        *wrote = true;
        band_copy(&p, 0);
        if (dev) {
            st = glue_ppotrf_dev(&p, &dp, info);
            glue_count_device(GLUE_POTRF, dt);
        }
        for (int64_t k = 0; !dev && !st && !*info && k * p.nb < n; k++) st = step(&p, k, info);
    }
    for (int i = 0; i < 2; i++)
        if (p.wheld[i]) st = glue_release(p.Wc[i], glue_release(p.Wr[i], st));
    double t2 = tess__now();
    if (p.held) st = glue_release(p.Ah, st);
    double t3 = tess__now();
    if (glue_knobs()->verbose >= 2)
        fprintf(stderr,
                "tessera-scalapack: rank %d: p?potrf (n %lld, nb %lld, panels on the %s): set-up "
                "%.3f s, steps %.3f s, write-back %.3f s\n",
                glue_world_rank(), (long long)n, (long long)p.nb, dev ? "devices" : "host", t1 - t0,
                t2 - t1, t3 - t2);
    for (int i = 0; i < 2; i++) tess_free_host(p.Wr[i]), tess_free_host(p.Wc[i]);
    tess__autostart_leave();
    if (*wrote) band_copy(&p, 1);
    st = tess__comm_agree(g, st);
    free(p.D), free(p.pack), free(p.full), free(p.cnt), free(p.displ), free(p.band);
    return st;
}
