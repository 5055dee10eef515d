/* comm/comm.h: the distributed layer's shared header: the block-cyclic map and its
 * descriptors (bcyclic.c), process grids and the agreement on a status (grid.c), the MPI
 * wait (mpiwait.c), block broadcasts (bcast.c) and the distributed GEMM's entry points
 * (pgemm.c, pgemm_split.c). Gathering the panels is redist.h's, moving them xport.h's;
 * comm/README.md lists every file. comm/ does not own the node runtime (node/, cache/:
 * the local updates, reached through node/node_comm.h and src/level3/level3.h) nor the
 * ScaLAPACK entry points (scalapack_glue/). No locks: a grid, its transport and its
 * requests are used by one thread at a time. Indices are 0-based everywhere here
 * (ScaLAPACK's are 1-based); messages print them 1-based as a ScaLAPACK user writes them.
 */
#ifndef TESS_COMM_H
#define TESS_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#ifdef TESS_HAVE_MPI
#include "tessera_mpi.h"
#endif

/* ---- The process grid -----------------------------------------------------------------
 *
 * nprow x npcol processes of a communicator of size >= nprow * npcol. Process (r, c) is
 * rank r * npcol + c ('R', row-major, BLACS's default) or c * nprow + r ('C'). Ranks from
 * nprow * npcol on are outside the grid (myrow = mycol = -1), as with BLACS.
 *
 *     order 'R', 2 x 3                   order 'C', 2 x 3
 *            c=0  c=1  c=2                      c=0  c=1  c=2
 *          +----+----+----+                   +----+----+----+
 *     r=0  |  0 |  1 |  2 |  <- row comm r=0  |  0 |  2 |  4 |
 *          +----+----+----+                   +----+----+----+
 *     r=1  |  3 |  4 |  5 |              r=1  |  1 |  3 |  5 |
 *          +----+----+----+                   +----+----+----+
 *                    ^ col comm c=1
 *
 * A row communicator holds the npcol processes of one process row, ranked by column
 * (rank == mycol); a column communicator holds the nprow processes of one process column,
 * ranked by row (rank == myrow). A broadcast "along the row" from process column c is a
 * broadcast over the row communicator with root c.
 *
 * ---- The 2D block-cyclic map (ScaLAPACK's) ----------------------------------------------
 *
 * An M x N matrix is cut into blocks: the first block row has IMB rows, the others MB (the
 * last may be shorter); columns likewise with INB and NB. (A 9-entry descriptor has
 * IMB = MB, INB = NB.) Block row b lives on process row (RSRC + b) mod nprow, block column
 * b' on process column (CSRC + b') mod npcol. Example: 2 x 3 grid, RSRC = 1, CSRC = 2, a
 * matrix of 5 x 5 blocks; each block shows its owner (row, col):
 *
 *                    block col:  0     1     2     3     4
 *                   owner col:   2     0     1     2     0
 *     block row 0  (proc row 1) 1,2 | 1,0 | 1,1 | 1,2 | 1,0
 *     block row 1  (proc row 0) 0,2 | 0,0 | 0,1 | 0,2 | 0,0
 *     block row 2  (proc row 1) 1,2 | 1,0 | 1,1 | 1,2 | 1,0
 *     block row 3  (proc row 0) 0,2 | 0,0 | 0,1 | 0,2 | 0,0
 *     block row 4  (proc row 1) 1,2 | 1,0 | 1,1 | 1,2 | 1,0
 *
 * Each process stores its blocks packed in order, column-major, in a local array with
 * leading dimension LLD >= its local row count. Process (0, 0) above holds block rows 1, 3
 * and block columns 1, 4:
 *
 *     local array of (0,0):  [ A(1,1)  A(1,4) ]   local rows = numroc(M) on row 0
 *                            [ A(3,1)  A(3,4) ]   local cols = numroc(N) on col 0
 *
 * One dimension, 0-based: n elements, first block ib, then blocks of nb, np processes,
 * first block on process src. For a global index g:
 *
 *     block(g)  = 0                    if g < ib
 *               = 1 + (g - ib) / nb    otherwise
 *     start(b)  = 0 (b = 0), ib + (b - 1) nb (b >= 1)
 *     owner(g)  = (src + block(g)) mod np                                 [indxg2p]
 *     local(g)  = lstart(b) + g - start(b), with b = block(g), k = b / np and
 *     lstart(b) = k nb                     if b mod np != 0   (all earlier blocks full)
 *               = 0 (k = 0), ib + (k - 1) nb (k >= 1)   if b mod np == 0      [indxg2l]
 *
 * and numroc(x, p), the number of indices g < x that process p owns, with d = (p - src)
 * mod np, r = x - ib, K = r / nb full blocks after the first, rest = r mod nb:
 *
 *     numroc = (d == 0 ? x : 0)                                           if x <= ib
 *     numroc = (d == 0 ? ib : 0) + nb * #{ j in 1..K : j mod np == d }
 *              + (rest > 0 and (K + 1) mod np == d ? rest : 0)  otherwise    [numroc]
 *
 * With ib = nb these are ScaLAPACK's functions (shifted to 0-based).
 *
 * A submatrix rows [i0, i0 + len) covers on process p the local rows
 * [numroc(i0, p), numroc(i0 + len, p)): a process's local order follows global order, so
 * what it owns of any global range is one contiguous local range. The submatrix is itself
 * block-cyclic: first block = what is left of the block holding i0, same nb, first block
 * on owner(i0) (tess__comm_bc_sub), plus that per-process local offset.
 */

