/* comm/pgemm.c: the distributed GEMM's entry (tess_p?gemm, tess__pgemm_exec) and the
 * public grid and descriptor calls of tessera_mpi.h. A call's arguments are checked on
 * every rank and agreed (tess__comm_agree) before any data moves: a NULL A, B or C only
 * where the rank's local array of it is empty or nothing of it is read, and the same
 * global arguments on every rank (a hash). tess__pgemm_exec then picks the variant
 * (pgemm_split.c) and runs stationary C (pgemm_statc.c) or stationary A / B; any failure,
 * of a device or of MPI, comes back the same on every rank. A call that multiplies holds
 * one call reference on the node runtime from start to end: its transport, device panels
 * and jobs all use that runtime, and a tess_finalize on another thread waits for the call.
 * Owns the panels' budget and the grid's host work buffer (g->pgemm).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "level3.h"
#include "node_comm.h"
#include "pgemm.h"
#include "xport.h"

/* ---- grids and descriptors (tessera_mpi.h) ------------------------------------------- */

int tess_grid_create(MPI_Comm comm, int nprow, int npcol, char order, tess_grid_t **out) {
    tess__clear_error();
    if (!out)
        return tess__fail(TESS_EINVAL, "tess_grid_create: argument 5 (grid) must not be NULL");
    *out = NULL;
    tess_grid_t *g = calloc(1, sizeof *g);
    if (!g) return tess__fail(TESS_ENOMEM, "tess_grid_create: out of host memory");
    int rc = tess__comm_grid_create(comm, nprow, npcol, order, g);
    if (rc) {
        free(g);
        return rc;
    }
    *out = g;
    return TESS_OK;
}

int tess_grid_info(const tess_grid_t *g, int *nprow, int *npcol, int *myrow, int *mycol) {
    if (!g) return tess__fail(TESS_EINVAL, "tess_grid_info: argument 1 (grid) must not be NULL");
    if (nprow) *nprow = g->at.nprow;
    if (npcol) *npcol = g->at.npcol;
    if (myrow) *myrow = g->at.myrow;
    if (mycol) *mycol = g->at.mycol;
    return TESS_OK;
}

void tess_grid_free(tess_grid_t *g) {
    if (!g) return;
    tess_grid_free(g->flat);
    tess__xport_drop(g);
    tess_free_host(g->pgemm.ws.ptr);
    tess__comm_grid_destroy(g);
    free(g);
}

void tess_desc_init(tess_desc_t *d, int64_t m, int64_t n, int64_t mb, int64_t nb, int rsrc,
                    int csrc, int64_t lld) {
    d->m = m, d->n = n;
    d->imb = d->mb = mb;
    d->inb = d->nb = nb;
    d->rsrc = rsrc, d->csrc = csrc;
    d->lld = lld;
}

static struct tess__comm_desc to_comm(const tess_desc_t *d) {
    struct tess__comm_desc c = {.dtype = TESS__DESC_BLOCK_CYCLIC_2D_INB,
                                .ctxt = -1,
                                .m = d->m,
                                .n = d->n,
                                .imb = d->imb,
                                .inb = d->inb,
                                .mb = d->mb,
                                .nb = d->nb,
                                .rsrc = d->rsrc,
                                .csrc = d->csrc,
                                .lld = d->lld};
    return c;
}

int64_t tess_desc_local(const tess_grid_t *g, const tess_desc_t *d, int dim) {
    if (!g || !d || g->at.myrow < 0 || d->mb < 1 || d->nb < 1 || d->imb < 1 || d->inb < 1) return 0;
    struct tess__comm_desc c = to_comm(d);
    if (dim == 0) {
        if (d->rsrc < 0 || d->rsrc >= g->at.nprow) return 0;
        struct tess__comm_bc b = tess__comm_desc_rows(&c, g->at.nprow);
        return tess__comm_bc_numroc(&b, g->at.myrow);
    }
    if (d->csrc < 0 || d->csrc >= g->at.npcol) return 0;
    struct tess__comm_bc b = tess__comm_desc_cols(&c, g->at.npcol);
    return tess__comm_bc_numroc(&b, g->at.mycol);
}

