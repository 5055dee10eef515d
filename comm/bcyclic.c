/* comm/bcyclic.c: the index math of the 2D block-cyclic map and the descriptors.
 * Owns pure arithmetic only (the formulas are written out in comm.h): no MPI, no state, so
 * the ScaLAPACK glue, the distributed algorithms and the tests share one definition.
 * Does not own the grid (grid.c) or moving data (xport_*.c).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "comm.h"

/* ---- one dimension ------------------------------------------------------------------- */

/* Distance of process p from the source process, in [0, np). */
static int dist(const struct tess__comm_bc *d, int p) {
    return ((p - d->src) % d->np + d->np) % d->np;
}

/* Block holding global index g, and the block's first global index. */
static int64_t block_of(const struct tess__comm_bc *d, int64_t g) {
    return g < d->ib ? 0 : 1 + (g - d->ib) / d->nb;
}
static int64_t block_start(const struct tess__comm_bc *d, int64_t b) {
    return b == 0 ? 0 : d->ib + (b - 1) * d->nb;
}

/* First local index of block b on its owner: every earlier block of the owner is full. */
static int64_t block_lstart(const struct tess__comm_bc *d, int64_t b) {
    int64_t k = b / d->np;
    if (b % d->np != 0) return k * d->nb;
    return k == 0 ? 0 : d->ib + (k - 1) * d->nb;
}

/* #{ j in 1..K : j mod np == r }, r in [0, np). */
static int64_t count_congruent(int64_t K, int np, int r) {
    if (K <= 0) return 0;
    if (r == 0) return K / np;
    return K >= r ? (K - r) / np + 1 : 0;
}

int64_t tess__comm_bc_count(const struct tess__comm_bc *d, int64_t x, int p) {
    int r = dist(d, p);
    if (x <= 0) return 0;
    if (x <= d->ib) return r == 0 ? x : 0;
    int64_t rest = x - d->ib, K = rest / d->nb, tail = rest % d->nb;
    int64_t c = (r == 0 ? d->ib : 0) + d->nb * count_congruent(K, d->np, r);
    if (tail > 0 && (K + 1) % d->np == r) c += tail;
    return c;
}

int64_t tess__comm_bc_numroc(const struct tess__comm_bc *d, int p) {
    return tess__comm_bc_count(d, d->n, p);
}

int tess__comm_bc_g2p(const struct tess__comm_bc *d, int64_t g) {
    return (int)((d->src + block_of(d, g)) % d->np);
}

int64_t tess__comm_bc_g2l(const struct tess__comm_bc *d, int64_t g) {
    int64_t b = block_of(d, g);
    return block_lstart(d, b) + (g - block_start(d, b));
}

int64_t tess__comm_bc_l2g(const struct tess__comm_bc *d, int p, int64_t l) {
    int r = dist(d, p);
    int64_t b, off;
    if (r == 0) {
        if (l < d->ib) { /* inside the first block */
            b = 0;
            off = l;
        } else {
            b = (1 + (l - d->ib) / d->nb) * d->np;
            off = (l - d->ib) % d->nb;
        }
    } else {
        b = r + (l / d->nb) * d->np;
        off = l % d->nb;
    }
    return block_start(d, b) + off;
}

void tess__comm_bc_range(const struct tess__comm_bc *d, int64_t i0, int64_t len, int p, int64_t *l0,
                         int64_t *count) {
    int64_t lo = tess__comm_bc_count(d, i0, p);
    *l0 = lo;
    *count = tess__comm_bc_count(d, i0 + len, p) - lo;
}

struct tess__comm_bc tess__comm_bc_sub(const struct tess__comm_bc *d, int64_t i0, int64_t len) {
    int64_t b = block_of(d, i0);
    int64_t size = b == 0 ? d->ib : d->nb; /* the block's full size, not clipped to n */
    struct tess__comm_bc s = {
        .n = len,
        .ib = size - (i0 - block_start(d, b)),
        .nb = d->nb,
        .src = (int)((d->src + b) % d->np),
        .np = d->np,
    };
    return s;
}