/* ---- bcyclic.c: one dimension of the map --------------------------------------------- */

/* One dimension (rows or columns) of a block-cyclic layout. */
struct tess__comm_bc {
    int64_t n;  /* global extent (M_ or N_), >= 0 */
    int64_t ib; /* first block size (IMB_ or INB_), >= 1; may exceed nb and n */
    int64_t nb; /* block size (MB_ or NB_), >= 1 */
    int src;    /* process holding the first block (RSRC_ or CSRC_), 0 <= src < np */
    int np;     /* processes along this dimension (NPROW or NPCOL), >= 1 */
};

/* numroc: how many of the d->n indices process p holds. */
int64_t tess__comm_bc_numroc(const struct tess__comm_bc *d, int p);
/* How many of the indices [0, x) process p holds (numroc of a prefix, x >= 0; d->n is
 * not used). It is also the local index on p of the first index >= x that p holds. */
int64_t tess__comm_bc_count(const struct tess__comm_bc *d, int64_t x, int p);
/* indxg2p: the process holding global index g (0 <= g < n). */
int tess__comm_bc_g2p(const struct tess__comm_bc *d, int64_t g);
/* indxg2l: the local index of g on the process holding it. */
int64_t tess__comm_bc_g2l(const struct tess__comm_bc *d, int64_t g);
/* indxl2g: the global index of local index l on process p. */
int64_t tess__comm_bc_l2g(const struct tess__comm_bc *d, int p, int64_t l);
/* Which local indices of process p the global range [i0, i0 + len) covers: [*l0, *l0 +
 * *count) (count may be 0). */
void tess__comm_bc_range(const struct tess__comm_bc *d, int64_t i0, int64_t len, int p, int64_t *l0,
                         int64_t *count);
/* The layout of the global range [i0, i0 + len) seen as a matrix of its own: global index
 * g' of the result is i0 + g' here, held by the same process, at local index
 * tess__comm_bc_count(d, i0, p) + g2l'(g'). */
struct tess__comm_bc tess__comm_bc_sub(const struct tess__comm_bc *d, int64_t i0, int64_t len);
/* Number of blocks (0 when n = 0). */
int64_t tess__comm_bc_nblocks(const struct tess__comm_bc *d);
/* Block b (0 <= b < nblocks): its first global index, length, owner and first local index
 * on the owner. Any output may be NULL. */
