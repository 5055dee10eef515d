/* src/tools/bench_factor.h: what the factorization bench's files share (tessera-bench --routine
 * potrf, getrf). bench_factor.c owns the one generic bench: per routine, precision and size a
 * group (A0 and its working copy W, pinned), its three rows (in-core cuSOLVER with the matrix on
 * the first GPU, tessera on the pinned host copy, the CPU LAPACK of the dlopen'ed CPU BLAS), their
 * runs (drive(), bench_lib.h), the frame of each run's check (info 0, the routine's ratio within
 * its bound), the tables, summary and CSV, and the GPU check's handles and helpers. A routine
 * (bench_potrf.c, bench_getrf.c) is a struct factor of hooks: its operand, its three calls, its
 * residual and its own contract. Every matrix is square, column-major, ld n. Nothing here
 * reaches inside the library. */
#ifndef TESS_BENCH_FACTOR_H
#define TESS_BENCH_FACTOR_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <stdint.h>

#include "bench.h"

enum { F_INCORE, F_TESS, F_CPU, F_NROWS }; /* a group's rows, in the table's order */

/* one routine, precision and size */
struct fgroup {
    const struct factor *f;
    tess_dtype_t dt;
    char uplo; /* potrf: 'L' or 'U'; a routine without one: 0 */
    int64_t n;
    size_t es, bytes;
    char *A0, *W; /* pinned host: the matrix; the copy tessera and the CPU factor */
    int pinned;
    double flops;
    /* pivots (f->pivots): the reference run's (the last checked run of the first row that had
     * one checked: in-core, else the CPU's), and per row the most entries a checked run's
     * pivots differed from it in (-1: none compared) */
    int64_t *piv_ref;
    int ref_row; /* F_*, or -1 */
    int64_t piv_diff[F_NROWS];
    struct row rows[F_NROWS];
};

/* a row: drive() runs and verifies it through r (the first member) */
struct frunner {
    struct runner r;
    struct fgroup *g;
    int which;    /* F_INCORE, F_TESS, F_CPU */
    int64_t info; /* of the last run */
    int64_t *piv; /* f->pivots: the last run's pivots (host, n) */
    int info_bad, check_failed;
    int cnt[4]; /* the routine's counters over the runs, for its notes */
    /* in-core: cuSOLVER on dev, the factor in dA (and the pivots in dpiv) after a run */
    int dev;
    cusolverDnHandle_t sh;
    cusolverDnParams_t sp;
    cudaEvent_t e0, e1;
    char *dA;
    int64_t *dpiv;
    void *dwork, *hwork;
    size_t dws, hws;
    int *dinfo;
    int *cpiv; /* the CPU row with f->pivots: LAPACK's (LP64) */
};

/* a run's check as a routine reports it */
struct fcheck {
    double ratio;   /* ||A0 - F||_F / (||A0||_F n u); NaN: not computed (then bad) */
    int bad;        /* the routine's own contract broken */
    char extra[96]; /* appended to the verdict (", diagonal NOT positive") */
    char how[80];   /* where the residual ran */
};

struct factor {
    const char *name;       /* "potrf", the --routine name */
    const char *incore;     /* the in-core call's name */
    const char *resid[2];   /* the residual's words, uplo L (or none) and U: "||A0 - L L^H||_F" */
    double bound;           /* a run passes with ratio <= bound */
    double flop_coef;       /* flops = flop_coef n^3, complex x4 */
    int uplo;               /* takes --uplo */
    int pivots;             /* ipiv on every row */
    const char *cpu_sym[4]; /* the CPU LAPACK's ?xxxxx_ by precision */
    /* the operand: A0(i, j), seeded (the same in every run) */
    void (*entry)(const struct fgroup *g, int64_t i, int64_t j, double *re, double *im);
    /* in-core, t the matrix's type: p->dws, p->hws; the call on p->dA (p->dpiv) with
     * p->dinfo; 0, or -1 (CS) */
    int (*incore_size)(struct frunner *p, cudaDataType t);
    int (*incore_call)(struct frunner *p, cudaDataType t);
    int (*tess_call)(struct frunner *p, int64_t *info);       /* on g->W (p->piv); 0, or -1 (TS) */
    void (*cpu_call)(struct frunner *p, void *fn, int *info); /* fn: cpu_sym[dt] on g->W */
    /* the check of a run with info 0, the factor on the device (dF) or the host (hF), ld n:
     * 0 with *c filled, or -1 (last_err: the check itself failed) */
    int (*check)(struct frunner *p, char *dF, const char *hF, struct fcheck *c);
    void (*notes)(struct frunner *p, struct row *row); /* after the row's runs */
};

