/* src/tools/tessera_bench.c: tessera-bench, the comparison of issue 3 in one run. For each
 * precision and size (square m = n = k, NN, alpha = 1, beta = 0.5) on the same random
 * operands it times, as rows of one table:
 *   in-core        cuBLAS on the first GPU, operands already there (the ceiling rate);
 *   xt b=B         cuBLAS-XT on pinned host operands, one row per block size B;
 *   xt-pageable    cuBLAS-XT on malloc'd operands with its own pinning, best block only;
 *   tess           tess_gemm on pinned host operands (tess_malloc_host);
 *   tess-pageable  tess_gemm on malloc'd operands, timed from call to return;
 *   in-core+copies the in-core cuBLAS call timed with its copies (A, B, C to the GPU, C back)
 *                  from the pinned host operands: what one GPU costs a caller whose data
 *                  live in host memory;
 *   cpu-blas       the CPU BLAS (TESSERA_CPU_BLAS, default libopenblas.so.0, dlopen'ed) on
 *                  the same host operands.
 * The last two run for n <= CPU_ROW_MAX_N (8192) only (issue 3's small sizes: tessera is to
 * be no slower than the better of them), and the table then ends with that ratio.
 * Each row: one warm-up, then reps timed runs, the median reported; C is refilled with the
 * same C0 before every run and every result is checked by the probe-vector oracle (oracle.h),
 * run on a P x Q grid of C blocks by all cores (one probe per block: C0 t once per size, the
 * check after each run). tessera rows also report each device's bytes per run.
 *
 * Owns the measurement only: nothing here reaches inside the library. Order within one size:
 * in-core (its device buffers freed after), then tess_init, the tessera rows and
 * tess_finalize (tessera's runtime takes nearly all free device memory for its heap while it
 * lives), then the cuBLAS-XT rows. The ceiling and the rows under test come first, so a
 * --time-limit cuts the baselines; the table prints in the order above.
 *
 * Host memory: pinned A, B, C (3 n^2 elements) and, for the pageable rows, malloc'd copies
 * holding the same values; both are allocated once for the largest size still to come when
 * that fits, and the pageable rows are left out of a size whose two sets do not fit.
 *
 * Exit status: 0 every run verified, 1 a verification failed, 2 usage, 3 a row failed with
 * an error (CUDA, cuBLAS, tessera; the call is printed and the row skipped), 77 no GPU.
 *
 * With --routine the same comparison covers every level-3 routine instead (bench_level3.c,
 * its oracle oracle_l3.c); this file then only parses the options and prints the header.
 */
#include <cublasXt.h>
#include <dlfcn.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "oracle.h"
#include "par.h"
#include "tessera.h"

#define MAX_DEVSTATS 16 /* tessera devices reported per row */
#define FILL_COLS 256   /* columns per random-fill chunk: the data do not depend on threads */

static const char *const kind_names[K_NKINDS] = {"incore", "xt", "xt-pageable", "tess",
                                                 "tess-pageable", "incore-copies", "cpu-blas"};
enum row_status { ROW_OK, ROW_SKIPPED, ROW_FAILED };

struct opts o;

double t_start;
int n_wrong, n_errors, out_of_time;
char last_err[1024];

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
double elapsed(void) { return now() - t_start; }

size_t esize(tess_dtype_t dt) { return dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8; }
int is_complex(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }
char prec_char(tess_dtype_t dt) { return "sdcz"[dt]; }

/* ---- error checks: every vendor call goes through one of these; a failure prints the
 * call with file:line and is remembered for the row's note ------------------------------ */

int fail_msg(const char *what, const char *why, const char *file, int line) {
    snprintf(last_err, sizeof last_err, "%s: %s", what, why);
    fprintf(stderr, "tessera-bench: %s:%d: %s: %s\n", file, line, what, why);
    return -1;
}
int cu_check(cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError(); /* clear non-sticky errors */
    return fail_msg(what, cudaGetErrorString(e), file, line);
}
int cb_check(cublasStatus_t s, const char *what, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return 0;
    return fail_msg(what, cublasGetStatusString(s), file, line);
}
int tess_check(int rc, const char *what, const char *file, int line) {
    if (rc == TESS_OK) return 0;
    char why[400];
    snprintf(why, sizeof why, "%s (%s)", tess_strerror(rc), tess_last_error());
    return fail_msg(what, why, file, line);
}

/* ---- a parallel for over n items on o.threads threads ----------------------------------- */

void par_for(int n, void (*fn)(void *, int), void *ctx) { par_run(o.threads, n, fn, ctx); }

/* ---- random operands: oracle_fill on chunks of FILL_COLS columns, each with its own seed,
 * so a matrix is the same whatever the thread count and pinned and pageable copies match -- */

struct fill_ctx {
    tess_dtype_t dt;
    char *x;
    int64_t n;
    uint64_t seed;
};

static void fill_chunk(void *c, int i) {
    const struct fill_ctx *f = c;
    int64_t j0 = (int64_t)i * FILL_COLS, w = f->n - j0 < FILL_COLS ? f->n - j0 : FILL_COLS;
    oracle_fill(f->dt, f->x + (size_t)j0 * (size_t)f->n * esize(f->dt), f->n, w, f->n,
                f->seed * 1000003u + (uint64_t)i);
}

/* Fill the n x n matrix x (ld = n) with uniform values in [-1, 1] from seed. */
void fill(tess_dtype_t dt, void *x, int64_t n, uint64_t seed) {
    struct fill_ctx f = {dt, x, n, seed};
    par_for((int)((n + FILL_COLS - 1) / FILL_COLS), fill_chunk, &f);
}

/* ---- the oracle on a P x Q grid of C blocks ------------------------------------------------
 * Block (I, J) holds rows r0..r1 and columns c0..c1 of C and its own probe vector t_J; it
 * checks C_IJ t_J against beta C0_IJ t_J + alpha A_I: (B_:J t_J) with k = n. B_:J t_J is the
 * same for every block of column strip J: computed once per strip (in P row chunks of B,
 * all strips' chunks in parallel), then each block does n (r1 - r0) + (r1 - r0)(c1 - c0):
 * about (Q + 2) n^2 in all instead of (P + Q + 1) n^2. The grid is as square as the thread
 * count allows. The worst ratio over the blocks is the result (pass if <= 1). */

struct probeset {
    tess_dtype_t dt;
    int64_t n, ld; /* problem size and leading dimension of A, B, C */
    int P, Q;
    struct oracle_gemm *p;
    int *begin_rc;
    double *worst;
    /* arguments of the check in progress */
    const void *al, *be;
    const char *A, *B, *C0;
    char *C;
    long double *bt, *btabs; /* per strip J: B_:J t_J (2n entries) and |B_:J| |t_J| (n) */
};

static void block_bounds(const struct probeset *s, int b, int64_t *r0, int64_t *r1, int64_t *c0,
                         int64_t *c1) {
    int I = b % s->P, J = b / s->P;
    *r0 = s->n * I / s->P, *r1 = s->n * (I + 1) / s->P;
    *c0 = s->n * J / s->Q, *c1 = s->n * (J + 1) / s->Q;
}

static void begin_block(void *c, int b) {
    struct probeset *s = c;
    int64_t r0, r1, c0, c1;
    size_t es = esize(s->dt);
    block_bounds(s, b, &r0, &r1, &c0, &c1);
    s->begin_rc[b] = oracle_gemm_begin(&s->p[b], s->dt, r1 - r0, c1 - c0,
                                       s->C0 + ((size_t)r0 + (size_t)c0 * (size_t)s->ld) * es,
                                       s->ld, 0);
}

/* Task i = (J, chunk): rows k0..k1 of strip J's B_:J t_J (block (0, J) holds t_J). */
static void bt_chunk(void *c, int i) {
    struct probeset *s = c;
    int J = i / s->P, ch = i % s->P;
    int64_t r0, r1, c0, c1, k0 = s->n * ch / s->P, k1 = s->n * (ch + 1) / s->P;
    block_bounds(s, J * s->P, &r0, &r1, &c0, &c1);
    const struct oracle_gemm *pr = &s->p[J * s->P];
    size_t es = esize(s->dt), ld = (size_t)s->ld;
    oracle_matvec(s->dt, 'N', k1 - k0, c1 - c0, s->B + ((size_t)k0 + (size_t)c0 * ld) * es,
                  s->ld, pr->t, pr->tabs, s->bt + (size_t)J * 2 * s->n + 2 * k0,
                  s->btabs + (size_t)J * s->n + k0);
}