void tess__comm_bc_block(const struct tess__comm_bc *d, int64_t b, int64_t *g0, int64_t *len,
                         int *owner, int64_t *l0);

/* ---- bcyclic.c: descriptors ------------------------------------------------------------ */

/* ScaLAPACK descriptor types (DTYPE_). */
enum { TESS__DESC_BLOCK_CYCLIC_2D = 1, TESS__DESC_BLOCK_CYCLIC_2D_INB = 2 };

/* A 2D block-cyclic matrix descriptor with ScaLAPACK's meaning. dtype says which form it
 * came from (messages number the entries in that form):
 *
 *   entry     9-entry form (DTYPE_ = 1)    11-entry form (DTYPE_ = 2, PBLAS's internal)
 *   DTYPE_    DESC(1)                      DESC(1)
 *   CTXT_     DESC(2)                      DESC(2)
 *   M_, N_    DESC(3), DESC(4)             DESC(3), DESC(4)
 *   IMB_,INB_ -  (= MB_, NB_)              DESC(5), DESC(6)
 *   MB_, NB_  DESC(5), DESC(6)             DESC(7), DESC(8)
 *   RSRC_     DESC(7)                      DESC(9)
 *   CSRC_     DESC(8)                      DESC(10)
 *   LLD_      DESC(9)                      DESC(11)
 */
struct tess__comm_desc {
    int dtype;        /* TESS__DESC_BLOCK_CYCLIC_2D or _INB */
    int ctxt;         /* CTXT_: kept for the glue, unused by comm/ */
    int64_t m, n;     /* M_, N_: global size */
    int64_t imb, inb; /* IMB_, INB_: first block sizes (= mb, nb in the 9-entry form) */
    int64_t mb, nb;   /* MB_, NB_: block sizes */
    int rsrc, csrc;   /* RSRC_, CSRC_: process row/column of the first block */
    int64_t lld;      /* LLD_: leading dimension of the local array (column-major) */
};

/* The place of this process in a grid: enough to validate a descriptor. myrow/mycol are
 * -1 outside the grid. */
struct tess__comm_coords {
    int nprow, npcol, myrow, mycol;
};

/* descinit without the checks: a 9-entry-form descriptor (imb = mb, inb = nb, ctxt = -1). */
void tess__comm_desc_init(struct tess__comm_desc *d, int64_t m, int64_t n, int64_t mb, int64_t nb,
                          int rsrc, int csrc, int64_t lld);
/* Read a ScaLAPACK descriptor: 9 entries when desc[0] = 1, 11 when desc[0] = 2
 * (BLOCK_CYCLIC_2D_INB: DTYPE, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC, LLD). Any other
 * DTYPE_: TESS_EINVAL naming DESC<name>(1). Does not validate the other entries. */
int tess__comm_desc_from_scalapack(const int *desc, const char *name, struct tess__comm_desc *out);
/* Write the descriptor in its form (dtype): returns the number of entries written (9 or
 * 11), or 0 when an entry does not fit an int. out has room for 11. */
int tess__comm_desc_to_scalapack(const struct tess__comm_desc *d, int out[11]);
/* The row (or column) dimension of the map on this grid shape. */
struct tess__comm_bc tess__comm_desc_rows(const struct tess__comm_desc *d, int nprow);
struct tess__comm_bc tess__comm_desc_cols(const struct tess__comm_desc *d, int npcol);

/* Positions (>= 1) of the arguments in the calling routine's list, for the PBLAS info
 * code: m, n: of the sizes of sub(A); desc: of DESCA, with IA and JA at desc - 2 and
 * desc - 1 (PB_Cchkmat's convention). */
struct tess__comm_argpos {
    int m, n, desc;
};

