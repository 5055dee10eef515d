/* src/tools/bench_getrf.c: tessera-bench --routine getrf, the LU factorization with partial
 * pivoting as a routine of the generic factorization bench (bench_factor.h): tess_getrf against
 * in-core cuSOLVER (cusolverDnXgetrf, 64-bit API, the matrix and the int64 pivots on the first
 * GPU) and the CPU LAPACK ?getrf_. Owns getrf's hooks: the random general operand, the three
 * calls, the check of each run (the pivots LAPACK's: i <= ipiv(i) <= n; ||P^T A0 - L U||_F /
 * (||A0||_F n u) on the GPU by column blocks, on the host without a GPU) and the comparison of
 * each row's pivots with the reference row's (informational). Nothing here reaches inside the
 * library. A0: entries (real and imaginary parts) uniform in [-0.5, 0.5) from a hash of (i, j),
 * the same for every row and run. */
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

/* pass: ||P^T A0 - L U||_F / (||A0||_F n u) <= this. LU with partial pivoting is backward
 * stable in practice: |P^T A0 - L U| <= gamma_n |L| |U| (Higham, Thm 9.3), |L| <= 1, and the
 * growth in U of a random matrix is small, so the ratio stays below 1 (the check's own GEMMs
 * in the working precision add about as much again); seen 5e-2 to 1.4e-1, flat in n (s, d, c,
 * z, n 50 to 2000, the reference LAPACK and tessera alike). One entry of L or U off by a
 * relative 1e-5, or one pivot changed, gives 1e6 to 1e12 (n 300). */
#define GETRF_BOUND 10.0
#define GE_SEED 0x13198a2e03707344ull

enum { C_PIV_RANGE }; /* frunner.cnt */

/* A0(i, j) from the hash of (i, j) */
static void ge_entry(const struct fgroup *g, int64_t i, int64_t j, double *re, double *im) {
    uint64_t h = mix64(GE_SEED ^ mix64((uint64_t)i << 32 | (uint64_t)j));
    *re = half_unit(h), *im = is_complex(g->dt) ? half_unit(mix64(h)) : 0;
}

/* ---- the check ------------------------------------------------------------------------------- */

/* Without a GPU, in double, column j (host_ratio): (P^T A0)(i, j) = A0(perm[i], j) minus
 * sum_{k <= j} L(i, k) U(k, j), L(k, k) = 1 */
static void lu_res_col(const struct colctx *x, int64_t j, double *acc) {
    const struct fgroup *g = x->g;
    tess_dtype_t dt = g->dt;
    int64_t n = g->n;
    size_t col = (size_t)j * (size_t)n;
    double r2 = 0, a2 = 0, re, im, ur, ui;
    for (int64_t i = 0; i < n; i++) {
        get_el(dt, g->A0, (size_t)x->perm[i] + col, &re, &im);
        acc[2 * i] = re, acc[2 * i + 1] = im, a2 += re * re + im * im;
    }
    for (int64_t k = 0; k <= j; k++) {
        get_el(dt, x->F, (size_t)k + col, &ur, &ui); /* U(k, j) */
        acc[2 * k] -= ur, acc[2 * k + 1] -= ui;
        for (int64_t i = k + 1; i < n; i++) {
            get_el(dt, x->F, (size_t)i + (size_t)k * (size_t)n, &re, &im); /* L(i, k) */
            acc[2 * i] -= re * ur - im * ui, acc[2 * i + 1] -= re * ui + im * ur;
        }
    }
    for (int64_t i = 0; i < 2 * n; i++) r2 += acc[i] * acc[i];
    x->r2[j] = r2, x->a2[j] = a2;
}

/* cusolverDn<t>laswp on gv: rows i and piv[i] - 1 (i = 0 .. n - 1, in order) of the n x bw S
 * (ld n) interchanged; piv: 32-bit, on the device */
static int laswp(tess_dtype_t dt, char *S, int n, int bw, const int *piv) {
    switch (dt) {
    case TESS_S: return CS(cusolverDnSlaswp(gv.sh, bw, (float *)S, n, 1, n, piv, 1));
    case TESS_D: return CS(cusolverDnDlaswp(gv.sh, bw, (double *)S, n, 1, n, piv, 1));
    case TESS_C: return CS(cusolverDnClaswp(gv.sh, bw, (cuComplex *)S, n, 1, n, piv, 1));
    case TESS_Z: return CS(cusolverDnZlaswp(gv.sh, bw, (cuDoubleComplex *)S, n, 1, n, piv, 1));
    }
    return -1;
}