int64_t tess__comm_bc_nblocks(const struct tess__comm_bc *d) {
    if (d->n <= 0) return 0;
    if (d->n <= d->ib) return 1;
    return 1 + (d->n - d->ib + d->nb - 1) / d->nb;
}

void tess__comm_bc_block(const struct tess__comm_bc *d, int64_t b, int64_t *g0, int64_t *len,
                         int *owner, int64_t *l0) {
    int64_t s = block_start(d, b), size = b == 0 ? d->ib : d->nb;
    if (g0) *g0 = s;
    if (len) *len = s + size <= d->n ? size : d->n - s;
    if (owner) *owner = (int)((d->src + b) % d->np);
    if (l0) *l0 = block_lstart(d, b);
}

void tess__comm_grid_shape(int nprocs, int *nprow, int *npcol) {
    int p = 1;
    for (int i = 1; (int64_t)i * i <= nprocs; i++)
        if (nprocs % i == 0) p = i;
    *nprow = nprocs < 1 ? 1 : p;
    *npcol = nprocs < 1 ? 1 : nprocs / p;
}

/* ---- descriptors --------------------------------------------------------------------- */

/* Entries by their 0-based index in the 11-entry form (PBLAS's PBtools.h). */
enum { DTYPE_, CTXT_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_, LLD_ };
static const char *const entry_names[11] = {"DTYPE_", "CTXT_", "M_",    "N_",    "IMB_", "INB_",
                                            "MB_",    "NB_",   "RSRC_", "CSRC_", "LLD_"};

/* 1-based position of entry e in the caller's form, and its name there. A 9-entry
 * descriptor has no IMB_/INB_: they are its MB_/NB_. */
static int entry_pos(int dtype, int e) {
    static const int pos9[11] = {1, 2, 3, 4, 5, 6, 5, 6, 7, 8, 9};
    return dtype == TESS__DESC_BLOCK_CYCLIC_2D ? pos9[e] : e + 1;
}
static const char *entry_name(int dtype, int e) {
    if (dtype == TESS__DESC_BLOCK_CYCLIC_2D && (e == IMB_ || e == INB_)) return entry_names[e + 2];
    return entry_names[e];
}

void tess__comm_desc_init(struct tess__comm_desc *d, int64_t m, int64_t n, int64_t mb, int64_t nb,
                          int rsrc, int csrc, int64_t lld) {
    *d = (struct tess__comm_desc){
        .dtype = TESS__DESC_BLOCK_CYCLIC_2D,
        .ctxt = -1,
        .m = m,
        .n = n,
        .imb = mb,
        .inb = nb,
        .mb = mb,
        .nb = nb,
        .rsrc = rsrc,
        .csrc = csrc,
        .lld = lld,
    };
}

int tess__comm_desc_from_scalapack(const int *desc, const char *name, struct tess__comm_desc *out) {
    if (!desc) return tess__fail(TESS_EINVAL, "DESC%s is NULL", name);
    struct tess__comm_desc d = {.dtype = desc[0], .ctxt = desc[1], .m = desc[2], .n = desc[3]};
    if (desc[0] == TESS__DESC_BLOCK_CYCLIC_2D) {
        d.imb = d.mb = desc[4];
        d.inb = d.nb = desc[5];
        d.rsrc = desc[6];
        d.csrc = desc[7];
        d.lld = desc[8];
    } else if (desc[0] == TESS__DESC_BLOCK_CYCLIC_2D_INB) {
        d.imb = desc[4];
        d.inb = desc[5];
        d.mb = desc[6];
        d.nb = desc[7];
        d.rsrc = desc[8];
        d.csrc = desc[9];
        d.lld = desc[10];
    } else {
        return tess__fail(TESS_EINVAL,
                          "DESC%s(1) = DTYPE_ = %d must be 1 (BLOCK_CYCLIC_2D) or 2 "
                          "(BLOCK_CYCLIC_2D_INB)",
                          name, desc[0]);
    }
    *out = d;
    return TESS_OK;
}

