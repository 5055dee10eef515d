/* comm/redist.c: what one rank's local GEMM needs of a distributed operand X (A or B), and
 * where it lies. Of a destination's local update one dimension of sub(X) is "selected"
 * (the rows or columns matching its rows or columns of sub(C), in C's map), the other is
 * k, needed whole. Owner and destination change only at block boundaries of the two maps,
 * so each dimension is cut into segments (one owner, one destination coordinate). A unit
 * (k in [k0, k1), or selected panel positions [s0, s1) with all k) is, per (owner,
 * destination) pair, a list of 2D blocks in one fixed order (operand, column segment, row
 * segment: tess__redist_blocks) or the same blocks as one MPI datatype at their place on
 * either side (tess__redist_types): every transport moves them in that order. An operand
 * whose selected dimension follows C's map and whose k is not split over processes is used
 * in place (one rank; A on a P x 1 grid, B on 1 x Q, with C's blocks). Owns no memory but
 * the segment lists; the panels belong to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "redist.h"

/* Fill one operand's maps: sel is the dimension chosen by C's map cmap (C's rows, axis 0,
 * for A; C's columns, axis 1, for B), the other is k. */
void tess__redist_setup(struct tess__redist_op *op, const struct tess__comm_grid *g, const void *X,
                        const struct tess__comm_desc *dx, int64_t ix, int64_t jx, size_t es,
                        int kdim, int64_t k, int64_t sel_len, const struct tess__comm_bc *cmap,
                        int64_t coff, int axis) {
    memset(op, 0, sizeof *op);
    op->X = X;
    op->ldx = dx->lld;
    op->es = es;
    op->kdim = kdim;
    op->dim[0].src = tess__comm_desc_rows(dx, g->at.nprow);
    op->dim[1].src = tess__comm_desc_cols(dx, g->at.npcol);
    op->dim[0].off = ix;
    op->dim[1].off = jx;
    struct tess__redist_dim *kd = &op->dim[kdim], *sd = &op->dim[1 - kdim];
    kd->len = k;
    kd->all = 1;
    sd->len = sel_len;
    sd->tgt = *cmap;
    sd->toff = coff;
    sd->taxis = axis;
}

/* Index of the block of d holding global index g. */
static int64_t block_of(const struct tess__comm_bc *d, int64_t g) {
    return g < d->ib ? 0 : 1 + (g - d->ib) / d->nb;
}
/* First global index after the block holding g. */
static int64_t block_end(const struct tess__comm_bc *d, int64_t g) {
    int64_t b = block_of(d, g);
    return d->ib + b * d->nb;
}

int tess__redist_cut(struct tess__redist_dim *dm) {
    int64_t L = dm->len, cap = 16, n = 0;
    struct tess__redist_seg *s = malloc(sizeof *s * (size_t)cap);
    if (!s) return tess__fail(TESS_ENOMEM, "pgemm: segment list: out of host memory");
    int64_t tbase[64] = {0};
    if (!dm->all)
        for (int p = 0; p < dm->tgt.np && p < 64; p++)
            tbase[p] = tess__comm_bc_count(&dm->tgt, dm->toff, p);
    for (int64_t a = 0; a < L;) {
        int64_t g = dm->off + a, e = block_end(&dm->src, g) - dm->off;
        if (!dm->all) e = TESS__MIN(e, block_end(&dm->tgt, dm->toff + a) - dm->toff);
        e = TESS__MIN(e, L);
        if (n == cap) {
            cap *= 2;
            struct tess__redist_seg *t = realloc(s, sizeof *s * (size_t)cap);
            if (!t) {
                free(s);
                return tess__fail(TESS_ENOMEM, "pgemm: segment list: out of host memory");
            }
            s = t;
        }
        struct tess__redist_seg *x = &s[n++];
        x->a = a;
        x->len = e - a;
        x->so = tess__comm_bc_g2p(&dm->src, g);
        x->sl = tess__comm_bc_g2l(&dm->src, g);
        if (dm->all) {
            x->to = -1;
            x->tl = a;
        } else {
            x->to = tess__comm_bc_g2p(&dm->tgt, dm->toff + a);
            x->tl = tess__comm_bc_g2l(&dm->tgt, dm->toff + a) - tbase[x->to];
        }
        a = e;
    }
    dm->seg = s;
    dm->nseg = (int)n;
    return TESS_OK;
}

int tess__redist_plan(struct tess__redist_op *op) {
    for (int d = 0; d < 2; d++) {
        op->dim[d].seg = NULL;
        op->dim[d].nseg = 0;
    }
    if (op->dim[0].tgt.np > 64 || op->dim[1].tgt.np > 64)
        return tess__fail(TESS_ENOSYS, "pgemm: grids with more than 64 process rows or columns");
    for (int d = 0; d < 2; d++) {
        int rc = tess__redist_cut(&op->dim[d]);
        if (rc) {
            tess__redist_free(op);
            return rc;
        }
    }
    return TESS_OK;
}