int tess_pgemm_last_stats(const tess_grid_t *g, tess_pgemm_stats_t *out) {
    if (!g || !out) return tess__fail(TESS_EINVAL, "tess_pgemm_last_stats: NULL argument");
    *out = g->pgemm.last;
    return TESS_OK;
}

/* ---- the distributed GEMM ------------------------------------------------------------- */

/* Bytes per rank the panels may take (TESSERA_PGEMM_MEM, at most `cap` where cap > 0; else
 * cap, or 40% of RAM shared by the ranks of this node); the minimum over the grid, so every
 * rank cuts k the same way. */
int tess__pgemm_budget(const struct tess__comm_grid *g, int64_t cap, int64_t *out) {
    struct tess__config cfg;
    int st = tess__config_load(&cfg);
    int64_t b = cfg.pgemm_mem;
    if (b > 0 && cap > 0)
        b = TESS__MIN(b, cap);
    else if (b <= 0)
        b = cap;
    if (!st && b <= 0) {
        MPI_Comm node;
        int local = 1;
        st = TESS__MPI(MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        if (!st) {
            MPI_Comm_size(node, &local);
            MPI_Comm_free(&node);
        }
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        double ram = pages > 0 && psz > 0 ? (double)pages * (double)psz : 8e9;
        b = (int64_t)(0.4 * ram / (local > 0 ? local : 1));
    }
    long long v = (long long)b, m = 0;
    int st2 = TESS__MPI(MPI_Allreduce(&v, &m, 1, MPI_LONG_LONG, MPI_MIN, g->comm));
    *out = (int64_t)m;
    return st ? st : st2;
}

/* The device panels' cap on a heap of `heap` bytes: what the rank's job and the exchange
 * leave (level3.h). The job reads an in-place operand of `inplace` bytes from host memory
 * (cached: each of its tiles serves every tile row or column of C) and keeps
 * TESS__JOB_HEAP_RESERVE of the heap for its streams' tiles; the exchange holds nbuf
 * buffers of one unit, each at most `unit` bytes and at most the panels' bytes. The
 * largest p with p + nbuf min(unit, p) <= the rest; never less than TESS__PANEL_HEAP_SHARE
 * of the heap. */
int64_t tess__pgemm_panel_cap(int64_t heap, int64_t inplace, int nbuf, int64_t unit) {
    const int64_t floor = (int64_t)((double)heap * TESS__PANEL_HEAP_SHARE);
    const int64_t rest = heap - inplace - (int64_t)((double)heap * TESS__JOB_HEAP_RESERVE);
    int64_t p = rest - (int64_t)nbuf * unit; /* panels of a unit or more */
    if (p < unit) p = rest / (1 + nbuf);     /* smaller: the units are the panels' size */
    return TESS__MAX(floor, p);
}

int tess__pgemm_ws(struct tess__comm_grid *g, size_t bytes) {
    struct tess__pgemm_buf *ws = &g->pgemm.ws;
    if (bytes <= ws->bytes) return TESS_OK;
    tess_free_host(ws->ptr);
    ws->bytes = 0;
    ws->ptr = tess_malloc_host(bytes);
    if (!ws->ptr)
        return tess__fail(TESS_ENOMEM,
                          "pgemm: %zu bytes of panel buffers: out of host memory "
                          "(lower TESSERA_PGEMM_MEM)",
                          bytes);
    ws->bytes = bytes;
    return TESS_OK;
}

int tess__pgemm_chunk(const struct tess__comm_grid *g, int64_t *out) {
    struct tess__config cfg;
    long long v = tess__config_load(&cfg) || cfg.pgemm_chunk <= 0 ? 128 << 20
                                                                  : (long long)cfg.pgemm_chunk;
    long long mn = v;
    int st = TESS__MPI(MPI_Allreduce(&v, &mn, 1, MPI_LONG_LONG, MPI_MIN, g->comm));
    *out = (int64_t)mn;
    return st;
}

/* This rank's part of sub(X) (rows x cols from (i, j) of descriptor d) in its local array X:
 * its first element and extent; false when it holds none. */
static bool local_part(const struct tess__comm_grid *g, const void *X,
                       const struct tess__comm_desc *d, int64_t i, int64_t j, int64_t rows,
                       int64_t cols, size_t es, char **p, int64_t *nr, int64_t *nc) {
    const struct tess__comm_bc br = tess__comm_desc_rows(d, g->at.nprow);
    const struct tess__comm_bc bc = tess__comm_desc_cols(d, g->at.npcol);
    int64_t r0, c0;
    tess__comm_bc_range(&br, i, rows, g->at.myrow, &r0, nr);
    tess__comm_bc_range(&bc, j, cols, g->at.mycol, &c0, nc);
    *p = X ? (char *)X + (size_t)(r0 + c0 * d->lld) * es : NULL;
    return X && *nr > 0 && *nc > 0;
}

/* Held local arrays (tess_hold) under call c, before anything moves: the exchange reads
 * sub(A) and sub(B) on the host, so their held tiles are written back (the device copies
 * stay current). sub(C) stays held (c->keep_c) only under stationary C (var 'C'), whose
 * job keeps its tiles on the devices (gemm.c), and only where A's and B's local parts lie
 * outside its held matrix (the host reads them while C's tiles may be written back);
 * otherwise it is written back and its device copies dropped, since the host writes it.
 * Local: the caller agrees on the status. */
static int unhold_local(const struct tess__comm_grid *g, struct tess__pgemm_call *c, char var) {
    c->keep_c = false;
    if (!tess__holds_any()) return TESS_OK;
    const size_t es = tess__dtypes[c->dt].size;
    const bool ab = var != 0; /* 0: no product, only C is touched */
    char *pa = NULL, *pb = NULL, *pc = NULL;
    int64_t ar = 0, ac = 0, br = 0, bc = 0, cr = 0, cc = 0;
    bool ha = ab && local_part(g, c->A, &c->da, c->ia, c->ja, c->ta == 'N' ? c->m : c->k,
                               c->ta == 'N' ? c->k : c->m, es, &pa, &ar, &ac);
    bool hb = ab && local_part(g, c->B, &c->db, c->ib, c->jb, c->tb == 'N' ? c->k : c->n,
                               c->tb == 'N' ? c->n : c->k, es, &pb, &br, &bc);
    bool hc = local_part(g, c->C, &c->dc, c->ic, c->jc, c->m, c->n, es, &pc, &cr, &cc);
    int rc = TESS_OK;
    if (ha) rc = tess__l3_unhold("tess_pgemm", pa, ar, ac, c->da.lld, c->dt, false);
    if (!rc && hb) rc = tess__l3_unhold("tess_pgemm", pb, br, bc, c->db.lld, c->dt, false);
    if (rc || !hc) return rc;
    bool keep = var == 'C';
    if (keep && (ha || hb)) {
        struct tess__rt *rt;
        struct tess__hview v;
        if ((rc = tess__rt_get(&rt))) return rc;
        int r = tess__hold_view(rt, "tess_pgemm", pc, cr, cc, c->dc.lld, es, &v);
        keep = r != 1 || !((ha && tess__hview_overlaps(&v, pa, ar, ac, c->da.lld, es)) ||
                           (hb && tess__hview_overlaps(&v, pb, br, bc, c->db.lld, es)));
        rc = r < -1 ? TESS_EINVAL : TESS_OK; /* the checker's message */
        tess__rt_put(rt);
    }
    c->keep_c = keep;
    return rc || keep ? rc : tess__l3_unhold("tess_pgemm", pc, cr, cc, c->dc.lld, c->dt, true);
}

int tess__pgemm_exec(struct tess__comm_grid *g, const struct tess__pgemm_call *call) {
    if (!tess__comm_grid_in(g)) return TESS_OK;
    const double t0 = tess__now();
    struct tess_pgemm_stats *last = &g->pgemm.last;
    memset(last, 0, sizeof *last);
    if (call->m == 0 || call->n == 0) return TESS_OK;
    struct tess__pgemm_call c = *call;
    const tess_dtype_t dt = c.dt;
    const size_t es = tess__dtypes[dt].size;
    const struct tess__comm_bc cr = tess__comm_desc_rows(&c.dc, g->at.nprow);
    const struct tess__comm_bc cc = tess__comm_desc_cols(&c.dc, g->at.npcol);
    if (c.k == 0 || tess__scalar_is_zero(dt, &c.alpha)) {
        /* no product: C = beta C on what this rank holds (beta = 0: zeros, C not read; C
         * may be NULL where this rank holds none of it) */
        char *pc;
        int64_t mloc, nloc;
        int st = tess__comm_agree(g, unhold_local(g, &c, 0));
        if (st) return st;
        if (local_part(g, c.C, &c.dc, c.ic, c.jc, c.m, c.n, es, &pc, &mloc, &nloc))
            tess__host_scale(dt, mloc, nloc, &c.beta, pc, c.dc.lld);
        last->seconds = tess__now() - t0;
        return TESS_OK;
    }
    if (!tess__dtypes[dt].complex_) {
        if (c.ta == 'C') c.ta = 'T';
        if (c.tb == 'C') c.tb = 'T';
    }
    /* the call's reference, released on every return below (a runtime that does not start
     * fails the first job, as a status every rank agrees on) */
    struct tess__rt *rt = NULL;
    (void)tess__rt_get(&rt);
    /* the two operands: A's selected dimension follows C's rows, B's C's columns */
    struct tess__redist_op ops[2];
    tess__redist_setup(&ops[0], g, c.A, &c.da, c.ia, c.ja, es, c.ta == 'N' ? 1 : 0, c.k, c.m, &cr,
                       c.ic, 0);
    tess__redist_setup(&ops[1], g, c.B, &c.db, c.ib, c.jb, es, c.tb == 'N' ? 0 : 1, c.k, c.n, &cc,
                       c.jc, 1);
    int st = tess__redist_plan(&ops[0]);
    if (!st && (st = tess__redist_plan(&ops[1]))) tess__redist_free(&ops[0]);
    if (st) {
        tess__rt_put(rt);
        return tess__comm_agree(g, st);
    }
    for (int i = 0; i < 2; i++) ops[i].in_place = tess__redist_in_place(&ops[i]);
    /* skinny shapes: stationary A or B (pgemm_split.c); else stationary C */
    char var = 'C';
    st = tess__pgemm_pick(g, &c, ops, &var);
    if (!st) st = tess__comm_agree(g, unhold_local(g, &c, var));
    if (!st && var == 'C') {
        st = tess__pgemm_statc(g, &c, ops);
        if (last->variant) last->seconds = tess__now() - t0; /* it got to multiply */
    }
    tess__redist_free(&ops[0]);
    tess__redist_free(&ops[1]);
    if (!st && var != 'C') st = tess__pgemm_split(g, var, &c);
    tess__rt_put(rt);
    return st;
}

/* ---- argument checks: every rank, then agreement -------------------------------------- */

/* FNV-1a over the arguments every rank must pass alike. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t desc_hash(uint64_t h, const tess_desc_t *d, int64_t i, int64_t j) {
    int64_t v[10] = {d->m, d->n, d->imb, d->inb, d->mb, d->nb, d->rsrc, d->csrc, i, j};
    return fnv(h, v, sizeof v);
}

static int pgemm_check(const char *fn, tess_grid_t *g, tess_dtype_t dt, tess_trans_t transa,
                       tess_trans_t transb, int64_t m, int64_t n, int64_t k, const void *alpha,
                       const void *A, int64_t ia, int64_t ja, const tess_desc_t *descA,
                       const void *B, int64_t ib, int64_t jb, const tess_desc_t *descB,
                       const void *beta, void *C, int64_t ic, int64_t jc, const tess_desc_t *descC,
                       int pos) {
#define BAD(...) tess__fail(TESS_EINVAL, "%s: argument %d " __VA_ARGS__)
    if (transa != TESS_NO_TRANS && transa != TESS_TRANS && transa != TESS_CONJ_TRANS)
        return BAD("(transa = %d) must be a tess_trans_t", fn, pos, (int)transa);
    if (transb != TESS_NO_TRANS && transb != TESS_TRANS && transb != TESS_CONJ_TRANS)
        return BAD("(transb = %d) must be a tess_trans_t", fn, pos + 1, (int)transb);
    if (m < 0) return BAD("(m = %lld) must be >= 0", fn, pos + 2, (long long)m);
    if (n < 0) return BAD("(n = %lld) must be >= 0", fn, pos + 3, (long long)n);
    if (k < 0) return BAD("(k = %lld) must be >= 0", fn, pos + 4, (long long)k);
    if (!alpha) return BAD("(alpha) must not be NULL", fn, pos + 5);
    if (!descA) return BAD("(descA) must not be NULL", fn, pos + 9);
    if (!descB) return BAD("(descB) must not be NULL", fn, pos + 13);
    if (!beta) return BAD("(beta) must not be NULL", fn, pos + 14);
    if (!descC) return BAD("(descC) must not be NULL", fn, pos + 18);
#undef BAD
    struct tess__comm_desc a = to_comm(descA), b = to_comm(descB), c = to_comm(descC);
    bool na = transa == TESS_NO_TRANS, nb = transb == TESS_NO_TRANS;
    struct tess__comm_argpos pa = {pos + 2, pos + 4, pos + 9}, pb = {pos + 4, pos + 3, pos + 13},
                             pc = {pos + 2, pos + 3, pos + 18};
    if (!na) pa.m = pos + 4, pa.n = pos + 2;
    if (!nb) pb.m = pos + 3, pb.n = pos + 4;
    char msg[512];
    int st = tess__comm_desc_check(&c, "C", &g->at, ic, jc, m, n, &pc, NULL);
    if (!st) st = tess__comm_desc_check(&a, "A", &g->at, ia, ja, na ? m : k, na ? k : m, &pa, NULL);
    if (!st) st = tess__comm_desc_check(&b, "B", &g->at, ib, jb, nb ? k : n, nb ? n : k, &pb, NULL);
    if (st) {
        snprintf(msg, sizeof msg, "%s", tess_last_error());
        return tess__fail(st, "%s: %s", fn, msg);
    }
    /* pointers: NULL only where the rank's local array of that matrix is empty (it holds
     * none of its elements), or where the call reads nothing of it: C when sub(C) is empty,
     * A and B also when k = 0 or alpha = 0 */
    if (m == 0 || n == 0) return TESS_OK;
    int64_t r, q;
    if (!C && (r = tess_desc_local(g, descC, 0)) > 0 && (q = tess_desc_local(g, descC, 1)) > 0)
        return tess__fail(TESS_EINVAL,
                          "%s: argument %d (C) must not be NULL: this rank holds "
                          "%lld x %lld of C",
                          fn, pos + 15, (long long)r, (long long)q);
    tess__scalar_t al;
    tess__scalar_load(dt, &al, alpha);
    if (k == 0 || tess__scalar_is_zero(dt, &al)) return TESS_OK;
    if (!A && (r = tess_desc_local(g, descA, 0)) > 0 && (q = tess_desc_local(g, descA, 1)) > 0)
        return tess__fail(TESS_EINVAL,
                          "%s: argument %d (A) must not be NULL: this rank holds "
                          "%lld x %lld of A",
                          fn, pos + 6, (long long)r, (long long)q);
    if (!B && (r = tess_desc_local(g, descB, 0)) > 0 && (q = tess_desc_local(g, descB, 1)) > 0)
        return tess__fail(TESS_EINVAL,
                          "%s: argument %d (B) must not be NULL: this rank holds "
                          "%lld x %lld of B",
                          fn, pos + 10, (long long)r, (long long)q);
    return TESS_OK;
}