int tess__comm_desc_to_scalapack(const struct tess__comm_desc *d, int out[11]) {
    int64_t v[11] = {d->dtype, d->ctxt, d->m,    d->n,    d->imb, d->inb,
                     d->mb,    d->nb,   d->rsrc, d->csrc, d->lld};
    for (int e = 0; e < 11; e++)
        if (v[e] < INT_MIN || v[e] > INT_MAX) return 0;
    if (d->dtype == TESS__DESC_BLOCK_CYCLIC_2D && d->imb == d->mb && d->inb == d->nb) {
        static const int from[9] = {DTYPE_, CTXT_, M_, N_, MB_, NB_, RSRC_, CSRC_, LLD_};
        for (int i = 0; i < 9; i++) out[i] = (int)v[from[i]];
        return 9;
    }
    for (int e = 0; e < 11; e++) out[e] = (int)v[e];
    out[DTYPE_] = TESS__DESC_BLOCK_CYCLIC_2D_INB;
    return 11;
}

struct tess__comm_bc tess__comm_desc_rows(const struct tess__comm_desc *d, int nprow) {
    return (struct tess__comm_bc){
        .n = d->m, .ib = d->imb, .nb = d->mb, .src = d->rsrc, .np = nprow};
}

struct tess__comm_bc tess__comm_desc_cols(const struct tess__comm_desc *d, int npcol) {
    return (struct tess__comm_bc){
        .n = d->n, .ib = d->inb, .nb = d->nb, .src = d->csrc, .np = npcol};
}

/* The failing check with the smallest PBLAS code wins (PB_Cchkmat takes the minimum).
 * Codes: a scalar argument at position k is 100 k; descriptor entry e is 100 dpos + e + 1. */
struct check {
    int64_t best;
    char msg[256];
};

