/* comm/pgemm_split.c: the distributed GEMM's variants for skinny shapes, stationary A and
 * stationary B, and the choice among them and stationary C. Stationary A: A never moves;
 * each process multiplies its part of sub(op(A)) by the rows of op(B) that match its k
 * indices (gathered whole: Y), and sends each element of the partial product W to the
 * owner of that element of sub(C), which adds the partials of every process holding the
 * same rows to beta sub(C). Stationary B is the mirror. Both move the small operand and the
 * partial C only (a tall A under stationary C would travel to every process column).
 * Pipelined over units of W's distributed dimension. Invariants: the choice is the same on
 * every rank (global sizes, the agreed budget and knob only); C is written only once every
 * unit landed and every job succeeded (agreed: a failure leaves C unwritten everywhere),
 * unit by unit and in grid order within one (the same result on every run). Owns the
 * call's W, the partials' buffers and their counts; Y's panel and W live in the grid's
 * host work buffer.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "level3.h"
#include "pgemm.h"
#include "xport.h"

/* ---- the choice ------------------------------------------------------------------------- *
 * In elements moved over the grid: stationary C moves m k Q (op(A), unless in place) +
 * k n P (op(B)); stationary A moves k n P Q / L (op(B)'s rows to each of the L process
 * lines along A's k dimension, unless in place) + m n L (each element of C gets L
 * partials); B likewise. A or B is taken when it moves at most half of what C moves and its
 * buffers fit the panel budget (TESSERA_PGEMM_MEM). TESSERA_PGEMM_VARIANT=c|a|b forces one
 * (a forced A or B still falls back to C when a buffer would exceed MPI's int counts). */

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
    char var;                     /* 'A' or 'B' */
    struct tess__comm_bc xmap[2]; /* X's row and column maps */
    int xk;                       /* X's k dimension (0 rows, 1 columns); 1 - xk is X's free one */
    int64_t xoff[2], xlen[2];     /* sub(X): first index and extent along rows and columns */
    int L;                        /* processes along X's k dimension */
};

static void side_init(struct side *s, const struct tess__comm_grid *g, char var,
                      const struct tess__pgemm_call *c) {
    const struct tess__comm_desc *dx = var == 'A' ? &c->da : &c->db;
    s->var = var;
    s->xmap[0] = tess__comm_desc_rows(dx, g->at.nprow);
    s->xmap[1] = tess__comm_desc_cols(dx, g->at.npcol);
    if (var == 'A') {
        s->xk = c->ta == 'N' ? 1 : 0;
        s->xoff[0] = c->ia, s->xoff[1] = c->ja;
        s->xlen[0] = c->ta == 'N' ? c->m : c->k, s->xlen[1] = c->ta == 'N' ? c->k : c->m;
    } else {
        s->xk = c->tb == 'N' ? 0 : 1;
        s->xoff[0] = c->ib, s->xoff[1] = c->jb;
        s->xlen[0] = c->tb == 'N' ? c->k : c->n, s->xlen[1] = c->tb == 'N' ? c->n : c->k;
    }
    s->L = s->xk == 0 ? g->at.nprow : g->at.npcol;
}

/* Y's gather: its k dimension selected by X's k map, its free dimension whole. */
static void side_yop(const struct side *s, struct tess__redist_op *y,
                     const struct tess__comm_grid *g, const struct tess__pgemm_call *c) {
    const size_t es = tess__dtypes[c->dt].size;
    if (s->var == 'A') /* Y = op(B): k is B's rows when tb = N */
        tess__redist_setup(y, g, c->B, &c->db, c->ib, c->jb, es, c->tb == 'N' ? 1 : 0, c->n, c->k,
                           &s->xmap[s->xk], s->xoff[s->xk], s->xk);
    else
        tess__redist_setup(y, g, c->A, &c->da, c->ia, c->ja, es, c->ta == 'N' ? 0 : 1, c->m, c->k,
                           &s->xmap[s->xk], s->xoff[s->xk], s->xk);
}

