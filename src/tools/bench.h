/* src/tools/bench.h: what tessera-bench's files share. tessera_bench.c owns the options, the
 * header, the GEMM comparison (no --routine) and the helpers below; bench_level3.c owns the
 * level-3 comparison (--routine). Nothing here reaches inside the library. */
#ifndef TESS_BENCH_H
#define TESS_BENCH_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "oracle_l3.h" /* enum routine */
#include "par.h"
#include "tessera.h"

#define MAX_LIST 32     /* entries of -n, --xt-blocks */
#define MAX_GPUS 64     /* cuBLAS-XT devices */
#define MAX_REPS 100
#define MAX_THREADS PAR_MAX_THREADS

/* rows of the GEMM table; K_INCORE_COPY and K_CPU (in-core cuBLAS timed with its copies,
 * the CPU BLAS) are GEMM-table rows only, for the small sizes (n <= CPU_ROW_MAX_N) */
enum kind { K_INCORE, K_XT, K_XT_PAGE, K_TESS, K_TESS_PAGE, K_INCORE_COPY, K_CPU, K_NKINDS };
#define CPU_ROW_MAX_N 8192
enum verify_mode { V_ALL, V_ENDS, V_NONE };

struct opts {
    int64_t sizes[MAX_LIST];
    int nsizes;
    tess_dtype_t precs[4];
    int nprecs;
    int reps;
    int ndev, dev[MAX_GPUS]; /* cuBLAS-XT devices; dev[0] runs in-core */
    int blocks[MAX_LIST], nblocks; /* level 3: 0 = cuBLAS-XT's own default (no SetBlockDim) */
    int skip[K_NKINDS];
    double time_limit; /* seconds since start; 0 = none */
    const char *csv;
    enum verify_mode verify;
    int threads;
    /* level 3 (--routine); routines == 0: the GEMM comparison */
    unsigned routines;            /* 1u << enum routine */
    char side, uplo, trans, diag; /* 'L'/'R', 'U'/'L', 'N'/'T'/'C', 'N'/'U' */
};
extern struct opts o;

extern double t_start;
extern int n_wrong, n_errors, out_of_time;
extern char last_err[1024]; /* the failing call, copied into the row's note */

double now(void);
double elapsed(void);
size_t esize(tess_dtype_t dt);
int is_complex(tess_dtype_t dt);
char prec_char(tess_dtype_t dt);

int fail_msg(const char *what, const char *why, const char *file, int line);
int cu_check(cudaError_t e, const char *what, const char *file, int line);
int cb_check(cublasStatus_t s, const char *what, const char *file, int line);
int tess_check(int rc, const char *what, const char *file, int line);
#define CU(call) cu_check((call), #call, __FILE__, __LINE__)
#define CB(call) cb_check((call), #call, __FILE__, __LINE__)
#define TS(call) tess_check((call), #call, __FILE__, __LINE__)

/* fn(ctx, i) for i in [0, n) on o.threads threads */
void par_for(int n, void (*fn)(void *, int), void *ctx);
/* the n x n matrix x (ld = n) with uniform values in [-1, 1] from seed, the same whatever
 * the thread count */
void fill(tess_dtype_t dt, void *x, int64_t n, uint64_t seed);
enum { SEED_A = 1, SEED_B = 2, SEED_C = 3 };

double mem_available(void); /* bytes of MemAvailable, 0 if unknown */
int is_pinned(const void *p);

/* The level-3 comparison of every routine in o.routines; returns the exit status. */
int bench_level3(void);

#endif