int tess_pgemm(tess_grid_t *g, tess_dtype_t dt, tess_trans_t transa, tess_trans_t transb, int64_t m,
               int64_t n, int64_t k, const void *alpha, const void *A, int64_t ia, int64_t ja,
               const tess_desc_t *descA, const void *B, int64_t ib, int64_t jb,
               const tess_desc_t *descB, const void *beta, void *C, int64_t ic, int64_t jc,
               const tess_desc_t *descC) {
    tess__clear_error();
    if (!g) return tess__fail(TESS_EINVAL, "tess_pgemm: argument 1 (grid) must not be NULL");
    if (!tess__comm_grid_in(g)) return TESS_OK;
    int st = TESS_OK;
    if ((unsigned)dt > TESS_Z)
        st = tess__fail(TESS_EINVAL, "tess_pgemm: argument 2 (dtype = %d) must be a tess_dtype_t",
                        (int)dt);
    if (!st)
        st = pgemm_check("tess_pgemm", g, dt, transa, transb, m, n, k, alpha, A, ia, ja, descA, B,
                         ib, jb, descB, beta, C, ic, jc, descC, 3);
    st = tess__comm_agree(g, st);
    if (st) return st;
    /* the same call on every rank: a hash of the global arguments must agree */
    uint64_t h = 1469598103934665603ull;
    int64_t v[6] = {dt, transa, transb, m, n, k};
    h = fnv(h, v, sizeof v);
    h = desc_hash(h, descA, ia, ja);
    h = desc_hash(h, descB, ib, jb);
    h = desc_hash(h, descC, ic, jc);
    tess__scalar_t al, be;
    tess__scalar_load(dt, &al, alpha);
    tess__scalar_load(dt, &be, beta);
    h = fnv(h, &al, tess__dtypes[dt].size);
    h = fnv(h, &be, tess__dtypes[dt].size);
    unsigned long long hv[2] = {h, ~h}, hm[2];
    st = TESS__MPI(MPI_Allreduce(hv, hm, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, g->comm));
    if (!st && hm[0] != ~hm[1])
        st = tess__fail(TESS_EINVAL,
                        "tess_pgemm: the ranks passed different arguments (sizes, "
                        "transposes, scalars, descriptors or submatrix offsets must be the same "
                        "on every rank)");
    st = tess__comm_agree(g, st);
    if (st) return st;
    struct tess__pgemm_call c = {.dt = dt, .m = m, .n = n, .k = k, .alpha = al, .beta = be};
    c.ta = transa == TESS_NO_TRANS ? 'N' : transa == TESS_TRANS ? 'T' : 'C';
    c.tb = transb == TESS_NO_TRANS ? 'N' : transb == TESS_TRANS ? 'T' : 'C';
    c.A = A, c.B = B, c.C = C;
    c.ia = ia, c.ja = ja, c.ib = ib, c.jb = jb, c.ic = ic, c.jc = jc;
    c.da = to_comm(descA), c.db = to_comm(descB), c.dc = to_comm(descC);
    return tess__pgemm_exec(g, &c);
}

#define TYPED(name, dt, T, S, ALPHA, BETA)                                                     \
    int name(tess_grid_t *g, tess_trans_t transa, tess_trans_t transb, int64_t m, int64_t n,   \
             int64_t k, S alpha, const T *A, int64_t ia, int64_t ja, const tess_desc_t *descA, \
             const T *B, int64_t ib, int64_t jb, const tess_desc_t *descB, S beta, T *C,       \
             int64_t ic, int64_t jc, const tess_desc_t *descC) {                               \
        return tess_pgemm(g, dt, transa, transb, m, n, k, ALPHA, A, ia, ja, descA, B, ib, jb,  \
                          descB, BETA, C, ic, jc, descC);                                      \
    }
TYPED(tess_psgemm, TESS_S, float, float, &alpha, &beta)
TYPED(tess_pdgemm, TESS_D, double, double, &alpha, &beta)
TYPED(tess_pcgemm, TESS_C, void, const void *, alpha, beta)
TYPED(tess_pzgemm, TESS_Z, void, const void *, alpha, beta)
#undef TYPED