/* ||P^T A0 - L U||_F / (||A0||_F n u) on o.dev[0], for the factor F on the device (dF, read
 * only) or the host (hF), ld n, and the pivots piv (1..n). For each column block J = [b0, b1)
 * (w wide): S = A0[:, J] with the interchanges applied (cusolverDn<t>laswp, the pivots as 32-bit
 * ints on the device), its norm taken; U = F[0:b1, J], the strict lower part of its bottom
 * square zeroed; for each panel K = [k0, k1) of [0, b1) (w wide): P = F[k0:n, K], the strict
 * upper part of its top square zeroed and its diagonal 1 (so L[k0:n, K]), and S[k0:n, :] -= P
 * U[K, :]; then ||S||_F. Device memory: S, U and P of n x w each, the pivots, w ones. 0, or -1
 * (last_err). */
static int gpu_lu_residual(const struct fgroup *g, const char *dF, const char *hF,
                           const int64_t *piv, struct fcheck *c) {
    tess_dtype_t dt = g->dt;
    int64_t n = g->n, w;
    size_t es = g->es, ld = (size_t)n * es;
    char *S = NULL, *U = NULL, *P = NULL, *ones = NULL, *hones = NULL;
    int *dpiv = NULL, *hpiv = NULL, rc = -1;
    const char *F = dF ? dF : hF;
    const enum cudaMemcpyKind fkind = dF ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    const enum cudaMemcpyKind h2d = cudaMemcpyHostToDevice, d2d = cudaMemcpyDeviceToDevice;
    double a2 = 0, r2 = 0;
    if (gcheck_width(g, 3, &w)) return -1;
    if (!(hpiv = malloc((size_t)n * sizeof *hpiv)) || !(hones = calloc((size_t)w, es))) {
        fail_msg("gpu_lu_residual", "out of host memory", __FILE__, __LINE__);
        goto out;
    }
    for (int64_t i = 0; i < n; i++) hpiv[i] = (int)piv[i];
    for (int64_t i = 0; i < w; i++) put_el(dt, hones, (size_t)i, 1, 0);
    if (CU(cudaMalloc((void **)&S, (size_t)w * ld)) ||
        CU(cudaMalloc((void **)&U, (size_t)w * ld)) ||
        CU(cudaMalloc((void **)&P, (size_t)w * ld)) ||
        CU(cudaMalloc((void **)&ones, (size_t)w * es)) ||
        CU(cudaMalloc((void **)&dpiv, (size_t)n * sizeof *dpiv)) ||
        CU(cudaMemcpyAsync(dpiv, hpiv, (size_t)n * sizeof *dpiv, h2d, gv.st)) ||
        CU(cudaMemcpyAsync(ones, hones, (size_t)w * es, h2d, gv.st)))
        goto out;
    for (int64_t b0 = 0; b0 < n; b0 += w) {
        int64_t b1 = min64(n, b0 + w), bw = b1 - b0;
        if (CU(cudaMemcpyAsync(S, g->A0 + (size_t)b0 * ld, (size_t)bw * ld, h2d, gv.st)) ||
            laswp(dt, S, (int)n, (int)bw, dpiv) || nrm2sq(dt, S, n * bw, &a2) ||
            CU(cudaMemcpy2DAsync(U, (size_t)b1 * es, F + (size_t)b0 * ld, ld, (size_t)b1 * es,
                                 (size_t)bw, fkind, gv.st)) ||
            zero_tri(U + (size_t)b0 * es, b1, bw, 'L', es))
            goto out;
        for (int64_t k0 = 0; k0 < b1; k0 += w) {
            int64_t kc = min64(w, b1 - k0), m = n - k0;
            if (CU(cudaMemcpy2DAsync(P, (size_t)m * es, F + (size_t)k0 * (ld + es), ld,
                                     (size_t)m * es, (size_t)kc, fkind, gv.st)) ||
                zero_tri(P, m, kc, 'U', es) ||
                CU(cudaMemcpy2DAsync(P, (size_t)(m + 1) * es, ones, es, es, (size_t)kc, d2d,
                                     gv.st)) ||
                CB(gemm_sub(dt, CUBLAS_OP_N, CUBLAS_OP_N, m, bw, kc, P, m, U + (size_t)k0 * es, b1,
                            S + (size_t)k0 * es, n)))
                goto out;
        }
        if (nrm2sq(dt, S, n * bw, &r2)) goto out;
    }
    if (gcheck_done(g, a2, r2, w, 0, c)) goto out;
    rc = 0;
out:
    if (rc) (void)cudaStreamSynchronize(gv.st);
    if (S) (void)CU(cudaFree(S));
    if (U) (void)CU(cudaFree(U));
    if (P) (void)CU(cudaFree(P));
    if (ones) (void)CU(cudaFree(ones));
    if (dpiv) (void)CU(cudaFree(dpiv));
    free(hpiv), free(hones);
    return rc;
}

/* The pivots LAPACK's (i <= piv[i - 1] <= n, 1-based), then the residual; then the pivots
 * against the reference row's: the first row checked is the reference (in-core, else the CPU),
 * the others count the entries that differ. */
