/* src/level3/level3.h: what the level-3 routines other than GEMM share (symm.c, syrk.c, trxm.c):
 * option characters, argument-error messages, host tiles named by their stored block,
 * building a job's task list, and the host-side quick paths (beta * C on a triangle).
 * Owns no threads and no device state: a routine fills a job here and hands it to
 * tess__rt_run (node/node.h). The tile algorithms themselves are written out at the top
 * of each routine's file and in docs/level3.md.
 */
#ifndef TESS_LEVEL3_H
#define TESS_LEVEL3_H

#include "node.h"

/* An argument error of public function fn at 1-based position pos: TESS_EINVAL with the
 * message "fn: argument pos (...) ...". Usage: TESS__L3_BAD("(m = %lld) must be >= 0",
 * fn, pos, (long long)m). */
#define TESS__L3_BAD(fmt, ...) tess__fail(TESS_EINVAL, "%s: argument %d " fmt, __VA_ARGS__)

/* 'N', 'T' or 'C' of a valid tess_trans_t. */
char tess__l3_trans(tess_trans_t t);
/* 1 if v is a tess_uplo_t / tess_side_t / tess_diag_t / tess_trans_t value. */
bool tess__l3_is_uplo(int v);
bool tess__l3_is_side(int v);
bool tess__l3_is_diag(int v);
bool tess__l3_is_trans(int v);

/* The leading arguments every level-3 routine but GEMM shares, in CBLAS order: layout at
 * position pos, then side (when has_side) and uplo at the next positions. TESS_OK or
 * TESS_EINVAL naming the first bad one. */
int tess__l3_check_head(const char *fn, int pos, tess_layout_t layout, bool has_side,
                        tess_side_t side, tess_uplo_t uplo);

/* The array named `name` (argument pos: "A", "B" or "C"), stored as rows x cols with
 * leading dimension ld, can be addressed from X (tess__span_ok): TESS_OK, or TESS_EINVAL
 * naming it ("fn: argument pos (A: rows x cols with leading dimension ld, es-byte
 * elements) spans more than the address space"). An empty array (rows or cols 0) passes.
 * The routines check every array they will read or write after the netlib checks and
 * before anything is queued, so no tile or task count, extent or pointer computed from
 * the call can overflow. */
int tess__l3_check_span(const char *fn, int pos, const char *name, const void *X, int64_t rows,
                        int64_t cols, int64_t ld, tess_dtype_t dt);

/* Bytes every copy of a job whose tiles are at most rows x cols reserves: rows x cols
 * elements of es bytes rounded up to the heap's 256-byte alignment (uniform blocks cannot
 * fragment the heap); SIZE_MAX when that overflows (a tile no heap holds). */
static inline size_t tess__blk_bytes_rc(int64_t rows, int64_t cols, size_t es) {
    size_t b;
    if (__builtin_mul_overflow((size_t)rows, (size_t)cols, &b) ||
        __builtin_mul_overflow(b, es, &b) || b > SIZE_MAX - 255)
        return SIZE_MAX;
    return (b + 255) & ~(size_t)255;
}

/* The same for square tiles of edge T. */
static inline size_t tess__blk_bytes(int64_t T, size_t es) { return tess__blk_bytes_rc(T, T, es); }

/* A call served as if nothing were held touches the array X (as check_span names it):
 * every held matrix it overlaps is written back first and, if written, its device copies
 * dropped (node/hold.c). TESS_OK at once when nothing is held. */
int tess__l3_unhold(const char *fn, const void *X, int64_t rows, int64_t cols, int64_t ld,
                    tess_dtype_t dt, bool written);

/* a * b for tile counts (>= 0): the product, or INT64_MAX when it overflows (then always
 * "too many tasks"). */
int64_t tess__l3_count_mul(int64_t a, int64_t b);

/* Check the generic entry's dtype argument (position 1); complex_only for HEMM/HERK/
 * HER2K. TESS_OK or TESS_EINVAL naming it. Clears the last error first. */
int tess__l3_check_dtype(const char *fn, tess_dtype_t dt, bool complex_only);

/* Fill *t as the host tile of the stored block X(r0:r0+rows, c0:c0+cols) of the
 * column-major matrix X (leading dimension ld), in job's cache space. The output tile of a
 * task is named the same way (X = job->C, ld = job->ldc), so a later task reading it as an
 * operand (TRSM) names the very tile the writer published. */
void tess__l3_tile(const struct tess__job *job, struct tess__tile *t, const void *X, int64_t ld,
                   int64_t r0, int64_t c0, int64_t rows, int64_t cols);

/* Home t (its key named) in device memory of runtime device dev at its key's address and
 * ld; stable: unchanged until the job is done, so that device reads it in place. */
void tess__l3_dev_home(struct tess__tile *t, int dev, bool stable);

/* Start a job: the runtime (*rt, a call reference: tess__l3_run releases it, a path that
 * returns before, tess__rt_put), job zeroed but for ops, dt, the output C/ldc, the tile
 * edge for an m x n x k problem and the per-copy block size. Nonzero status (with a
 * message, no reference) if the runtime does not start. Then tess__l3_alloc, tess__l3_task
 * for each output tile, tess__l3_run. `job` points at the first member of the routine's own job
 * struct; only the base part is zeroed. */
int tess__l3_begin(const char *fn, struct tess__job *job, const struct tess__job_ops *ops,
                   tess_dtype_t dt, int64_t m, int64_t n, int64_t k, void *C, int64_t ldc,
                   struct tess__rt **rt);
