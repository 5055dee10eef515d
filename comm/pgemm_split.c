/* comm/pgemm_split.c: the distributed GEMM's variants for skinny shapes, stationary A and
 * stationary B, and the choice among them and stationary C (pgemm.c).
 *
 * Stationary A: A never moves. Process (r, c) holds of sub(op(A)) the rows I and the k
 * indices K its local array covers. It gathers op(B)[K, :] (redist.c, with K following A's
 * map instead of C's), computes the partial product W = alpha op(A)[I, K] op(B)[K, :]
 * (|I| x n) with one node-runtime job, and sends each element of W to the owner of that
 * element of sub(C), which adds what it receives from every process holding the same rows
 * to beta sub(C) (beta = 0: C is not read). Stationary B is the mirror: op(A)[:, K] is
 * gathered following B's k map, W = alpha op(A)[:, K] op(B)[K, J] (m x |J|). Both move the
 * small operands and the partial C only: for a tall A (m, k >> n) stationary C would ship
 * op(A) to every process column.
 *
 *     stationary A, 2 x 2 grid, ta = N:       W(r,c) = A(r,c) * op(B)[K(c), :]
 *        A(0,0) A(0,1)     op(B)[K(0), :]      C rows of process row r = W(r,0) + W(r,1),
 *        A(1,0) A(1,1)     op(B)[K(1), :]      each element sent straight to its owner
 *
 * Pipelined over units: ranges of W's distributed dimension (the rows of X's free one a
 * rank holds: m for A, n for B), so each unit reads its own part of the big operand X once;
 * Y, small by the choice, is gathered whole first (MPI_Ialltoallw, redist.c). While unit
 * u's job runs, unit u - 1's partials travel to C's owners (one MPI_Ialltoallv of packed W
 * pieces per unit); the calling thread drives MPI in its waits while the runtime's workers
 * compute. A receiver keeps every unit's pieces and adds them to beta sub(C) only once all
 * units landed and every job succeeded, unit by unit and in grid order within one (the
 * same result on every run).
 *
 * The choice (the same on every rank: global sizes, the agreed budget and knob only), in
 * elements moved over the grid: stationary C moves m k Q (op(A), unless in place) + k n P
 * (op(B)); stationary A moves k n P Q / L (op(B)'s rows to each of the L process lines
 * along A's k dimension, unless in place) + m n L (each element of C gets L partials); B
 * likewise. A or B is taken when it moves at most half of what C moves and its buffers fit
 * the panel budget (TESSERA_PGEMM_MEM). TESSERA_PGEMM_VARIANT=c|a|b forces one (a forced A
 * or B still falls back to C when a buffer would exceed MPI's int counts).
 *
 * Faults: the job's status is agreed before the reduction, so a device failure on any rank
 * leaves C unwritten on every rank and every rank returns the same error.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "level3.h"
#include "redist.h"
#include "xport.h"

/* ---- the choice ------------------------------------------------------------------------- */

/* The variant asked for by TESSERA_PGEMM_VARIANT: 0 auto, 'C', 'A', 'B'; -1 not valid
 * (the message names the value). */
static int variant_knob(void) {
    struct tess__config cfg;
    int st = tess__config_load(&cfg);
    if (st) return -1;
    const char *v = cfg.pgemm_variant;
    if (!*v || !strcasecmp(v, "auto")) return 0;
    if (!strcasecmp(v, "c")) return 'C';
    if (!strcasecmp(v, "a")) return 'A';
    if (!strcasecmp(v, "b")) return 'B';
    tess__fail(TESS_EINVAL, "TESSERA_PGEMM_VARIANT=%s: expected auto, c, a or b", v);
    return -1;
}

/* The most indices of the range [off, off + len) of map d any process holds. */
static int64_t max_count(const struct tess__comm_bc *d, int64_t off, int64_t len) {
    int64_t mx = 0, l0, c;
    for (int p = 0; p < d->np; p++) {
        tess__comm_bc_range(d, off, len, p, &l0, &c);
        mx = TESS__MAX(mx, c);
    }
    return mx;
}

