/* tessera_mpi.h: the distributed face of tessera (built when MPI is found): P x Q process
 * grids over any MPI communicator, ScaLAPACK's 2D block-cyclic descriptors, and
 * tess_p?gemm, a distributed GEMM whose local work runs on each rank's node runtime.
 * Conventions (ScaLAPACK's, except that indices are 0-based here):
 *   - a distributed M_ x N_ matrix is cut into MB_ x NB_ blocks (the first block IMB_ x
 *     INB_), dealt round-robin over the grid starting at process (RSRC_, CSRC_); each rank
 *     keeps its blocks packed column-major in a local array with leading dimension LLD_;
 *   - an operation works on a submatrix sub(A) = A(ia : ia+m-1, ja : ja+n-1); the pointer
 *     passed is the rank's whole local array (not the submatrix);
 *   - every rank of the grid calls with the same arguments (its own local arrays). A wrong
 *     argument on any rank makes every rank return the same TESS_EINVAL and write nothing;
 *     nobody hangs. A device failure on one rank is reported on every rank.
 * Include mpi.h before this header. MPI must be initialised; the calls come from one thread
 * per rank at a time (MPI_THREAD_FUNNELED is enough).
 */
#ifndef TESSERA_MPI_H
#define TESSERA_MPI_H

#include <mpi.h>

#include "tessera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A P x Q process grid (opaque). */
typedef struct tess__comm_grid tess_grid_t;

/* Build an nprow x npcol grid over comm (collective). order 'R' (rank r*npcol + c is
 * process (r, c), BLACS's default) or 'C'; nprow = npcol = 0 picks the squarest shape.
 * Ranks beyond nprow*npcol get a grid they are not part of (tess_grid_info: -1, -1) and
 * return at once from tess_p?gemm. comm is not kept: the grid duplicates what it needs. */
TESS_API int tess_grid_create(MPI_Comm comm, int nprow, int npcol, char order, tess_grid_t **grid);
/* Shape and this rank's coordinates (-1, -1 outside the grid). Any output may be NULL. */
TESS_API int tess_grid_info(const tess_grid_t *grid, int *nprow, int *npcol, int *myrow,
                            int *mycol);
/* Free the grid and the pinned work buffers cached on it (collective). */
TESS_API void tess_grid_free(tess_grid_t *grid);

/* A 2D block-cyclic descriptor (ScaLAPACK's DESC with IMB/INB; the context is the grid). */
typedef struct tess_desc {
    int64_t m, n;     /* global size (M_, N_) */
    int64_t imb, inb; /* first block (IMB_, INB_); = mb, nb in ScaLAPACK's 9-entry form */
    int64_t mb, nb;   /* block size (MB_, NB_) */
    int rsrc, csrc;   /* process row / column of the first block (RSRC_, CSRC_) */
    int64_t lld;      /* leading dimension of the local array (LLD_) */
} tess_desc_t;

/* descinit: fills d (imb = mb, inb = nb), no checks (tess_p?gemm checks). */
TESS_API void tess_desc_init(tess_desc_t *d, int64_t m, int64_t n, int64_t mb, int64_t nb, int rsrc,
                             int csrc, int64_t lld);
/* numroc: how many rows (dim 0) or columns (dim 1) of d this rank holds. */
TESS_API int64_t tess_desc_local(const tess_grid_t *grid, const tess_desc_t *d, int dim);

/* sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C), sub(C) m x n, op(sub(A)) m x k,
 * op(sub(B)) k x n; alpha and beta point to scalars of the precision; beta = 0 never reads
 * C. Nothing outside sub(C) is written.
 * NULL local arrays: a rank whose local array of a matrix is empty (tess_desc_local gives 0
 * rows or 0 columns of it on this rank: it holds none of its elements) may pass any pointer
 * for it, NULL included; so may every rank for A and B when k = 0 or alpha = 0, and for
 * all three when m = 0 or n = 0 (nothing of them is read). A NULL A, B or C on a rank that
 * holds part of that matrix is a wrong argument: every rank returns TESS_EINVAL with the
 * same message ("rank R: tess_pgemm: argument 9 (A) must not be NULL: ..."), nothing is
 * written, and the grid is ready for the next call. */