static int getrf_check(struct frunner *p, char *dF, const char *hF, struct fcheck *c) {
    struct fgroup *g = p->g;
    int64_t n = g->n, *perm = NULL;
    for (int64_t i = 0; i < n; i++)
        if (p->piv[i] < i + 1 || p->piv[i] > n) {
            p->cnt[C_PIV_RANGE]++, c->bad = 1;
            snprintf(c->extra, sizeof c->extra, ", ipiv[%lld] = %lld NOT in %lld..%lld",
                     (long long)i, (long long)p->piv[i], (long long)i + 1, (long long)n);
            snprintf(c->how, sizeof c->how, "not computed");
            return 0;
        }
    if (gv.on) {
        if (gpu_lu_residual(g, dF, hF, p->piv, c)) return -1;
    } else {
        if (!(perm = malloc((size_t)n * sizeof *perm)))
            return fail_msg("getrf_check", "out of host memory", __FILE__, __LINE__);
        for (int64_t i = 0; i < n; i++) perm[i] = i;
        for (int64_t i = 0; i < n; i++) { /* LAPACK's interchanges, in order */
            int64_t t = perm[i];
            perm[i] = perm[p->piv[i] - 1], perm[p->piv[i] - 1] = t;
        }
        int rc = host_ratio(g, hF, perm, lu_res_col, c);
        free(perm);
        if (rc) return -1;
    }
    if (g->ref_row < 0 || g->ref_row == p->which) {
        memcpy(g->piv_ref, p->piv, (size_t)n * sizeof *p->piv);
        g->ref_row = p->which;
        return 0;
    }
    int64_t diff = 0;
    for (int64_t i = 0; i < n; i++) diff += p->piv[i] != g->piv_ref[i];
    if (diff > g->piv_diff[p->which]) g->piv_diff[p->which] = diff;
    snprintf(c->extra, sizeof c->extra, ", pivots: %lld differ from %s's", (long long)diff,
             g->rows[g->ref_row].name);
    return 0;
}

static void getrf_notes(struct frunner *p, struct row *row) {
    const struct fgroup *g = p->g;
    if (p->cnt[C_PIV_RANGE])
        note(row, "pivots outside LAPACK's i..n in %d run(s)", p->cnt[C_PIV_RANGE]);
    if (g->piv_diff[p->which] > 0)
        note(row, "pivots: up to %lld of %lld differ from %s's (informational)",
             (long long)g->piv_diff[p->which], (long long)g->n, g->rows[g->ref_row].name);
    else if (g->piv_diff[p->which] == 0)
        note(row, "pivots: the same as %s's in every run checked", g->rows[g->ref_row].name);
}

/* ---- the calls ------------------------------------------------------------------------------- */

static int getrf_incore_size(struct frunner *p, cudaDataType t) {
    const struct fgroup *g = p->g;
    return CS(
        cusolverDnXgetrf_bufferSize(p->sh, p->sp, g->n, g->n, t, p->dA, g->n, t, &p->dws, &p->hws));
}

static int getrf_incore_call(struct frunner *p, cudaDataType t) {
    const struct fgroup *g = p->g;
    return CS(cusolverDnXgetrf(p->sh, p->sp, g->n, g->n, t, p->dA, g->n, p->dpiv, t, p->dwork,
                               p->dws, p->hwork, p->hws, p->dinfo));
}

static int getrf_tess_call(struct frunner *p, int64_t *info) {
    const struct fgroup *g = p->g;
    return TS(tess_getrf(g->dt, TESS_COL_MAJOR, g->n, g->n, g->W, g->n, p->piv, info));
}

/* the CPU LAPACK's Fortran ?getrf_ (LP64 integers) */
typedef void lapack_getrf_t(const int *m, const int *n, void *A, const int *lda, int *ipiv,
                            int *info);
static void getrf_cpu_call(struct frunner *p, void *fn, int *info) {
    lapack_getrf_t *getrf;
    int n = (int)p->g->n;
    memcpy(&getrf, &fn, sizeof getrf);
    getrf(&n, &n, p->g->W, &n, p->cpiv, info);
}

const struct factor factor_getrf = {
    .name = "getrf",
    .incore = "cusolverDnXgetrf",
    .resid = {"||P^T A0 - L U||_F", "||P^T A0 - L U||_F"},
    .bound = GETRF_BOUND,
    .flop_coef = 2.0 / 3.0,
    .pivots = 1,
    .cpu_sym = {"sgetrf_", "dgetrf_", "cgetrf_", "zgetrf_"},
    .entry = ge_entry,
    .incore_size = getrf_incore_size,
    .incore_call = getrf_incore_call,
    .tess_call = getrf_tess_call,
    .cpu_call = getrf_cpu_call,
    .check = getrf_check,
    .notes = getrf_notes,
};