/* Allocate room for ntasks tasks of at most maxsteps steps each, once the tile edge is
 * known; TESS_ENOMEM naming fn when they do not fit an int or host memory. */
int tess__l3_alloc(const char *fn, struct tess__job *job, int64_t ntasks, int64_t maxsteps);
/* Append the task of output tile (i, j) of C (an m x n matrix) with nsteps steps; returns
 * it. Tile shape and host address follow from job->tile, job->C and job->ldc. */
struct tess__task *tess__l3_task(struct tess__job *job, int64_t i, int64_t j, int64_t m, int64_t n,
                                 int nsteps, int load_c);
/* Chain: task `after` is queued only once `before` is DONE. */
void tess__l3_chain(struct tess__task *before, struct tess__task *after);
/* Run the job's tasks, release the call reference, free the task list, return the job's
 * status. */
int tess__l3_run(struct tess__rt *rt, struct tess__job *job);

/* C = beta * C on the triangle uplo ('U'/'L') of the n x n column-major C, the other
 * triangle untouched; beta = 0 writes zeros without reading. herm: the diagonal's
 * imaginary parts are set to zero (netlib ?HERK/?HER2K), beta then real (its .c[0]/.z[0]
 * part, the imaginary part must be 0). */
void tess__l3_scale_tri(tess_dtype_t dt, char uplo, int64_t n, const tess__scalar_t *beta,
                        bool herm, void *C, int64_t ldc);

/* Scalars of precision dt: *r (of dt's real type: float for s and c, double for d and z)
 * as a scalar of dt ((r, 0) for c and z), and the conjugate of x. */
void tess__l3_from_real(tess_dtype_t dt, tess__scalar_t *out, const void *r);
void tess__l3_conj(tess_dtype_t dt, tess__scalar_t *x);
/* -1 of precision dt ((-1, 0) for c and z, whose real part is also a real -1). */
tess__scalar_t tess__l3_minus_one(tess_dtype_t dt);
/* The real scalar of complex precision dt (float for c, double for z) at p is zero/one. */
bool tess__l3_real_is(tess_dtype_t dt, const void *p, double v);

/* ---- gemm.c: the GEMM job, for callers other than tess_?gemm (comm/pgemm.c) ------------ */

/* [0, ext) cut where a grid of edge T has a boundary, the range starting at phase of it:
 * the segment count, and (out not NULL) their starts in out[0 .. count], out[count] = ext. */
int64_t tess__l3_grid_cuts(int64_t ext, int64_t phase, int64_t T, int64_t *out);

/* The distributed GEMM's device panels (comm/pgemm.c, tess__pgemm_panel_cap) take what its
 * local job leaves of a device heap: the job keeps the in-place operand's local part cached
 * and TESS__JOB_HEAP_RESERVE of the heap for its streams' tiles; the panels never get less
 * than TESS__PANEL_HEAP_SHARE of it. A job reading them tunes its tile over the rest
 * (tess__gemm_opts.panel_share). */
#define TESS__PANEL_HEAP_SHARE 0.5
#define TESS__JOB_HEAP_RESERVE 0.2

/* Options of a GEMM job started by another layer. */
struct tess__gemm_opts {
    /* NULL, or how much of the operands is in place, along ready_dim: 'k' (leading k
     * indices of A and B), 'm' (leading rows of op(A), all k; B complete) or 'n' (leading
     * columns of op(B), all k; A complete). The caller raises it (release order) while the
     * job runs; tasks wait for their steps and are queued along that dimension first. */
    const _Atomic int64_t *ready;
    char ready_dim;
    /* -1: A (B) is in host memory; else the runtime device index whose memory holds it
     * (A, B are then device pointers: tiles are fetched D2D or P2P from there, and the
     * job runs on devices only, never on the CPU worker). */
    int a_dev, b_dev;
    /* with a_dev or b_dev: the share of that device's heap the panels took (0: up to
     * TESS__PANEL_HEAP_SHARE); the tile model sees the rest */
    double panel_share;
    /* A and B are read as if not held (the caller wrote back what of them is held); C keeps
     * its tiles on the devices where it is held if keep_c, else the caller has written its
     * held tiles back and dropped them (the host writes C) */
    bool keep_c;
    /* with a_dev or b_dev: the caller leaves those operands unchanged until the job is
     * done (tess__gemm_finish), so their own device reads them in place, uncopied */
    bool stable;
};

/* Start C = alpha op(A) op(B) + beta C on column-major arrays (ta, tb 'N', 'T', 'C';
 * m, n, k >= 1, alpha != 0; arguments already checked) and return without waiting.
 * opts NULL: host operands, all in place. Then tess__gemm_finish (always, exactly once)
 * waits, frees and returns the status. opts NULL with A, B and C all in held matrices:
 * *h is NULL and the call runs on, asynchronously (node/hold.c reaps it). With opts, a C
 * in a held matrix keeps its tiles on the devices (opts->keep_c). */
struct tess__gemm_async;
int tess__gemm_start(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                     const tess__scalar_t *alpha, const void *A, int64_t lda, const void *B,
                     int64_t ldb, const tess__scalar_t *beta, void *C, int64_t ldc,
                     const struct tess__gemm_opts *opts, struct tess__gemm_async **h);
/* The operands will never arrive: fail the job (tasks waiting are cancelled); the caller
 * has said why (tess__gemm_finish keeps its message). */
void tess__gemm_abort(struct tess__gemm_async *h, int status);
int tess__gemm_finish(struct tess__gemm_async *h);

#endif /* TESS_LEVEL3_H */
