/* src/tools/bench_potrf.c: tessera-bench --routine potrf (issue 24), the Cholesky factorization
 * tess_?potrf against in-core cuSOLVER (cusolverDnXpotrf, the matrix already on the first GPU)
 * and, for n <= 8192 or with --cpu-lapack, the CPU LAPACK ?potrf_ of the dlopen'ed CPU BLAS.
 * Owns the random Hermitian positive definite operand, the rows (timed by drive(), bench_lib.h),
 * the check of each run (info, ||A0 - L L^H||_F / (||A0||_F n u) on the GPU by column blocks, on
 * the host without a GPU; the diagonal; tessera: the other triangle untouched), the potrf
 * tables, their summary and CSV. Nothing here reaches inside the library. A0 (pinned): random
 * Hermitian entries in [-0.5, 0.5] plus n on the real diagonal, so positive definite. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tessera.h"

/* pass: ||A0 - F||_F / (||A0||_F n u) <= this. A backward-stable factor of this A0 (|L| |L^H|
 * about |A0|) gives at most about 2 (gamma_{n+1} for the factorization, gamma_n for the check's
 * own GEMMs in the working precision); seen 1e-4 to 2e-2 */
#define POTRF_BOUND 10.0
#define VER_SLACK ((size_t)512 << 20) /* device bytes the GPU check leaves free */
#define HPD_SEED 0x243f6a8885a308d3ull
#define MAX_PSUMM (4 * MAX_LIST)

enum { P_INCORE, P_TESS, P_CPU, P_NROWS }; /* the table's order */

struct pgroup {
    tess_dtype_t dt;
    char uplo; /* 'L' or 'U' */
    int64_t n;
    size_t es, bytes;
    char *A0, *W; /* pinned host: the matrix, the copy tessera and the CPU factor */
    int pinned;
    double flops;
    struct row rows[P_NROWS];
};

/* the GPU check: a cuBLAS handle on o.dev[0] with its own stream (on: a GPU is there) */
static struct {
    int on;
    cublasHandle_t h;
    cudaStream_t st;
} gv;

/* the CPU LAPACK (Fortran ?potrf_, LP64 integers; the trailing length of uplo for gfortran) */
typedef void lapack_potrf_t(const char *uplo, const int *n, void *A, const int *lda, int *info,
                            size_t uplo_len);
static struct {
    int tried, ok;
    struct cpublas cb;
    lapack_potrf_t *potrf[4];
    char why[300];
} cpu;

static struct psumm {
    tess_dtype_t dt;
    char uplo;
    int64_t n;
    double rate[P_NROWS];
    char check[96];
} summ[MAX_PSUMM];
static int nsumm;
static FILE *csv;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static double unit_roundoff(tess_dtype_t dt) {
    return dt == TESS_S || dt == TESS_C ? 0x1p-24 : 0x1p-53;
}

static const char *cs_str(cusolverStatus_t s) {
    static char buf[48];
    switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: snprintf(buf, sizeof buf, "cuSOLVER status %d", (int)s); return buf;
    }
}
static int cs_check(cusolverStatus_t s, const char *what, const char *file, int line) {
    if (s == CUSOLVER_STATUS_SUCCESS) return 0;
    return fail_msg(what, cs_str(s), file, line);
}
#define CS(call) cs_check((call), #call, __FILE__, __LINE__)

/* ---- elements, the operand, host copies ------------------------------------------------------ */

static void get_el(tess_dtype_t dt, const char *X, size_t i, double *re, double *im) {
    *re = *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)X)[i], *im = 0; break;
    case TESS_D: *re = ((const double *)X)[i], *im = 0; break;
    case TESS_C: *re = ((const float *)X)[2 * i], *im = ((const float *)X)[2 * i + 1]; break;
    case TESS_Z: *re = ((const double *)X)[2 * i], *im = ((const double *)X)[2 * i + 1]; break;
    }
}
static void put_el(tess_dtype_t dt, char *X, size_t i, double re, double im) {
    switch (dt) {
    case TESS_S: ((float *)X)[i] = (float)re; break;
    case TESS_D: ((double *)X)[i] = re; break;
    case TESS_C: ((float *)X)[2 * i] = (float)re, ((float *)X)[2 * i + 1] = (float)im; break;
    case TESS_Z: ((double *)X)[2 * i] = re, ((double *)X)[2 * i + 1] = im; break;
    }
}

static uint64_t mix64(uint64_t z) { /* splitmix64's finalizer */
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double half_unit(uint64_t h) { return (double)(h >> 11) * 0x1p-53 - 0.5; } /* [-0.5, 0.5) */

#define COLS_PER_ITEM 64
struct colctx {
    const struct pgroup *g;
    const char *F; /* host_residual: the factor */
    double *r2, *a2;
    unsigned char *bad; /* other_changed: per item */
};

/* A0's columns of one item: entry (i, j) from the hash of (max, min), conjugated above */
static void hpd_item(void *c, int q) {
    const struct colctx *x = c;
    const struct pgroup *g = x->g;
    int64_t n = g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    int cpx = is_complex(g->dt);
    for (int64_t j = j0; j < j1; j++)
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = (uint64_t)(i > j ? i : j), s = (uint64_t)(i > j ? j : i);
            uint64_t h = mix64(HPD_SEED ^ mix64(r << 32 | s));
            double re = half_unit(h), im = cpx && i != j ? half_unit(mix64(h)) : 0;
            if (i == j) re += (double)n;
            put_el(g->dt, g->A0, (size_t)i + (size_t)j * (size_t)n, re, i < j ? -im : im);
        }
}

static int col_items(int64_t n) { return (int)((n + COLS_PER_ITEM - 1) / COLS_PER_ITEM); }

