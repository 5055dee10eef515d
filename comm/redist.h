/* comm/redist.h: what each rank's local GEMM needs of a distributed operand, and where it
 * lies on both sides (redist.c: the scheme), as block lists and MPI datatypes in one
 * order. Users: the GEMM variants (pgemm.c, pgemm_split.c) and the transports (xport*.c),
 * which move what these lists describe. */
#ifndef TESS_REDIST_H
#define TESS_REDIST_H

#include "comm.h"

/* A run of sub(X) indices along one dimension with one owner and one destination. */
struct tess__redist_seg {
    int64_t a, len; /* sub(X) indices [a, a + len) */
    int so;         /* owner's coordinate along this dimension */
    int to;         /* destination's selecting coordinate, -1 on the k dimension */
    int64_t sl;     /* owner's local index of a (in its local array) */
    int64_t tl;     /* destination's buffer index of a */
};

/* One dimension of sub(X): its source map and, unless it is the k dimension (all), the map
 * of C that selects which destination needs which index. */
struct tess__redist_dim {
    struct tess__comm_bc src; /* X's map along this dimension (whole matrix) */
    int64_t off, len;         /* sub(X): indices [off, off + len) of X */
    int all;                  /* the k dimension: every destination needs all of it */
    struct tess__comm_bc tgt; /* C's map (rows or columns, whole matrix) */
    int64_t toff;             /* sub(C)'s origin in that map */
    int taxis;                /* destination coordinate that selects: 0 row, 1 column */
    struct tess__redist_seg *seg;
    int nseg;
};

/* One operand: X's local array, its two dimensions, and this rank's buffer. */
struct tess__redist_op {
    const void *X;
    int64_t ldx;
    size_t es;
    struct tess__redist_dim dim[2]; /* 0: rows of X, 1: columns */
    int kdim;                       /* which one is k */
    bool in_place;                  /* every rank uses its local array: nothing moves */
    void *buf;                      /* this rank's panel buffer (column-major) */
    int64_t ldbuf;
};

/* Fill op's maps for X (descriptor dx, sub(X) at (ix, jx)): dimension kdim is needed whole
 * ("all", k indices long); the other, sel_len long, is selected by the map cmap (whole
 * matrix, the range starting at coff) over grid axis `axis` (0 rows, 1 columns). For the
 * stationary-C GEMM, cmap is C's row (A) or column (B) map; for the split variants
 * (pgemm_split.c), the k map of the operand that stays. Segments are cut by
 * tess__redist_plan. */
void tess__redist_setup(struct tess__redist_op *op, const struct tess__comm_grid *g, const void *X,
                        const struct tess__comm_desc *dx, int64_t ix, int64_t jx, size_t es,
                        int kdim, int64_t k, int64_t sel_len, const struct tess__comm_bc *cmap,
                        int64_t coff, int axis);
/* Cut one dimension into segments (its maps set; tgt.np <= 64): dm->seg, dm->nseg. */
int tess__redist_cut(struct tess__redist_dim *dm);
/* Cut both dimensions into segments (op's maps set); TESS_ENOMEM/ENOSYS. */
int tess__redist_plan(struct tess__redist_op *op);
void tess__redist_free(struct tess__redist_op *op);
/* Whether every rank already holds what it needs of op in local order (the same answer
 * on every rank: it depends on the maps only). */
bool tess__redist_in_place(const struct tess__redist_op *op);
/* How many selected indices the destination with that coordinate needs. */
int64_t tess__redist_sel_count(const struct tess__redist_op *op, int coord);
/* In place: the address of this rank's first needed element at k index k0 (ld = ldx). */
const void *tess__redist_in_place_ptr(const struct tess__redist_op *op, int myrow, int mycol,
                                      int64_t k0);
/* The elements of the nops operands that owner (orow, ocol) holds and destination (drow,
 * dcol) needs, k in [k0, k1) (buffer index k - kbase) and selected buffer positions in
 * [s0, s1), as a list of blocks in a fixed order (operand,
 * column segment, row segment): fn gets the operand index, the block's first row and
 * column in the owner's local array (sr, sc), in the destination's buffer (tr, tc), and
 * its shape. Both sides enumerate the same blocks in the same order. */
typedef void (*tess__redist_block_fn)(void *arg, int op, int64_t sr, int64_t sc, int64_t tr,
                                      int64_t tc, int64_t rows, int64_t cols);
int tess__redist_blocks(const struct tess__redist_op *ops, int nops, int orow, int ocol, int drow,
                        int dcol, int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1,
                        tess__redist_block_fn fn, void *arg);

/* The same blocks as one committed datatype (absolute addresses, for MPI_BOTTOM), in that
 * order, each block column-major: send side (in the owner's local arrays) or receive side
 * (in the destination's buffers). Every exchange uses it: the MPI transport on both sides;
 * the GPU transport's pieces from other nodes on the send side, landed packed and unpacked
 * with the block list. MPI_DATATYPE_NULL when there is nothing; nops <= 2. */
int tess__redist_types(const struct tess__redist_op *ops, int nops, int orow, int ocol, int drow,
                       int dcol, int64_t k0, int64_t k1, int64_t kbase, int64_t s0, int64_t s1,
                       bool send, MPI_Datatype elem, MPI_Datatype *type);

#endif
