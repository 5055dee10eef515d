/* src/lapack/lapack.h: what the factorization routines share (potrf.c, potrs.c, getrf.c,
 * getrs.c): argument errors numbered as LAPACKE numbers them, errors of the calls they make,
 * the end of a call that held its matrix itself. A routine's generic entry (dtype first) reports
 * positions one higher in its messages (gen = 1) while *info keeps the typed numbering. */
#ifndef TESS_LAPACK_H
#define TESS_LAPACK_H

#include "level3.h"

/* Argument pos is bad: *info = -pos and TESS_EINVAL with "fn: argument <pos + gen> ...".
 * Expects fn, gen and info in scope. */
#define TESS__LA_BAD(pos, fmt, ...) \
    (*info = -(pos), tess__fail(TESS_EINVAL, "%s: argument %d " fmt, fn, (pos) + gen, __VA_ARGS__))

/* The arguments every routine starts with: info (at typed position info_pos) not NULL,
 * layout (1) and uplo (2) valid. TESS_OK, or TESS_EINVAL (with *info = -position when info
 * is there). */
int tess__la_check_head(const char *fn, int gen, int info_pos, tess_layout_t layout,
                        tess_uplo_t uplo, int64_t *info);

/* rc from a call fn made (its message the last error): rc, the message now "fn: <it>". */
int tess__la_fail_in(const char *fn, int rc);

/* The end of a call that held A itself for its length (rc its status so far): A released,
 * which writes it back; the call's own error stands, else the release's. *info is kept on
 * success and 0 on failure. */
int tess__la_release_own(const void *A, int rc, int64_t *info);
/* tess_potrf (arguments checked, dt valid) that keeps the hold it takes for the call when
 * the factorization succeeds with INFO 0: *kept says so, and the caller then solves on
 * the held factor and releases A (tess__la_release_own). */
int tess__potrf_kept(tess_dtype_t dt, tess_layout_t layout, tess_uplo_t uplo, int64_t n, void *A,
                     int64_t lda, int64_t *info, bool *kept);
/* tess_getrf alike (column-major only: a row-major A is factored through a copy): its
 * strips stay held when it succeeds with INFO 0; gesv solves on them, then releases A. */
int tess__getrf_kept(tess_dtype_t dt, tess_layout_t layout, int64_t m, int64_t n, void *A,
                     int64_t lda, int64_t *ipiv, int64_t *info, bool *kept);

/* getrf.c: step s (0 LASWP, 1 TRSM, 2 GEMM) of an LU step's update of a task's rows r0 ..
 * r0 + m: the rows interchanged by ipiv (k of them, relative to r0), U (rows r0 .. r0 + k)
 * := L^-1 U (L unit lower k x k), the rows below -= L U (U read in the task's own tile,
 * alpha minus_one). The caller names L (out->a) for steps 1 and 2 (L's rows k.. for 2). */
void tess__lu_update_step(int s, int64_t r0, int64_t m, int64_t k, int *ipiv, const void *minus_one,
                          struct tess__step *out);

/* bpanel.c: the block jobs of a distributed factorization on a process's held local part
 * (scalapack_glue's ppotrf_dev.c, pgetrf.c). The region X (m x n, ldx) lies in a held
 * matrix (square tiles, or column strips: tess__hold_strips):
 *   POTRF  X = chol(X) in place, one held tile's block (uplo 'L' or 'U')
 *   TRSM   L: X := X L^-H (L = F, n x n); U: X := U^-H X (U = F, m x m); X in one held tile
 *          column (L) or row (U); F held (f_dev -1: inside one held tile) or device memory
 *          of runtime device f_dev, final when the job starts
 *   COPY   the region's values into device memory of runtime device to_dev (to, ld_to)
 *   GETRF  X = P L U in place, one held tile's block; ipiv (min(m, n) ints, relative to
 *          X's first row, 1-based) and INFO as LAPACK's, written by the job's end; to not
 *          NULL: then L (X's first min(m, n) columns) copied into device memory of to_dev
 *   LASWP  X's rows interchanged by ipiv[0 .. k) (relative, 1-based, read when the job
 *          starts), X in one held tile row
 *   UPDATE an LU step's trailing update, X in one held tile row: X's rows interchanged by
 *          ipiv[0 .. k), X[0:k, :] := L^-1 X[0:k, :] (L = F's unit lower k x k), X[k:, :]
 *          -= F[k:m, 0:k] X[0:k, :]; F (m x k, ldf) device memory of f_dev
 * Started asynchronously, ordered by tile after earlier calls on the held matrix; urgent
 * (the critical path) unless lazy. */
enum tess__bp_kind {
    TESS__BP_POTRF,
    TESS__BP_TRSM,
    TESS__BP_COPY,
    TESS__BP_GETRF,
    TESS__BP_LASWP,
    TESS__BP_UPDATE
};
struct tess__bp_args {
    enum tess__bp_kind kind;
    tess_dtype_t dt;
    char uplo;
    void *X;
    int64_t ldx, m, n;
    const void *F;
    int64_t ldf;
    int f_dev;
    int64_t k;
    int *ipiv; /* GETRF, LASWP, UPDATE (k of them); lives until the job is finished */
    void *to;
    int64_t ld_to;
    int to_dev;
    /* the tiles whose last column (L; row, U) the region reaches are final once the job is
     * done: written behind at once (the last job that touches them: a later writer would
     * wait for that write-back to land) */
    bool final;
    /* not on the critical path: not urgent, priority pri less the task's tile column (the
     * columns a later step needs first go first) */
    bool lazy;
    int pri;
};
struct tess__bp;
int tess__bp_start(const struct tess__bp_args *a, struct tess__bp **out);
/* Wait for the job and free it. A POTRF's *info (info not NULL): the block's INFO (0, or
 * j > 0: its leading minor of order j is not positive definite); jobs that depended on
 * such a POTRF end with TESS_OK, having done nothing. A GETRF's: LAPACK's (j > 0: U(j, j)
 * is exactly zero), which fails nothing. */
int tess__bp_finish(struct tess__bp *h, int64_t *info);

#endif
