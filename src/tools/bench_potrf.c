/* src/tools/bench_potrf.c: tessera-bench --routine potrf (issue 24), the Cholesky factorization
 * as a routine of the generic factorization bench (bench_factor.h): tess_?potrf against in-core
 * cuSOLVER (cusolverDnXpotrf, the matrix already on the first GPU) and the CPU LAPACK ?potrf_.
 * Owns potrf's hooks: the random Hermitian positive definite operand, the three calls, the check
 * of each run (||A0 - L L^H||_F / (||A0||_F n u) on the GPU by column blocks, on the host without
 * a GPU; the diagonal; tessera: the other triangle untouched) and its notes. Nothing here reaches
 * inside the library. A0: random Hermitian entries in [-0.5, 0.5] plus n on the real diagonal,
 * so positive definite. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_factor.h"
#include "tessera.h"

/* pass: ||A0 - F||_F / (||A0||_F n u) <= this. A backward-stable factor of this A0 (|L| |L^H|
 * about |A0|) gives at most about 2 (gamma_{n+1} for the factorization, gamma_n for the check's
 * own GEMMs in the working precision); seen 1e-4 to 2e-2 */
#define POTRF_BOUND 10.0
#define HPD_SEED 0x243f6a8885a308d3ull

enum { C_DIAG_IMAG, C_DIAG_BAD, C_OTHER_BAD }; /* frunner.cnt */

/* ---- the operand ----------------------------------------------------------------------------- */

/* A0(i, j) from the hash of (max, min), conjugated above; n added on the diagonal */
static void hpd_entry(const struct fgroup *g, int64_t i, int64_t j, double *re, double *im) {
    uint64_t r = (uint64_t)(i > j ? i : j), s = (uint64_t)(i > j ? j : i);
    uint64_t h = mix64(HPD_SEED ^ mix64(r << 32 | s));
    *re = half_unit(h) + (i == j ? (double)g->n : 0);
    *im = is_complex(g->dt) && i != j ? (i < j ? -1 : 1) * half_unit(mix64(h)) : 0;
}