/* One side of a split variant: X stays, Y's k indices follow X's k map. */
struct side {
    char var;                 /* 'A' or 'B' */
    struct tess__comm_bc xmap[2];  /* X's row and column maps */
    int xk;                   /* X's k dimension (0 rows, 1 columns); 1 - xk is X's free one */
    int64_t xoff[2], xlen[2]; /* sub(X): first index and extent along rows and columns */
    int L;                    /* processes along X's k dimension */
};

static void side_init(struct side *s, const struct tess__comm_grid *g, char var, char ta, char tb,
                      int64_t m, int64_t n, int64_t k, int64_t ia, int64_t ja,
                      const struct tess__comm_desc *da, int64_t ib, int64_t jb,
                      const struct tess__comm_desc *db) {
    const struct tess__comm_desc *dx = var == 'A' ? da : db;
    s->var = var;
    s->xmap[0] = tess__comm_desc_rows(dx, g->at.nprow);
    s->xmap[1] = tess__comm_desc_cols(dx, g->at.npcol);
    if (var == 'A') {
        s->xk = ta == 'N' ? 1 : 0;
        s->xoff[0] = ia, s->xoff[1] = ja;
        s->xlen[0] = ta == 'N' ? m : k, s->xlen[1] = ta == 'N' ? k : m;
    } else {
        s->xk = tb == 'N' ? 0 : 1;
        s->xoff[0] = ib, s->xoff[1] = jb;
        s->xlen[0] = tb == 'N' ? k : n, s->xlen[1] = tb == 'N' ? n : k;
    }
    s->L = s->xk == 0 ? g->at.nprow : g->at.npcol;
}

/* Y's gather: its k dimension selected by X's k map, its free dimension whole. */
static void side_yop(const struct side *s, struct tess__redist_op *y, const struct tess__comm_grid *g,
                     char ta, char tb, int64_t m, int64_t n, int64_t k, const void *A, int64_t ia,
                     int64_t ja, const struct tess__comm_desc *da, const void *B, int64_t ib,
                     int64_t jb, const struct tess__comm_desc *db, size_t es) {
    if (s->var == 'A') /* Y = op(B): k is B's rows when tb = N */
        tess__redist_setup(y, g, B, db, ib, jb, es, tb == 'N' ? 1 : 0, n, k, &s->xmap[s->xk],
                           s->xoff[s->xk], s->xk);
    else
        tess__redist_setup(y, g, A, da, ia, ja, es, ta == 'N' ? 0 : 1, m, k, &s->xmap[s->xk],
                           s->xoff[s->xk], s->xk);
}

int tess__pgemm_pick(struct tess__comm_grid *g, tess_dtype_t dt, char ta, char tb, int64_t m,
                     int64_t n, int64_t k, int64_t ia, int64_t ja, const struct tess__comm_desc *da,
                     int64_t ib, int64_t jb, const struct tess__comm_desc *db, int64_t ic,
                     int64_t jc, const struct tess__comm_desc *dc, bool a_in_place,
                     bool b_in_place, char *var) {
    *var = 'C';
    int want = variant_knob(), st = want < 0 ? TESS_EINVAL : TESS_OK;
    int v[2] = {want, -want}, vm[2] = {0, 0};
    if (!st) st = TESS__MPI(MPI_Allreduce(v, vm, 2, MPI_INT, MPI_MAX, g->comm));
    if (!st && vm[0] != -vm[1])
        st = tess__fail(TESS_EINVAL, "TESSERA_PGEMM_VARIANT differs across the ranks of the grid");
    if ((st = tess__comm_agree(g, st))) return st;
    const int P = g->at.nprow, Q = g->at.npcol;
    if (want == 'C' || (want == 0 && P * Q == 1)) return TESS_OK;
    const size_t es = tess__dtypes[dt].size;
    const struct tess__comm_bc cr = tess__comm_desc_rows(dc, P), cc = tess__comm_desc_cols(dc, Q);
    const double dm = (double)m, dn = (double)n, dk = (double)k, PQ = (double)(P * Q);
    double vol[2], need[2];
    bool fits_int[2];
    const double moved_c = (a_in_place ? 0 : dm * dk * Q) + (b_in_place ? 0 : dk * dn * P);
    for (int i = 0; i < 2; i++) {
        struct side s;
        side_init(&s, g, i ? 'B' : 'A', ta, tb, m, n, k, ia, ja, da, ib, jb, db);
        struct tess__redist_op y;
        side_yop(&s, &y, g, ta, tb, m, n, k, NULL, ia, ja, da, NULL, ib, jb, db, es);
        bool y_in_place = tess__redist_in_place(&y);
        double yfree = i ? dm : dn, xfree = i ? dn : dm;
        vol[i] = (y_in_place ? 0 : dk * yfree * PQ / s.L) + dm * dn * s.L;
        /* per rank: Y's panel, W and its packed copy, the partials received */
        int64_t kmax = max_count(&s.xmap[s.xk], s.xoff[s.xk], k);
        int64_t fmax = max_count(&s.xmap[1 - s.xk], s.xoff[1 - s.xk], i ? n : m);
        double w = (double)fmax * (i ? dm : dn);
        double recv = (double)s.L * (double)max_count(&cr, ic, m) * (double)max_count(&cc, jc, n);
        need[i] = ((y_in_place ? 0 : (double)kmax * yfree) + 2 * w + recv) * (double)es;
        fits_int[i] = w < INT_MAX / 2 && recv < INT_MAX / 2 && (double)kmax * yfree < INT_MAX / 2;
        (void)xfree;
    }
    if (want == 'A' || want == 'B') {
        if (fits_int[want == 'B']) *var = (char)want;
        return TESS_OK;
    }
    int best = vol[1] < vol[0] ? 1 : 0;
    if (!(vol[best] <= 0.5 * moved_c) || !fits_int[best]) return TESS_OK;
    int64_t budget = 0;
    if ((st = tess__comm_agree(g, tess__pgemm_budget(g, 0, &budget)))) return st;
    if (need[best] <= (double)budget) *var = best ? 'B' : 'A';
    return TESS_OK;
}