extern const struct factor factor_potrf, factor_getrf;

/* ---- for the hooks: the GPU check's handles on o.dev[0] and its own stream (on: a GPU is
 * there and --verify is not none), elements, the operand's hash, CUDA helpers ------------------ */
extern struct gcheck {
    int on;
    cublasHandle_t h;
    cusolverDnHandle_t sh;
    cudaStream_t st;
} gv;

int cs_check(cusolverStatus_t s, const char *what, const char *file, int line);
#define CS(call) cs_check((call), #call, __FILE__, __LINE__)

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
double unit_roundoff(tess_dtype_t dt);
cudaDataType cuda_type(tess_dtype_t dt);
void get_el(tess_dtype_t dt, const char *X, size_t i, double *re, double *im);
void put_el(tess_dtype_t dt, char *X, size_t i, double re, double im);
uint64_t mix64(uint64_t z); /* splitmix64's finalizer */
/* the top 53 bits of h as a double in [-0.5, 0.5) */
static inline double half_unit(uint64_t h) { return (double)(h >> 11) * 0x1p-53 - 0.5; }

/* par_for's items over the columns of an n x n matrix, COLS_PER_ITEM columns each */
#define COLS_PER_ITEM 64
struct colctx;
typedef void host_col_fn(const struct colctx *x, int64_t j, double *acc); /* host_ratio's */
static inline int col_items(int64_t n) { return (int)((n + COLS_PER_ITEM - 1) / COLS_PER_ITEM); }
struct colctx {
    const struct fgroup *g;
    const char *F;       /* a host residual's factor */
    const int64_t *perm; /* a host residual's rows: row i of P^T A0 is row perm[i] of A0 */
    double *r2, *a2;     /* a host residual's sums per column */
    host_col_fn *col;    /* a host residual's column */
    unsigned char *bad;  /* per item */
};

/* ||A0 - F||_F / (||A0||_F n u) on the host, without a GPU: col(x, j, acc) sets x->r2[j] and
 * x->a2[j], the squares of the norms of column j of the residual and of A0 (in double; acc:
 * 2 n doubles of scratch), for every column on o.threads; c->ratio, c->how; 0, or -1 (out of
 * memory) */
int host_ratio(const struct fgroup *g, const char *F, const int64_t *perm, host_col_fn *col,
               struct fcheck *c);

/* The GPU check's column-block width w for nbuf buffers of n x w on o.dev[0]: what its free
 * memory allows, about 8 blocks from n = 16384, one up to n = 4096. 0, or -1 (fail_msg). */
int gcheck_width(const struct fgroup *g, int nbuf, int64_t *w);
/* After a GPU check's blocks: synchronize gv.st, c->ratio from the sums of squares, c->how. */
int gcheck_done(const struct fgroup *g, double a2, double r2, int64_t w, int in_place,
                struct fcheck *c);
/* Zero the strict upper ('U') or strict lower ('L') part of the k x k square at X (ld), on gv. */
int zero_tri(char *X, int64_t ld, int64_t k, char part, size_t es);
/* *acc += ||x||_2^2, x of len elements on the device (blocks the host) */
int nrm2sq(tess_dtype_t dt, const char *x, int64_t len, double *acc);
/* C -= op(A) op(B) on gv */
cublasStatus_t gemm_sub(tess_dtype_t dt, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                        int64_t n, int64_t k, const void *A, int64_t lda, const void *B,
                        int64_t ldb, void *C, int64_t ldc);

#endif
