/* comm/bcast.c: broadcast of a block of a local array along a process row or column
 * (MPI_Ibcast over the grid's row or column communicator; host memory only), the step of
 * SUMMA-like algorithms. The distributed GEMM does not use it (its panels move through a
 * transport, xport.h); it stays as the grid's collective on blocks, tested by
 * tests/test_grid_mpi.c. Owns the request's MPI state only; the buffers belong to the
 * caller until the request is done. No packing on the root unless it asks for the packed
 * copy: the root sends through a derived datatype (columns of rows elements, ld apart), the
 * others receive contiguous columns; both type signatures are rows * cols * esize bytes.
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "comm.h"

/* An MPI type of n contiguous elements of esize bytes: MPI_BYTE counts would overflow int
 * at 2 GiB, so the element is a type of its own. */
static int column_type(size_t esize, int64_t rows, MPI_Datatype *col) {
    MPI_Datatype elem;
    int st = TESS__MPI(MPI_Type_contiguous((int)esize, MPI_BYTE, &elem));
    if (st) return st;
    st = TESS__MPI(MPI_Type_contiguous((int)rows, elem, col));
    MPI_Type_free(&elem);
    if (!st) st = TESS__MPI(MPI_Type_commit(col));
    return st;
}

int tess__comm_bcast_start(const struct tess__comm_grid *g, enum tess__comm_axis axis, int root,
                           const struct tess__comm_block *blk, void *recv,
                           struct tess__comm_bcast *req) {
    req->mpi = MPI_REQUEST_NULL;
    MPI_Comm comm = axis == TESS__COMM_ROW ? g->row : g->col;
    const int me = axis == TESS__COMM_ROW ? g->at.mycol : g->at.myrow;
    const int n = axis == TESS__COMM_ROW ? g->at.npcol : g->at.nprow;
    if (comm == MPI_COMM_NULL)
        return tess__fail(TESS_EINVAL, "block broadcast from a process outside the grid");
    if (root < 0 || root >= n)
        return tess__fail(TESS_EINVAL, "block broadcast root %d outside 0..%d", root, n - 1);
    if (blk->rows < 0 || blk->cols < 0 || blk->rows > INT_MAX || blk->cols > INT_MAX ||
        blk->esize == 0 || blk->esize > INT_MAX)
        return tess__fail(TESS_EINVAL,
                          "block %lld x %lld of %zu-byte elements: cannot be "
                          "broadcast in one MPI call",
                          (long long)blk->rows, (long long)blk->cols, blk->esize);
    const int64_t rows = blk->rows, cols = blk->cols;
    const size_t colbytes = (size_t)rows * blk->esize;
    const bool empty = rows == 0 || cols == 0;
    if (me == root && !empty && (!blk->ptr || blk->ld < rows))
        return tess__fail(TESS_EINVAL,
                          "block broadcast root: block %p with ld %lld < rows "
                          "%lld",
                          blk->ptr, (long long)blk->ld, (long long)rows);
    if (me != root && !empty && !recv)
        return tess__fail(TESS_EINVAL, "block broadcast: NULL receive buffer");

    MPI_Datatype col, vec = MPI_DATATYPE_NULL;
    int st = column_type(blk->esize, rows > 0 ? rows : 1, &col);
    if (st) return st;
    void *buf = recv;
    MPI_Datatype type = col;
    int count = (int)cols;
    if (me == root && !recv) {
        /* send straight from the local array: cols columns, ld elements apart */
        st = TESS__MPI(MPI_Type_create_hvector(
            (int)cols, 1, (MPI_Aint)(blk->ld * (int64_t)blk->esize), col, &vec));
        if (!st) st = TESS__MPI(MPI_Type_commit(&vec));
        buf = blk->ptr;
        type = vec;
        count = 1;
    } else if (me == root && !empty) {
        /* the root packs its block into recv, so every member has the same packed copy */
        const char *src = blk->ptr;
        char *dst = recv;
        for (int64_t j = 0; j < cols; j++)
            memcpy(dst + (size_t)j * colbytes, src + (size_t)(j * blk->ld) * blk->esize, colbytes);
    }
    if (empty) count = 0;
    if (!st) st = TESS__MPI(MPI_Ibcast(buf, count, type, root, comm, &req->mpi));
    /* freeing now is safe: MPI keeps the types until the broadcast completes */
    if (vec != MPI_DATATYPE_NULL) MPI_Type_free(&vec);
    MPI_Type_free(&col);
    return st;
}

int tess__comm_bcast_test(struct tess__comm_bcast *req) {
    int done = 0;
    int st = TESS__MPI(MPI_Test(&req->mpi, &done, MPI_STATUS_IGNORE));
    if (st) return st;
    return done ? TESS_OK : TESS_EAGAIN;
}

int tess__comm_bcast_wait(struct tess__comm_bcast *req) { return tess__mpi_wait(&req->mpi); }