void tess__redist_free(struct tess__redist_op *op) {
    for (int d = 0; d < 2; d++) {
        free(op->dim[d].seg);
        op->dim[d].seg = NULL;
        op->dim[d].nseg = 0;
    }
}

static bool same_map(const struct tess__comm_bc *x, const struct tess__comm_bc *y) {
    return x->n == y->n && x->ib == y->ib && x->nb == y->nb && x->src == y->src && x->np == y->np;
}

bool tess__redist_in_place(const struct tess__redist_op *op) {
    const struct tess__redist_dim *k = &op->dim[op->kdim], *s = &op->dim[1 - op->kdim];
    if (k->src.np != 1) return false;
    if (s->src.np == 1 && s->tgt.np == 1) return true; /* one process: local = global order */
    if (s->taxis != 1 - op->kdim) return false; /* selected by the other kind of coordinate */
    struct tess__comm_bc a = tess__comm_bc_sub(&s->src, s->off, s->len);
    struct tess__comm_bc b = tess__comm_bc_sub(&s->tgt, s->toff, s->len);
    return same_map(&a, &b);
}

int64_t tess__redist_sel_count(const struct tess__redist_op *op, int coord) {
    const struct tess__redist_dim *s = &op->dim[1 - op->kdim];
    int64_t l0, cnt;
    tess__comm_bc_range(&s->tgt, s->toff, s->len, coord, &l0, &cnt);
    return cnt;
}

const void *tess__redist_in_place_ptr(const struct tess__redist_op *op, int myrow, int mycol,
                                      int64_t k0) {
    int64_t idx[2];
    int sd = 1 - op->kdim;
    const struct tess__redist_dim *s = &op->dim[sd];
    idx[sd] = tess__comm_bc_count(&s->src, s->off, sd == 0 ? myrow : mycol);
    idx[op->kdim] = op->dim[op->kdim].off + k0; /* one process along k: local = global */
    return (const char *)op->X + (size_t)(idx[0] + idx[1] * op->ldx) * op->es;
}

/* ---- datatypes of one (owner, destination) pair --------------------------------------- */

/* The segments of dimension d owned by source coordinate so: on the k dimension those in
 * [k0, k1), at buffer index k - kbase; on the selected one those destination coordinate dc
 * wants, at buffer indices within [s0, s1). */
static int pick(const struct tess__redist_op *op, int d, int so, int dc, int64_t k0, int64_t k1,
                int64_t kbase, int64_t s0, int64_t s1, struct tess__redist_seg *out) {
    const struct tess__redist_dim *dm = &op->dim[d];
    int n = 0;
    for (int i = 0; i < dm->nseg; i++) {
        struct tess__redist_seg x = dm->seg[i];
        if (x.so != so) continue;
        if (d == op->kdim) {
            int64_t a = TESS__MAX(x.a, k0), e = TESS__MIN(x.a + x.len, k1);
            if (a >= e) continue;
            x.sl += a - x.a;
            x.tl = a - kbase; /* buffer index: relative to the pass */
            x.len = e - a;
            x.a = a;
        } else {
            if (x.to != dc) continue;
            int64_t lo = TESS__MAX(x.tl, s0), hi = TESS__MIN(x.tl + x.len, s1);
            if (lo >= hi) continue;
            x.a += lo - x.tl;
            x.sl += lo - x.tl;
            x.len = hi - lo;
            x.tl = lo;
        }
        out[n++] = x;
    }
    return n;
}

/* ---- the same pieces as a list of 2D blocks (the NCCL transport packs them itself) ------ */

int tess__redist_blocks(const struct tess__redist_op *ops, int nops, int orow, int ocol, int drow,
                        int dcol, int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1,
                        tess__redist_block_fn fn, void *arg) {
    for (int i = 0; i < nops; i++) {
        const struct tess__redist_op *op = &ops[i];
        if (op->in_place) continue;
        int sd = 1 - op->kdim;
        int dcoord = op->dim[sd].taxis == 0 ? drow : dcol;
        struct tess__redist_seg *rs = malloc(sizeof *rs *
                                             (size_t)(op->dim[0].nseg + op->dim[1].nseg + 1));
        if (!rs) return tess__fail(TESS_ENOMEM, "pgemm: blocks: out of host memory");
        struct tess__redist_seg *cs = rs + op->dim[0].nseg;
        int nr = pick(op, 0, orow, dcoord, k0, k1, kbase, s0, s1, rs);
        int nc = pick(op, 1, ocol, dcoord, k0, k1, kbase, s0, s1, cs);
        for (int c = 0; c < nc && nr > 0; c++)
            for (int r = 0; r < nr; r++)
                fn(arg, i, rs[r].sl, cs[c].sl, rs[r].tl, cs[c].tl, rs[r].len, cs[c].len);
        free(rs);
    }
    return TESS_OK;
}

/* ---- the same blocks as one MPI datatype, on either side ------------------------------- */