/* Validate descriptor d of matrix <name> ("A") and its submatrix sub(A) = rows
 * [ia, ia + m), columns [ja, ja + n) (0-based) as seen from this process, with
 * PB_Cchkmat's checks: m, n >= 0; ia, ja >= 0; IMB_, INB_, MB_, NB_ >= 1;
 * 0 <= RSRC_ < NPROW, 0 <= CSRC_ < NPCOL; M_, N_ >= 0 (>= 1 unless sub(A) is empty);
 * sub(A) inside A; LLD_ >= max(1, local rows) when this process holds columns of A, else
 * LLD_ >= 1. The LLD_ check depends on myrow/mycol, so ranks can disagree: pass the status
 * through tess__comm_agree.
 *
 * Returns TESS_OK or TESS_EINVAL with tess_last_error naming the first failing entry in
 * the descriptor's own numbering: "DESCA(5) = MB_ = 0 must be >= 1". RSRC_/CSRC_ = -1
 * (replicated, which PBLAS accepts) is TESS_ENOSYS. When info is not NULL it receives
 * PBLAS's code: 0, or -(100 * pos.desc + entry) with the entry numbered in the 11-entry
 * form whatever the input form (PBLAS converts first), or -pos for a scalar argument,
 * the smallest over all failing checks. pos NULL means {m = 1, n = 2, desc = 5}. */
int tess__comm_desc_check(const struct tess__comm_desc *d, const char *name,
                          const struct tess__comm_coords *at, int64_t ia, int64_t ja, int64_t m,
                          int64_t n, const struct tess__comm_argpos *pos, int *info);

/* A nprow x npcol shape for nprocs processes, as square as possible, nprow <= npcol
 * (6 -> 2 x 3, 7 -> 1 x 7). */
void tess__comm_grid_shape(int nprocs, int *nprow, int *npcol);

/* ---- the MPI half: grid.c, xport_mpi.c (built with MPI only) --------------------------- */
#ifdef TESS_HAVE_MPI
#include <mpi.h>

/* What the distributed GEMM keeps on a grid across calls (owner: pgemm.c). */
struct tess__pgemm_buf {
    void *ptr; /* host memory, pinned where a GPU is used (tess_malloc_host) */
    size_t bytes;
};
struct tess__pgemm_keep {
    struct tess__pgemm_buf ws;    /* the MPI transport's panels, the split variants' Y and W */
    struct tess_pgemm_stats last; /* the last call's (tess_pgemm_last_stats) */
};

struct tess__xport;

/* A P x Q process grid. Created and destroyed collectively; then used by one thread at a
 * time. Our communicators have MPI_ERRORS_RETURN, so MPI failures come back as
 * TESS_ECOMM. Each part has one owner: the grid's facts grid.c, pgemm pgemm.c, xport
 * xport.c. */
struct tess__comm_grid {
    struct tess__comm_coords at; /* nprow, npcol, myrow, mycol (-1, -1 outside the grid) */
    char order;    /* 'R' or 'C' when ranks follow that order, 0 otherwise (from BLACS) */
    MPI_Comm comm; /* the grid's processes, ours (MPI_COMM_NULL outside the grid) */
    MPI_Comm row;  /* my process row: npcol ranks, rank == mycol */
    MPI_Comm col;  /* my process column: nprow ranks, rank == myrow */
    int rank;      /* my rank in comm: equal to my rank in the caller's communicator */
    int *ranks;    /* ranks[r + c * nprow]: the rank in comm of process (r, c) */
    struct tess__pgemm_keep pgemm;
    struct tess__xport *xport;    /* the grid's transport (xport.h), NULL until it is opened */
    struct tess__comm_grid *flat; /* 1 x size grid of the same processes (grid_flat), or NULL */
};

/* Build a nprow x npcol grid over comm (collective over comm; comm itself is left alone).
 * order 'R' or 'C' (also 'r', 'c'); nprow = npcol = 0 picks tess__comm_grid_shape of the
 * communicator's size. The arguments must agree on every rank: if they do not, or the grid
 * does not fit (nprow * npcol > size), every rank returns TESS_EINVAL. Ranks from
 * nprow * npcol on get a grid with myrow = mycol = -1 and null communicators. */
int tess__comm_grid_create(MPI_Comm comm, int nprow, int npcol, char order,
                           struct tess__comm_grid *g);
