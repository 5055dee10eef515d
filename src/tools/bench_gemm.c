/* src/tools/bench_gemm.c: tessera-bench's GEMM comparison (issue 3). For each precision and
 * size (square, NN, alpha 1, beta 0.5), on the same random host operands, the rows of one
 * table: in-core cuBLAS (the ceiling), cuBLAS-XT per block on pinned operands and at the best
 * block on pageable ones with its own pinning, tessera on pinned and pageable operands, and
 * for n <= CPU_ROW_MAX_N in-core cuBLAS timed with its copies and the CPU BLAS. C is refilled
 * with C0 before every run; each result is checked by the probe oracle (oracle.h) on a P x Q
 * grid of C blocks by all cores. Order within a size: in-core (device buffers freed after),
 * tess_init, the tessera rows, tess_finalize (the runtime holds nearly all device memory),
 * then cuBLAS-XT: the ceiling and the rows under test first, so --time-limit cuts baselines.
 * Host memory: pinned A, B, C and pageable copies, allocated once for the largest size still
 * to come when that fits; the pageable rows are left out of a size whose two sets do not. */
#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "oracle.h"
#include "tessera.h"

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
    oracle_matvec(s->dt, 'N', k1 - k0, c1 - c0, s->B + ((size_t)k0 + (size_t)c0 * ld) * es, s->ld,
                  pr->t, pr->tabs, s->bt + (size_t)J * 2 * s->n + 2 * k0,
                  s->btabs + (size_t)J * s->n + k0);
}

static void check_block(void *c, int b) {
    struct probeset *s = c;
    int64_t r0, r1, c0, c1;
    size_t es = esize(s->dt), ld = (size_t)s->ld;
    block_bounds(s, b, &r0, &r1, &c0, &c1);
    int J = b / s->P;
    s->worst[b] = oracle_gemm_check_bt(&s->p[b], 'N', s->n, s->al, s->A + (size_t)r0 * es, s->ld,
                                       s->bt + (size_t)J * 2 * s->n, s->btabs + (size_t)J * s->n,
                                       s->be, s->C + ((size_t)r0 + (size_t)c0 * ld) * es, s->ld,
                                       NULL);
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
    int pinned;         /* tess_malloc_host really returned page-locked memory */
    char *Ap, *Bp, *Cp; /* malloc */
    size_t capp;
} bufs;

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
                bufs.pinned ? " (pinned)"
                            : ", NOT page-locked: pinned rows run on pageable memory");
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

/* ---- rows (bench_lib.h) ---------------------------------------------------------------------- */

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

static struct row *new_row(struct group *g, enum kind k, int block, const char *name) {
    struct row *r = &g->rows[g->nrows++];
    row_init(r, k, block, g->n, name);
    return r;
}

static int out_of_time_row(struct row *r) { return row_out_of_time(r, o.time_limit); }

/* A pageable row must start on memory nobody has page-locked (an earlier row that
 * registered it and left it so would make the row a pinned one). */
static void check_unpinned(struct row *r) {
    if (is_pinned(bufs.Ap) || is_pinned(bufs.Bp) || is_pinned(bufs.Cp))
        note(r, "WARNING: the malloc'd operands were already page-locked when the row started");
}

/* What a GEMM row runs: run() refills C with C0, makes one timed call and leaves the result in
 * the host matrix the check reads (A, B, C through the probe grid ps). */
struct grunner {
    struct runner base;
    struct group *g;
    struct probeset *ps;
    const void *A, *B; /* what the check reads */
    void *C;
};

static void verify_run(struct runner *self, struct row *row, char *verdict, size_t vlen) {
    struct grunner *rn = (struct grunner *)self;
    double t0 = now();
    double w = probeset_check(rn->ps, rn->g->al, rn->A, rn->B, rn->g->be, rn->C);
    double ver = now() - t0;
    row_verified(row, w, !(w <= 1.0));
    snprintf(verdict, vlen, "%s %.1e (check %.1f s)", w <= 1.0 ? "ok" : "WRONG", w, ver);
}