__attribute__((format(printf, 3, 4))) static void note(struct check *c, int64_t code,
                                                       const char *fmt, ...) {
    if (code >= c->best) return;
    c->best = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

/* Note that entry e must be >= 1. */
static void note_pos(struct check *c, const struct tess__comm_desc *d, const char *name, int dpos,
                     int e, int64_t v, int64_t minimum) {
    if (v >= minimum) return;
    note(c, 100 * (int64_t)dpos + e + 1, "DESC%s(%d) = %s = %lld must be >= %lld", name,
         entry_pos(d->dtype, e), entry_name(d->dtype, e), (long long)v, (long long)minimum);
}

static void note_src(struct check *c, const struct tess__comm_desc *d, const char *name, int dpos,
                     int e, int v, int nprocs, const char *grid_dim) {
    if (v >= -1 && v < nprocs) return;
    note(c, 100 * (int64_t)dpos + e + 1, "DESC%s(%d) = %s = %d must be >= 0 and < %s = %d", name,
         entry_pos(d->dtype, e), entry_name(d->dtype, e), v, grid_dim, nprocs);
}

int tess__comm_desc_check(const struct tess__comm_desc *d, const char *name,
                          const struct tess__comm_coords *at, int64_t ia, int64_t ja, int64_t m,
                          int64_t n, const struct tess__comm_argpos *pos, int *info) {
    static const struct tess__comm_argpos default_pos = {.m = 1, .n = 2, .desc = 5};
    if (!pos) pos = &default_pos;
    const int dp = pos->desc;
    struct check c = {.best = INT64_MAX};
    if (info) *info = 0;

    if (m < 0)
        note(&c, 100 * (int64_t)pos->m, "the number of rows of sub(%s) = %lld must be >= 0", name,
             (long long)m);
    if (n < 0)
        note(&c, 100 * (int64_t)pos->n, "the number of columns of sub(%s) = %lld must be >= 0",
             name, (long long)n);
    if (ia < 0)
        note(&c, 100 * (int64_t)(dp - 2), "I%s = %lld must be >= 1", name, (long long)ia + 1);
    if (ja < 0)
        note(&c, 100 * (int64_t)(dp - 1), "J%s = %lld must be >= 1", name, (long long)ja + 1);
    if (d->dtype != TESS__DESC_BLOCK_CYCLIC_2D && d->dtype != TESS__DESC_BLOCK_CYCLIC_2D_INB)
        note(&c, 100 * (int64_t)dp + DTYPE_ + 1, "DESC%s(1) = DTYPE_ = %d must be 1 or 2", name,
             d->dtype);
    note_pos(&c, d, name, dp, IMB_, d->imb, 1);
    note_pos(&c, d, name, dp, INB_, d->inb, 1);
    note_pos(&c, d, name, dp, MB_, d->mb, 1);
    note_pos(&c, d, name, dp, NB_, d->nb, 1);
    note_src(&c, d, name, dp, RSRC_, d->rsrc, at->nprow, "NPROW");
    note_src(&c, d, name, dp, CSRC_, d->csrc, at->npcol, "NPCOL");
    if (m == 0 || n == 0) {
        /* an empty sub(A): PBLAS relaxes the checks */
        note_pos(&c, d, name, dp, M_, d->m, 0);
        note_pos(&c, d, name, dp, N_, d->n, 0);
        note_pos(&c, d, name, dp, LLD_, d->lld, 1);
    } else {
        note_pos(&c, d, name, dp, M_, d->m, 1);
        note_pos(&c, d, name, dp, N_, d->n, 1);
        if (d->m >= 1 && d->n >= 1) {
            if (ia >= 0 && m >= 0 && ia + m > d->m)
                note(&c, 100 * (int64_t)(dp - 2),
                     "sub(%s) rows I%s = %lld .. %lld exceed DESC%s(3) = M_ = %lld", name, name,
                     (long long)ia + 1, (long long)(ia + m), name, (long long)d->m);
            if (ja >= 0 && n >= 0 && ja + n > d->n)
                note(&c, 100 * (int64_t)(dp - 1),
                     "sub(%s) columns J%s = %lld .. %lld exceed DESC%s(4) = N_ = %lld", name, name,
                     (long long)ja + 1, (long long)(ja + n), name, (long long)d->n);
        }
        /* LLD_ only once everything else is right: it needs the local sizes */
        if (c.best == INT64_MAX && at->myrow >= 0 && d->rsrc >= 0 && d->csrc >= 0) {
            struct tess__comm_bc rows = tess__comm_desc_rows(d, at->nprow);
            struct tess__comm_bc cols = tess__comm_desc_cols(d, at->npcol);
            int64_t np = tess__comm_bc_numroc(&rows, at->myrow);
            int64_t need = np > 1 ? np : 1;
            if (d->lld < need) {
                int64_t nq = tess__comm_bc_numroc(&cols, at->mycol);
                if (d->lld < 1)
                    note_pos(&c, d, name, dp, LLD_, d->lld, 1);
                else if (nq > 0)
                    note(&c, 100 * (int64_t)dp + LLD_ + 1,
                         "DESC%s(%d) = LLD_ = %lld must be >= %lld (local rows of process "
                         "(%d,%d))",
                         name, entry_pos(d->dtype, LLD_), (long long)d->lld, (long long)need,
                         at->myrow, at->mycol);
            }
        }
    }
    if (c.best != INT64_MAX) {
        if (info) {
            int64_t code = c.best % 100 == 0 ? c.best / 100 : c.best;
            *info = code > INT_MAX ? INT_MIN : -(int)code;
        }
        return tess__fail(TESS_EINVAL, "%s", c.msg);
    }
    if (d->rsrc == -1 || d->csrc == -1) {
        int e = d->rsrc == -1 ? RSRC_ : CSRC_;
        return tess__fail(TESS_ENOSYS, "DESC%s(%d) = %s = -1 (replicated) is not supported", name,
                          entry_pos(d->dtype, e), entry_names[e]);
    }
    return TESS_OK;
}
