/* scalapack_glue/ppotrf.h: what the two paths of the glue's distributed Cholesky share
 * (ppotrf.c: the call, the panels through host memory; ppotrf_dev.c: the panels on the
 * devices): the call's facts and the local index arithmetic of sub(A)'s blocks.
 */
#ifndef TESS_GLUE_PPOTRF_H
#define TESS_GLUE_PPOTRF_H

#include "glue.h"
#include "level3.h"

struct pp {
    tess_grid_t *g;
    tess_dtype_t dt;
    size_t es;
    int64_t n, nb, ia, ja; /* sub(A): order, block, first row and column (0-based) */
    struct tess__comm_bc R, C;
    int P, Q, me_r, me_c;
    char *A; /* the local array; sub(A)'s local part at (lr0, lc0), ld lld */
    int64_t lld, lr0, lc0, mloc, nloc;
    char *Ah; /* A + (lr0, lc0): the held part */
    int64_t T;
    /* the panel rows of my trailing rows (Wr) and columns (Wc), indexed as sub(A)'s local
     * part: L: mloc x nb and nloc x nb; U: their transposes, nb x mloc and nb x nloc */
    char *Wr[2], *Wc[2];
    char *D;           /* the diagonal block, nb x nb */
    char *pack, *full; /* this process's panel rows; every process row's, in the column */
    int *cnt, *displ;  /* bytes per process row (Allgatherv) */
    char *band;        /* the other triangle's rows the GEMMs write (band()), saved */
    bool up;           /* UPLO = 'U': the panel is a block row, A = U^H U */
    bool held, wheld[2];
};

static inline char *at(const struct pp *p, char *X, int64_t r, int64_t c, int64_t ld) {
    return X + ((size_t)r + (size_t)c * (size_t)ld) * p->es;
}

/* Local rows (columns) of the sub(A) rows [s0, s1) on process row r (column c), relative to
 * sub(A)'s local part: [*l0, *l0 + *cnt). */
static inline void rows_of(const struct pp *p, int64_t s0, int64_t s1, int r, int64_t *l0,
                           int64_t *cnt) {
    tess__comm_bc_range(&p->R, p->ia + s0, s1 - s0, r, l0, cnt);
    *l0 -= tess__comm_bc_count(&p->R, p->ia, r);
}
static inline void cols_of(const struct pp *p, int64_t s0, int64_t s1, int c, int64_t *l0,
                           int64_t *cnt) {
    tess__comm_bc_range(&p->C, p->ja + s0, s1 - s0, c, l0, cnt);
    *l0 -= tess__comm_bc_count(&p->C, p->ja, c);
}

/* Local column x of sub(A)'s local part: its sub(A) column. */
static inline int64_t sub_col(const struct pp *p, int64_t x) {
    return tess__comm_bc_l2g(&p->C, p->me_c, x + tess__comm_bc_count(&p->C, p->ja, p->me_c)) -
           p->ja;
}

/* The local rows of sub(A) from row s on: the first one's local index. */
static inline int64_t row_from(const struct pp *p, int64_t s) {
    return tess__comm_bc_count(&p->R, p->ia + s, p->me_r) -
           tess__comm_bc_count(&p->R, p->ia, p->me_r);
}

/* The trailing update of one step goes as one GEMM per hold tile column of my trailing
 * columns [l0c, l0c + cntc) (my trailing rows [l0r, l0r + cntr)): the one from local
 * column x0 ends at *x1, and updates the rows [*rs, *re) (L: from the rows of its first
 * block on; U: down to the end of its last block; the rows of the other triangle they
 * write: band()). */
static inline void update_part(const struct pp *p, int64_t x0, int64_t l0c, int64_t cntc,
                               int64_t l0r, int64_t cntr, int64_t *x1, int64_t *rs, int64_t *re) {
    *x1 = TESS__MIN(l0c + cntc, (x0 / p->T + 1) * p->T);
    if (p->up) {
        int64_t last = sub_col(p, *x1 - 1);
        *rs = l0r, *re = row_from(p, TESS__MIN(p->n, (last / p->nb + 1) * p->nb));
    } else {
        *rs = row_from(p, sub_col(p, x0) / p->nb * p->nb), *re = l0r + cntr;
    }
}

/* Step 4's other W from the packs of the processes of my column (L) or row (U): each run
 * of my trailing columns (L: Wc's rows) or rows (U: Wr's columns) from s1 on whose panel
 * rows are one run of one process's pack: fn(arg, q, l, off, w, c0): my w entries from
 * local index l come from entries [off, off + w) of process row (U: column) q's pack of
 * c0 entries (L: rows of a c0 x bk pack; U: columns of a bk x c0 one). fn's first status
 * other than 0 stops it and is returned. */
typedef int pp_run_fn(void *arg, int q, int64_t l, int64_t off, int64_t w, int64_t c0);
static inline int pp_other_w(const struct pp *p, int64_t s1, pp_run_fn *fn, void *arg) {
    int q = -1, st = 0;
    int64_t rl = 0, roff = 0, rw = 0, rc0 = 0; /* the run so far */
    for (int64_t s = s1; s < p->n; s += p->nb) {
        int64_t w = TESS__MIN(p->nb, p->n - s), l, c, l0, c0, l1, c1;
        int qs;
        if (p->up) {
            rows_of(p, s, s + w, p->me_r, &l, &c);
            if (!c) continue;
            qs = tess__comm_bc_g2p(&p->C, p->ja + s);
            cols_of(p, s1, p->n, qs, &l0, &c0);
            cols_of(p, s, s + w, qs, &l1, &c1);
        } else {
            cols_of(p, s, s + w, p->me_c, &l, &c);
            if (!c) continue;
            qs = tess__comm_bc_g2p(&p->R, p->ia + s);
            rows_of(p, s1, p->n, qs, &l0, &c0);
            rows_of(p, s, s + w, qs, &l1, &c1);
        }
        if (qs == q && l == rl + rw && l1 - l0 == roff + rw) {
            rw += w;
            continue;
        }
        if (q >= 0 && (st = fn(arg, q, rl, roff, rw, rc0))) return st;
        q = qs, rl = l, roff = l1 - l0, rw = w, rc0 = c0;
    }
    return q >= 0 ? fn(arg, q, rl, roff, rw, rc0) : 0;
}

/* The panels on the devices (ppotrf_dev.c): the factorization of p, its hold and the band
 * already set up; *info as ScaLAPACK's. Collective over the grid, the same status
 * everywhere. */
int glue_ppotrf_dev(struct pp *p, struct tess__dpanel *dp, int64_t *info);

#endif