/* One warm-up and o.reps timed runs (fewer if --time-limit says so), each checked. */
static void gemm_drive(struct group *g, struct row *row, struct grunner *rn) {
    struct timing tm = bench_timing();
    rn->g = g, rn->base.verify = verify_run;
    rn->base.secs_width = 9, rn->base.note_decimals = 2;
    rn->base.flops = gemm_flops(g->dt, row->n);
    snprintf(rn->base.label, sizeof rn->base.label, "  %cgemm %-6lld %-20s", prec_char(g->dt),
             (long long)g->n, row->name);
    drive(&rn->base, row, &tm);
}

/* ---- in-core cuBLAS: the ceiling ------------------------------------------------------------ */

struct incore {
    struct grunner r;
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
    if (out_of_time_row(row)) return;
    struct incore ic = {.r.base.run = incore_run, .g = g, .dev = o.dev[0], .s = g->n};
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
        note(row,
             "does not fit: 3 x %.1f GB > 90%% of %.1f GB free on cuda:%d; ceiling rate "
             "from n = %lld",
             (double)g->n * g->n * g->es * 1e-9, fr * 1e-9, ic.dev, (long long)s);
        fprintf(stderr, "  in-core: n = %lld does not fit on cuda:%d, timing n = %lld\n",
                (long long)g->n, ic.dev, (long long)s);
        ic.s = row->n = s;
        snprintf(row->name, sizeof row->name, "in-core n=%lld", (long long)s);
    }
    w = (size_t)ic.s * g->es, pitch = (size_t)g->n * g->es, bytes = w * (size_t)ic.s;
    if (CU(cudaMalloc(&ic.dA, bytes)) || CU(cudaMalloc(&ic.dB, bytes)) ||
        CU(cudaMalloc(&ic.dC, bytes)) || CB(cublasCreate(&ic.h)) || CU(cudaEventCreate(&ic.e0)) ||
        CU(cudaEventCreate(&ic.e1)) ||
        CU(cudaMemcpy2D(ic.dA, w, g->A, pitch, w, (size_t)ic.s, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy2D(ic.dB, w, g->B, pitch, w, (size_t)ic.s, cudaMemcpyHostToDevice)))
        goto fail;
    ic.r.A = g->A, ic.r.B = g->B, ic.r.C = g->C, ic.r.ps = &g->ps;
    if (ic.s != g->n && o.verify != V_NONE) { /* the leading s x s problem: its own C0 t */
        fill(g->dt, g->C, g->n, SEED_C);
        if (probeset_begin(&sub, g->dt, ic.s, g->n, g->C)) goto fail;
        ic.r.ps = &sub;
    }
    gemm_drive(g, row, &ic.r);
    if (!o.skip[K_INCORE_COPY] && g->n <= CPU_ROW_MAX_N) {
        struct row *cr = new_row(g, K_INCORE_COPY, 0, "in-core+copies");
        if (ic.s != g->n) {
            cr->status = ROW_SKIPPED;
            note(cr, "skipped: the operands do not fit on cuda:%d", ic.dev);
        } else if (!out_of_time_row(cr)) {
            ic.r.base.run = incore_copy_run;
            gemm_drive(g, cr, &ic.r);
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

/* ---- the CPU BLAS (bench_lib.h: TESSERA_CPU_BLAS, dlopen'ed) ------------------------------------ */

struct cpu {
    struct grunner r;
    struct group *g;
    const struct cpublas *cb;
};

static int cpu_run(struct runner *self, double *secs) {
    struct cpu *c = (struct cpu *)self;
    struct group *g = c->g;
    int n = (int)g->n;
    fill(g->dt, g->C, g->n, SEED_C);
    double t0 = now();
    cpublas_gemm(c->cb, g->dt, n, n, n, g->al, g->A, n, g->B, n, g->be, g->C, n);
    *secs = now() - t0;
    return 0;
}

static void row_cpu(struct group *g) {
    static struct cpublas cb;
    static int opened;
    struct row *row = new_row(g, K_CPU, 0, "cpu-blas");
    if (out_of_time_row(row)) return;
    if (!opened && cpublas_open(&cb)) {
        row_fail(row);
        return;
    }
    opened = 1;
    struct cpu c = {.r = {.base.run = cpu_run, .A = g->A, .B = g->B, .C = g->C, .ps = &g->ps},
                    .g = g,
                    .cb = &cb};
    note(row, "%s", cb.name);
    gemm_drive(g, row, &c.r);
}

/* ---- cuBLAS-XT ---------------------------------------------------------------------------------- */

struct xt {
    struct grunner r;
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
    if (out_of_time_row(row)) return;
    struct xt x = {.r = {.base.run = xt_run, .ps = &g->ps}, .g = g};
    x.r.A = pageable ? bufs.Ap : g->A, x.r.B = pageable ? bufs.Bp : g->B;
    x.r.C = pageable ? bufs.Cp : g->C;
    if (pageable) check_unpinned(row);
    last_err[0] = 0;
    if (CB(cublasXtCreate(&x.h)) || CB(cublasXtDeviceSelect(x.h, o.ndev, o.dev)) ||
        CB(cublasXtSetBlockDim(x.h, block)) ||
        (pageable && CB(cublasXtSetPinningMemMode(x.h, CUBLASXT_PINNING_ENABLED)))) {
        row_fail(row);
    } else {
        gemm_drive(g, row, &x.r);
    }
    if (row->status == ROW_OK) {
        /* XT has no counters. Its documented tiling streams, for each C block, the A row
         * panel and the B column panel, and reads and writes the C block once: the host-link
         * traffic of that schedule, (2n/b + 1) n^2 elements in, n^2 out, is printed instead */
        double nb = ceil((double)g->n / block), n = (double)g->n;
        double h2d = (nb * nb * (2.0 * n * block) + n * n) * (double)g->es;
        note(row, "model (no counters): H2D %.1f GB/run, D2H %.1f GB/run", h2d * 1e-9,
             n * n * (double)g->es * 1e-9);
        if (pageable)
            note(row, "CUBLASXT_PINNING_ENABLED, block %s",
                 g->best_xt_block == block ? "of the best pinned row" : "by default");
    }
    if (x.h) (void)CB(cublasXtDestroy(x.h));
    if (row->status == ROW_OK && !pageable && row->wrong == 0 && row->rate > g->best_xt_rate)
        g->best_xt_rate = row->rate, g->best_xt_block = block;
}

/* ---- tessera ----------------------------------------------------------------------------------- */

struct tess {
    struct grunner r;
    struct group *g;
};

static int tess_run(struct runner *self, double *secs) {
    struct tess *t = (struct tess *)self;
    struct group *g = t->g;
    int64_t n = g->n;
    fill(g->dt, t->r.C, n, SEED_C);
    double t0 = now();
    if (TS(tess_gemm(g->dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, n, n, n, g->al, t->r.A, n,
                     t->r.B, n, g->be, t->r.C, n)))
        return -1;
    *secs = now() - t0;
    return 0;
}

static void tess_before(struct runner *self, struct row *row) { tess_reset_stats(); }

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
    if (out_of_time_row(row)) return;
    if (init_rc) {
        row_fail(row);
        return;
    }
    struct tess t = {
        .r = {.base = {.run = tess_run, .before_timed = tess_before, .after_timed = tess_after},
              .ps = &g->ps},
        .g = g};
    t.r.A = pageable ? bufs.Ap : g->A, t.r.B = pageable ? bufs.Bp : g->B;
    t.r.C = pageable ? bufs.Cp : g->C;
    if (pageable) check_unpinned(row);
    last_err[0] = 0;
    gemm_drive(g, row, &t.r);
    if (row->status == ROW_OK && row->reps > 0) { /* counters were summed over the timed runs */
        row->h2d /= row->reps, row->d2h /= row->reps, row->p2p /= row->reps;
        for (int d = 0; d < row->ndev; d++)
            row->dev[d].h2d /= row->reps, row->dev[d].d2h /= row->reps,
                row->dev[d].p2p /= row->reps;
    }
}

/* ---- one precision and size --------------------------------------------------------------------- */

static void print_group(const struct group *g, double incore_rate) {
    double gb = (double)g->n * g->n * g->es * 1e-9;
    printf("\n%cgemm NN  m = n = k = %lld  alpha = 1, beta = 0.5  (A, B, C: 3 x %.2f GB)  "
           "median of %d\n",
           prec_char(g->dt), (long long)g->n, gb, o.reps);
    printf("%-22s %6s %10s %9s %8s %8s %8s %8s %8s  %s\n", "row", "n", "median s", "TFLOP/s",
           "/in-core", "/best XT", "H2D GB", "D2H GB", "P2P GB", "check (worst error/bound)");
    for (int i = 0; i < g->nrows; i++) {
        const struct row *r = g->order[i];
        if (r->status != ROW_OK) {
            printf("%-22s %6lld %s\n", r->name, (long long)r->n,
                   r->status == ROW_SKIPPED ? "skipped (see notes)" : "FAILED (see notes)");
            continue;
        }
        char ri[16], rx[16], h2d[16], d2h[16], p2p[16], chk[48];
        ratio(ri, sizeof ri, r->rate, incore_rate);
        ratio(rx, sizeof rx, r->rate, g->best_xt_rate);
        row_bytes_cells(r, h2d, d2h, p2p, sizeof h2d);
        row_check_cell(r, chk, sizeof chk);
        printf("%-22s %6lld %10.3f %9.2f %8s %8s %8s %8s %8s  %s\n", r->name, (long long)r->n,
               r->med, r->rate, ri, rx, h2d, d2h, p2p, chk);
        for (int d = 0; d < r->ndev; d++) {
            const struct devstat *ds = &r->dev[d];
            printf("    %-36.36s %8.2f %8.2f %8.2f  busy %3.0f%%  tasks %llu stolen %llu "
                   "evictions %llu%s\n",
                   ds->name, ds->h2d * 1e-9, ds->d2h * 1e-9, ds->p2p * 1e-9, 100.0 * ds->busy,
                   ds->tasks, ds->stolen, ds->evictions, ds->failed ? " FAILED" : "");
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
    for (int i = 0; i < g->nrows; i++) print_note(g->order[i], &first);
    fflush(stdout);
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
                fprintf(f, ",%.6f,%.6f,%.6f,%.4f,%s,%s,", r->med, r->tmin, r->tmax, r->rate, ri,
                        rx);
            else
                fprintf(f, ",,,,,,,");
            if (r->has_bytes && r->status == ROW_OK)
                fprintf(f, "%.6f,%.6f,%.6f,", (ds ? ds->h2d : r->h2d) * 1e-9,
                        (ds ? ds->d2h : r->d2h) * 1e-9, (ds ? ds->p2p : r->p2p) * 1e-9);
            else
                fprintf(f, ",,,");
            if (ds)
                fprintf(f, "%.4f,", ds->busy);
            else
                fprintf(f, ",");
            if (r->nver)
                fprintf(f, "%.3e,%d,%d,", r->worst, r->nver, r->wrong);
            else
                fprintf(f, ",0,0,");
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
            if (g->rows[i].kind == k) g->order[at++] = &g->rows[i];
    double incore_rate = 0;
    for (int i = 0; i < g->nrows; i++)
        if (g->rows[i].kind == K_INCORE && g->rows[i].status == ROW_OK)
            incore_rate = g->rows[i].rate;
    print_group(g, incore_rate);
    if (csv) csv_group(csv, g, incore_rate);
    if (g->ps.p) probeset_end(&g->ps);
    free(g);
}

int bench_gemm(void) {
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