#define CHUNK_BYTES ((size_t)32 << 20)
struct pmem {
    char *dst;
    const char *src;
    size_t bytes;
};
static void pmem_chunk(void *c, int i) {
    struct pmem *p = c;
    size_t at = (size_t)i * CHUNK_BYTES;
    memcpy(p->dst + at, p->src + at, p->bytes - at < CHUNK_BYTES ? p->bytes - at : CHUNK_BYTES);
}
static void pcopy(void *dst, const void *src, size_t bytes) {
    struct pmem p = {dst, src, bytes};
    par_for((int)((bytes + CHUNK_BYTES - 1) / CHUNK_BYTES), pmem_chunk, &p);
}

/* tessera's contract: the strict other triangle of W is A0's, byte for byte */
static void other_item(void *c, int q) {
    const struct colctx *x = c;
    const struct pgroup *g = x->g;
    int64_t n = g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    for (int64_t j = j0; j < j1 && !x->bad[q]; j++) {
        size_t at = (size_t)j * (size_t)n + (g->uplo == 'L' ? 0 : (size_t)j + 1);
        size_t len = g->uplo == 'L' ? (size_t)j : (size_t)(n - j - 1);
        if (memcmp(g->W + at * g->es, g->A0 + at * g->es, len * g->es)) x->bad[q] = 1;
    }
}
static int other_changed(const struct pgroup *g) {
    int items = col_items(g->n), any = 0;
    unsigned char *bad = calloc((size_t)items, 1);
    if (!bad) return fail_msg("other_changed", "out of host memory", __FILE__, __LINE__);
    struct colctx x = {.g = g, .bad = bad};
    par_for(items, other_item, &x);
    for (int q = 0; q < items; q++) any |= bad[q];
    free(bad);
    return any;
}

/* ---- the check ------------------------------------------------------------------------------- */

/* Zero the strict upper ('U') or strict lower ('L') part of the k x k square at X (ld). */
static int zero_tri(char *X, int64_t ld, int64_t k, char part, size_t es) {
    for (int64_t c = 0; c < k; c++) {
        size_t off = part == 'U' ? (size_t)c * (size_t)ld : (size_t)c * (size_t)ld + (size_t)c + 1;
        size_t len = part == 'U' ? (size_t)c : (size_t)(k - c - 1);
        if (len && CU(cudaMemsetAsync(X + off * es, 0, len * es, gv.st))) return -1;
    }
    return 0;
}

/* *acc += ||x||_2^2, x of len elements on the device (blocks the host) */
static int nrm2sq(tess_dtype_t dt, const char *x, int64_t len, double *acc) {
    const int64_t chunk = (int64_t)1 << 30;
    for (int64_t at = 0; at < len; at += chunk) {
        int c = (int)min64(chunk, len - at);
        const char *p = x + (size_t)at * esize(dt);
        float f = 0;
        double d = 0;
        switch (dt) {
        case TESS_S:
            if (CB(cublasSnrm2(gv.h, c, (const float *)p, 1, &f))) return -1;
            d = f;
            break;
        case TESS_D:
            if (CB(cublasDnrm2(gv.h, c, (const double *)p, 1, &d))) return -1;
            break;
        case TESS_C:
            if (CB(cublasScnrm2(gv.h, c, (const cuComplex *)p, 1, &f))) return -1;
            d = f;
            break;
        case TESS_Z:
            if (CB(cublasDznrm2(gv.h, c, (const cuDoubleComplex *)p, 1, &d))) return -1;
            break;
        }
        *acc += d * d;
    }
    return 0;
}