/* ---- the run ---------------------------------------------------------------------------- */

/* One dimension of W: distributed like X's free dimension (dist) or whole on every rank;
 * its target is C's map along the same dimension. */
struct wdim {
    struct tess__redist_dim d;  /* seg: runs with one source coordinate and one owner in C */
    int dist;                   /* 1: a source holds the indices of its coordinate on `axis` */
    int axis;
    int64_t base;               /* my first local index (dist), 0 otherwise */
    int64_t lo, hi;             /* dist: the unit walked, W indices [lo, hi) of each source */
};

struct run {
    tess_dtype_t dt;
    size_t es;
    struct wdim w[2];           /* W's rows and columns */
    struct side s;
    int64_t ldw;
};

/* Does the process at (r, c) hold a nonzero partial: some of the free range and of k? */
static bool contributes(const struct run *R, int r, int c) {
    const struct side *s = &R->s;
    int64_t l0, kc, fc;
    tess__comm_bc_range(&s->xmap[s->xk], s->xoff[s->xk], s->xlen[s->xk], s->xk == 0 ? r : c, &l0, &kc);
    tess__comm_bc_range(&s->xmap[1 - s->xk], s->xoff[1 - s->xk], s->xlen[1 - s->xk],
                        s->xk == 0 ? c : r, &l0, &fc);
    return kc > 0 && fc > 0;
}

/* The segments of dimension d that source (sr, sc) holds and destination coordinate dco
 * owns in C. */
static int filter(const struct wdim *w, int sr, int sc, int dco, struct tess__redist_seg *out) {
    int n = 0;
    for (int i = 0; i < w->d.nseg; i++) {
        const struct tess__redist_seg *x = &w->d.seg[i];
        if (x->to != dco) continue;
        if (!w->dist) {
            out[n++] = *x;
            continue;
        }
        if (x->so != (w->axis == 0 ? sr : sc)) continue;
        /* the unit: W indices [lo, hi) of that source, W index = local index - its base */
        int64_t base = tess__comm_bc_count(&w->d.src, w->d.off, x->so);
        int64_t lo = TESS__MAX(x->sl, base + w->lo), hi = TESS__MIN(x->sl + x->len, base + w->hi);
        if (lo >= hi) continue;
        out[n] = *x;
        out[n].a += lo - x->sl, out[n].tl += lo - x->sl, out[n].sl = lo, out[n].len = hi - lo;
        n++;
    }
    return n;
}