/* tessera's contract: the strict other triangle of W is A0's, byte for byte */
static void other_item(void *c, int q) {
    const struct colctx *x = c;
    const struct fgroup *g = x->g;
    int64_t n = g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    for (int64_t j = j0; j < j1 && !x->bad[q]; j++) {
        size_t at = (size_t)j * (size_t)n + (g->uplo == 'L' ? 0 : (size_t)j + 1);
        size_t len = g->uplo == 'L' ? (size_t)j : (size_t)(n - j - 1);
        if (memcmp(g->W + at * g->es, g->A0 + at * g->es, len * g->es)) x->bad[q] = 1;
    }
}
static int other_changed(const struct fgroup *g) {
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

/* ||A0 - L L^H||_F / (||A0||_F n u) (uplo U: A0 - U^H U) over the triangle uplo, on o.dev[0],
 * for the factor F on the device (dF, ld n: its strict other triangle is zeroed here, it is
 * read in place) or on the host (hF, ld n: streamed by panels of w columns, uplo U rows). Lower:
 * for each column block [b0, b1) (w wide), S = A0[b0:n, b0:b1] minus L[b0:n, k] L[b0:b1, k]^H
 * summed over the panels k of [0, b1) (the last one's part above the diagonal zeroed), then the
 * strict upper part of S's top square zeroed and ||S||_F taken; upper the same transposed.
 * Device memory: S (and the panel P) of n x w each, w as gcheck_width allows. 0, or -1
 * (last_err). */
static int gpu_residual(const struct fgroup *g, char *dF, const char *hF, struct fcheck *c) {
    tess_dtype_t dt = g->dt;
    int64_t n = g->n, w;
    size_t es = g->es;
    char *S = NULL, *P = NULL;
    int lower = g->uplo == 'L', rc = -1, nbuf = dF ? 1 : 2;
    char other = lower ? 'U' : 'L';
    const cublasOperation_t H = is_complex(dt) ? CUBLAS_OP_C : CUBLAS_OP_T, N = CUBLAS_OP_N;
    const enum cudaMemcpyKind h2d = cudaMemcpyHostToDevice;
    double a2 = 0, r2 = 0;
    if (gcheck_width(g, nbuf, &w)) return -1;
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
    if (gcheck_done(g, a2, r2, w, dF != NULL, c)) goto out;
    rc = 0;
out:
    if (rc) (void)cudaStreamSynchronize(gv.st);
    if (S) (void)CU(cudaFree(S));
    if (P) (void)CU(cudaFree(P));
    return rc;
}

/* Without a GPU: the same residual on the host in double, column j (host_ratio) */
static void hres_col(const struct colctx *x, int64_t j, double *acc) {
    const struct fgroup *g = x->g;
    const char *F = x->F;
    tess_dtype_t dt = g->dt;
    int64_t n = g->n;
    double r2 = 0, a2 = 0, ar, ai, fr, fi, cr, ci;
#define AT(i, j) ((size_t)(i) + (size_t)(j) * (size_t)n)
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
                acc[2 * (i - j)] -= fr * cr - fi * ci, acc[2 * (i - j) + 1] -= fr * ci + fi * cr;
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
#undef AT
    x->r2[j] = r2, x->a2[j] = a2;
}

/* The factor's diagonal: 0 real and positive, 1 positive real parts but an imaginary part
 * nonzero (LAPACK leaves them 0), 2 a real part not > 0 or NaN; -1 a CUDA failure. */
static int diag_check(const struct fgroup *g, const char *dF, const char *hF) {
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

static int potrf_check(struct frunner *p, char *dF, const char *hF, struct fcheck *c) {
    const struct fgroup *g = p->g;
    int rc = gv.on ? gpu_residual(g, dF, hF, c) : host_ratio(g, hF, NULL, hres_col, c);
    int diag = rc ? -1 : diag_check(g, dF, hF);
    int other = diag < 0 || p->which != F_TESS ? 0 : other_changed(g);
    if (rc || diag < 0 || other < 0) return -1;
    /* the diagonal and the other triangle are the contract for tessera, notes for the others */
    c->bad = diag == 2 || (p->which == F_TESS && (diag || other));
    p->cnt[C_DIAG_IMAG] += diag == 1, p->cnt[C_DIAG_BAD] += diag == 2;
    p->cnt[C_OTHER_BAD] += other;
    snprintf(c->extra, sizeof c->extra, "%s%s%s", diag == 2 ? ", diagonal NOT positive" : "",
             diag == 1 ? ", diagonal imaginary part != 0" : "",
             other ? ", other triangle CHANGED" : "");
    return 0;
}

static void potrf_notes(struct frunner *p, struct row *row) {
    if (p->cnt[C_DIAG_BAD])
        note(row, "a diagonal entry not positive in %d run(s)", p->cnt[C_DIAG_BAD]);
    if (p->cnt[C_DIAG_IMAG])
        note(row, "nonzero imaginary parts on the diagonal in %d run(s) (LAPACK leaves 0)",
             p->cnt[C_DIAG_IMAG]);
    if (p->cnt[C_OTHER_BAD])
        note(row, "the other triangle changed in %d run(s)", p->cnt[C_OTHER_BAD]);
}

/* ---- the calls ------------------------------------------------------------------------------- */

static cublasFillMode_t fill_mode(char uplo) {
    return uplo == 'L' ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
}

static int potrf_incore_size(struct frunner *p, cudaDataType t) {
    const struct fgroup *g = p->g;
    return CS(cusolverDnXpotrf_bufferSize(p->sh, p->sp, fill_mode(g->uplo), g->n, t, p->dA, g->n, t,
                                          &p->dws, &p->hws));
}

static int potrf_incore_call(struct frunner *p, cudaDataType t) {
    const struct fgroup *g = p->g;
    return CS(cusolverDnXpotrf(p->sh, p->sp, fill_mode(g->uplo), g->n, t, p->dA, g->n, t, p->dwork,
                               p->dws, p->hwork, p->hws, p->dinfo));
}

static int potrf_tess_call(struct frunner *p, int64_t *info) {
    const struct fgroup *g = p->g;
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

/* the CPU LAPACK's Fortran ?potrf_ (LP64 integers; the trailing length of uplo for gfortran) */
typedef void lapack_potrf_t(const char *uplo, const int *n, void *A, const int *lda, int *info,
                            size_t uplo_len);
static void potrf_cpu_call(struct frunner *p, void *fn, int *info) {
    lapack_potrf_t *potrf;
    int n = (int)p->g->n;
    memcpy(&potrf, &fn, sizeof potrf);
    potrf(&p->g->uplo, &n, p->g->W, &n, info, 1);
}

const struct factor factor_potrf = {
    .name = "potrf",
    .incore = "cusolverDnXpotrf",
    .resid = {"||A0 - L L^H||_F", "||A0 - U^H U||_F"},
    .bound = POTRF_BOUND,
    .flop_coef = 1.0 / 3.0,
    .uplo = 1,
    .cpu_sym = {"spotrf_", "dpotrf_", "cpotrf_", "zpotrf_"},
    .entry = hpd_entry,
    .incore_size = potrf_incore_size,
    .incore_call = potrf_incore_call,
    .tess_call = potrf_tess_call,
    .cpu_call = potrf_cpu_call,
    .check = potrf_check,
    .notes = potrf_notes,
};