/* C -= op(A) op(B) on gv */
static cublasStatus_t gemm_sub(tess_dtype_t dt, cublasOperation_t ta, cublasOperation_t tb,
                               int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                               const void *B, int64_t ldb, void *C, int64_t ldc) {
    static const float sm = -1, s1 = 1;
    static const double dm = -1, d1 = 1;
    static const cuComplex cm = {-1, 0}, c1 = {1, 0};
    static const cuDoubleComplex zm = {-1, 0}, z1 = {1, 0};
    cublasHandle_t h = gv.h;
#if CUBLAS_VER_MAJOR >= 12 /* 64-bit dimensions and leading dimensions */
    switch (dt) {
    case TESS_S: return cublasSgemm_64(h, ta, tb, m, n, k, &sm, A, lda, B, ldb, &s1, C, ldc);
    case TESS_D: return cublasDgemm_64(h, ta, tb, m, n, k, &dm, A, lda, B, ldb, &d1, C, ldc);
    case TESS_C: return cublasCgemm_64(h, ta, tb, m, n, k, &cm, A, lda, B, ldb, &c1, C, ldc);
    case TESS_Z: return cublasZgemm_64(h, ta, tb, m, n, k, &zm, A, lda, B, ldb, &z1, C, ldc);
    }
#else
    int im = (int)m, in = (int)n, ik = (int)k, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
    switch (dt) {
    case TESS_S: return cublasSgemm(h, ta, tb, im, in, ik, &sm, A, ia, B, ib, &s1, C, ic);
    case TESS_D: return cublasDgemm(h, ta, tb, im, in, ik, &dm, A, ia, B, ib, &d1, C, ic);
    case TESS_C: return cublasCgemm(h, ta, tb, im, in, ik, &cm, A, ia, B, ib, &c1, C, ic);
    case TESS_Z: return cublasZgemm(h, ta, tb, im, in, ik, &zm, A, ia, B, ib, &z1, C, ic);
    }
#endif
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* ||A0 - L L^H||_F / (||A0||_F n u) (uplo U: A0 - U^H U) over the triangle uplo, on o.dev[0],
 * for the factor F on the device (dF, ld n: its strict other triangle is zeroed here, it is
 * read in place) or on the host (hF, ld n: streamed by panels of w columns, uplo U rows). Lower:
 * for each column block [b0, b1) (w wide), S = A0[b0:n, b0:b1] minus L[b0:n, k] L[b0:b1, k]^H
 * summed over the panels k of [0, b1) (the last one's part above the diagonal zeroed), then the
 * strict upper part of S's top square zeroed and ||S||_F taken; upper the same transposed.
 * Device memory: S (and the panel P) of n x w each, w as large as the free memory allows.
 * 0, or -1 (last_err). */
static int gpu_residual(const struct pgroup *g, char *dF, const char *hF, double *ratio, char *how,
                        size_t hlen) {
    tess_dtype_t dt = g->dt;
    int64_t n = g->n, w;
    size_t es = g->es, fr = 0, tot = 0;
    char *S = NULL, *P = NULL;
    int lower = g->uplo == 'L', rc = -1, nbuf = dF ? 1 : 2;
    char other = lower ? 'U' : 'L';
    const cublasOperation_t H = is_complex(dt) ? CUBLAS_OP_C : CUBLAS_OP_T, N = CUBLAS_OP_N;
    const enum cudaMemcpyKind h2d = cudaMemcpyHostToDevice;
    double a2 = 0, r2 = 0;
    if (CU(cudaSetDevice(o.dev[0])) || CU(cudaMemGetInfo(&fr, &tot))) return -1;
    double cols = (fr > VER_SLACK ? (double)(fr - VER_SLACK) : 0) / ((double)nbuf * n * es);
    w = cols >= (double)n ? n : cols >= 256 ? (int64_t)cols / 256 * 256 : (int64_t)cols / 32 * 32;
    /* about 8 blocks from n = 16384 (GEMMs of 1.4x the triangle's flops rather than the 6x of
     * one block; a few passes over the factor when streamed), one up to n = 4096 */
    int64_t want = n <= 4096 ? n : ((n + 7) / 8 + 255) / 256 * 256;
    if (want < 2048) want = 2048;
    if (w > want) w = want;
    if (w < 1) {
        char why[160];
        snprintf(why, sizeof why, "%.2f GB free on cuda:%d, the check needs %d x %.3f GB at least",
                 fr * 1e-9, o.dev[0], nbuf, (double)(32 * n * es) * 1e-9);
        return fail_msg("gpu_residual", why, __FILE__, __LINE__);
    }
    if (CU(cudaMalloc((void **)&S, (size_t)n * (size_t)w * es)) ||
        (!dF && CU(cudaMalloc((void **)&P, (size_t)n * (size_t)w * es))))
        goto out;
    if (dF && zero_tri(dF, n, n, other, es)) goto out;
    for (int64_t b0 = 0; b0 < n; b0 += w) {
        int64_t b1 = min64(n, b0 + w), bw = b1 - b0, m = n - b0, lds = lower ? m : bw;
        const char *a0 = g->A0 + ((size_t)b0 + (size_t)b0 * (size_t)n) * es;
        /* S: lower m x bw (A0[b0:n, b0:b1]), upper bw x m (A0[b0:b1, b0:n]) */
        if (CU(cudaMemcpy2DAsync(S, (size_t)lds * es, a0, (size_t)n * es, (size_t)lds * es,
                                 (size_t)(lower ? bw : m), h2d, gv.st)) ||
            zero_tri(S, lds, bw, other, es) || nrm2sq(dt, S, m * bw, &a2))
            goto out;
        if (dF) { /* lower: L[b0:n, 0:b1] L[b0:b1, 0:b1]^H; upper: U[0:b1, b0:b1]^H U[0:b1, b0:n] */
            const char *f = dF + (lower ? (size_t)b0 : (size_t)b0 * (size_t)n) * es;
            if (CB(lower ? gemm_sub(dt, N, H, m, bw, b1, f, n, f, n, S, m)
                         : gemm_sub(dt, H, N, bw, m, b1, f, n, f, n, S, bw)))
                goto out;
        } else {
            for (int64_t k0 = 0; k0 < b1; k0 += w) {
                int64_t kc = min64(w, b1 - k0), ldp = lower ? m : kc;
                /* P: lower L[b0:n, k0:k0+kc] (m x kc), upper U[k0:k0+kc, b0:n] (kc x m) */
                size_t at = lower ? (size_t)b0 + (size_t)k0 * (size_t)n
                                  : (size_t)k0 + (size_t)b0 * (size_t)n;
                if (CU(cudaMemcpy2DAsync(P, (size_t)ldp * es, hF + at * es, (size_t)n * es,
                                         (size_t)ldp * es, (size_t)(lower ? kc : m), h2d, gv.st)))
                    goto out;
                if (k0 == b0 && zero_tri(P, ldp, bw, other, es)) goto out;
                if (CB(lower ? gemm_sub(dt, N, H, m, bw, kc, P, m, P, m, S, m)
                             : gemm_sub(dt, H, N, bw, m, kc, P, kc, P, kc, S, bw)))
                    goto out;
            }
        }
        if (zero_tri(S, lds, bw, other, es) || nrm2sq(dt, S, m * bw, &r2)) goto out;
    }
    if (CU(cudaStreamSynchronize(gv.st))) goto out;
    *ratio = sqrt(r2) / (sqrt(a2) * (double)n * unit_roundoff(dt));
    snprintf(how, hlen, "GPU, %lld block(s) of %lld%s", (long long)((n + w - 1) / w), (long long)w,
             dF ? ", factor in place" : "");
    rc = 0;
out:
    if (rc) (void)cudaStreamSynchronize(gv.st);
    if (S) (void)CU(cudaFree(S));
    if (P) (void)CU(cudaFree(P));
    return rc;
}

/* Without a GPU: the same residual on the host in double, column by column. */
static void hres_item(void *c, int q) {
    const struct colctx *x = c;
    const struct pgroup *g = x->g;
    const char *F = x->F;
    tess_dtype_t dt = g->dt;
    int64_t n = g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    double *acc = malloc(2 * (size_t)n * sizeof *acc);
    if (!acc) {
        for (int64_t j = j0; j < j1; j++) x->r2[j] = NAN;
        return;
    }
#define AT(i, j) ((size_t)(i) + (size_t)(j) * (size_t)n)
    for (int64_t j = j0; j < j1; j++) {
        double r2 = 0, a2 = 0, ar, ai, fr, fi, cr, ci;
        if (g->uplo == 'L') { /* rows j..n-1: A0(i, j) - sum_{k <= j} L(i, k) conj(L(j, k)) */
            for (int64_t i = j; i < n; i++) {
                get_el(dt, g->A0, AT(i, j), &ar, &ai);
                acc[2 * (i - j)] = ar, acc[2 * (i - j) + 1] = ai, a2 += ar * ar + ai * ai;
            }
            for (int64_t k = 0; k <= j; k++) {
                get_el(dt, F, AT(j, k), &cr, &ci);
                ci = -ci;
                for (int64_t i = j; i < n; i++) {
                    get_el(dt, F, AT(i, k), &fr, &fi);
                    acc[2 * (i - j)] -= fr * cr - fi * ci,
                        acc[2 * (i - j) + 1] -= fr * ci + fi * cr;
                }
            }
            for (int64_t i = 0; i < 2 * (n - j); i++) r2 += acc[i] * acc[i];
        } else { /* rows 0..j: A0(i, j) - sum_{k <= i} conj(U(k, i)) U(k, j) */
            for (int64_t i = 0; i <= j; i++) {
                double sr = 0, si = 0;
                for (int64_t k = 0; k <= i; k++) {
                    get_el(dt, F, AT(k, i), &cr, &ci);
                    get_el(dt, F, AT(k, j), &fr, &fi);
                    sr += cr * fr + ci * fi, si += cr * fi - ci * fr;
                }
                get_el(dt, g->A0, AT(i, j), &ar, &ai);
                a2 += ar * ar + ai * ai;
                r2 += (ar - sr) * (ar - sr) + (ai - si) * (ai - si);
            }
        }
        x->r2[j] = r2, x->a2[j] = a2;
    }
#undef AT
    free(acc);
}
static int host_residual(const struct pgroup *g, const char *F, double *ratio, char *how,
                         size_t hlen) {
    double *r2 = calloc((size_t)g->n, sizeof *r2), *a2 = calloc((size_t)g->n, sizeof *a2);
    int rc = 0;
    if (!r2 || !a2) {
        rc = fail_msg("host_residual", "out of host memory", __FILE__, __LINE__);
    } else {
        struct colctx x = {.g = g, .F = F, .r2 = r2, .a2 = a2};
        double rs = 0, as = 0;
        par_for(col_items(g->n), hres_item, &x);
        for (int64_t j = 0; j < g->n; j++) rs += r2[j], as += a2[j];
        *ratio = sqrt(rs) / (sqrt(as) * (double)g->n * unit_roundoff(g->dt));
        snprintf(how, hlen, "host");
    }
    free(r2), free(a2);
    return rc;
}

/* The factor's diagonal: 0 real and positive, 1 positive real parts but an imaginary part
 * nonzero (LAPACK leaves them 0), 2 a real part not > 0 or NaN; -1 a CUDA failure. */
static int diag_check(const struct pgroup *g, const char *dF, const char *hF) {
    const char *d = hF;
    size_t stride = (size_t)g->n + 1;
    char *buf = NULL;
    int worst = 0;
    if (dF) {
        if (!(buf = malloc((size_t)g->n * g->es)))
            return fail_msg("diag_check", "out of host memory", __FILE__, __LINE__);
        if (CU(cudaMemcpy2D(buf, g->es, dF, stride * g->es, g->es, (size_t)g->n,
                            cudaMemcpyDeviceToHost))) {
            free(buf);
            return -1;
        }
        d = buf, stride = 1;
    }
    for (int64_t j = 0; j < g->n; j++) {
        double re, im;
        get_el(g->dt, d, (size_t)j * stride, &re, &im);
        if (!(re > 0)) worst = 2;
        if (im != 0 && !worst) worst = 1;
    }
    free(buf);
    return worst;
}

/* ---- rows: each one warm-up and --reps timed runs (drive), the median; in-core and the CPU
 * before tess_init (the runtime takes nearly all device memory), tessera after ----------------- */

struct prunner {
    struct runner r;
    struct pgroup *g;
    int which;    /* P_INCORE, P_TESS, P_CPU */
    int64_t info; /* of the last run */
    int info_bad, diag_imag, diag_bad, other_bad, check_failed;
    /* in-core */
    int dev;
    cusolverDnHandle_t sh;
    cusolverDnParams_t sp;
    cudaEvent_t e0, e1;
    char *dA;
    void *dwork, *hwork;
    size_t dws, hws;
    int *dinfo;
};

static cudaDataType cuda_type(tess_dtype_t dt) {
    return dt == TESS_S   ? CUDA_R_32F
           : dt == TESS_D ? CUDA_R_64F
           : dt == TESS_C ? CUDA_C_32F
                          : CUDA_C_64F;
}
static cublasFillMode_t fill_mode(char uplo) {
    return uplo == 'L' ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
}

static void potrf_verify(struct runner *self, struct row *row, char *verdict, size_t vlen) {
    struct prunner *p = (struct prunner *)self;
    const struct pgroup *g = p->g;
    double t0 = now(), ratio = NAN;
    char how[80] = "";
    if (p->info != 0) {
        p->info_bad++;
        row_verified(row, NAN, 1);
        snprintf(verdict, vlen, "FAIL: info = %lld", (long long)p->info);
        return;
    }
    char *dF = p->which == P_INCORE ? p->dA : NULL;
    const char *hF = dF ? NULL : g->W;
    last_err[0] = 0;
    int rc = gv.on ? gpu_residual(g, dF, hF, &ratio, how, sizeof how)
                   : host_residual(g, hF, &ratio, how, sizeof how);
    int diag = rc ? -1 : diag_check(g, dF, hF);
    int other = diag < 0 || p->which != P_TESS ? 0 : other_changed(g);
    if (rc || diag < 0 || other < 0) {
        if (!p->check_failed++) {
            note(row, "the check failed: %s", last_err[0] ? last_err : "?");
            n_errors++;
        }
        snprintf(verdict, vlen, "check FAILED: %s", last_err[0] ? last_err : "?");
        return;
    }
    /* the diagonal and the other triangle are the contract for tessera, notes for the others */
    int bad = !(ratio <= POTRF_BOUND) || diag == 2 || (p->which == P_TESS && (diag || other));
    p->diag_imag += diag == 1, p->diag_bad += diag == 2, p->other_bad += other;
    row_verified(row, ratio, bad);
    snprintf(verdict, vlen, "%s %.1e%s%s%s (check %.2f s, %s)", bad ? "FAIL" : "ok", ratio,
             diag == 2 ? ", diagonal NOT positive" : "",
             diag == 1 ? ", diagonal imaginary part != 0" : "",
             other ? ", other triangle CHANGED" : "", now() - t0, how);
}

static void tess_before(struct runner *self, struct row *row) {
    if (((struct prunner *)self)->which == P_TESS) tess_reset_stats();
}
static void tess_after(struct runner *self, struct row *row, double timed_s) {
    (void)timed_s;
    if (((struct prunner *)self)->which == P_TESS) tess_row_bytes(row);
}

static void potrf_drive(struct prunner *p, struct row *row) {
    struct timing tm = bench_timing();
    p->r.verify = potrf_verify, p->r.before_timed = tess_before, p->r.after_timed = tess_after;
    p->r.secs_width = 8, p->r.note_decimals = 3, p->r.flops = p->g->flops;
    snprintf(p->r.label, sizeof p->r.label, "  %cpotrf %-6lld %-9s", prec_char(p->g->dt),
             (long long)p->g->n, row->name);
    drive(&p->r, row, &tm);
    if (p->info_bad) note(row, "info != 0 in %d run(s)", p->info_bad);
    if (p->diag_bad) note(row, "a diagonal entry not positive in %d run(s)", p->diag_bad);
    if (p->diag_imag)
        note(row, "nonzero imaginary parts on the diagonal in %d run(s) (LAPACK leaves 0)",
             p->diag_imag);
    if (p->other_bad) note(row, "the other triangle changed in %d run(s)", p->other_bad);
}

/* in-core cuSOLVER on o.dev[0]: the matrix uploaded before each run, the call timed */
static int incore_run(struct runner *self, double *secs) {
    struct prunner *p = (struct prunner *)self;
    const struct pgroup *g = p->g;
    float ms = 0;
    int info = -1;
    if (CU(cudaSetDevice(p->dev)) ||
        CU(cudaMemcpy(p->dA, g->A0, g->bytes, cudaMemcpyHostToDevice)) ||
        CU(cudaDeviceSynchronize()) || CU(cudaEventRecord(p->e0, 0)) ||
        CS(cusolverDnXpotrf(p->sh, p->sp, fill_mode(g->uplo), g->n, cuda_type(g->dt), p->dA, g->n,
                            cuda_type(g->dt), p->dwork, p->dws, p->hwork, p->hws, p->dinfo)) ||
        CU(cudaEventRecord(p->e1, 0)) || CU(cudaEventSynchronize(p->e1)) ||
        CU(cudaEventElapsedTime(&ms, p->e0, p->e1)) ||
        CU(cudaMemcpy(&info, p->dinfo, sizeof info, cudaMemcpyDeviceToHost)))
        return -1;
    *secs = 1e-3 * ms, p->info = info;
    return 0;
}

static void incore_close(struct prunner *p) {
    if (p->e0) (void)CU(cudaEventDestroy(p->e0));
    if (p->e1) (void)CU(cudaEventDestroy(p->e1));
    if (p->sp) (void)CS(cusolverDnDestroyParams(p->sp));
    if (p->sh) (void)CS(cusolverDnDestroy(p->sh));
    if (p->dA) (void)CU(cudaFree(p->dA));
    if (p->dwork) (void)CU(cudaFree(p->dwork));
    if (p->dinfo) (void)CU(cudaFree(p->dinfo));
    free(p->hwork);
}

static void row_incore(struct pgroup *g) {
    struct row *row = &g->rows[P_INCORE];
    struct prunner p = {.r = {.run = incore_run}, .g = g, .which = P_INCORE, .dev = o.dev[0]};
    size_t fr = 0, tot = 0;
    last_err[0] = 0;
    if (o.ndev < 1 || o.skip[K_INCORE]) {
        row->status = ROW_SKIPPED;
        note(row, o.ndev < 1 ? "skipped: no GPU" : "skipped: --skip incore");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    if (CU(cudaSetDevice(p.dev)) || CU(cudaMemGetInfo(&fr, &tot))) goto fail;
    if ((double)g->bytes > 0.9 * (double)fr) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: does not fit: %.2f GB > 90%% of %.2f GB free on cuda:%d",
             g->bytes * 1e-9, fr * 1e-9, p.dev);
        return;
    }
    if (CU(cudaMalloc((void **)&p.dA, g->bytes)) ||
        CU(cudaMalloc((void **)&p.dinfo, sizeof *p.dinfo)) || CS(cusolverDnCreate(&p.sh)) ||
        CS(cusolverDnCreateParams(&p.sp)) || CU(cudaEventCreate(&p.e0)) ||
        CU(cudaEventCreate(&p.e1)) ||
        CS(cusolverDnXpotrf_bufferSize(p.sh, p.sp, fill_mode(g->uplo), g->n, cuda_type(g->dt), p.dA,
                                       g->n, cuda_type(g->dt), &p.dws, &p.hws)) ||
        (p.dws && CU(cudaMalloc(&p.dwork, p.dws))))
        goto fail;
    if (p.hws && !(p.hwork = malloc(p.hws))) {
        fail_msg("malloc", "cuSOLVER's host workspace", __FILE__, __LINE__);
        goto fail;
    }
    potrf_drive(&p, row);
    if (row->status == ROW_OK)
        note(row, "cusolverDnXpotrf on cuda:%d, workspace %.1f MB device, %.1f MB host", p.dev,
             p.dws * 1e-6, p.hws * 1e-6);
    incore_close(&p);
    return;
fail:
    row_fail(row);
    incore_close(&p);
}

/* the CPU LAPACK */
static int cpu_open(void) {
    static const char *const sym[4] = {"spotrf_", "dpotrf_", "cpotrf_", "zpotrf_"};
    if (cpu.tried) return cpu.ok ? 0 : -1;
    cpu.tried = 1;
    if (cpublas_open(&cpu.cb)) {
        snprintf(cpu.why, sizeof cpu.why, "%.290s", last_err);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        void *f = dlsym(cpu.cb.lib, sym[i]);
        if (!f) {
            snprintf(cpu.why, sizeof cpu.why, "%s has no %s", cpu.cb.name, sym[i]);
            return -1;
        }
        memcpy(&cpu.potrf[i], &f, sizeof f);
    }
    cpu.ok = 1;
    return 0;
}

static int cpu_run(struct runner *self, double *secs) {
    struct prunner *p = (struct prunner *)self;
    const struct pgroup *g = p->g;
    int n = (int)g->n, info = -1;
    pcopy(g->W, g->A0, g->bytes);
    double t0 = now();
    cpu.potrf[g->dt](&g->uplo, &n, g->W, &n, &info, 1);
    *secs = now() - t0, p->info = info;
    return 0;
}

static void row_cpu(struct pgroup *g) {
    struct row *row = &g->rows[P_CPU];
    struct prunner p = {.r = {.run = cpu_run}, .g = g, .which = P_CPU};
    if (o.skip[K_CPU] || (g->n > CPU_ROW_MAX_N && !o.cpu_lapack)) {
        row->status = ROW_SKIPPED;
        note(row, o.skip[K_CPU] ? "skipped: --skip cpu-blas"
                                : "skipped: n > 8192 (--cpu-lapack runs it at every size)");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    if (cpu_open()) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: %s", cpu.why);
        return;
    }
    last_err[0] = 0;
    potrf_drive(&p, row);
    if (row->status == ROW_OK) {
        if (cpu.cb.get_num_threads)
            note(row, "%s, %d threads", cpu.cb.name, cpu.cb.get_num_threads());
        else
            note(row, "%s", cpu.cb.name);
    }
}

/* tessera on the pinned host copy, reset from A0 before each run */
static int tess_potrf_call(const struct pgroup *g, int64_t *info) {
    tess_uplo_t ul = g->uplo == 'L' ? TESS_LOWER : TESS_UPPER;
    const tess_layout_t cm = TESS_COL_MAJOR;
    switch (g->dt) {
    case TESS_S: return TS(tess_spotrf(cm, ul, g->n, (float *)g->W, g->n, info));
    case TESS_D: return TS(tess_dpotrf(cm, ul, g->n, (double *)g->W, g->n, info));
    case TESS_C: return TS(tess_cpotrf(cm, ul, g->n, g->W, g->n, info));
    case TESS_Z: return TS(tess_zpotrf(cm, ul, g->n, g->W, g->n, info));
    }
    return -1;
}

static int tess_run(struct runner *self, double *secs) {
    struct prunner *p = (struct prunner *)self;
    int64_t info = -1;
    pcopy(p->g->W, p->g->A0, p->g->bytes);
    double t0 = now();
    if (tess_potrf_call(p->g, &info)) return -1;
    *secs = now() - t0, p->info = info;
    return 0;
}

static void row_tess(struct pgroup *g) {
    struct row *row = &g->rows[P_TESS];
    struct prunner p = {.r = {.run = tess_run}, .g = g, .which = P_TESS};
    if (o.skip[K_TESS]) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: --skip tess");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    last_err[0] = 0;
    double ti = now();
    if (TS(tess_init())) {
        row_fail(row);
        return;
    }
    fprintf(stderr, "  tess_init: %d devices in %.1f s\n", tess_device_count(), now() - ti);
    potrf_drive(&p, row);
    tess_finalize();
}

/* ---- printing -------------------------------------------------------------------------------- */

static const char *gpu_name(void) { /* in-core's and the check's GPU */
    static char buf[32];
    if (o.ndev < 1) return "no GPU";
    snprintf(buf, sizeof buf, "cuda:%d", o.dev[0]);
    return buf;
}

static double rate_of(const struct pgroup *g, int k) {
    return g->rows[k].status == ROW_OK ? g->rows[k].rate : 0;
}

static void check_cell(const struct row *r, char *buf, size_t len) {
    if (!r->nver)
        snprintf(buf, len, "not verified");
    else if (r->wrong)
        snprintf(buf, len, "FAIL %d/%d runs, worst %.1e", r->wrong, r->nver, r->worst);
    else
        snprintf(buf, len, "ok %.1e (%d runs)", r->worst, r->nver);
}

static void print_group(const struct pgroup *g) {
    double incore = rate_of(g, P_INCORE);
    char rat[16];
    printf("\n%cpotrf uplo %c  n = %lld  (%.2f GB)  %.4g flop  median of %d  host matrix %s\n",
           prec_char(g->dt), g->uplo, (long long)g->n, g->bytes * 1e-9, g->flops, o.reps,
           g->pinned ? "pinned" : "NOT page-locked");
    printf("  %-9s %10s %10s %10s %9s %9s %8s %8s  check: worst ||A0 - %s||_F / (||A0||_F n u), "
           "pass <= %g\n",
           "row", "median s", "min s", "max s", "TFLOP/s", "/in-core", "H2D GB", "D2H GB",
           g->uplo == 'L' ? "L L^H" : "U^H U", POTRF_BOUND);
    for (int k = 0; k < P_NROWS; k++) {
        const struct row *r = &g->rows[k];
        if (!r->name[0]) continue;
        if (r->status != ROW_OK) {
            printf("  %-9s %s\n", r->name,
                   r->status == ROW_SKIPPED ? "skipped (see notes)" : "FAILED (see notes)");
            continue;
        }
        char h2d[16], d2h[16], p2p[16], chk[80];
        ratio(rat, sizeof rat, r->rate, incore);
        row_bytes_cells(r, h2d, d2h, p2p, sizeof h2d);
        check_cell(r, chk, sizeof chk);
        printf("  %-9s %10.4f %10.4f %10.4f %9.2f %9s %8s %8s  %s\n", r->name, r->med, r->tmin,
               r->tmax, r->rate, rat, h2d, d2h, chk);
    }
    for (int k = 0; k < P_NROWS; k++)
        if (g->rows[k].note[0]) printf("  note: %s: %s\n", g->rows[k].name, g->rows[k].note);
    ratio(rat, sizeof rat, rate_of(g, P_TESS), incore);
    printf("%cpotrf n = %lld uplo %c: tessera / in-core = %s\n", prec_char(g->dt), (long long)g->n,
           g->uplo, rat);
    fflush(stdout);
}

static const char csv_header[] =
    "precision,n,routine,uplo,row,reps,median_s,min_s,max_s,tflops,ratio_incore,gb_h2d,gb_d2h,"
    "gb_p2p,worst_ratio,runs_verified,runs_wrong,status,note\n";

static void csv_group(const struct pgroup *g) {
    double incore = rate_of(g, P_INCORE);
    for (int k = 0; k < P_NROWS; k++) {
        const struct row *r = &g->rows[k];
        fprintf(csv, "%c,%lld,potrf,%c,%s,%d,", prec_char(g->dt), (long long)g->n, g->uplo, r->name,
                r->reps);
        if (r->status == ROW_OK) {
            fprintf(csv, "%.6f,%.6f,%.6f,%.4f,", r->med, r->tmin, r->tmax, r->rate);
            if (incore > 0) fprintf(csv, "%.4f", r->rate / incore);
            fputc(',', csv);
        } else {
            fprintf(csv, ",,,,,");
        }
        csv_bytes_check(csv, r);
        fprintf(csv, "%s,",
                r->status == ROW_OK        ? "ok"
                : r->status == ROW_SKIPPED ? "skipped"
                                           : "failed");
        csv_str(csv, r->note);
        fputc('\n', csv);
    }
    fflush(csv);
}

static void add_summary(const struct pgroup *g) {
    if (nsumm == MAX_PSUMM) return;
    struct psumm *s = &summ[nsumm++];
    int wrong = 0, verified = 0, failed = 0;
    char who[48] = "";
    s->dt = g->dt, s->uplo = g->uplo, s->n = g->n;
    for (int k = 0; k < P_NROWS; k++) {
        const struct row *r = &g->rows[k];
        s->rate[k] = rate_of(g, k);
        verified += r->nver > 0, failed += r->status == ROW_FAILED;
        if (r->wrong) {
            size_t len = strlen(who);
            snprintf(who + len, sizeof who - len, "%s%s", len ? "," : "", r->name);
            wrong++;
        }
    }
    if (wrong)
        snprintf(s->check, sizeof s->check, "FAIL: %s", who);
    else if (o.verify == V_NONE)
        snprintf(s->check, sizeof s->check, "not verified");
    else
        snprintf(s->check, sizeof s->check, "ok (%d row(s) verified%s)", verified,
                 failed ? ", some failed" : "");
}

static void print_summary(void) {
    char c[4][32];
    printf("\n== potrf summary: TFLOP/s of the median run; tessera / in-core cuSOLVER (%s) ==\n",
           gpu_name());
    printf("| routine | uplo | n | in-core | tessera | CPU LAPACK | tessera / in-core | check |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nsumm; i++) {
        const struct psumm *s = &summ[i];
        for (int k = 0; k < P_NROWS; k++)
            snprintf(c[k], sizeof c[k], s->rate[k] > 0 ? "%.2f" : "-", s->rate[k]);
        ratio(c[3], sizeof c[3], s->rate[P_TESS], s->rate[P_INCORE]);
        printf("| %cpotrf | %c | %lld | %s | **%s** | %s | %s | %s |\n", prec_char(s->dt), s->uplo,
               (long long)s->n, c[P_INCORE], c[P_TESS], c[P_CPU], c[3], s->check);
    }
    fflush(stdout);
}

/* ---- one precision and size ------------------------------------------------------------------ */

static void run_group(tess_dtype_t dt, int64_t n) {
    struct pgroup *g = calloc(1, sizeof *g);
    if (!g) {
        fail_msg("calloc", "out of host memory", __FILE__, __LINE__);
        n_errors++;
        return;
    }
    g->dt = dt, g->uplo = o.uplo, g->n = n, g->es = esize(dt);
    g->bytes = (size_t)n * (size_t)n * g->es;
    g->flops = (is_complex(dt) ? 4.0 : 1.0) * (double)n * (double)n * (double)n / 3.0;
    row_init(&g->rows[P_INCORE], K_INCORE, 0, n, "in-core");
    row_init(&g->rows[P_TESS], K_TESS, 0, n, "tessera");
    row_init(
        &g->rows[P_CPU], K_CPU, 0, n,
        strstr(getenv("TESSERA_CPU_BLAS") ? getenv("TESSERA_CPU_BLAS") : "openblas", "openblas")
            ? "openblas"
            : "cpu");
    fprintf(stderr, "%cpotrf n = %lld (%.0f s elapsed)\n", prec_char(dt), (long long)n, elapsed());
    double avail = mem_available();
    if (avail > 0 && 2.0 * (double)g->bytes > 0.9 * avail) {
        printf("\n%cpotrf n = %lld: not run: needs 2 x %.1f GB of host memory, %.1f GB available\n",
               prec_char(dt), (long long)n, g->bytes * 1e-9, avail * 1e-9);
        n_errors++;
        free(g);
        return;
    }
    double t0 = now();
    g->A0 = tess_malloc_host(g->bytes), g->W = tess_malloc_host(g->bytes);
    if (!g->A0 || !g->W) {
        printf("\n%cpotrf n = %lld: not run: tess_malloc_host of 2 x %.1f GB failed\n",
               prec_char(dt), (long long)n, g->bytes * 1e-9);
        n_errors++;
        goto out;
    }
    g->pinned = is_pinned(g->A0) && is_pinned(g->W);
    struct colctx x = {.g = g};
    par_for(col_items(n), hpd_item, &x);
    fprintf(stderr, "  A0: 2 x %.2f GB (%s), filled in %.1f s\n", g->bytes * 1e-9,
            g->pinned ? "pinned" : "NOT page-locked", now() - t0);
    row_incore(g); /* before tess_init: the runtime takes nearly all device memory */
    row_cpu(g);
    row_tess(g);
    if (!g->pinned)
        for (int k = P_TESS; k < P_NROWS; k++) note(&g->rows[k], "host matrix NOT page-locked");
    print_group(g);
    if (csv) csv_group(g);
    add_summary(g);
out:
    tess_free_host(g->A0), tess_free_host(g->W);
    free(g);
}

int bench_potrf(void) {
    int vers = 0;
    (void)cusolverGetVersion(&vers);
    printf("\npotrf: uplo %c; in-core: cusolverDnXpotrf (cuSOLVER %d.%d.%d, runtime %d) on "
           "%s; tessera: tess_?potrf on pinned host memory; CPU LAPACK (%s ?potrf_) for n <= "
           "%d%s; check on %s\n",
           o.uplo, CUSOLVER_VER_MAJOR, CUSOLVER_VER_MINOR, CUSOLVER_VER_PATCH, vers, gpu_name(),
           getenv("TESSERA_CPU_BLAS") ? getenv("TESSERA_CPU_BLAS") : "libopenblas.so.0",
           CPU_ROW_MAX_N, o.cpu_lapack ? " (and above: --cpu-lapack)" : "",
           o.ndev > 0 ? "the GPU" : "the host (no GPU)");
    fflush(stdout);
    if (o.csv) {
        char path[1024];
        /* with level-3 routines too, theirs is o.csv: potrf's rows (other columns) go beside */
        snprintf(path, sizeof path, o.routines ? "%s.potrf.csv" : "%s", o.csv);
        if (!(csv = fopen(path, "w"))) {
            perror(path);
            return 2;
        }
        if (o.routines) fprintf(stderr, "tessera-bench: potrf rows go to %s\n", path);
        fputs(csv_header, csv);
    }
    if (o.ndev > 0 && o.verify != V_NONE) {
        last_err[0] = 0;
        if (CU(cudaSetDevice(o.dev[0])) || CB(cublasCreate(&gv.h)) ||
            CU(cudaStreamCreateWithFlags(&gv.st, cudaStreamNonBlocking)) ||
            CB(cublasSetStream(gv.h, gv.st))) {
            fprintf(stderr, "tessera-bench: the GPU check cannot start: %s\n", last_err);
            n_errors++;
            if (csv) fclose(csv);
            return 3;
        }
        gv.on = 1;
    }
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++) run_group(o.precs[p], o.sizes[i]);
    if (gv.on) {
        (void)CB(cublasDestroy(gv.h));
        (void)CU(cudaStreamDestroy(gv.st));
        gv.on = 0;
    }
    if (csv) fclose(csv), csv = NULL;
    print_summary();
    printf("\n%.0f s in all; %d wrong result(s), %d row(s) failed%s\n", elapsed(), n_wrong,
           n_errors, out_of_time ? ", some rows skipped by --time-limit" : "");
    /* the last line: the ratio of each case */
    printf("potrf tessera / in-core:");
    for (int i = 0; i < nsumm; i++) {
        char rat[16];
        ratio(rat, sizeof rat, summ[i].rate[P_TESS], summ[i].rate[P_INCORE]);
        printf("%s %cpotrf n = %lld %s", i ? ";" : "", prec_char(summ[i].dt), (long long)summ[i].n,
               rat);
    }
    printf("%s\n", nsumm ? "" : " -");
    return n_wrong ? 1 : n_errors ? 3 : 0;
}