static void check_block(void *c, int b) {
    struct probeset *s = c;
    int64_t r0, r1, c0, c1;
    size_t es = esize(s->dt), ld = (size_t)s->ld;
    block_bounds(s, b, &r0, &r1, &c0, &c1);
    int J = b / s->P;
    s->worst[b] = oracle_gemm_check_bt(&s->p[b], 'N', s->n, s->al, s->A + (size_t)r0 * es,
                                       s->ld, s->bt + (size_t)J * 2 * s->n,
                                       s->btabs + (size_t)J * s->n, s->be,
                                       s->C + ((size_t)r0 + (size_t)c0 * ld) * es, s->ld, NULL);
}

static void probeset_end(struct probeset *s) {
    for (int b = 0; s->p && b < s->P * s->Q; b++)
        if (s->begin_rc && s->begin_rc[b] == 0) oracle_gemm_end(&s->p[b]);
    free(s->p), free(s->begin_rc), free(s->worst), free(s->bt), free(s->btabs);
    memset(s, 0, sizeof *s);
}

/* Remember C0 t for the leading n x n block of C0 (leading dimension ld). */
static int probeset_begin(struct probeset *s, tess_dtype_t dt, int64_t n, int64_t ld,
                          const void *C0) {
    memset(s, 0, sizeof *s);
    s->dt = dt, s->n = n, s->ld = ld, s->C0 = C0;
    int P = 1;
    while ((P + 1) * (P + 1) <= o.threads) P++;
    s->P = P, s->Q = o.threads / P;
    if (s->P > n) s->P = (int)n;
    if (s->Q > n) s->Q = (int)n;
    int nb = s->P * s->Q;
    s->p = calloc((size_t)nb, sizeof *s->p);
    s->begin_rc = calloc((size_t)nb, sizeof *s->begin_rc);
    s->worst = calloc((size_t)nb, sizeof *s->worst);
    s->bt = malloc(sizeof(long double) * 2 * (size_t)n * (size_t)s->Q);
    s->btabs = malloc(sizeof(long double) * (size_t)n * (size_t)s->Q);
    if (!s->p || !s->begin_rc || !s->worst || !s->bt || !s->btabs) {
        probeset_end(s);
        return fail_msg("probeset_begin", "out of host memory", __FILE__, __LINE__);
    }
    par_for(nb, begin_block, s);
    for (int b = 0; b < nb; b++)
        if (s->begin_rc[b]) {
            probeset_end(s);
            return fail_msg("oracle_gemm_begin", "out of host memory", __FILE__, __LINE__);
        }
    return 0;
}

/* Worst error/bound of C = alpha A B + beta C0 over the blocks; NaN if any block is NaN. */
static double probeset_check(struct probeset *s, const void *al, const void *A, const void *B,
                             const void *be, void *C) {
    s->al = al, s->be = be, s->A = A, s->B = B, s->C = C;
    int nb = s->P * s->Q;
    par_for(nb, bt_chunk, s);
    par_for(nb, check_block, s);
    double w = 0;
    for (int b = 0; b < nb; b++) {
        if (isnan(s->worst[b])) return NAN;
        if (s->worst[b] > w) w = s->worst[b];
    }
    return w;
}

/* ---- the gemm calls, one switch per library ------------------------------------------------ */

static cublasStatus_t cublas_gemm(cublasHandle_t h, tess_dtype_t dt, int64_t n, const void *al,
                                  const void *A, int64_t lda, const void *B, int64_t ldb,
                                  const void *be, void *C, int64_t ldc) {
    const cublasOperation_t N = CUBLAS_OP_N;
#if CUBLAS_VER_MAJOR >= 12 /* 64-bit dimensions and leading dimensions */
    switch (dt) {
    case TESS_S: return cublasSgemm_64(h, N, N, n, n, n, al, A, lda, B, ldb, be, C, ldc);
    case TESS_D: return cublasDgemm_64(h, N, N, n, n, n, al, A, lda, B, ldb, be, C, ldc);
    case TESS_C: return cublasCgemm_64(h, N, N, n, n, n, al, A, lda, B, ldb, be, C, ldc);
    case TESS_Z: return cublasZgemm_64(h, N, N, n, n, n, al, A, lda, B, ldb, be, C, ldc);
    }
#else
    int in = (int)n, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
    switch (dt) {
    case TESS_S: return cublasSgemm(h, N, N, in, in, in, al, A, ia, B, ib, be, C, ic);
    case TESS_D: return cublasDgemm(h, N, N, in, in, in, al, A, ia, B, ib, be, C, ic);
    case TESS_C: return cublasCgemm(h, N, N, in, in, in, al, A, ia, B, ib, be, C, ic);
    case TESS_Z: return cublasZgemm(h, N, N, in, in, in, al, A, ia, B, ib, be, C, ic);
    }
#endif
    return CUBLAS_STATUS_INVALID_VALUE;
}

static cublasStatus_t xt_gemm(cublasXtHandle_t h, tess_dtype_t dt, int64_t n64, const void *al,
                              const void *A, const void *B, const void *be, void *C) {
    const cublasOperation_t N = CUBLAS_OP_N;
    size_t n = (size_t)n64;
    switch (dt) {
    case TESS_S: return cublasXtSgemm(h, N, N, n, n, n, al, A, n, B, n, be, C, n);
    case TESS_D: return cublasXtDgemm(h, N, N, n, n, n, al, A, n, B, n, be, C, n);
    case TESS_C: return cublasXtCgemm(h, N, N, n, n, n, al, A, n, B, n, be, C, n);
    case TESS_Z: return cublasXtZgemm(h, N, N, n, n, n, al, A, n, B, n, be, C, n);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- host buffers: pinned A, B, C and pageable copies, grown when a size needs more ---------- */

static struct bufs {
    char *A, *B, *C; /* tess_malloc_host */
    size_t cap;
    int pinned;      /* tess_malloc_host really returned page-locked memory */
    char *Ap, *Bp, *Cp; /* malloc */
    size_t capp;
} bufs;

/* Bytes of MemAvailable, or 0 if unknown. */
double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024.0;
}

int is_pinned(const void *p) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

static void free_pinned(void) {
    tess_free_host(bufs.A), tess_free_host(bufs.B), tess_free_host(bufs.C);
    bufs.A = bufs.B = bufs.C = NULL;
    bufs.cap = 0;
}
static void free_pageable(void) {
    free(bufs.Ap), free(bufs.Bp), free(bufs.Cp);
    bufs.Ap = bufs.Bp = bufs.Cp = NULL;
    bufs.capp = 0;
}

/* Make room for matrices of `bytes` each (pinned if pin, pageable if page); `want` >= bytes
 * is allocated instead when it fits, so later, larger sizes need no second allocation.
 * -2: not enough host memory (nothing changed), -1: an allocation failed. */
static int ensure_bufs(int pin, int page, size_t bytes, size_t want_pin, size_t want_page) {
    double avail = mem_available();
    double held = 3.0 * (double)((pin && bufs.cap < bytes ? bufs.cap : 0) +
                                 (page && bufs.capp < bytes ? bufs.capp : 0));
    double need = 3.0 * (double)((pin && bufs.cap < bytes ? bytes : 0) +
                                 (page && bufs.capp < bytes ? bytes : 0));
    if (avail > 0 && need > 0.9 * (avail + held)) {
        char why[200];
        snprintf(why, sizeof why, "needs %.1f GB of host memory, %.1f GB available", need * 1e-9,
                 (avail + held) * 1e-9);
        fail_msg("host operands", why, __FILE__, __LINE__);
        return -2;
    }
    if (avail > 0 && want_pin + want_page > 0 &&
        3.0 * (double)((pin ? want_pin : 0) + (page ? want_page : 0)) > 0.9 * (avail + held))
        want_pin = want_page = 0; /* only what this size needs */
    if (pin && bufs.cap < bytes) {
        size_t sz = want_pin > bytes ? want_pin : bytes;
        free_pinned();
        double t0 = now();
        bufs.A = tess_malloc_host(sz), bufs.B = tess_malloc_host(sz), bufs.C = tess_malloc_host(sz);
        if (!bufs.A || !bufs.B || !bufs.C) {
            free_pinned();
            return fail_msg("tess_malloc_host", "out of host memory", __FILE__, __LINE__);
        }
        bufs.cap = sz;
        bufs.pinned = is_pinned(bufs.A) && is_pinned(bufs.B) && is_pinned(bufs.C);
        fprintf(stderr, "  tess_malloc_host: 3 x %.2f GB in %.1f s%s\n", sz * 1e-9, now() - t0,
                bufs.pinned ? " (pinned)" : ", NOT page-locked: pinned rows run on pageable memory");
    }
    if (page && bufs.capp < bytes) {
        size_t sz = want_page > bytes ? want_page : bytes;
        free_pageable();
        bufs.Ap = malloc(sz), bufs.Bp = malloc(sz), bufs.Cp = malloc(sz);
        if (!bufs.Ap || !bufs.Bp || !bufs.Cp) {
            free_pageable();
            return fail_msg("malloc", "out of host memory", __FILE__, __LINE__);
        }
        bufs.capp = sz;
    }
    return 0;
}

/* ---- rows ------------------------------------------------------------------------------------ */

struct devstat {
    char name[64];
    double h2d, d2h, p2p; /* bytes per timed run */
    double busy;          /* busy seconds / timed seconds */
    unsigned long long tasks, stolen, evictions;
    int failed;
};

struct row {
    char name[48];
    enum kind kind;
    int block;          /* cuBLAS-XT block, 0 otherwise */
    int64_t n;          /* size run (in-core may run a smaller one) */
    enum row_status status;
    int reps;           /* timed runs done */
    double med, tmin, tmax, rate; /* seconds, TFLOP/s of the median */
    double worst;       /* worst error/bound over the verified runs */
    int nver, wrong;    /* runs verified, runs that failed */
    double verify_s;    /* seconds of one check */
    int has_bytes, ndev;
    double h2d, d2h, p2p; /* all devices, bytes per run */
    struct devstat dev[MAX_DEVSTATS];
    char note[400];
};

struct group {
    tess_dtype_t dt;
    int64_t n;
    size_t es;
    const void *al, *be;
    const char *A, *B; /* reference operands (pinned if any pinned row, else pageable) */
    char *C;
    struct probeset ps;
    struct row rows[K_NKINDS + MAX_LIST];
    struct row *order[K_NKINDS + MAX_LIST]; /* rows by kind, for printing */
    int nrows;
    double best_xt_rate;
    int best_xt_block;
};

static double gemm_flops(tess_dtype_t dt, int64_t n) {
    return (is_complex(dt) ? 8.0 : 2.0) * (double)n * (double)n * (double)n;
}

static void note(struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct row *r, const char *fmt, ...) {
    size_t len = strlen(r->note);
    if (len + 3 >= sizeof r->note) return;
    if (len) strcpy(r->note + len, "; "), len += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + len, sizeof r->note - len, fmt, ap);
    va_end(ap);
}