TESS_API int tess_pgemm(tess_grid_t *grid, tess_dtype_t dtype, tess_trans_t transa,
                        tess_trans_t transb, int64_t m, int64_t n, int64_t k, const void *alpha,
                        const void *A, int64_t ia, int64_t ja, const tess_desc_t *descA,
                        const void *B, int64_t ib, int64_t jb, const tess_desc_t *descB,
                        const void *beta, void *C, int64_t ic, int64_t jc,
                        const tess_desc_t *descC);
TESS_API int tess_psgemm(tess_grid_t *grid, tess_trans_t transa, tess_trans_t transb, int64_t m,
                         int64_t n, int64_t k, float alpha, const float *A, int64_t ia, int64_t ja,
                         const tess_desc_t *descA, const float *B, int64_t ib, int64_t jb,
                         const tess_desc_t *descB, float beta, float *C, int64_t ic, int64_t jc,
                         const tess_desc_t *descC);
TESS_API int tess_pdgemm(tess_grid_t *grid, tess_trans_t transa, tess_trans_t transb, int64_t m,
                         int64_t n, int64_t k, double alpha, const double *A, int64_t ia,
                         int64_t ja, const tess_desc_t *descA, const double *B, int64_t ib,
                         int64_t jb, const tess_desc_t *descB, double beta, double *C, int64_t ic,
                         int64_t jc, const tess_desc_t *descC);
/* complex: alpha, beta point to {re, im}; A, B, C interleaved */
TESS_API int tess_pcgemm(tess_grid_t *grid, tess_trans_t transa, tess_trans_t transb, int64_t m,
                         int64_t n, int64_t k, const void *alpha, const void *A, int64_t ia,
                         int64_t ja, const tess_desc_t *descA, const void *B, int64_t ib,
                         int64_t jb, const tess_desc_t *descB, const void *beta, void *C,
                         int64_t ic, int64_t jc, const tess_desc_t *descC);
TESS_API int tess_pzgemm(tess_grid_t *grid, tess_trans_t transa, tess_trans_t transb, int64_t m,
                         int64_t n, int64_t k, const void *alpha, const void *A, int64_t ia,
                         int64_t ja, const tess_desc_t *descA, const void *B, int64_t ib,
                         int64_t jb, const tess_desc_t *descB, const void *beta, void *C,
                         int64_t ic, int64_t jc, const tess_desc_t *descC);

/* What the last tess_p?gemm on this grid did on this rank. */
typedef struct tess_pgemm_stats {
    double seconds;            /* wall time of the call */
    double comm_seconds;       /* time the calling thread spent packing, in MPI and unpacking */
    uint64_t bytes_sent;       /* operand bytes this rank sent to others */
    uint64_t bytes_received;   /* operand bytes this rank received */
    int passes;                /* node-runtime jobs (k split when the panels exceed the budget) */
    int a_local, b_local;      /* operand used in place (no gather needed on any rank) */
    int nccl;                  /* panels moved GPU to GPU with NCCL (else MPI, host memory) */
    char variant;              /* 'C' stationary C, 'A' / 'B' stationary A / B (k split, partial
                                 products summed into C); 0 when nothing was multiplied */
    int units;                 /* pipeline units: operand exchanges over all passes (stationary
                                 C; 0 when nothing moves), or ranges of the partial product
                                 multiplied and reduced one after another (A / B) */
    uint64_t bytes_packed_d2d; /* GPU transport: of bytes_sent to ranks of this node, those
                                 packed from this rank's own panel (D2D) instead of being
                                 copied from host memory a second time */
} tess_pgemm_stats_t;
TESS_API int tess_pgemm_last_stats(const tess_grid_t *grid, tess_pgemm_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_MPI_H */