static void add_run(tess_dtype_t dt, void *dst, const void *src, int64_t len) {
    int64_t n = tess__dtypes[dt].complex_ ? 2 * len : len;
    if (dt == TESS_S || dt == TESS_C) {
        float *d = dst;
        const float *s = src;
        for (int64_t i = 0; i < n; i++) d[i] += s[i];
    } else {
        double *d = dst;
        const double *s = src;
        for (int64_t i = 0; i < n; i++) d[i] += s[i];
    }
}

/* Walk, in one fixed order, the elements source (sr, sc) sends destination (dr, dc):
 * count them (buf NULL), pack them from W, or add them into C (local sub(C) at Cl, ldc).
 * scratch holds both dimensions' segment counts. */
static int64_t walk(const struct run *R, int sr, int sc, int dr, int dc, char *buf,
                    const void *W, void *Cl, int64_t ldc, struct tess__redist_seg *scratch) {
    struct tess__redist_seg *rs = scratch, *cs = scratch + R->w[0].d.nseg;
    int nr = filter(&R->w[0], sr, sc, dr, rs), nc = filter(&R->w[1], sr, sc, dc, cs);
    const size_t es = R->es;
    int64_t at = 0;
    for (int j = 0; j < nc; j++)
        for (int64_t jj = 0; jj < cs[j].len; jj++)
            for (int i = 0; i < nr; i++) {
                int64_t len = rs[i].len;
                if (buf && W) {
                    const char *src = (const char *)W +
                        ((size_t)(rs[i].sl - R->w[0].base) +
                         (size_t)(cs[j].sl - R->w[1].base + jj) * (size_t)R->ldw) * es;
                    memcpy(buf + (size_t)at * es, src, (size_t)len * es);
                } else if (buf) {
                    char *dst = (char *)Cl +
                        ((size_t)rs[i].tl + (size_t)(cs[j].tl + jj) * (size_t)ldc) * es;
                    add_run(R->dt, dst, buf + (size_t)at * es, len);
                }
                at += len;
            }
    return at;
}

/* W's dimension along X's free dimension (dist) or Y's (whole), targeting C's map cmap. */
static void wdim_init(struct wdim *w, bool dist, const struct side *s, const struct tess__comm_grid *g,
                      int64_t len, const struct tess__comm_bc *cmap, int64_t coff, int caxis) {
    memset(w, 0, sizeof *w);
    w->dist = dist;
    w->d.len = len;
    w->d.tgt = *cmap;
    w->d.toff = coff;
    w->d.taxis = caxis;
    w->hi = INT64_MAX;
    if (dist) {
        int f = 1 - s->xk;
        w->axis = f;
        w->d.src = s->xmap[f];
        w->d.off = s->xoff[f];
        w->base = tess__comm_bc_count(&s->xmap[f], s->xoff[f], f == 0 ? g->at.myrow : g->at.mycol);
    } else {  /* one block on one process: source index = global index */
        w->d.src = (struct tess__comm_bc){.n = len, .ib = TESS__MAX(1, len), .nb = TESS__MAX(1, len),
                                          .src = 0, .np = 1};
    }
}