static struct row *new_row(struct group *g, enum kind k, int block, const char *name) {
    struct row *r = &g->rows[g->nrows++];
    memset(r, 0, sizeof *r);
    r->kind = k, r->block = block, r->n = g->n, r->worst = NAN;
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

/* A row fails: remember why. */
static void row_fail(struct row *r) {
    r->status = ROW_FAILED;
    note(r, "%s", last_err[0] ? last_err : "failed");
    n_errors++;
}

/* True (and the row skipped) when --time-limit has passed. */
static int row_out_of_time(struct row *r) {
    if (o.time_limit <= 0 || elapsed() <= o.time_limit) return 0;
    if (!out_of_time)
        fprintf(stderr, "tessera-bench: --time-limit %.0f s reached after %.0f s: skipping the "
                        "remaining rows\n", o.time_limit, elapsed());
    out_of_time = 1;
    r->status = ROW_SKIPPED;
    note(r, "skipped: --time-limit %.0f s reached at %.0f s", o.time_limit, elapsed());
    return 1;
}

/* A pageable row must start on memory nobody has page-locked (an earlier row that
 * registered it and left it so would make the row a pinned one). */
static void check_unpinned(struct row *r) {
    if (is_pinned(bufs.Ap) || is_pinned(bufs.Bp) || is_pinned(bufs.Cp))
        note(r, "WARNING: the malloc'd operands were already page-locked when the row started");
}

/* What a row runs: run() refills C with C0, makes one timed call and leaves the result in
 * the host matrix the checks read; the hooks bracket the timed runs. */
struct runner {
    int (*run)(struct runner *self, double *secs);
    void (*before_timed)(struct runner *self);
    void (*after_timed)(struct runner *self, struct row *row, double timed_s);
    struct probeset *ps;
    const void *A, *B; /* what the check reads */
    void *C;
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void verify_run(struct group *g, struct row *row, struct runner *rn, double *ver_s,
                       char *verdict, size_t vlen) {
    double t0 = now();
    double w = probeset_check(rn->ps, g->al, rn->A, rn->B, g->be, rn->C);
    *ver_s = now() - t0;
    row->verify_s = *ver_s;
    row->nver++;
    if (!(w <= 1.0)) row->wrong++, n_wrong++;
    if (row->nver == 1 || isnan(w) || w > row->worst) row->worst = w;
    snprintf(verdict, vlen, "%s %.1e (check %.1f s)", w <= 1.0 ? "ok" : "WRONG", w, *ver_s);
}

/* One warm-up and o.reps timed runs (fewer if --time-limit says so), each checked. */
static void drive(struct group *g, struct row *row, struct runner *rn) {
    double times[MAX_REPS], flops = gemm_flops(g->dt, row->n), secs, ver = 0;
    char verdict[96] = "not verified";
    double t_it = now();
    if (rn->run(rn, &secs)) {
        row_fail(row);
        return;
    }
    double t_run = now() - t_it;
    if (o.verify != V_NONE) verify_run(g, row, rn, &ver, verdict, sizeof verdict);
    fprintf(stderr, "  %cgemm %-6lld %-20s warm-up %9.3f s %8.2f TFLOP/s  %s\n", prec_char(g->dt),
            (long long)g->n, row->name, secs, flops / secs * 1e-12, verdict);

    int reps = o.reps;
    if (o.time_limit > 0) { /* project the timed runs from the warm-up */
        double per = t_run + (o.verify == V_ALL ? ver : 0), last = o.verify == V_ENDS ? ver : 0;
        double left = o.time_limit - elapsed() - last;
        int fit = left <= 0 ? 0 : (int)(left / per);
        if (fit < reps) {
            if (fit < 1) {
                row->status = ROW_SKIPPED;
                note(row, "warm-up %.2f s = %.2f TFLOP/s (%s), but no timed run fits in "
                          "--time-limit %.0f s", secs, flops / secs * 1e-12, verdict, o.time_limit);
                return;
            }
            note(row, "%d timed runs instead of %d: --time-limit", fit, reps);
            reps = fit;
        }
    }
    if (rn->before_timed) rn->before_timed(rn);
    double timed = 0;
    for (int i = 0; i < reps; i++) {
        if (rn->run(rn, &secs)) {
            row_fail(row);
            return;
        }
        times[i] = secs, timed += secs;
        snprintf(verdict, sizeof verdict, "not verified");
        if (o.verify == V_ALL || (o.verify == V_ENDS && i == reps - 1))
            verify_run(g, row, rn, &ver, verdict, sizeof verdict);
        fprintf(stderr, "  %cgemm %-6lld %-20s run %-3d %9.3f s %8.2f TFLOP/s  %s\n",
                prec_char(g->dt), (long long)g->n, row->name, i + 1, secs, flops / secs * 1e-12,
                verdict);
    }
    if (rn->after_timed) rn->after_timed(rn, row, timed);
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    row->reps = reps;
    row->med = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    row->tmin = times[0], row->tmax = times[reps - 1];
    row->rate = flops / row->med * 1e-12;
    row->status = ROW_OK;
}

/* ---- in-core cuBLAS: the ceiling ------------------------------------------------------------ */

struct incore {
    struct runner r;
    struct group *g;
    int dev;
    int64_t s; /* size run */
    void *dA, *dB, *dC;
    cublasHandle_t h;
    cudaEvent_t e0, e1;
};

static int incore_run(struct runner *self, double *secs) {
    struct incore *ic = (struct incore *)self;
    struct group *g = ic->g;
    size_t w = (size_t)ic->s * g->es, pitch = (size_t)g->n * g->es;
    float ms = 0;
    fill(g->dt, g->C, g->n, SEED_C);
    if (CU(cudaSetDevice(ic->dev)) ||
        CU(cudaMemcpy2D(ic->dC, w, g->C, pitch, w, (size_t)ic->s, cudaMemcpyHostToDevice)) ||
        CU(cudaEventRecord(ic->e0, 0)) ||
        CB(cublas_gemm(ic->h, g->dt, ic->s, g->al, ic->dA, ic->s, ic->dB, ic->s, g->be, ic->dC,
                       ic->s)) ||
        CU(cudaEventRecord(ic->e1, 0)) || CU(cudaEventSynchronize(ic->e1)) ||
        CU(cudaEventElapsedTime(&ms, ic->e0, ic->e1)) ||
        CU(cudaMemcpy2D(g->C, pitch, ic->dC, w, w, (size_t)ic->s, cudaMemcpyDeviceToHost)))
        return -1;
    *secs = 1e-3 * ms;
    return 0;
}

/* The same call timed from the host: A, B and C copied in, the GEMM, C copied back. */
static int incore_copy_run(struct runner *self, double *secs) {
    struct incore *ic = (struct incore *)self;
    struct group *g = ic->g;
    size_t w = (size_t)ic->s * g->es, pitch = (size_t)g->n * g->es;
    fill(g->dt, g->C, g->n, SEED_C);
    if (CU(cudaSetDevice(ic->dev)) || CU(cudaDeviceSynchronize())) return -1;
    double t0 = now();
    if (CU(cudaMemcpy2D(ic->dA, w, g->A, pitch, w, (size_t)ic->s, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy2D(ic->dB, w, g->B, pitch, w, (size_t)ic->s, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy2D(ic->dC, w, g->C, pitch, w, (size_t)ic->s, cudaMemcpyHostToDevice)) ||
        CB(cublas_gemm(ic->h, g->dt, ic->s, g->al, ic->dA, ic->s, ic->dB, ic->s, g->be, ic->dC,
                       ic->s)) ||
        CU(cudaMemcpy2D(g->C, pitch, ic->dC, w, w, (size_t)ic->s, cudaMemcpyDeviceToHost)))
        return -1;
    *secs = now() - t0;
    return 0;
}

static void row_incore(struct group *g) {
    struct row *row = new_row(g, K_INCORE, 0, "in-core");
    if (row_out_of_time(row)) return;
    struct incore ic = {.r = {.run = incore_run}, .g = g, .dev = o.dev[0], .s = g->n};
    struct probeset sub = {0};
    size_t fr = 0, tot = 0, w, pitch, bytes;
    last_err[0] = 0;
    if (CU(cudaSetDevice(ic.dev)) || CU(cudaMemGetInfo(&fr, &tot))) goto fail;
    if (3.0 * (double)g->n * (double)g->n * (double)g->es > 0.9 * (double)fr) {
        /* the largest multiple of 1024 that fits: the longest runs, timed at the GPU's
         * sustained clock (4 x H200, 2026-11-26: 52.62 TFLOP/s at n = 32768 in 1.3 s runs,
         * 51.39 at 65536 in 11 s runs; the cap of 32768 this had made the baseline the
         * short runs' rate) */
        int64_t s = (int64_t)sqrt(0.9 * (double)fr / (3.0 * (double)g->es)) / 1024 * 1024;
        if (s < 1024) {
            fail_msg("fit check", "n = 1024 does not fit in 90% of the free device memory either",
                     __FILE__, __LINE__);
            goto fail;
        }
        note(row, "does not fit: 3 x %.1f GB > 90%% of %.1f GB free on cuda:%d; ceiling rate "
                  "from n = %lld", (double)g->n * g->n * g->es * 1e-9, fr * 1e-9, ic.dev,
             (long long)s);
        fprintf(stderr, "  in-core: n = %lld does not fit on cuda:%d, timing n = %lld\n",
                (long long)g->n, ic.dev, (long long)s);
        ic.s = row->n = s;
        snprintf(row->name, sizeof row->name, "in-core n=%lld", (long long)s);
    }
    w = (size_t)ic.s * g->es, pitch = (size_t)g->n * g->es, bytes = w * (size_t)ic.s;
    if (CU(cudaMalloc(&ic.dA, bytes)) || CU(cudaMalloc(&ic.dB, bytes)) ||
        CU(cudaMalloc(&ic.dC, bytes)) || CB(cublasCreate(&ic.h)) ||
        CU(cudaEventCreate(&ic.e0)) || CU(cudaEventCreate(&ic.e1)) ||
        CU(cudaMemcpy2D(ic.dA, w, g->A, pitch, w, (size_t)ic.s, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy2D(ic.dB, w, g->B, pitch, w, (size_t)ic.s, cudaMemcpyHostToDevice)))
        goto fail;
    ic.r.A = g->A, ic.r.B = g->B, ic.r.C = g->C, ic.r.ps = &g->ps;
    if (ic.s != g->n && o.verify != V_NONE) { /* the leading s x s problem: its own C0 t */
        fill(g->dt, g->C, g->n, SEED_C);
        if (probeset_begin(&sub, g->dt, ic.s, g->n, g->C)) goto fail;
        ic.r.ps = &sub;
    }
    drive(g, row, &ic.r);
    if (!o.skip[K_INCORE_COPY] && g->n <= CPU_ROW_MAX_N) {
        struct row *cr = new_row(g, K_INCORE_COPY, 0, "in-core+copies");
        if (ic.s != g->n) {
            cr->status = ROW_SKIPPED;
            note(cr, "skipped: the operands do not fit on cuda:%d", ic.dev);
        } else if (!row_out_of_time(cr)) {
            ic.r.run = incore_copy_run;
            drive(g, cr, &ic.r);
        }
    }
    goto done;
fail:
    row_fail(row);
done:
    if (sub.p) probeset_end(&sub);
    if (ic.e0) (void)CU(cudaEventDestroy(ic.e0));
    if (ic.e1) (void)CU(cudaEventDestroy(ic.e1));
    if (ic.h) (void)CB(cublasDestroy(ic.h));
    if (ic.dA) (void)CU(cudaFree(ic.dA));
    if (ic.dB) (void)CU(cudaFree(ic.dB));
    if (ic.dC) (void)CU(cudaFree(ic.dC));
}

/* ---- the CPU BLAS ------------------------------------------------------------------------------- */

/* CBLAS gemm of one precision: real scalars by value (s, d), complex ones by pointer (c, z). */
typedef void cblas_sgemm_t(int, int, int, int, int, int, float, const void *, int, const void *,
                           int, float, void *, int);
typedef void cblas_dgemm_t(int, int, int, int, int, int, double, const void *, int,
                           const void *, int, double, void *, int);
typedef void cblas_zgemm_t(int, int, int, int, int, int, const void *, const void *, int,
                           const void *, int, const void *, void *, int);
enum { CBLAS_COL = 102, CBLAS_NOTRANS = 111 };

struct cpu {
    struct runner r;
    struct group *g;
    void *fn;
};

static int cpu_run(struct runner *self, double *secs) {
    struct cpu *c = (struct cpu *)self;
    struct group *g = c->g;
    int n = (int)g->n;
    fill(g->dt, g->C, g->n, SEED_C);
    double t0 = now();
    switch (g->dt) {
    case TESS_S:
        ((cblas_sgemm_t *)c->fn)(CBLAS_COL, CBLAS_NOTRANS, CBLAS_NOTRANS, n, n, n,
                                 *(const float *)g->al, g->A, n, g->B, n, *(const float *)g->be,
                                 g->C, n);
        break;
    case TESS_D:
        ((cblas_dgemm_t *)c->fn)(CBLAS_COL, CBLAS_NOTRANS, CBLAS_NOTRANS, n, n, n,
                                 *(const double *)g->al, g->A, n, g->B, n,
                                 *(const double *)g->be, g->C, n);
        break;
    default:
        ((cblas_zgemm_t *)c->fn)(CBLAS_COL, CBLAS_NOTRANS, CBLAS_NOTRANS, n, n, n, g->al, g->A, n,
                                 g->B, n, g->be, g->C, n);
        break;
    }
    *secs = now() - t0;
    return 0;
}

static void row_cpu(struct group *g) {
    static void *lib;
    static char libname[256];
    struct row *row = new_row(g, K_CPU, 0, "cpu-blas");
    if (row_out_of_time(row)) return;
    if (!lib) {
        const char *e = getenv("TESSERA_CPU_BLAS");
        snprintf(libname, sizeof libname, "%s", e && *e ? e : "libopenblas.so.0");
        lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    }
    static const char *const sym[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
    struct cpu c = {.r = {.run = cpu_run, .A = g->A, .B = g->B, .C = g->C, .ps = &g->ps}, .g = g};
    c.fn = lib ? dlsym(lib, sym[g->dt]) : NULL;
    if (!c.fn) {
        char why[512];
        snprintf(why, sizeof why, "%s: %s", libname, lib ? "no gemm symbol" : dlerror());
        fail_msg("dlopen", why, __FILE__, __LINE__);
        row_fail(row);
        return;
    }
    snprintf(row->name, sizeof row->name, "cpu-blas");
    note(row, "%s", libname);
    drive(g, row, &c.r);
}

/* ---- cuBLAS-XT ---------------------------------------------------------------------------------- */

struct xt {
    struct runner r;
    struct group *g;
    cublasXtHandle_t h;
};

static int xt_run(struct runner *self, double *secs) {
    struct xt *x = (struct xt *)self;
    struct group *g = x->g;
    fill(g->dt, x->r.C, g->n, SEED_C);
    double t0 = now();
    /* blocking: C is final on the host when it returns */
    if (CB(xt_gemm(x->h, g->dt, g->n, g->al, x->r.A, x->r.B, g->be, x->r.C))) return -1;
    *secs = now() - t0;
    return 0;
}

static void row_xt(struct group *g, int block, int pageable) {
    char name[48];
    snprintf(name, sizeof name, "%s b=%d", pageable ? "xt-pageable" : "xt", block);
    struct row *row = new_row(g, pageable ? K_XT_PAGE : K_XT, block, name);
    if (row_out_of_time(row)) return;
    struct xt x = {.r = {.run = xt_run, .ps = &g->ps}, .g = g};
    x.r.A = pageable ? bufs.Ap : g->A, x.r.B = pageable ? bufs.Bp : g->B;
    x.r.C = pageable ? bufs.Cp : g->C;
    if (pageable) check_unpinned(row);
    last_err[0] = 0;
    if (CB(cublasXtCreate(&x.h)) || CB(cublasXtDeviceSelect(x.h, o.ndev, o.dev)) ||
        CB(cublasXtSetBlockDim(x.h, block)) ||
        (pageable && CB(cublasXtSetPinningMemMode(x.h, CUBLASXT_PINNING_ENABLED)))) {
        row_fail(row);
    } else {
        drive(g, row, &x.r);
    }
    if (row->status == ROW_OK) {
        /* XT has no counters. Its documented tiling streams, for each C block, the A row
         * panel and the B column panel, and reads and writes the C block once: the host-link
         * traffic of that schedule, (2n/b + 1) n^2 elements in, n^2 out, is printed instead */
        double nb = ceil((double)g->n / block), n = (double)g->n;
        double h2d = (nb * nb * (2.0 * n * block) + n * n) * (double)g->es;
        note(row, "model (no counters): H2D %.1f GB/run, D2H %.1f GB/run", h2d * 1e-9,
             n * n * (double)g->es * 1e-9);
        if (pageable) note(row, "CUBLASXT_PINNING_ENABLED, block %s", g->best_xt_block == block
                                    ? "of the best pinned row" : "by default");
    }
    if (x.h) (void)CB(cublasXtDestroy(x.h));
    if (row->status == ROW_OK && !pageable && row->wrong == 0 && row->rate > g->best_xt_rate)
        g->best_xt_rate = row->rate, g->best_xt_block = block;
}

/* ---- tessera ----------------------------------------------------------------------------------- */

struct tess {
    struct runner r;
    struct group *g;
};

static int tess_run(struct runner *self, double *secs) {
    struct tess *t = (struct tess *)self;
    struct group *g = t->g;
    int64_t n = g->n;
    fill(g->dt, t->r.C, n, SEED_C);
    double t0 = now();
    if (TS(tess_gemm(g->dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, n, n, n, g->al, t->r.A,
                     n, t->r.B, n, g->be, t->r.C, n)))
        return -1;
    *secs = now() - t0;
    return 0;
}

static void tess_before(struct runner *self) { tess_reset_stats(); }

/* Counters summed over the timed runs; row_tess divides them by the runs done. */
static void tess_after(struct runner *self, struct row *row, double timed_s) {
    int nd = tess_device_count();
    row->has_bytes = 1;
    row->ndev = nd < MAX_DEVSTATS ? nd : MAX_DEVSTATS;
    for (int d = 0; d < nd; d++) {
        tess_dev_stats_t s;
        if (TS(tess_device_stats(d, &s))) continue;
        row->h2d += (double)s.bytes_h2d, row->d2h += (double)s.bytes_d2h;
        row->p2p += (double)s.bytes_p2p;
        if (d >= MAX_DEVSTATS) continue;
        struct devstat *ds = &row->dev[d];
        snprintf(ds->name, sizeof ds->name, "%s", s.name);
        ds->h2d = (double)s.bytes_h2d, ds->d2h = (double)s.bytes_d2h, ds->p2p = (double)s.bytes_p2p;
        ds->busy = timed_s > 0 ? s.busy_s / timed_s : 0;
        ds->tasks = s.tasks, ds->stolen = s.stolen, ds->evictions = s.evictions;
        ds->failed = s.failed;
    }
}

static void row_tess(struct group *g, int pageable, int init_rc) {
    struct row *row = new_row(g, pageable ? K_TESS_PAGE : K_TESS, 0,
                              pageable ? "tess-pageable" : "tess");
    if (row_out_of_time(row)) return;
    if (init_rc) {
        row_fail(row);
        return;
    }
    struct tess t = {.r = {.run = tess_run, .before_timed = tess_before, .after_timed = tess_after,
                           .ps = &g->ps},
                     .g = g};
    t.r.A = pageable ? bufs.Ap : g->A, t.r.B = pageable ? bufs.Bp : g->B;
    t.r.C = pageable ? bufs.Cp : g->C;
    if (pageable) check_unpinned(row);
    last_err[0] = 0;
    drive(g, row, &t.r);
    if (row->status == ROW_OK && row->reps > 0) { /* counters were summed over the timed runs */
        row->h2d /= row->reps, row->d2h /= row->reps, row->p2p /= row->reps;
        for (int d = 0; d < row->ndev; d++)
            row->dev[d].h2d /= row->reps, row->dev[d].d2h /= row->reps,
                row->dev[d].p2p /= row->reps;
    }
}

/* ---- one precision and size --------------------------------------------------------------------- */

static void ratio(char *buf, size_t len, double num, double den) {
    if (num > 0 && den > 0) snprintf(buf, len, "%.3f", num / den);
    else snprintf(buf, len, "-");
}

static void print_group(const struct group *g, double incore_rate) {
    double gb = (double)g->n * g->n * g->es * 1e-9;
    printf("\n%cgemm NN  m = n = k = %lld  alpha = 1, beta = 0.5  (A, B, C: 3 x %.2f GB)  "
           "median of %d\n", prec_char(g->dt), (long long)g->n, gb, o.reps);
    printf("%-22s %6s %10s %9s %8s %8s %8s %8s %8s  %s\n", "row", "n", "median s", "TFLOP/s",
           "/in-core", "/best XT", "H2D GB", "D2H GB", "P2P GB", "check (worst error/bound)");
    for (int i = 0; i < g->nrows; i++) {
        const struct row *r = g->order[i];
        if (r->status != ROW_OK) {
            printf("%-22s %6lld %s\n", r->name, (long long)r->n,
                   r->status == ROW_SKIPPED ? "skipped (see notes)" : "FAILED (see notes)");
            continue;
        }
        char ri[16], rx[16], h2d[16] = "-", d2h[16] = "-", p2p[16] = "-", chk[48];
        ratio(ri, sizeof ri, r->rate, incore_rate);
        ratio(rx, sizeof rx, r->rate, g->best_xt_rate);
        if (r->has_bytes) {
            snprintf(h2d, sizeof h2d, "%.2f", r->h2d * 1e-9);
            snprintf(d2h, sizeof d2h, "%.2f", r->d2h * 1e-9);
            snprintf(p2p, sizeof p2p, "%.2f", r->p2p * 1e-9);
        }
        if (!r->nver) snprintf(chk, sizeof chk, "not verified");
        else if (r->wrong) snprintf(chk, sizeof chk, "WRONG %d/%d %.1e", r->wrong, r->nver, r->worst);
        else snprintf(chk, sizeof chk, "ok %.1e (%d runs)", r->worst, r->nver);
        printf("%-22s %6lld %10.3f %9.2f %8s %8s %8s %8s %8s  %s\n", r->name, (long long)r->n,
               r->med, r->rate, ri, rx, h2d, d2h, p2p, chk);
        for (int d = 0; d < r->ndev; d++) {
            const struct devstat *ds = &r->dev[d];
            printf("    %-36.36s %8.2f %8.2f %8.2f  busy %3.0f%%  tasks %llu stolen %llu "
                   "evictions %llu%s\n", ds->name, ds->h2d * 1e-9, ds->d2h * 1e-9,
                   ds->p2p * 1e-9, 100.0 * ds->busy, ds->tasks, ds->stolen, ds->evictions,
                   ds->failed ? " FAILED" : "");
        }
    }
    /* issue 3's small sizes: tessera against the better of one GPU with its copies and the
     * CPU BLAS, on the same host data */
    double tess = 0, base = 0;
    const char *base_name = NULL;
    for (int i = 0; i < g->nrows; i++) {
        const struct row *r = g->order[i];
        if (r->status != ROW_OK || r->wrong) continue;
        if (r->kind == K_TESS) tess = r->rate;
        if ((r->kind == K_INCORE_COPY || r->kind == K_CPU) && r->rate > base)
            base = r->rate, base_name = r->name;
    }
    if (tess > 0 && base_name)
        printf("tess / the better of in-core+copies and cpu-blas (%s): %.3f\n", base_name,
               tess / base);
    int first = 1;
    for (int i = 0; i < g->nrows; i++)
        if (g->order[i]->note[0]) {
            if (first) printf("notes:\n"), first = 0;
            printf("  %s: %s\n", g->order[i]->name, g->order[i]->note);
        }
    fflush(stdout);
}

static void csv_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_group(FILE *f, const struct group *g, double incore_rate) {
    for (int i = 0; i < g->nrows; i++) {
        const struct row *r = g->order[i];
        const char *st = r->status == ROW_OK        ? "ok"
                         : r->status == ROW_SKIPPED ? "skipped"
                                                    : "failed";
        char ri[16] = "", rx[16] = "";
        if (r->status == ROW_OK && incore_rate > 0)
            snprintf(ri, sizeof ri, "%.4f", r->rate / incore_rate);
        if (r->status == ROW_OK && g->best_xt_rate > 0)
            snprintf(rx, sizeof rx, "%.4f", r->rate / g->best_xt_rate);
        for (int d = -1; d < (r->has_bytes ? r->ndev : 0); d++) {
            const struct devstat *ds = d >= 0 ? &r->dev[d] : NULL;
            fprintf(f, "%c,%lld,", prec_char(g->dt), (long long)g->n);
            csv_str(f, r->name);
            fprintf(f, ",%s,%d,%lld,%d,", kind_names[r->kind], r->block, (long long)r->n, r->reps);
            csv_str(f, ds ? ds->name : "all");
            if (r->status == ROW_OK)
                fprintf(f, ",%.6f,%.6f,%.6f,%.4f,%s,%s,", r->med, r->tmin, r->tmax, r->rate, ri, rx);
            else
                fprintf(f, ",,,,,,,");
            if (r->has_bytes && r->status == ROW_OK)
                fprintf(f, "%.6f,%.6f,%.6f,", (ds ? ds->h2d : r->h2d) * 1e-9,
                        (ds ? ds->d2h : r->d2h) * 1e-9, (ds ? ds->p2p : r->p2p) * 1e-9);
            else
                fprintf(f, ",,,");
            if (ds) fprintf(f, "%.4f,", ds->busy);
            else fprintf(f, ",");
            if (r->nver) fprintf(f, "%.3e,%d,%d,", r->worst, r->nver, r->wrong);
            else fprintf(f, ",0,0,");
            fprintf(f, "%s,", st);
            csv_str(f, r->note);
            fputc('\n', f);
        }
    }
    fflush(f);
}

static const char csv_header[] =
    "precision,n,row,kind,block,n_run,reps,device,median_s,min_s,max_s,tflops,ratio_incore,"
    "ratio_best_xt,gb_h2d,gb_d2h,gb_p2p,busy,worst_ratio,runs_verified,runs_wrong,status,note\n";

/* Bytes of one matrix for the largest (precision, size) pair from index `from` on. */
static size_t max_bytes_from(int from) {
    size_t m = 0;
    for (int i = from; i < o.nprecs * o.nsizes; i++) {
        int64_t n = o.sizes[i % o.nsizes];
        size_t b = (size_t)n * (size_t)n * esize(o.precs[i / o.nsizes]);
        if (b > m) m = b;
    }
    return m;
}

static void run_group(tess_dtype_t dt, int64_t n, int index, FILE *csv) {
    struct group *g = calloc(1, sizeof *g);
    if (!g) {
        fprintf(stderr, "tessera-bench: out of host memory\n");
        n_errors++;
        return;
    }
    /* 16-byte aligned: cuBLAS may load a complex alpha or beta as one aligned vector */
    static _Alignas(16) const double one[2] = {1.0, 0.0}, half[2] = {0.5, 0.0};
    static _Alignas(16) const float onef[2] = {1.0f, 0.0f}, halff[2] = {0.5f, 0.0f};
    int single = dt == TESS_S || dt == TESS_C;
    g->dt = dt, g->n = n, g->es = esize(dt);
    g->al = single ? (const void *)onef : (const void *)one;
    g->be = single ? (const void *)halff : (const void *)half;
    size_t bytes = (size_t)n * (size_t)n * g->es;

    int want_xt = !o.skip[K_XT] && o.nblocks > 0;
    int pin = !o.skip[K_INCORE] || want_xt || !o.skip[K_TESS];
    int page = !o.skip[K_XT_PAGE] || !o.skip[K_TESS_PAGE];
    fprintf(stderr, "%cgemm n = %lld (%.0f s elapsed)\n", prec_char(dt), (long long)n, elapsed());
    if (o.time_limit > 0 && elapsed() > o.time_limit) {
        printf("\n%cgemm n = %lld: skipped, --time-limit %.0f s reached\n", prec_char(dt),
               (long long)n, o.time_limit);
        out_of_time = 1;
        free(g);
        return;
    }
    last_err[0] = 0;
    size_t later = max_bytes_from(index);
    int rc = ensure_bufs(pin, page, bytes, later, later);
    if (rc == -2 && pin && page) { /* both sets do not fit: keep the pinned rows */
        fprintf(stderr, "  %s: leaving out the pageable rows\n", last_err);
        char why[sizeof last_err];
        snprintf(why, sizeof why, "%s", last_err);
        free_pageable();
        page = 0;
        rc = ensure_bufs(pin, page, bytes, later, 0);
        static const enum kind paged[] = {K_XT_PAGE, K_TESS_PAGE};
        for (int i = 0; !rc && i < 2; i++) {
            if (o.skip[paged[i]]) continue;
            struct row *r = new_row(g, paged[i], 0, kind_names[paged[i]]);
            r->status = ROW_SKIPPED;
            note(r, "skipped: pinned and pageable copies do not fit together (%s)", why);
        }
    }
    if (rc) {
        printf("\n%cgemm n = %lld: not run: %s\n", prec_char(dt), (long long)n, last_err);
        n_errors++;
        free(g);
        return;
    }
    double t0 = now();
    char *A = pin ? bufs.A : bufs.Ap, *B = pin ? bufs.B : bufs.Bp, *C = pin ? bufs.C : bufs.Cp;
    fill(dt, A, n, SEED_A), fill(dt, B, n, SEED_B), fill(dt, C, n, SEED_C);
    if (pin && page) fill(dt, bufs.Ap, n, SEED_A), fill(dt, bufs.Bp, n, SEED_B);
    g->A = A, g->B = B, g->C = C;
    if (o.verify != V_NONE && probeset_begin(&g->ps, dt, n, n, C)) {
        printf("\n%cgemm n = %lld: not run: %s\n", prec_char(dt), (long long)n, last_err);
        n_errors++;
        free(g);
        return;
    }
    fprintf(stderr, "  operands filled%s in %.1f s\n", o.verify != V_NONE ? ", C0 t taken" : "",
            now() - t0);

    /* Run order: the ceiling and tessera first, so a --time-limit cuts the cuBLAS-XT rows
     * (the baselines measured before) rather than the rows under test; tessera's runtime is
     * finalized before cuBLAS-XT starts, which frees its device heap. Printed in kind order. */
    if (!o.skip[K_INCORE]) row_incore(g);
    if (!o.skip[K_TESS] || (page && !o.skip[K_TESS_PAGE])) {
        int trc = 0, inited = 0;
        if (!(o.time_limit > 0 && elapsed() > o.time_limit)) {
            last_err[0] = 0;
            double ti = now();
            trc = TS(tess_init());
            inited = !trc;
            if (inited)
                fprintf(stderr, "  tess_init: %d devices in %.1f s\n", tess_device_count(),
                        now() - ti);
        }
        if (!o.skip[K_TESS]) row_tess(g, 0, trc);
        if (page && !o.skip[K_TESS_PAGE]) row_tess(g, 1, trc);
        if (inited) tess_finalize();
    }
    for (int i = 0; want_xt && i < o.nblocks; i++) row_xt(g, o.blocks[i], 0);
    if (page && !o.skip[K_XT_PAGE]) {
        int b = g->best_xt_block;
        for (int i = 0; !b && i < o.nblocks; i++)
            if (o.blocks[i] == 8192) b = 8192;
        for (int i = 0; !b && i < o.nblocks; i++)
            if (o.blocks[i] > b) b = o.blocks[i];
        if (b) row_xt(g, b, 1);
    }
    if (!o.skip[K_CPU] && g->n <= CPU_ROW_MAX_N) row_cpu(g);
    if (!bufs.pinned && pin)
        for (int i = 0; i < g->nrows; i++)
            if (g->rows[i].kind == K_XT || g->rows[i].kind == K_TESS)
                note(&g->rows[i], "host operands are NOT page-locked (cudaHostAlloc failed)");

    int at = 0;
    for (int k = 0; k < K_NKINDS; k++)
        for (int i = 0; i < g->nrows; i++)
            if (g->rows[i].kind == (enum kind)k) g->order[at++] = &g->rows[i];
    double incore_rate = 0;
    for (int i = 0; i < g->nrows; i++)
        if (g->rows[i].kind == K_INCORE && g->rows[i].status == ROW_OK) incore_rate = g->rows[i].rate;
    print_group(g, incore_rate);
    if (csv) csv_group(csv, g, incore_rate);
    if (g->ps.p) probeset_end(&g->ps);
    free(g);
}

/* ---- options ---------------------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: tessera-bench [-n N[,N...]] [-p s,d,c,z] [-r reps] [--devices N]\n"
            "                     [--xt-blocks B[,B...]] [--skip ROW[,ROW...]] [--time-limit S]\n"
            "                     [--csv FILE] [--verify all|ends|none] [--threads T]\n"
            "  Times C = alpha A B + beta C (square, NN, alpha 1, beta 0.5) on the same random\n"
            "  host operands with in-core cuBLAS (the ceiling), cuBLAS-XT (pinned, per block;\n"
            "  pageable with its own pinning at the best block) and tessera (pinned, pageable);\n"
            "  for n <= 8192 also in-core cuBLAS timed with its copies and the CPU BLAS\n"
            "  (TESSERA_CPU_BLAS, default libopenblas.so.0), and tessera's ratio to the better.\n"
            "  -n            sizes (default 8192)\n"
            "  -p            precisions (default d)\n"
            "  -r            timed runs per row after one warm-up; the median is reported (3)\n"
            "  --devices     GPUs cuBLAS-XT uses: the first N of those tessera uses\n"
            "                (TESSERA_DEVICES; default all visible); in-core runs on the first\n"
            "  --xt-blocks   cuBLAS-XT block sizes (default 1024,8192,12288; 1024 is XT's own)\n"
            "  --skip        rows to leave out: incore, xt, xt-pageable, tess, tess-pageable,\n"
            "                incore-copies, cpu-blas (incore-copies runs with incore only)\n"
            "  --time-limit  seconds from start; rows that would pass it are cut or skipped\n"
            "  --csv         also write every row (and each tessera device) to FILE\n"
            "  --verify      check every run (all, default), the warm-up and the last run\n"
            "                (ends), or none; the probe check costs O(n^2) per run on the CPU\n"
            "  --threads     CPU threads for filling and checking (default: CPUs available)\n"
            "  Progress goes to stderr, the tables to stdout. Exit: 0 all verified, 1 a wrong\n"
            "  result, 2 usage, 3 a row failed with an error, 77 no GPU.\n"
            "\n"
            "       tessera-bench --routine R[,R...] [-n N[,N...]] [-p s,d,c,z] [--reps reps]\n"
            "                     [--side L|R] [--uplo L|U] [--trans N|T|C] [--diag N|U]\n"
            "                     [--xt-blocks B[,B...]] [--skip incore,xt,tess] [--time-limit S]\n"
            "                     [--csv FILE] [--verify all|ends|none] [--threads T] [--devices N]\n"
            "  Level 3: for each precision, size and routine R (gemm, symm, hemm, syrk, herk,\n"
            "  syr2k, her2k, trmm, trsm, or all; hemm/herk/her2k in c and z only), on the same\n"
            "  random pinned host operands (square: m = n = k = N): in-core cuBLAS (operands\n"
            "  on the first GPU, _64 API), cuBLAS-XT (one row per block) and tessera; one\n"
            "  warm-up and reps timed runs per row, the median reported, every run checked by a\n"
            "  probe-vector oracle in long double (semantics of the routine: triangles, sides,\n"
            "  transposes, unit diagonal, Hermitian diagonals; SYRK-like: the other triangle of\n"
            "  C byte for byte; TRSM: the residual op(A) X t - alpha B t). TFLOP/s by the\n"
            "  LAPACK working-note counts (GEMM 2mnk, SYMM 2m^2n, SYRK n^2k, SYR2K 2n^2k,\n"
            "  TRMM/TRSM m^2n; side R with n; complex x4). With trmm it also checks whether\n"
            "  cuBLAS TRMM with C == B (in place) gives the right answer, for every option.\n"
            "  --side/--uplo/--trans/--diag  options of the routines that have them (L, L, N, N);\n"
            "                --trans is TRMM/TRSM's transa and SYRK-like trans (T is read as C for\n"
            "                herk/her2k, C as T for complex syrk/syr2k)\n"
            "  --xt-blocks   cuBLAS-XT blocks; 0 or default = XT's own (default default,8192,12288)\n"
            "  --reps        the same as -r\n"
            "  Without a GPU it exits 77; TESSERA_BENCH_NO_GPU=1 runs the tessera rows anyway\n"
            "  (on the CPU worker or TESSERA_EMULATE devices: a test of the bench and oracle).\n");
}

/* Parse "a,b,c" of positive integers into out; count or -1. */
static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || n == max || (*end && *end != ',')) return -1;
        out[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int parse_args(int argc, char **argv) {
    enum { O_DEVICES = 256, O_BLOCKS, O_SKIP, O_TIME, O_CSV, O_VERIFY, O_THREADS, O_ROUTINE,
           O_SIDE, O_UPLO, O_TRANS, O_DIAG };
    static const struct option longopts[] = {
        {"devices", required_argument, 0, O_DEVICES}, {"xt-blocks", required_argument, 0, O_BLOCKS},
        {"skip", required_argument, 0, O_SKIP},       {"time-limit", required_argument, 0, O_TIME},
        {"csv", required_argument, 0, O_CSV},         {"verify", required_argument, 0, O_VERIFY},
        {"threads", required_argument, 0, O_THREADS}, {"help", no_argument, 0, 'h'},
        {"routine", required_argument, 0, O_ROUTINE}, {"reps", required_argument, 0, 'r'},
        {"side", required_argument, 0, O_SIDE},       {"uplo", required_argument, 0, O_UPLO},
        {"trans", required_argument, 0, O_TRANS},     {"diag", required_argument, 0, O_DIAG},
        {0, 0, 0, 0}};
    static const char *const routine_names[R_N] = {"gemm",  "symm",  "hemm", "syrk", "herk",
                                                   "syr2k", "her2k", "trmm", "trsm"};
    int64_t tmp[MAX_LIST];
    int c, ndev_opt = 0, cnt;
    const char *xt_blocks = NULL; /* parsed after the loop: level 3 also takes 0 / default */
    o.side = 'L', o.uplo = 'L', o.trans = 'N', o.diag = 'N';
    o.sizes[0] = 8192, o.nsizes = 1;
    o.precs[0] = TESS_D, o.nprecs = 1;
    o.reps = 3;
    o.blocks[0] = 1024, o.blocks[1] = 8192, o.blocks[2] = 12288, o.nblocks = 3;
    cpu_set_t cpus; /* the CPUs this process may run on (a cpuset may hide some) */
    long nproc = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus)
                                                               : sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = nproc < 1 ? 1 : nproc > MAX_THREADS ? MAX_THREADS : (int)nproc;
    while ((c = getopt_long(argc, argv, "n:p:r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if ((cnt = parse_list(optarg, o.sizes, MAX_LIST)) < 1) goto bad;
            o.nsizes = cnt;
            break;
        case 'p': {
            o.nprecs = 0;
            for (const char *s = optarg; *s; s++) {
                const char *at = strchr("sdcz", *s);
                if (*s == ',') continue;
                if (!at || o.nprecs == 4) goto bad;
                o.precs[o.nprecs++] = (tess_dtype_t)(at - "sdcz");
            }
            if (!o.nprecs) goto bad;
            break;
        }
        case 'r':
            o.reps = atoi(optarg);
            if (o.reps < 1 || o.reps > MAX_REPS) goto bad;
            break;
        case O_DEVICES:
            ndev_opt = atoi(optarg);
            if (ndev_opt < 1) goto bad;
            break;
        case O_BLOCKS: xt_blocks = optarg; break;
        case O_ROUTINE: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int r = 0;
                if (!strcmp(t, "all")) {
                    o.routines = (1u << R_N) - 1;
                    continue;
                }
                while (r < R_N && strcmp(t, routine_names[r])) r++;
                if (r == R_N) {
                    fprintf(stderr, "tessera-bench: --routine: unknown routine '%s'\n", t);
                    goto bad;
                }
                o.routines |= 1u << r;
            }
            if (!o.routines) goto bad;
            break;
        }
        case O_SIDE:
        case O_UPLO:
        case O_TRANS:
        case O_DIAG: {
            const char *allowed = c == O_SIDE ? "LR" : c == O_UPLO ? "LU" : c == O_TRANS ? "NTC" : "NU";
            char v = optarg[0] >= 'a' && optarg[0] <= 'z' ? (char)(optarg[0] - 32) : optarg[0];
            if (!v || optarg[1] || !strchr(allowed, v)) goto bad;
            *(c == O_SIDE ? &o.side : c == O_UPLO ? &o.uplo : c == O_TRANS ? &o.trans : &o.diag) = v;
            break;
        }
        case O_SKIP: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < K_NKINDS && strcmp(t, kind_names[k])) k++;
                if (k == K_NKINDS) {
                    fprintf(stderr, "tessera-bench: --skip: unknown row '%s'\n", t);
                    goto bad;
                }
                o.skip[k] = 1;
            }
            break;
        }
        case O_TIME: o.time_limit = atof(optarg); break;
        case O_CSV: o.csv = optarg; break;
        case O_VERIFY:
            if (!strcmp(optarg, "all")) o.verify = V_ALL;
            else if (!strcmp(optarg, "ends")) o.verify = V_ENDS;
            else if (!strcmp(optarg, "none")) o.verify = V_NONE;
            else goto bad;
            break;
        case O_THREADS:
            o.threads = atoi(optarg);
            if (o.threads < 1 || o.threads > MAX_THREADS) goto bad;
            break;
        case 'h': usage(stdout); exit(0);
        default: goto bad;
        }
    }
    if (optind != argc) goto bad;
    if (o.routines && !xt_blocks) /* level 3: XT's own block and the two the GEMM run liked */
        o.blocks[0] = 0, o.blocks[1] = 8192, o.blocks[2] = 12288, o.nblocks = 3;
    if (xt_blocks && o.routines) {
        o.nblocks = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", xt_blocks);
        for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *end;
            long v = !strcmp(t, "default") ? 0 : strtol(t, &end, 10);
            if (strcmp(t, "default") && (end == t || *end || v < 0 || v > 1 << 20)) goto bad;
            if (o.nblocks == MAX_LIST) goto bad;
            o.blocks[o.nblocks++] = (int)v;
        }
        if (!o.nblocks) goto bad;
    } else if (xt_blocks) {
        if ((cnt = parse_list(xt_blocks, tmp, MAX_LIST)) < 1) goto bad;
        for (int i = 0; i < cnt; i++) {
            if (tmp[i] > 1 << 20) goto bad;
            o.blocks[i] = (int)tmp[i];
        }
        o.nblocks = cnt;
    }
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > ((int64_t)1 << 31) - 1) goto bad;
    return ndev_opt;