/* Build the grid an existing BLACS-like description names: every rank of comm passes its
 * own (myrow, mycol) and the common (nprow, npcol); comm holds exactly the nprow * npcol
 * processes of the grid, in any rank order (for the ScaLAPACK glue: the BLACS context's
 * processes). Collective; a description that is inconsistent on any rank (shape differs,
 * coordinates out of range or taken twice, size != nprow * npcol) makes every rank return
 * TESS_EINVAL with the same message. */
int tess__comm_grid_from_blacs(MPI_Comm comm, int nprow, int npcol, int myrow, int mycol,
                               struct tess__comm_grid *g);
/* The 1 x (nprow * npcol) grid of g's processes, process column = rank in g->comm: built
 * on first use (collective over g's processes, the same status everywhere), kept in
 * g->flat and freed with g (tess_grid_free). */
int tess__comm_grid_flat(struct tess__comm_grid *g, struct tess__comm_grid **flat);
/* Free the grid's communicators (collective over the grid's processes). */
void tess__comm_grid_destroy(struct tess__comm_grid *g);
/* The rank in g->comm of process (prow, pcol); for processes inside the grid only. */
static inline int tess__comm_grid_rank(const struct tess__comm_grid *g, int prow, int pcol) {
    return g->ranks[prow + pcol * g->at.nprow];
}
static inline bool tess__comm_grid_in(const struct tess__comm_grid *g) { return g->at.myrow >= 0; }

/* Make every rank of the grid return the same status: an MPI_Allreduce (MINLOC) of the
 * local statuses. If any rank failed, every rank returns the smallest (most negative)
 * status, and tess_last_error on every rank is the message of the lowest rank that
 * returned it, prefixed "rank R: ". Collective over g->comm; returns status unchanged
 * outside the grid, TESS_ECOMM if MPI itself fails. Call it wherever a rank could fail
 * alone before the next collective step, so nobody waits for a rank that gave up. */
int tess__comm_agree(const struct tess__comm_grid *g, int status);
/* The same over any communicator. */
int tess__comm_agree_on(MPI_Comm comm, int status);

/* Check an MPI return code: MPI_SUCCESS -> TESS_OK; otherwise TESS_ECOMM with a message
 * naming file:line, the call and MPI's error string. */
int tess__comm_mpi_status(int rc, const char *call, const char *file, int line);
#define TESS__MPI(call) tess__comm_mpi_status((call), #call, __FILE__, __LINE__)
/* MPI_Wait that spins where the rank has two cores per rank of its node and backs off
 * (short sleeps) where cores are scarce (mpiwait.c). */
int tess__mpi_wait(MPI_Request *req);

/* ---- bcast.c: a block broadcast along a process row or column --------------------------- */

/* Broadcast directions: along my process row (over g->row, root is a process column) or
 * along my process column (over g->col, root is a process row). */
enum tess__comm_axis { TESS__COMM_ROW = 0, TESS__COMM_COL = 1 };

/* A rows x cols piece of a column-major local array (element (0,0) at ptr, leading
 * dimension ld >= rows, esize bytes per element). */
struct tess__comm_block {
    void *ptr;
    int64_t rows, cols, ld;
    size_t esize;
};

/* One broadcast in flight: done after tess__comm_bcast_test returns TESS_OK or after
 * tess__comm_bcast_wait. */
struct tess__comm_bcast {
    MPI_Request mpi;
};

/* Start broadcasting a block from the process at position root of my row (axis ROW: root
 * is a process column) or column (axis COL: root is a process row); host memory only.
 * Collective over that communicator: every member calls with the same axis, root, rows,
 * cols and esize. The root reads blk (ptr, ld); every other member receives the block
 * packed (ld = rows) into recv. On the root, recv may be NULL (the block is sent from the
 * local array directly) or a buffer the root packs its block into before sending, so every
 * member ends with the same packed copy. Nothing passed may be touched until the request
 * is done. Returns TESS_OK (started), TESS_EINVAL (a block too large for one MPI call or a
 * NULL buffer) or TESS_ECOMM; req is then not in flight. */