int tess__pgemm_split(struct tess__comm_grid *g, char var, tess_dtype_t dt, char ta, char tb,
                      int64_t m, int64_t n, int64_t k, const tess__scalar_t *al,
                      const tess__scalar_t *be, const void *A, int64_t ia, int64_t ja,
                      const struct tess__comm_desc *da, const void *B, int64_t ib, int64_t jb,
                      const struct tess__comm_desc *db, void *C, int64_t ic, int64_t jc,
                      const struct tess__comm_desc *dc) {
    double t0 = tess__now(), tcomm = 0;
    g->pgemm.last.units = 0;
    const int P = g->at.nprow, Q = g->at.npcol, myrow = g->at.myrow, mycol = g->at.mycol;
    struct run R;
    memset(&R, 0, sizeof R);
    R.dt = dt;
    R.es = tess__dtypes[dt].size;
    const size_t es = R.es;
    struct side *s = &R.s;
    side_init(s, g, var, ta, tb, m, n, k, ia, ja, da, ib, jb, db);

    /* what this rank holds of sub(X): local ranges along X's rows and columns */
    const void *X = var == 'A' ? A : B;
    const int64_t ldx = var == 'A' ? da->lld : db->lld;
    int64_t x0[2], xc[2];
    tess__comm_bc_range(&s->xmap[0], s->xoff[0], s->xlen[0], myrow, &x0[0], &xc[0]);
    tess__comm_bc_range(&s->xmap[1], s->xoff[1], s->xlen[1], mycol, &x0[1], &xc[1]);
    const int64_t kloc = xc[s->xk], floc = xc[1 - s->xk];
    /* X (and C) may be NULL where this rank holds none of it: then nothing is addressed */
    const char *Xl = X ? (const char *)X + (size_t)(x0[0] + x0[1] * ldx) * es : NULL;

    /* C's maps and my part of sub(C) */
    const struct tess__comm_bc cr = tess__comm_desc_rows(dc, P), cc = tess__comm_desc_cols(dc, Q);
    int64_t c0[2], cn[2];
    tess__comm_bc_range(&cr, ic, m, myrow, &c0[0], &cn[0]);
    tess__comm_bc_range(&cc, jc, n, mycol, &c0[1], &cn[1]);
    char *Cl = C ? (char *)C + (size_t)(c0[0] + c0[1] * dc->lld) * es : NULL;

    /* W: |I| x n (A) or m x |J| (B) */
    wdim_init(&R.w[0], var == 'A', s, g, m, &cr, ic, 0);
    wdim_init(&R.w[1], var == 'B', s, g, n, &cc, jc, 1);
    const int64_t wr = var == 'A' ? floc : m, wc = var == 'A' ? n : floc;
    R.ldw = TESS__MAX(1, wr);

    struct tess__redist_op y;
    side_yop(s, &y, g, ta, tb, m, n, k, A, ia, ja, da, B, ib, jb, db, es);
    int st = tess__redist_plan(&y);
    if (!st && (st = tess__redist_cut(&R.w[0].d))) tess__redist_free(&y);
    if (!st && (st = tess__redist_cut(&R.w[1].d))) tess__redist_free(&y), free(R.w[0].d.seg);
    if ((st = tess__comm_agree(g, st))) return st;
    y.in_place = tess__redist_in_place(&y);

    /* Y's panel (in Y's own orientation: k along its k dimension, kloc long) and W, in the
     * grid's cached host buffer (pinned when a GPU is used) */
    const int64_t yfree = var == 'A' ? n : m;
    const int yk = 1 - y.kdim; /* Y's k dimension */
    const int64_t yrows = yk == 0 ? kloc : yfree;
    size_t ybytes = y.in_place ? 0 : (((size_t)kloc * (size_t)yfree * es + 255) & ~(size_t)255);
    size_t wbytes = (size_t)wr * (size_t)wc * es;
    /* the pipeline's unit: fu of each rank's indices along W's distributed dimension (the
     * same on every rank: global maps and the agreed chunk), a unit's partials about a chunk */
    const int64_t fmax = max_count(&s->xmap[1 - s->xk], s->xoff[1 - s->xk], var == 'A' ? m : n);
    int64_t chunk = 128 << 20;
    st = tess__pgemm_chunk(g, &chunk); /* collective; st is 0 on every rank here */
    const int64_t fu = TESS__MAX(1, TESS__MIN(fmax, chunk / TESS__MAX(1, yfree * (int64_t)es)));
    const int64_t nu = TESS__MAX(1, TESS__CEILDIV(fmax, fu));
    struct wdim *part = &R.w[var == 'A' ? 0 : 1];

    int nranks = P * Q;
    int *cnt = calloc((size_t)nranks * 4, sizeof(int));
    int64_t *ucnt = malloc(sizeof *ucnt * (size_t)nu * (size_t)nranks * 2); /* per unit, rank: out, in */
    struct tess__redist_seg *scratch =
        malloc(sizeof *scratch * (size_t)(R.w[0].d.nseg + R.w[1].d.nseg + 1));
    if (!cnt || !ucnt || !scratch)
        st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) st = tess__pgemm_ws(g, ybytes + wbytes);
    /* Y's gather: the MPI transport (host memory), one unit; opened on every rank */
    struct tess__xport *x = NULL;
    bool xok = false;
    if (!y.in_place) {
        int xst = tess__xport_open_mpi(g, &x); /* collective, agreed */
        if (!st) st = xst;
    }
    if (!st && !y.in_place) {
        y.buf = g->pgemm.ws.ptr;
        y.ldbuf = TESS__MAX(1, yrows);
        xok = !(st = tess__xport_begin(x, &y, 1));
    }
    /* the partials: everything this rank sends and receives, unit after unit (a unit's
     * pieces rank by rank in grid order); received ones are added once all units landed */
    const bool me_src = contributes(&R, myrow, mycol);
    int64_t stot = 0, rtot = 0;
    uint64_t sent = 0, recvd = 0;
    for (int64_t u = 0; u < nu && !st; u++) {
        part->lo = u * fu, part->hi = (u + 1) * fu;
        for (int r = 0; r < P; r++)
            for (int c = 0; c < Q; c++) {
                int j = tess__comm_grid_rank(g, r, c);
                int64_t ns = me_src ? walk(&R, myrow, mycol, r, c, NULL, NULL, NULL, 0, scratch) : 0;
                int64_t nr = contributes(&R, r, c) ? walk(&R, r, c, myrow, mycol, NULL, NULL, NULL, 0, scratch) : 0;
                ucnt[2 * (u * nranks + j)] = ns, ucnt[2 * (u * nranks + j) + 1] = nr;
                stot += ns, rtot += nr;
                if (j != g->rank) sent += (uint64_t)ns * es, recvd += (uint64_t)nr * es;
            }
    }
    char *sbuf = NULL, *rbuf = NULL;
    MPI_Datatype elem = MPI_DATATYPE_NULL;
    if (!st) {
        sbuf = malloc((size_t)TESS__MAX(1, stot) * es), rbuf = malloc((size_t)TESS__MAX(1, rtot) * es);
        if (!sbuf || !rbuf) st = tess__fail(TESS_ENOMEM, "pgemm: reduction buffers: out of host memory");
    }
    if (!st) st = TESS__MPI(MPI_Type_contiguous((int)es, MPI_BYTE, &elem));
    if (!st) st = TESS__MPI(MPI_Type_commit(&elem));
    if ((st = tess__comm_agree(g, st))) goto out;

    /* Y, whole; then the pipeline: while unit u's job runs, unit u - 1's partials travel to
     * C's owners; the caller drives MPI in its waits */
    /* Y in place is addressed only where the job runs (kloc, yfree > 0: the rank holds
     * part of Y); elsewhere it may be NULL */
    const void *Yp = !y.in_place ? y.buf
                     : kloc > 0 && yfree > 0 ? tess__redist_in_place_ptr(&y, myrow, mycol, 0)
                                             : NULL;
    const int64_t ldy = y.in_place ? y.ldx : y.ldbuf;
    char *W = (char *)g->pgemm.ws.ptr + ybytes;
    if (wr > 0 && wc > 0 && kloc == 0) tess__host_scale(dt, wr, wc, tess__scalar_zero(), W, R.ldw);
    int *sc = cnt, *sd = cnt + nranks, *rc = cnt + 2 * nranks, *rd = cnt + 3 * nranks;
    MPI_Request red = MPI_REQUEST_NULL;
    int64_t soff = 0, roff = 0;
    double tc = tess__now();
    if (!y.in_place) {
        const struct tess__xport_unit whole = {.k0 = 0, .k1 = yfree, .s1 = INT64_MAX};
        st = tess__xport_post(x, &whole, TESS_OK);
        if (!st) st = tess__xport_wait(x, 0);
    }
    tcomm += tess__now() - tc;
    st = tess__comm_agree(g, st);
    int64_t units = 0;
    const int xf = 1 - s->xk; /* X's free dimension: 0 rows, 1 columns */
    for (int64_t u = 0; u < nu && !st; u++) {
        /* my part of the unit: W rows (A) or columns (B) [f0, f1) */
        const int64_t f0 = TESS__MIN(floc, u * fu), f1 = TESS__MIN(floc, f0 + fu), fc = f1 - f0;
        units++;
        int cst = TESS_OK, jst = TESS_OK;
        struct tess__gemm_async *job = NULL;
        if (fc > 0 && yfree > 0 && kloc > 0) {
            const char *Xu = Xl + (size_t)(xf == 0 ? f0 : f0 * ldx) * es;
            jst = var == 'A'
                      ? tess__gemm_start(dt, ta, tb, fc, wc, kloc, al, Xu, ldx, Yp, ldy,
                                         tess__scalar_zero(), W + (size_t)f0 * es, R.ldw, NULL,
                                         &job)
                      : tess__gemm_start(dt, ta, tb, wr, fc, kloc, al, Yp, ldy, Xu, ldx,
                                         tess__scalar_zero(), W + (size_t)(f0 * R.ldw) * es,
                                         R.ldw, NULL, &job);
            if (jst) job = NULL;
        }
        tc = tess__now();
        if (red != MPI_REQUEST_NULL) cst = tess__mpi_wait(&red);
        tcomm += tess__now() - tc;
        if (job) jst = tess__gemm_finish(job);
        if ((st = tess__comm_agree(g, cst ? cst : jst))) break;
        /* unit u's partials: pack, then one MPI_Ialltoallv */
        tc = tess__now();
        part->lo = u * fu, part->hi = (u + 1) * fu;
        int64_t s0 = soff, r0 = roff;
        for (int r = 0; r < P; r++)
            for (int c = 0; c < Q; c++) {
                int j = tess__comm_grid_rank(g, r, c);
                int64_t ns = ucnt[2 * (u * nranks + j)], nr = ucnt[2 * (u * nranks + j) + 1];
                if (ns) walk(&R, myrow, mycol, r, c, sbuf + (size_t)soff * es, W, NULL, 0, scratch);
                sc[j] = (int)ns, sd[j] = (int)(soff - s0);
                rc[j] = (int)nr, rd[j] = (int)(roff - r0);
                soff += ns, roff += nr;
            }
        if (soff - s0 > INT_MAX || roff - r0 > INT_MAX)
            st = tess__fail(TESS_ENOSYS, "pgemm: a partial product over MPI's int counts");
        if (!st)
            st = TESS__MPI(MPI_Ialltoallv(sbuf + (size_t)s0 * es, sc, sd, elem, rbuf + (size_t)r0 * es,
                                          rc, rd, elem, g->comm, &red));
        tcomm += tess__now() - tc;
        if ((st = tess__comm_agree(g, st))) break;
    }
    tc = tess__now();
    if (red != MPI_REQUEST_NULL) {
        int s2 = tess__mpi_wait(&red);
        if (!st) st = s2;
    }
    st = tess__comm_agree(g, st);
    if (!st) {
        /* C = beta C (beta = 0: zeros, C not read), then every partial: unit by unit, in
         * grid order within a unit (each element gets its partials in grid order) */
        if (cn[0] > 0 && cn[1] > 0) tess__host_scale(dt, cn[0], cn[1], be, Cl, dc->lld);
        roff = 0;
        for (int64_t u = 0; u < nu; u++) {
            part->lo = u * fu, part->hi = (u + 1) * fu;
            for (int r = 0; r < P; r++)
                for (int c = 0; c < Q; c++)
                    if (ucnt[2 * (u * nranks + tess__comm_grid_rank(g, r, c)) + 1])
                        roff += walk(&R, r, c, myrow, mycol, rbuf + (size_t)roff * es, NULL, Cl,
                                     dc->lld, scratch);
        }
    }
    tcomm += tess__now() - tc;
    g->pgemm.last.units = (int)units;
out:
    if (elem != MPI_DATATYPE_NULL) MPI_Type_free(&elem);
    free(sbuf), free(rbuf);
    if (xok) {
        sent += x->sent, recvd += x->recvd;
        tess__xport_end(x);
    }
    tess__xport_close(x);
    tess__redist_free(&y);
    free(R.w[0].d.seg), free(R.w[1].d.seg);
    free(cnt), free(ucnt), free(scratch);
    g->pgemm.last.seconds = tess__now() - t0;
    g->pgemm.last.comm_seconds = tcomm;
    g->pgemm.last.bytes_sent = sent, g->pgemm.last.bytes_received = recvd;
    g->pgemm.last.passes = 1;
    g->pgemm.last.a_local = var == 'A' || (var == 'B' && y.in_place);
    g->pgemm.last.b_local = var == 'B' || (var == 'A' && y.in_place);
    g->pgemm.last.variant = var;
    return st;
}