bad:
    usage(stderr);
    exit(2);
}

/* The GPUs tessera uses, as TESSERA_DEVICES selects them: all visible, or an ordinal list. */
static int tessera_gpus(int visible, int *out) {
    const char *s = getenv("TESSERA_DEVICES");
    int n = 0;
    if (!s || !*s || !strcmp(s, "all")) {
        for (int i = 0; i < visible && n < MAX_GPUS; i++) out[n++] = i;
        return n;
    }
    if (!strcmp(s, "none")) return 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) end++;
        else if (v >= 0 && v < visible && n < MAX_GPUS) {
            int dup = 0;
            for (int i = 0; i < n; i++) dup |= out[i] == (int)v;
            if (!dup) out[n++] = (int)v;
        }
        s = end;
        while (*s == ' ' || *s == ',') s++;
    }
    return n;
}

static void print_header(int argc, char **argv, int visible) {
    char host[256] = "?", date[64] = "?", cpu[256] = "?", line[512];
    time_t t = time(NULL);
    struct tm tm;
    gethostname(host, sizeof host - 1);
    if (gmtime_r(&t, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && p) {
            snprintf(cpu, sizeof cpu, "%s", p + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    }
    if (f) fclose(f);
    printf("tessera-bench:");
    for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
    printf("\n%s  host %s  cpu %s x %ld  host memory %.0f GB available\n", date, host, cpu,
           sysconf(_SC_NPROCESSORS_ONLN), mem_available() * 1e-9);
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv), (void)cudaRuntimeGetVersion(&rt);
    printf("tessera %d.%d.%d (%s)  CUDA driver %d runtime %d  cuBLAS %d.%d.%d\n",
           TESS_VERSION_MAJOR, TESS_VERSION_MINOR, TESS_VERSION_PATCH, tess_build_config(), drv, rt,
           CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
    for (int i = 0; i < visible; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        printf("  cuda:%d %s, %.1f GiB, %d SMs, pci %04x:%02x\n", i, p.name,
               p.totalGlobalMem / 1073741824.0, p.multiProcessorCount, (unsigned)p.pciDomainID,
               (unsigned)p.pciBusID);
    }
    printf("cuBLAS-XT devices:");
    for (int i = 0; i < o.ndev; i++) printf(" %d", o.dev[i]);
    printf("  in-core on cuda:%d  tessera: TESSERA_DEVICES=%s\n", o.dev[0],
           getenv("TESSERA_DEVICES") ? getenv("TESSERA_DEVICES") : "(all)");
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "TESSERA_", 8)) printf("  env %s\n", *e);
    printf("verify: %s, probe grid on %d threads; time limit: ",
           o.verify == V_ALL ? "every run" : o.verify == V_ENDS ? "warm-up and last run" : "off",
           o.threads);
    if (o.time_limit > 0) printf("%.0f s\n", o.time_limit);
    else printf("none\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    t_start = now();
    int ndev_opt = parse_args(argc, argv);

    int visible = 0;
    cudaError_t e = cudaGetDeviceCount(&visible);
    int no_gpu = 0;
    if ((e != cudaSuccess || visible < 1) && getenv("TESSERA_BENCH_NO_GPU") &&
        !strcmp(getenv("TESSERA_BENCH_NO_GPU"), "1")) {
        /* testing the bench and its oracle without a GPU: the tessera rows (and, in the
         * GEMM table, the CPU BLAS row) only, tessera on whatever devices the runtime finds
         * (the CPU worker, emulated devices) */
        (void)cudaGetLastError();
        fprintf(stderr, "tessera-bench: no CUDA GPU; TESSERA_BENCH_NO_GPU=1: tessera and CPU "
                        "rows only\n");
        o.ndev = 0;
        print_header(argc, argv, 0);
        if (o.routines) return bench_level3();
        o.skip[K_INCORE] = o.skip[K_INCORE_COPY] = o.skip[K_XT] = o.skip[K_XT_PAGE] = 1;
        no_gpu = 1;
    }
    if (!no_gpu && (e != cudaSuccess || visible < 1)) {
        fprintf(stderr, "tessera-bench: no CUDA GPU present (%s); nothing to compare\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    int gpus[MAX_GPUS], ngpus = no_gpu ? 0 : tessera_gpus(visible, gpus);
    if (!no_gpu && ngpus < 1) {
        fprintf(stderr, "tessera-bench: TESSERA_DEVICES=%s leaves tessera no GPU\n",
                getenv("TESSERA_DEVICES"));
        return 77;
    }
    if (ndev_opt > ngpus) {
        fprintf(stderr, "tessera-bench: --devices %d, but tessera uses %d GPUs\n", ndev_opt, ngpus);
        return 2;
    }
    if (!no_gpu) {
        o.ndev = ndev_opt ? ndev_opt : ngpus;
        memcpy(o.dev, gpus, sizeof gpus);
        print_header(argc, argv, visible);
        if (o.routines) return bench_level3(); /* --routine: the level-3 comparison */
    }

    FILE *csv = NULL;
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            perror(o.csv);
            return 2;
        }
        fputs(csv_header, csv);
    }
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++) run_group(o.precs[p], o.sizes[i], p * o.nsizes + i, csv);
    free_pinned();
    free_pageable();
    if (csv) fclose(csv);
    printf("\n%.0f s in all; %d wrong result(s), %d row(s) failed%s\n", elapsed(), n_wrong,
           n_errors, out_of_time ? ", some rows skipped by --time-limit" : "");
    return n_wrong ? 1 : n_errors ? 3 : 0;
}