int tess__pgemm_pick(struct tess__comm_grid *g, const struct tess__pgemm_call *c,
                     const struct tess__redist_op ops[2], char *var) {
    *var = 'C';
    /* the knob must be valid and the same on every rank (all reach the reduction) */
    int want = variant_knob(), bad = want < 0 ? TESS_EINVAL : TESS_OK;
    int v[2] = {want, -want}, vm[2] = {0, 0};
    int st = TESS__MPI(MPI_Allreduce(v, vm, 2, MPI_INT, MPI_MAX, g->comm));
    if (!st && !bad && vm[0] != -vm[1])
        st = tess__fail(TESS_EINVAL, "TESSERA_PGEMM_VARIANT differs across the ranks of the grid");
    if ((st = tess__comm_agree(g, bad ? bad : st))) return st;
    const int P = g->at.nprow, Q = g->at.npcol;
    if (want == 'C' || (want == 0 && P * Q == 1)) return TESS_OK;
    const size_t es = tess__dtypes[c->dt].size;
    const struct tess__comm_bc cr = tess__comm_desc_rows(&c->dc, P),
                               cc = tess__comm_desc_cols(&c->dc, Q);
    const double dm = (double)c->m, dn = (double)c->n, dk = (double)c->k, PQ = (double)(P * Q);
    double vol[2], need[2];
    bool fits_int[2];
    const double moved_c = (ops[0].in_place ? 0 : dm * dk * Q) +
                           (ops[1].in_place ? 0 : dk * dn * P);
    for (int i = 0; i < 2; i++) {
        struct side s;
        side_init(&s, g, i ? 'B' : 'A', c);
        struct tess__redist_op y;
        side_yop(&s, &y, g, c);
        bool y_in_place = tess__redist_in_place(&y);
        double yfree = i ? dm : dn;
        vol[i] = (y_in_place ? 0 : dk * yfree * PQ / s.L) + dm * dn * s.L;
        /* per rank: Y's panel, W and its packed copy, the partials received */
        int64_t kmax = max_count(&s.xmap[s.xk], s.xoff[s.xk], c->k);
        int64_t fmax = max_count(&s.xmap[1 - s.xk], s.xoff[1 - s.xk], i ? c->n : c->m);
        double w = (double)fmax * (i ? dm : dn);
        double recv = (double)s.L * (double)max_count(&cr, c->ic, c->m) *
                      (double)max_count(&cc, c->jc, c->n);
        need[i] = ((y_in_place ? 0 : (double)kmax * yfree) + 2 * w + recv) * (double)es;
        fits_int[i] = w < INT_MAX / 2 && recv < INT_MAX / 2 && (double)kmax * yfree < INT_MAX / 2;
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

/* ---- the run ---------------------------------------------------------------------------- *
 * Stationary A, 2 x 2 grid, ta = N:         W(r,c) = A(r,c) * op(B)[K(c), :]
 *      A(0,0) A(0,1)     op(B)[K(0), :]      C rows of process row r = W(r,0) + W(r,1),
 *      A(1,0) A(1,1)     op(B)[K(1), :]      each element sent straight to its owner
 * Process (r, c) holds of sub(op(A)) the rows I and the k indices K its local array covers;
 * it gathers Y = op(B)[K, :] (redist.c, with K following A's map instead of C's) and
 * computes W = alpha op(A)[I, K] Y (|I| x n). Stationary B: Y = op(A)[:, K] following B's
 * k map, W = alpha Y op(B)[K, J] (m x |J|). The units are ranges of W's distributed
 * dimension (the rows of X's free one a rank holds: m for A, n for B), so each unit reads
 * its own part of the big operand X once; Y, small by the choice, is gathered whole first
 * (the MPI transport). While unit u's job runs, unit u - 1's partials travel to C's owners
 * (one MPI_Ialltoallv of packed W pieces per unit); the calling thread drives MPI in its
 * waits while the runtime's workers compute. */

/* One dimension of W: distributed like X's free dimension (dist) or whole on every rank;
 * its target is C's map along the same dimension. */
struct wdim {
    struct tess__redist_dim d; /* seg: runs with one source coordinate and one owner in C */
    int dist;                  /* 1: a source holds the indices of its coordinate on `axis` */
    int axis;
    int64_t base;   /* my first local index (dist), 0 otherwise */
    int64_t lo, hi; /* dist: the unit walked, W indices [lo, hi) of each source */
};

struct run {
    tess_dtype_t dt;
    size_t es;
    struct wdim w[2]; /* W's rows and columns */
    struct side s;
    int64_t ldw;
};

/* Does the process at (r, c) hold a nonzero partial: some of the free range and of k? */
static bool contributes(const struct run *R, int r, int c) {
    const struct side *s = &R->s;
    int64_t l0, kc, fc;
    tess__comm_bc_range(&s->xmap[s->xk], s->xoff[s->xk], s->xlen[s->xk], s->xk == 0 ? r : c, &l0,
                        &kc);
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
static int64_t walk(const struct run *R, int sr, int sc, int dr, int dc, char *buf, const void *W,
                    void *Cl, int64_t ldc, struct tess__redist_seg *scratch) {
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
                                       (size_t)(cs[j].sl - R->w[1].base + jj) * (size_t)R->ldw) *
                                          es;
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
static void wdim_init(struct wdim *w, bool dist, const struct side *s,
                      const struct tess__comm_grid *g, int64_t len,
                      const struct tess__comm_bc *cmap, int64_t coff, int caxis) {
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
    } else { /* one block on one process: source index = global index */
        w->d.src = (struct tess__comm_bc){
            .n = len, .ib = TESS__MAX(1, len), .nb = TESS__MAX(1, len), .src = 0, .np = 1};
    }
}

/* One call of a split variant: W's geometry (R), this rank's parts of X, C and W, Y's
 * gather, the units, and the partials' counts and buffers. */
struct split {
    struct tess__comm_grid *g;
    const struct tess__pgemm_call *c;
    char var;
    size_t es;
    struct run R;
    const char *Xl; /* sub(X) here (NULL where none): kloc along k, floc free */
    int64_t ldx, kloc, floc;
    char *Cl; /* sub(C) here, cn[0] x cn[1] (NULL where none) */
    int64_t cn[2];
    char *W; /* W here: wr x wc, leading dimension R.ldw */
    int64_t wr, wc;
    struct tess__redist_op y; /* Y, gathered whole through the MPI transport x */
    int64_t yfree;
    size_t ybytes;
    struct tess__xport *x;
    bool xok;          /* x begun */
    int64_t fu, nu;    /* nu units of fu indices of W's distributed dimension */
    struct wdim *part; /* that dimension */
    int nranks;
    int *cnt;      /* per rank: send count, displacement, receive count, displ. */
    int64_t *ucnt; /* per unit and rank: elements out, in */
    struct tess__redist_seg *scratch;
    char *sbuf, *rbuf; /* every unit's partials, out and in */
    MPI_Datatype elem;
    uint64_t sent, recvd;
    double tcomm;
    int64_t units;
};

/* The maps: the side, this rank's parts of X and C, W's dimensions, Y's plan. Agreed. */
static int split_maps(struct split *S) {
    struct tess__comm_grid *g = S->g;
    const struct tess__pgemm_call *c = S->c;
    const int myrow = g->at.myrow, mycol = g->at.mycol;
    struct side *s = &S->R.s;
    side_init(s, g, S->var, c);
    /* what this rank holds of sub(X): local ranges along X's rows and columns */
    const void *X = S->var == 'A' ? c->A : c->B;
    S->ldx = S->var == 'A' ? c->da.lld : c->db.lld;
    int64_t x0[2], xc[2];
    tess__comm_bc_range(&s->xmap[0], s->xoff[0], s->xlen[0], myrow, &x0[0], &xc[0]);
    tess__comm_bc_range(&s->xmap[1], s->xoff[1], s->xlen[1], mycol, &x0[1], &xc[1]);
    S->kloc = xc[s->xk], S->floc = xc[1 - s->xk];
    /* X (and C) may be NULL where this rank holds none of it: then nothing is addressed */
    S->Xl = X ? (const char *)X + (size_t)(x0[0] + x0[1] * S->ldx) * S->es : NULL;
    /* C's maps and my part of sub(C) */
    const struct tess__comm_bc cr = tess__comm_desc_rows(&c->dc, g->at.nprow);
    const struct tess__comm_bc cc = tess__comm_desc_cols(&c->dc, g->at.npcol);
    int64_t c0[2];
    tess__comm_bc_range(&cr, c->ic, c->m, myrow, &c0[0], &S->cn[0]);
    tess__comm_bc_range(&cc, c->jc, c->n, mycol, &c0[1], &S->cn[1]);
    S->Cl = c->C ? (char *)c->C + (size_t)(c0[0] + c0[1] * c->dc.lld) * S->es : NULL;
    /* W: |I| x n (A) or m x |J| (B) */
    wdim_init(&S->R.w[0], S->var == 'A', s, g, c->m, &cr, c->ic, 0);
    wdim_init(&S->R.w[1], S->var == 'B', s, g, c->n, &cc, c->jc, 1);
    S->wr = S->var == 'A' ? S->floc : c->m, S->wc = S->var == 'A' ? c->n : S->floc;
    S->R.ldw = TESS__MAX(1, S->wr);
    side_yop(s, &S->y, g, c);
    int st = tess__redist_plan(&S->y);
    if (!st && (st = tess__redist_cut(&S->R.w[0].d))) tess__redist_free(&S->y);
    if (!st && (st = tess__redist_cut(&S->R.w[1].d)))
        tess__redist_free(&S->y), free(S->R.w[0].d.seg);
    if ((st = tess__comm_agree(g, st))) return st;
    S->y.in_place = tess__redist_in_place(&S->y);
    return TESS_OK;
}

/* The units' partials of source (sr, sc) for destination (dr, dc) in unit u: counted
 * (buf NULL), packed from W, or added into C. Returns the elements walked. */
static int64_t unit_walk(struct split *S, int64_t u, int sr, int sc, int dr, int dc, char *buf,
                         const void *W, void *Cl) {
    S->part->lo = u * S->fu, S->part->hi = (u + 1) * S->fu;
    return walk(&S->R, sr, sc, dr, dc, buf, W, Cl, Cl ? S->c->dc.lld : 0, S->scratch);
}

/* Y's panel and W in the grid's host buffer, the transport of Y's gather, the units, every
 * unit's counts and the partials' buffers. Agreed. */
static int split_buffers(struct split *S) {
    struct tess__comm_grid *g = S->g;
    const struct tess__pgemm_call *c = S->c;
    const struct side *s = &S->R.s;
    const size_t es = S->es;
    /* Y's panel (in Y's own orientation: k along its k dimension, kloc long) and W, in the
     * grid's cached host buffer (pinned when a GPU is used) */
    S->yfree = S->var == 'A' ? c->n : c->m;
    const int yk = 1 - S->y.kdim; /* Y's k dimension */
    const int64_t yrows = yk == 0 ? S->kloc : S->yfree;
    S->ybytes = S->y.in_place ? 0
                              : (((size_t)S->kloc * (size_t)S->yfree * es + 255) & ~(size_t)255);
    const size_t wbytes = (size_t)S->wr * (size_t)S->wc * es;
    /* the pipeline's unit: fu of each rank's indices along W's distributed dimension (the
     * same on every rank: global maps and the agreed chunk), a unit's partials about a chunk */
    const int64_t fmax = max_count(&s->xmap[1 - s->xk], s->xoff[1 - s->xk],
                                   S->var == 'A' ? c->m : c->n);
    int64_t chunk = 128 << 20;
    int st = tess__pgemm_chunk(g, &chunk); /* collective; st is 0 on every rank here */
    S->fu = TESS__MAX(1, TESS__MIN(fmax, chunk / TESS__MAX(1, S->yfree * (int64_t)es)));
    S->nu = TESS__MAX(1, TESS__CEILDIV(fmax, S->fu));
    S->part = &S->R.w[S->var == 'A' ? 0 : 1];
    const int nranks = S->nranks = g->at.nprow * g->at.npcol;
    S->cnt = calloc((size_t)nranks * 4, sizeof(int));
    S->ucnt = malloc(sizeof *S->ucnt * (size_t)S->nu * (size_t)nranks * 2);
    S->scratch = malloc(sizeof *S->scratch * (size_t)(S->R.w[0].d.nseg + S->R.w[1].d.nseg + 1));
    if (!S->cnt || !S->ucnt || !S->scratch)
        st = tess__fail(TESS_ENOMEM, "pgemm: out of host memory");
    if (!st) st = tess__pgemm_ws(g, S->ybytes + wbytes);
    /* Y's gather: the MPI transport (host memory), one unit; opened on every rank */
    if (!S->y.in_place) {
        int xst = tess__xport_open_mpi(g, &S->x); /* collective, agreed */
        if (!st) st = xst;
    }
    if (!st && !S->y.in_place) {
        S->y.buf = g->pgemm.ws.ptr;
        S->y.ldbuf = TESS__MAX(1, yrows);
        S->xok = !(st = tess__xport_begin(S->x, &S->y, 1));
    }
    /* the partials: everything this rank sends and receives, unit after unit (a unit's
     * pieces rank by rank in grid order); received ones are added once all units landed */
    const int myrow = g->at.myrow, mycol = g->at.mycol;
    const bool me_src = contributes(&S->R, myrow, mycol);
    int64_t stot = 0, rtot = 0;
    for (int64_t u = 0; u < S->nu && !st; u++)
        for (int r = 0; r < g->at.nprow; r++)
            for (int q = 0; q < g->at.npcol; q++) {
                int j = tess__comm_grid_rank(g, r, q);
                int64_t ns = me_src ? unit_walk(S, u, myrow, mycol, r, q, NULL, NULL, NULL) : 0;
                int64_t nr = contributes(&S->R, r, q)
                                 ? unit_walk(S, u, r, q, myrow, mycol, NULL, NULL, NULL)
                                 : 0;
                S->ucnt[2 * (u * nranks + j)] = ns, S->ucnt[2 * (u * nranks + j) + 1] = nr;
                stot += ns, rtot += nr;
                if (j != g->rank) S->sent += (uint64_t)ns * es, S->recvd += (uint64_t)nr * es;
            }
    if (!st) {
        S->sbuf = malloc((size_t)TESS__MAX(1, stot) * es),
        S->rbuf = malloc((size_t)TESS__MAX(1, rtot) * es);
        if (!S->sbuf || !S->rbuf)
            st = tess__fail(TESS_ENOMEM, "pgemm: reduction buffers: out of host memory");
    }
    if (!st) st = TESS__MPI(MPI_Type_contiguous((int)es, MPI_BYTE, &S->elem));
    if (!st) st = TESS__MPI(MPI_Type_commit(&S->elem));
    return tess__comm_agree(g, st);
}

/* Unit u: W's part from this rank's job (while unit u - 1's partials travel, *red), then
 * its partials packed and sent to C's owners (one MPI_Ialltoallv, *red). Agreed. */
static int split_unit(struct split *S, int64_t u, const void *Yp, int64_t ldy, int64_t *soff,
                      int64_t *roff, MPI_Request *red) {
    struct tess__comm_grid *g = S->g;
    const struct tess__pgemm_call *c = S->c;
    const size_t es = S->es;
    const int nranks = S->nranks, xf = 1 - S->R.s.xk; /* X's free dimension: 0 rows, 1 columns */
    /* my part of the unit: W rows (A) or columns (B) [f0, f1) */
    const int64_t f0 = TESS__MIN(S->floc, u * S->fu), f1 = TESS__MIN(S->floc, f0 + S->fu),
                  fc = f1 - f0;
    S->units++;
    int cst = TESS_OK, jst = TESS_OK, st;
    struct tess__gemm_async *job = NULL;
    /* host operands, none looked up in held matrices (pgemm.c wrote back what is held) */
    static const struct tess__gemm_opts host = {.a_dev = -1, .b_dev = -1};
    if (fc > 0 && S->yfree > 0 && S->kloc > 0) {
        const char *Xu = S->Xl + (size_t)(xf == 0 ? f0 : f0 * S->ldx) * es;
        jst = S->var == 'A'
                  ? tess__gemm_start(c->dt, c->ta, c->tb, fc, S->wc, S->kloc, &c->alpha, Xu, S->ldx,
                                     Yp, ldy, tess__scalar_zero(), S->W + (size_t)f0 * es, S->R.ldw,
                                     &host, &job)
                  : tess__gemm_start(c->dt, c->ta, c->tb, S->wr, fc, S->kloc, &c->alpha, Yp, ldy,
                                     Xu, S->ldx, tess__scalar_zero(),
                                     S->W + (size_t)(f0 * S->R.ldw) * es, S->R.ldw, &host, &job);
        if (jst) job = NULL;
    }
    double tc = tess__now();
    if (*red != MPI_REQUEST_NULL) cst = tess__mpi_wait(red);
    S->tcomm += tess__now() - tc;
    if (job) jst = tess__gemm_finish(job);
    if ((st = tess__comm_agree(g, cst ? cst : jst))) return st;
    /* unit u's partials: pack, then one MPI_Ialltoallv */
    tc = tess__now();
    int *sc = S->cnt, *sd = S->cnt + nranks, *rc = S->cnt + 2 * nranks, *rd = S->cnt + 3 * nranks;
    const int64_t s0 = *soff, r0 = *roff;
    for (int r = 0; r < g->at.nprow; r++)
        for (int q = 0; q < g->at.npcol; q++) {
            int j = tess__comm_grid_rank(g, r, q);
            int64_t ns = S->ucnt[2 * (u * nranks + j)], nr = S->ucnt[2 * (u * nranks + j) + 1];
            if (ns)
                unit_walk(S, u, g->at.myrow, g->at.mycol, r, q, S->sbuf + (size_t)*soff * es, S->W,
                          NULL);
            sc[j] = (int)ns, sd[j] = (int)(*soff - s0);
            rc[j] = (int)nr, rd[j] = (int)(*roff - r0);
            *soff += ns, *roff += nr;
        }
    st = TESS_OK;
    if (*soff - s0 > INT_MAX || *roff - r0 > INT_MAX)
        st = tess__fail(TESS_ENOSYS, "pgemm: a partial product over MPI's int counts");
    if (!st)
        st = TESS__MPI(MPI_Ialltoallv(S->sbuf + (size_t)s0 * es, sc, sd, S->elem,
                                      S->rbuf + (size_t)r0 * es, rc, rd, S->elem, g->comm, red));
    S->tcomm += tess__now() - tc;
    return tess__comm_agree(g, st);
}

/* Y, whole; then the pipeline: while unit u's job runs, unit u - 1's partials travel to
 * C's owners, the caller driving MPI in its waits; the last partials. Agreed. */
static int split_units(struct split *S) {
    struct tess__comm_grid *g = S->g;
    const struct tess__redist_op *y = &S->y;
    /* Y in place is addressed only where the job runs (kloc, yfree > 0: the rank holds
     * part of Y); elsewhere it may be NULL */
    const void *Yp = !y->in_place ? y->buf
                     : S->kloc > 0 && S->yfree > 0
                         ? tess__redist_in_place_ptr(y, g->at.myrow, g->at.mycol, 0)
                         : NULL;
    const int64_t ldy = y->in_place ? y->ldx : y->ldbuf;
    S->W = (char *)g->pgemm.ws.ptr + S->ybytes;
    if (S->wr > 0 && S->wc > 0 && S->kloc == 0)
        tess__host_scale(S->c->dt, S->wr, S->wc, tess__scalar_zero(), S->W, S->R.ldw);
    MPI_Request red = MPI_REQUEST_NULL;
    int64_t soff = 0, roff = 0;
    int st = TESS_OK;
    double tc = tess__now();
    if (!y->in_place) {
        const struct tess__xport_unit whole = {.k0 = 0, .k1 = S->yfree, .s1 = INT64_MAX};
        st = tess__xport_post(S->x, &whole, TESS_OK);
        if (!st) st = tess__xport_wait(S->x, 0);
    }
    S->tcomm += tess__now() - tc;
    st = tess__comm_agree(g, st);
    for (int64_t u = 0; u < S->nu && !st; u++) st = split_unit(S, u, Yp, ldy, &soff, &roff, &red);
    tc = tess__now();
    if (red != MPI_REQUEST_NULL) {
        int s2 = tess__mpi_wait(&red);
        if (!st) st = s2;
    }
    st = tess__comm_agree(g, st);
    S->tcomm += tess__now() - tc;
    return st;
}

/* C = beta C (beta = 0: zeros, C not read), then every partial: unit by unit, in grid
 * order within a unit (each element gets its partials in grid order, the same on every
 * run). */
static void split_reduce(struct split *S) {
    const struct tess__comm_grid *g = S->g;
    double tc = tess__now();
    if (S->cn[0] > 0 && S->cn[1] > 0)
        tess__host_scale(S->c->dt, S->cn[0], S->cn[1], &S->c->beta, S->Cl, S->c->dc.lld);
    int64_t roff = 0;
    for (int64_t u = 0; u < S->nu; u++)
        for (int r = 0; r < g->at.nprow; r++)
            for (int q = 0; q < g->at.npcol; q++)
                if (S->ucnt[2 * (u * S->nranks + tess__comm_grid_rank(g, r, q)) + 1])
                    roff += unit_walk(S, u, r, q, g->at.myrow, g->at.mycol,
                                      S->rbuf + (size_t)roff * S->es, NULL, S->Cl);
    S->tcomm += tess__now() - tc;
}

int tess__pgemm_split(struct tess__comm_grid *g, char var, const struct tess__pgemm_call *c) {
    const double t0 = tess__now();
    struct split S = {
        .g = g, .c = c, .var = var, .es = tess__dtypes[c->dt].size, .elem = MPI_DATATYPE_NULL};
    S.R.dt = c->dt;
    S.R.es = S.es;
    g->pgemm.last.units = 0;
    int st = split_maps(&S);
    if (st) return st;
    st = split_buffers(&S);
    if (!st) {
        st = split_units(&S);
        if (!st) split_reduce(&S);
        g->pgemm.last.units = (int)S.units;
    }
    if (S.elem != MPI_DATATYPE_NULL) MPI_Type_free(&S.elem);
    free(S.sbuf), free(S.rbuf);
    if (S.xok) {
        S.sent += S.x->sent, S.recvd += S.x->recvd;
        tess__xport_end(S.x);
    }
    tess__xport_close(S.x);
    tess__redist_free(&S.y);
    free(S.R.w[0].d.seg), free(S.R.w[1].d.seg);
    free(S.cnt), free(S.ucnt), free(S.scratch);
    struct tess_pgemm_stats *last = &g->pgemm.last;
    last->seconds = tess__now() - t0;
    last->comm_seconds = S.tcomm;
    last->bytes_sent = S.sent, last->bytes_received = S.recvd;
    last->passes = 1;
    last->a_local = var == 'A' || (var == 'B' && S.y.in_place);
    last->b_local = var == 'B' || (var == 'A' && S.y.in_place);
    last->variant = var;
    return st;
}