int tess__comm_bcast_start(const struct tess__comm_grid *g, enum tess__comm_axis axis, int root,
                           const struct tess__comm_block *blk, void *recv,
                           struct tess__comm_bcast *req);
/* Poll: TESS_OK when done, TESS_EAGAIN while in flight, TESS_ECOMM. */
int tess__comm_bcast_test(struct tess__comm_bcast *req);
/* Block until done: TESS_OK or TESS_ECOMM. */
int tess__comm_bcast_wait(struct tess__comm_bcast *req);

/* ---- pgemm.c: the distributed GEMM ------------------------------------------------------ */

/* One call: sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C), arguments already checked
 * and agreed on every rank. sub(A) is op(A)'s m x k (ta = 'N': rows [ia, ia + m), columns
 * [ja, ja + k) of A), likewise sub(B) (k x n) and sub(C) (m x n); indices 0-based. */
struct tess__pgemm_call {
    tess_dtype_t dt;
    char ta, tb; /* 'N', 'T', 'C' */
    int64_t m, n, k;
    tess__scalar_t alpha, beta;     /* of precision dt */
    const void *A, *B;              /* this rank's local arrays (NULL where it holds none, */
    void *C;                        /* or where the call reads none of it) */
    int64_t ia, ja, ib, jb, ic, jc; /* the first row and column of sub(A), sub(B), sub(C) */
    struct tess__comm_desc da, db, dc;
    bool keep_c; /* sub(C) may keep its held tiles on the devices (pgemm.c, unhold_local) */
};

/* Run call c on grid g. Collective over the grid; returns the same status on every rank
 * (device failures and MPI errors included). Ranks outside the grid return TESS_OK at
 * once. tess_pgemm_last_stats then tells what ran. */
int tess__pgemm_exec(struct tess__comm_grid *g, const struct tess__pgemm_call *c);

/* ---- dpanel.c: device buffers moved among the grid's ranks of one node ------------------ */

/* A distributed factorization's panels in device memory, on the grid's device transport
 * (xport.h): buffers from the heap of runtime device dev, 2D copies and exchanges among
 * the ranks queued in order on the transport's stream, and a wait for all of it. Used by
 * one thread at a time, between other calls on the grid. */
struct tess__dpanel {
    struct tess__xport *x;
    int dev; /* the runtime device whose memory the buffers are */
};
/* Collective over the grid: TESS_OK where the grid's transport is the device one and
 * every rank is on one node, else TESS_ENOSYS; the same answer on every rank. */
int tess__dpanel_open(struct tess__comm_grid *g, struct tess__dpanel *p);
int tess__dpanel_alloc(struct tess__dpanel *p, size_t bytes, void **ptr, void **handle);
void tess__dpanel_free(struct tess__dpanel *p, void *handle); /* after a sync */
/* dst <- src: height columns of width bytes (pitches in bytes); kind TESS__D2D, TESS__H2D or
 * TESS__D2H (enum tess__copy_kind; host memory may be pageable). */
int tess__dpanel_copy(struct tess__dpanel *p, int kind, void *dst, size_t dpitch, const void *src,
                      size_t spitch, size_t width, size_t height);
/* One piece of an exchange: bytes at ptr (device memory) to or from grid rank `rank`. */
struct tess__dpiece {
    int rank;
    void *ptr;
    size_t bytes;
};
/* Send and receive the pieces, after what is queued. Only the ranks a piece names take
 * part: each calls with the matching pieces (a send of n bytes to j, a receive of n bytes
 * from it there), the calls in the same order on every rank. */
int tess__dpanel_exchange(struct tess__dpanel *p, const struct tess__dpiece *send, int ns,
                          const struct tess__dpiece *recv, int nr);
/* Everything queued is done. */
int tess__dpanel_sync(struct tess__dpanel *p);

#endif /* TESS_HAVE_MPI */

#endif
