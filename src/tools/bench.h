/* src/tools/bench.h: what tessera-bench's files share. tessera_bench.c owns the options, the
 * header and the CUDA checks; bench_gemm.c the GEMM comparison (no --routine); bench_level3.c
 * the level-3 comparison (--routine) with its calls in bench_l3calls.c; bench_seq.c the
 * sequences of GEMMs (--sequence: in-core cuBLAS, tessera stateless and on held data);
 * bench_factor.c the factorizations (--routine potrf,getrf: in-core cuSOLVER, tessera, the CPU
 * LAPACK; bench_factor.h), their hooks in bench_potrf.c and bench_getrf.c. The rows, the clock
 * and the CPU BLAS come from bench_lib.h, the checks from oracle.h / oracle_l3.h. Nothing here reaches inside the library. */
#ifndef TESS_BENCH_H
#define TESS_BENCH_H

#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_lib.h"
#include "oracle_l3.h" /* enum routine */
#include "par.h"
#include "tessera.h"

#define MAX_LIST 32 /* entries of -n, --xt-blocks */
#define MAX_GPUS 64 /* cuBLAS-XT devices */
#define MAX_THREADS TESS__PAR_MAX

/* rows of the GEMM table; K_INCORE_COPY and K_CPU (in-core cuBLAS timed with its copies,
 * the CPU BLAS) are GEMM-table rows only, for the small sizes (n <= CPU_ROW_MAX_N) */
enum kind { K_INCORE, K_XT, K_XT_PAGE, K_TESS, K_TESS_PAGE, K_INCORE_COPY, K_CPU, K_NKINDS };
#define CPU_ROW_MAX_N 8192
extern const char *const kind_names[K_NKINDS]; /* --skip's names, the CSV's kind column */

struct opts {
    int64_t sizes[MAX_LIST];
    int nsizes;
    tess_dtype_t precs[4];
    int nprecs;
    int reps;
    int ndev, dev[MAX_GPUS];       /* cuBLAS-XT devices; dev[0] runs in-core */
    int blocks[MAX_LIST], nblocks; /* level 3: 0 = cuBLAS-XT's own default (no SetBlockDim) */
    int skip[K_NKINDS];
    double time_limit; /* seconds since start; 0 = none */
    const char *csv;
    enum verify_mode verify;
    int threads;
    /* level 3 (--routine); routines == 0: the GEMM comparison */
    unsigned routines;            /* 1u << enum routine */
    unsigned factors;             /* --routine potrf, getrf: 1u << enum factor_routine */
    int cpu_lapack;               /* --cpu-lapack: the factorizations' CPU LAPACK row at every n */
    char side, uplo, trans, diag; /* 'L'/'R', 'U'/'L', 'N'/'T'/'C', 'N'/'U' */
    /* --sequence (0: none); -n given (the sequences' own default size otherwise) */
    int sequence, sizes_given;
    int64_t seq_nb;    /* --nb: the update's panel width */
    int64_t hold_tile; /* --hold-tile: tess_hold's tile (0: the runtime's choice) */
    int64_t calls;     /* --calls: small's calls per sequence */
};
enum { SEQ_UPDATE = 1, SEQ_SMALL = 2 };
/* the factorizations (not level 3: bench_factor.c), in the order they run */
enum factor_routine { FR_POTRF, FR_GETRF, FR_N };
extern const char *const factor_names[FR_N]; /* --routine's names: "potrf", "getrf" */
extern struct opts o;

int cu_check(cudaError_t e, const char *what, const char *file, int line);
int cb_check(cublasStatus_t s, const char *what, const char *file, int line);
#define CU(call) cu_check((call), #call, __FILE__, __LINE__)
#define CB(call) cb_check((call), #call, __FILE__, __LINE__)
int is_pinned(const void *p);
/* Add tessera's host-link bytes of all devices since the last tess_reset_stats, divided by
 * row->reps, to row (a routine's tessera row). */
void tess_row_bytes(struct row *row);

/* fn(ctx, i) for i in [0, n) on o.threads threads */
static inline void par_for(int n, void (*fn)(void *, int), void *ctx) {
    tess__par_run(o.threads, n, fn, ctx);
}
/* the n x n matrix x (ld = n) uniform in [-1, 1] from seed, the same whatever o.threads */
static inline void fill(tess_dtype_t dt, void *x, int64_t n, uint64_t seed) {
    bench_fill(o.threads, dt, x, n, seed);
}
enum { SEED_A = 1, SEED_B = 2, SEED_C = 3 };
/* o's timing of the rows */
static inline struct timing bench_timing(void) {
    return (struct timing){o.reps, o.time_limit, o.verify};
}

/* The comparisons; each returns the exit status. */
int bench_gemm(void);   /* every precision and size of o */
int bench_level3(void); /* every routine in o.routines */
int bench_seq(void);    /* o.sequence, every precision (and size, if -n) of o */
int bench_factor(void); /* o.factors, every precision and size (its status: every row's) */

/* bench_l3calls.c: one call of a level-3 problem by each library (column-major, ldc = n) */
cublasStatus_t l3_incore_call(cublasHandle_t h, const struct prob *p, const void *dA,
                              const void *dB, void *dC, int64_t ldc);
cublasStatus_t l3_xt_call(cublasXtHandle_t h, const struct prob *p, void *C, size_t ldc);
int l3_tess_call(const struct prob *p, void *C, int64_t ldc);
/* cuBLAS TRMM with C == B against out of place, every option, on o.dev[0]: the line (also
 * into the CSV when csv) */
void trmm_inplace_check(tess_dtype_t dt, char *line, size_t len, FILE *csv);

#endif