/* Accumulates the blocks of tess__redist_blocks into a struct datatype: one hvector per
 * block shape (block-cyclic blocks mostly share one), placed at the block's address. */
struct btype_acc {
    const struct tess__redist_op *ops;
    bool send;
    MPI_Datatype elem;
    MPI_Aint base[2];
    int *bl;
    MPI_Aint *dp;
    MPI_Datatype *ty;  /* per block: its shape's type */
    MPI_Datatype *own; /* per block: its own type when shape[] was full, else null */
    size_t n, cap;
    struct {
        int64_t rows, cols, ld;
        MPI_Datatype t;
    } shape[8];
    int nshape;
    int st;
};

/* The type of a rows x cols block with leading dimension ld: shared with the blocks of
 * the same shape among the first 8 shapes met, else the block's own (*own, freed by the
 * caller). */
static MPI_Datatype btype_shape(struct btype_acc *a, int64_t rows, int64_t cols, int64_t ld,
                                size_t es, MPI_Datatype *own) {
    *own = MPI_DATATYPE_NULL;
    for (int i = 0; i < a->nshape; i++)
        if (a->shape[i].rows == rows && a->shape[i].cols == cols && a->shape[i].ld == ld)
            return a->shape[i].t;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    a->st = TESS__MPI(
        MPI_Type_create_hvector((int)cols, (int)rows, (MPI_Aint)(ld * (int64_t)es), a->elem, &t));
    if (a->st) return MPI_DATATYPE_NULL;
    if (a->nshape == 8) return *own = t;
    a->shape[a->nshape].rows = rows, a->shape[a->nshape].cols = cols, a->shape[a->nshape].ld = ld;
    a->shape[a->nshape++].t = t;
    return t;
}

static void btype_add(void *arg, int op, int64_t sr, int64_t sc, int64_t tr, int64_t tc,
                      int64_t rows, int64_t cols) {
    struct btype_acc *a = arg;
    if (a->st) return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int *bl = realloc(a->bl, cap * sizeof *bl);
        if (bl) a->bl = bl;
        MPI_Aint *dp = realloc(a->dp, cap * sizeof *dp);
        if (dp) a->dp = dp;
        MPI_Datatype *ty = realloc(a->ty, cap * sizeof *ty);
        if (ty) a->ty = ty;
        MPI_Datatype *own = realloc(a->own, cap * sizeof *own);
        if (own) a->own = own;
        if (!bl || !dp || !ty || !own) {
            a->st = tess__fail(TESS_ENOMEM, "pgemm: datatypes: out of host memory");
            return;
        }
        a->cap = cap;
    }
    if (rows > INT32_MAX || cols > INT32_MAX) {
        a->st = tess__fail(TESS_ENOSYS, "pgemm: a block over MPI's int counts");
        return;
    }
    const struct tess__redist_op *o = &a->ops[op];
    int64_t r = a->send ? sr : tr, c = a->send ? sc : tc, ld = a->send ? o->ldx : o->ldbuf;
    MPI_Datatype t = btype_shape(a, rows, cols, ld, o->es, &a->own[a->n]);
    if (a->st) return;
    a->bl[a->n] = 1;
    a->ty[a->n] = t;
    a->dp[a->n++] = a->base[op] + (MPI_Aint)((r + c * ld) * (int64_t)o->es);
}

int tess__redist_types(const struct tess__redist_op *ops, int nops, int orow, int ocol, int drow,
                       int dcol, int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1,
                       bool send, MPI_Datatype elem, MPI_Datatype *type) {
    *type = MPI_DATATYPE_NULL;
    if (nops > 2) return tess__fail(TESS_ENOSYS, "pgemm: datatypes of more than two operands");
    struct btype_acc a = {.ops = ops, .send = send, .elem = elem};
    for (int i = 0; i < nops && !a.st; i++)
        a.st = TESS__MPI(MPI_Get_address(send ? ops[i].X : ops[i].buf, &a.base[i]));
    if (!a.st)
        a.st = tess__redist_blocks(ops, nops, orow, ocol, drow, dcol, k0, k1, kbase, s0, s1,
                                   btype_add, &a);
    if (!a.st && a.n > INT32_MAX) a.st = tess__fail(TESS_ENOSYS, "pgemm: too many blocks");
    if (!a.st && a.n > 0)
        a.st = TESS__MPI(MPI_Type_create_struct((int)a.n, a.bl, a.dp, a.ty, type));
    if (!a.st && a.n > 0) a.st = TESS__MPI(MPI_Type_commit(type));
    for (int i = 0; i < a.nshape; i++) MPI_Type_free(&a.shape[i].t);
    for (size_t i = 0; i < a.n; i++)
        if (a.own[i] != MPI_DATATYPE_NULL) MPI_Type_free(&a.own[i]);
    free(a.bl), free(a.dp), free(a.ty), free(a.own);
    if (a.st && *type != MPI_DATATYPE_NULL) MPI_Type_free(type);
    return a.st;
}
