/* src/tools/bench_seq.c: tessera-bench --sequence (issue 23): sequences of GEMMs on the same
 * host data rather than one call, where keeping data on the devices between calls (held
 * data, tess_hold) should pay.
 *   update: C n x n, A n x nb, B nb x n (pinned, random); for j = nb, 2 nb, ... < n the call
 *     C[j:, j:] -= A[j:, :] B[:, j:] (alpha -1, beta 1): a right-looking factorization's
 *     trailing updates, (n - 1) / nb calls.
 *   small: C, A, B n x n (n 1024 unless -n), --calls times C = A B + C.
 * Rows: in-core cuBLAS on o.dev[0] (operands uploaded before the clock, the calls on one
 * stream, cudaDeviceSynchronize after the last: the baseline), tessera stateless (update
 * only: tess_gemm on the host arrays), tessera held (update: tess_hold(C), and a second row
 * with C, A and B held, before the clock, the calls and tess_sync(C) timed, tess_release
 * after; small: C, A, B held for the whole row, each timed loop ending with tess_sync(C)). A
 * GEMM whose A, B and C are all held returns once queued: the held rows also report the
 * host time of the call loop alone. Each row: one warm-up sequence from C0,
 * checked, then --reps timed sequences (C is not restored between them: the timing does not
 * depend on the values), the median reported.
 * The check (--verify all or ends: the warm-up; none: nothing): the probe oracle (oracle.h) on
 * the whole result, C = C0 + alpha (M o A B) with M the number of calls that wrote each entry
 * (update: min(i / nb, l / nb) for entry (i, l); small: --calls), E t formed as C0 t + alpha
 * sum over row and column blocks of M_IJ A_I: (B_:J t_J) in long double; any path from an
 * input to an entry meets at most k + max(M) + 4 roundings (the dot product, then one
 * subtraction per call), so the bound is oracle.h's with K = k + max(M) and T = |C0| |t| +
 * M o |A| |B| |t|. Tessera's results are also compared with the in-core result entry by
 * entry: |C - C_ref| <= 2 gamma_N (max|C0| + max(M) k max|A| max|B|) (both carry the error).
 * In-core runs before tess_init (the runtime takes nearly all device memory). */
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

typedef long double LD;

/* ---- the problem ---------------------------------------------------------------------------- */

struct seq {
    tess_dtype_t dt;
    size_t es;
    int update;          /* 1: the update sequence, 0: small */
    int64_t n, k, nb;    /* C n x n; A n x k (ld n), B k x n (ld k); update: k = nb */
    int64_t ncalls;      /* calls per sequence */
    int64_t maxmult;     /* most calls writing one entry */
    double al[2], be[2]; /* scalars of dt (float or double, re then im) */
    double flops;        /* per sequence */
    char *A, *B, *C;     /* tess_malloc_host */
    int pinned;
    char *Cref; /* the in-core result after the warm-up (malloc), or NULL */
    /* the check: probe t, E t and T (e, eabs), the result's R t (y, yabs) */
    LD *t, *tabs, *e, *eabs, *y, *yabs;
    struct oracle_bound bound;
    LD cmp_bound; /* of |C - C_ref| entry by entry */
};

struct call {
    int64_t m, n, k;
    size_t a, b, c; /* offsets in elements */
};

/* call i (0-based) of the sequence */
static struct call seq_call(const struct seq *s, int64_t i) {
    if (!s->update) return (struct call){s->n, s->n, s->k, 0, 0, 0};
    int64_t j = (i + 1) * s->nb;
    return (struct call){s->n - j,  s->n - j,           s->nb,
                         (size_t)j, (size_t)(j * s->k), (size_t)(j + j * s->n)};
}

static void set_scalar(tess_dtype_t dt, double *s, double re) {
    memset(s, 0, 2 * sizeof(double));
    if (dt == TESS_S || dt == TESS_C)
        ((float *)s)[0] = (float)re;
    else
        s[0] = re;
}

static cublasStatus_t cublas_gemm_mnk(cublasHandle_t h, tess_dtype_t dt, int64_t m, int64_t n,
                                      int64_t k, const void *al, const void *A, int64_t lda,
                                      const void *B, int64_t ldb, const void *be, void *C,
                                      int64_t ldc) {
    const cublasOperation_t N = CUBLAS_OP_N;
#if CUBLAS_VER_MAJOR >= 12 /* 64-bit dimensions and leading dimensions */
    switch (dt) {
    case TESS_S: return cublasSgemm_64(h, N, N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    case TESS_D: return cublasDgemm_64(h, N, N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    case TESS_C: return cublasCgemm_64(h, N, N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    case TESS_Z: return cublasZgemm_64(h, N, N, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    }
#else
    int im = (int)m, in = (int)n, ik = (int)k, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
    switch (dt) {
    case TESS_S: return cublasSgemm(h, N, N, im, in, ik, al, A, ia, B, ib, be, C, ic);
    case TESS_D: return cublasDgemm(h, N, N, im, in, ik, al, A, ia, B, ib, be, C, ic);
    case TESS_C: return cublasCgemm(h, N, N, im, in, ik, al, A, ia, B, ib, be, C, ic);
    case TESS_Z: return cublasZgemm(h, N, N, im, in, ik, al, A, ia, B, ib, be, C, ic);
    }
#endif
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- the check ------------------------------------------------------------------------------ */

static LD *lalloc(int64_t n) { return calloc((size_t)n + 1, sizeof(LD)); }

/* max |x| (|re| + |im|) over the rows x cols matrix x (ld) */
struct maxctx {
    tess_dtype_t dt;
    const char *x, *y; /* y: max |x - y| instead when not NULL */
    int64_t rows, cols, ld;
    int nch;
    double *part;
};

static void max_chunk(void *c, int ch) {
    struct maxctx *m = c;
    int64_t c0 = m->cols * ch / m->nch, c1 = m->cols * (ch + 1) / m->nch;
    int f = is_complex(m->dt) ? 2 : 1, sgl = m->dt == TESS_S || m->dt == TESS_C;
    double w = 0;
    for (int64_t j = c0; j < c1; j++)
        for (int64_t i = 0; i < m->rows; i++) {
            size_t at = ((size_t)i + (size_t)j * (size_t)m->ld) * (size_t)f;
            double a = 0;
            for (int q = 0; q < f; q++) {
                double v = sgl ? ((const float *)m->x)[at + q] : ((const double *)m->x)[at + q];
                if (m->y) v -= sgl ? ((const float *)m->y)[at + q] : ((const double *)m->y)[at + q];
                a += fabs(v);
            }
            if (isnan(a)) {
                m->part[ch] = NAN;
                return;
            }
            if (a > w) w = a;
        }
    m->part[ch] = w;
}

static double max_abs(tess_dtype_t dt, const void *x, const void *y, int64_t rows, int64_t cols,
                      int64_t ld) {
    double part[MAX_THREADS * 4];
    struct maxctx m = {dt, x, y, rows, cols, ld, o.threads * 4, part};
    if (m.nch > cols) m.nch = (int)cols;
    if (m.nch < 1) return 0;
    par_for(m.nch, max_chunk, &m);
    double w = 0;
    for (int i = 0; i < m.nch; i++) {
        if (isnan(part[i])) return NAN;
        if (part[i] > w) w = part[i];
    }
    return w;
}

static int64_t mult_of(const struct seq *s, int64_t I, int64_t J) {
    return s->update ? (I < J ? I : J) : s->ncalls;
}

/* E t and T for C0 (the host C, just filled): see the top of the file. 0, or -1. */
static int expect_begin(struct seq *s) {
    int64_t n = s->n, k = s->k, w = s->update ? s->nb : n, q = (n + w - 1) / w;
    int cplx = is_complex(s->dt);
    LD *W = lalloc(2 * k * q), *Wabs = lalloc(k * q), *u = lalloc(2 * k), *uabs = lalloc(k);
    LD *tmp = lalloc(2 * w), *tmpabs = lalloc(w);
    s->t = lalloc(2 * n), s->tabs = lalloc(n), s->e = lalloc(2 * n), s->eabs = lalloc(n);
    s->y = lalloc(2 * n), s->yabs = lalloc(n);
    int rc = 0;
    if (!W || !Wabs || !u || !uabs || !tmp || !tmpabs || !s->t || !s->tabs || !s->e || !s->eabs ||
        !s->y || !s->yabs) {
        rc = fail_msg("expect_begin", "out of host memory", __FILE__, __LINE__);
        goto out;
    }
    LD tsum = oracle_probe(n, 0, cplx, s->t, s->tabs);
    LD ar, ai;
    oracle_scalar(s->dt, s->al, &ar, &ai);
    oracle_mv(s->dt, o.threads, 1, 'N', OM_FULL, OD_ASIS, n, n, s->C, n, s->t, s->tabs, s->e,
              s->eabs);
    for (int64_t J = 0; J < q; J++) { /* W_J = B_:J t_J */
        int64_t c0 = J * w, c1 = c0 + w < n ? c0 + w : n;
        oracle_mv(s->dt, o.threads, 1, 'N', OM_FULL, OD_ASIS, k, c1 - c0,
                  s->B + (size_t)c0 * (size_t)k * s->es, k, s->t + 2 * c0, s->tabs + c0,
                  W + 2 * k * J, Wabs + k * J);
    }
    for (int64_t I = 0; I < q; I++) { /* e_I += alpha A_I: sum_J M_IJ W_J */
        int64_t r0 = I * w, r1 = r0 + w < n ? r0 + w : n, any = 0;
        memset(u, 0, sizeof(LD) * 2 * (size_t)k), memset(uabs, 0, sizeof(LD) * (size_t)k);
        for (int64_t J = 0; J < q; J++) {
            int64_t m = mult_of(s, I, J);
            if (m) oracle_axpy(u, uabs, (LD)m, 0, W + 2 * k * J, Wabs + k * J, k), any = 1;
        }
        if (!any) continue;
        oracle_mv(s->dt, o.threads, 1, 'N', OM_FULL, OD_ASIS, r1 - r0, k, s->A + (size_t)r0 * s->es,
                  n, u, uabs, tmp, tmpabs);
        oracle_axpy(s->e + 2 * r0, s->eabs + r0, ar, ai, tmp, tmpabs, r1 - r0);
    }
    oracle_bound_init(&s->bound, s->dt, k + s->maxmult, n, tsum);
    /* entry by entry: T_il <= max|C0| + max(M) k max|A| max|B| (|alpha| = 1) */
    LD tmax = (LD)max_abs(s->dt, s->C, NULL, n, n, n) +
              (LD)s->maxmult * (LD)k * (LD)max_abs(s->dt, s->A, NULL, n, k, n) *
                  (LD)max_abs(s->dt, s->B, NULL, k, n, k);
    s->cmp_bound = 2 * (oracle_gamma(s->dt, k + s->maxmult) * tmax + oracle_floor(s->dt, k));
out:
    free(W), free(Wabs), free(u), free(uabs), free(tmp), free(tmpabs);
    return rc;
}

static void expect_end(struct seq *s) {
    free(s->t), free(s->tabs), free(s->e), free(s->eabs), free(s->y), free(s->yabs);
    s->t = s->tabs = s->e = s->eabs = s->y = s->yabs = NULL;
}

/* ---- rows ------------------------------------------------------------------------------------ */

struct srow {
    char name[64];
    int ran, failed;
    double med, tmin, tmax, rate;
    int checked, has_cmp, wrong;
    double probe, cmp; /* worst error/bound of the probe, of the comparison with in-core */
    double launch;     /* in-core: host seconds to enqueue one sequence (median) */
    double submit;     /* tessera held: host seconds of the call loop, before tess_sync */
    char note[300];
};

/* The result R (the host C, or the in-core copy) of one warm-up sequence from C0. */
static void check_row(struct seq *s, struct srow *r, const void *R) {
    if (o.verify == V_NONE) return;
    double t0 = now();
    oracle_mv(s->dt, o.threads, 1, 'N', OM_FULL, OD_ASIS, s->n, s->n, R, s->n, s->t, s->tabs, s->y,
              s->yabs);
    r->checked = 1;
    r->probe = oracle_rows(&s->bound, s->n, s->y, s->yabs, s->e, s->eabs, 0, NULL);
    r->wrong = !(r->probe <= 1.0);
    if (s->Cref && R != s->Cref) {
        r->has_cmp = 1;
        r->cmp = max_abs(s->dt, R, s->Cref, s->n, s->n, s->n) / (double)s->cmp_bound;
        r->wrong |= !(r->cmp <= 1.0);
    }
    if (r->wrong) n_wrong++;
    fprintf(stderr, "    %s: warm-up result %s: probe %.2e", r->name, r->wrong ? "WRONG" : "ok",
            r->probe);
    if (r->has_cmp) fprintf(stderr, ", vs in-core %.2e", r->cmp);
    fprintf(stderr, " (error/bound; check %.1f s)\n", now() - t0);
}

static void finish_row(struct seq *s, struct srow *r, double *times, int reps) {
    r->ran = 1;
    r->med = median_of(times, reps);
    r->tmin = times[0], r->tmax = times[reps - 1];
    r->rate = r->med > 0 ? s->flops / r->med * 1e-12 : 0;
}

static void fail_row(struct srow *r) {
    r->failed = 1;
    snprintf(r->note, sizeof r->note, "%.290s", last_err[0] ? last_err : "failed");
    n_errors++;
}

/* in-core cuBLAS on o.dev[0] */
static void row_incore(struct seq *s, struct srow *r) {
    int dev = o.dev[0];
    size_t fr = 0, tot = 0, nC = (size_t)s->n * (size_t)s->n, nA = (size_t)s->n * (size_t)s->k;
    void *dA = NULL, *dB = NULL, *dC = NULL;
    cublasHandle_t h = NULL;
    double times[MAX_REPS], launch[MAX_REPS];
    char *base;
    snprintf(r->name, sizeof r->name, "in-core cuBLAS (cuda:%d)", dev);
    last_err[0] = 0;
    if (CU(cudaSetDevice(dev)) || CU(cudaMemGetInfo(&fr, &tot))) goto fail;
    if ((double)(nC + 2 * nA) * (double)s->es > 0.9 * (double)fr) {
        snprintf(r->note, sizeof r->note, "skipped: %.1f GB of operands > 90%% of %.1f GB free",
                 (double)(nC + 2 * nA) * (double)s->es * 1e-9, fr * 1e-9);
        fprintf(stderr, "  %s: %s\n", r->name, r->note);
        return;
    }
    if (CU(cudaMalloc(&dA, nA * s->es)) || CU(cudaMalloc(&dB, nA * s->es)) ||
        CU(cudaMalloc(&dC, nC * s->es)) || CB(cublasCreate(&h)) ||
        CU(cudaMemcpy(dA, s->A, nA * s->es, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy(dB, s->B, nA * s->es, cudaMemcpyHostToDevice)) ||
        CU(cudaMemcpy(dC, s->C, nC * s->es, cudaMemcpyHostToDevice)) || CU(cudaDeviceSynchronize()))
        goto fail;
    for (int rep = -1; rep < o.reps; rep++) { /* -1: the warm-up, from C0 */
        double t0 = now(), t1;
        for (int64_t i = 0; i < s->ncalls; i++) {
            struct call c = seq_call(s, i);
            if (CB(cublas_gemm_mnk(h, s->dt, c.m, c.n, c.k, s->al, (char *)dA + c.a * s->es, s->n,
                                   (char *)dB + c.b * s->es, s->k, s->be, (char *)dC + c.c * s->es,
                                   s->n)))
                goto fail;
        }
        t1 = now();
        if (CU(cudaDeviceSynchronize())) goto fail;
        double secs = now() - t0;
        fprintf(stderr, "    %s: %s %.3f s %.2f TFLOP/s\n", r->name, rep < 0 ? "warm-up" : "run",
                secs, s->flops / secs * 1e-12);
        if (rep >= 0) {
            times[rep] = secs, launch[rep] = t1 - t0;
            continue;
        }
        if (o.verify == V_NONE) continue;
        /* the reference for the tessera rows */
        if (mem_available() > 0 && (double)nC * (double)s->es > 0.8 * mem_available()) {
            fprintf(stderr,
                    "    %s: no host room for its result: checked on the device copy "
                    "only by the probe\n",
                    r->name);
        } else if (!(s->Cref = malloc(nC * s->es))) {
            fprintf(stderr, "    %s: malloc of the reference failed\n", r->name);
        }
        base = s->Cref ? s->Cref : s->C; /* C is refilled before the next row */
        if (CU(cudaMemcpy(base, dC, nC * s->es, cudaMemcpyDeviceToHost))) goto fail;
        check_row(s, r, base);
    }
    finish_row(s, r, times, o.reps);
    r->launch = median_of(launch, o.reps);
    goto done;
fail:
    fail_row(r);
    free(s->Cref), s->Cref = NULL;
done:
    if (h) (void)CB(cublasDestroy(h));
    if (dA) (void)CU(cudaFree(dA));
    if (dB) (void)CU(cudaFree(dB));
    if (dC) (void)CU(cudaFree(dC));
}

/* the sequence through tessera on the host arrays (held or not: tess_gemm finds out) */
static int tess_sequence(struct seq *s) {
    for (int64_t i = 0; i < s->ncalls; i++) {
        struct call c = seq_call(s, i);
        if (TS(tess_gemm(s->dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, c.m, c.n, c.k, s->al,
                         s->A + c.a * s->es, s->n, s->B + c.b * s->es, s->k, s->be,
                         s->C + c.c * s->es, s->n)))
            return -1;
    }
    return 0;
}

/* Release the first nheld of C, A, B (held in that order); -1 if one failed. */
static int release_held(struct seq *s, int nheld) {
    char *m[3] = {s->C, s->A, s->B};
    int rc = 0;
    while (nheld > 0) rc |= TS(tess_release(m[--nheld]));
    return rc;
}

/* Hold C (n x n), then if nmat == 3 A (n x k) and B (k x n); the count held, nmat when all. */
static int hold_mats(struct seq *s, int nmat) {
    if (TS(tess_hold(s->dt, s->C, s->n, s->n, s->n, o.hold_tile))) return 0;
    if (nmat < 3) return 1;
    if (TS(tess_hold(s->dt, s->A, s->n, s->n, s->k, o.hold_tile))) return 1;
    if (TS(tess_hold(s->dt, s->B, s->k, s->k, s->n, o.hold_tile))) return 2;
    return 3;
}

/* update: tessera stateless (nmat 0), C held (1) or C, A, B held (3), held before the clock
 * and released after it, tess_sync(C) timed */
static void row_tess_update(struct seq *s, struct srow *r, int nmat) {
    double times[MAX_REPS], submit[MAX_REPS];
    int nheld = 0;
    if (nmat)
        snprintf(r->name, sizeof r->name, "tessera held %s (tile %lld)", nmat == 3 ? "C,A,B" : "C",
                 (long long)o.hold_tile);
    else
        snprintf(r->name, sizeof r->name, "tessera stateless");
    last_err[0] = 0;
    fill(s->dt, s->C, s->n, SEED_C);
    for (int rep = -1; rep < o.reps; rep++) {
        if (nmat && (nheld = hold_mats(s, nmat)) != nmat) goto fail;
        double t0 = now();
        if (tess_sequence(s)) goto fail;
        double t1 = now();
        if (nmat && TS(tess_sync(s->C))) goto fail;
        double secs = now() - t0;
        if (nmat && release_held(s, nheld)) {
            nheld = 0;
            goto fail;
        }
        nheld = 0;
        fprintf(stderr, "    %s: %s %.3f s %.2f TFLOP/s\n", r->name, rep < 0 ? "warm-up" : "run",
                secs, s->flops / secs * 1e-12);
        if (rep >= 0)
            times[rep] = secs, submit[rep] = t1 - t0;
        else
            check_row(s, r, s->C);
    }
    finish_row(s, r, times, o.reps);
    if (nmat) r->submit = median_of(submit, o.reps);
    return;
fail:
    fail_row(r);
    (void)release_held(s, nheld);
}

/* small: C, A, B held for the whole row; each timed loop ends with tess_sync(C) */
static void row_tess_small(struct seq *s, struct srow *r) {
    double times[MAX_REPS], submit[MAX_REPS];
    int nheld;
    snprintf(r->name, sizeof r->name, "tessera held C,A,B (tile %lld)", (long long)o.hold_tile);
    last_err[0] = 0;
    fill(s->dt, s->C, s->n, SEED_C);
    if ((nheld = hold_mats(s, 3)) != 3) goto fail;
    for (int rep = -1; rep < o.reps; rep++) {
        double t0 = now();
        if (tess_sequence(s)) goto fail;
        double t1 = now();
        if (TS(tess_sync(s->C))) goto fail;
        double secs = now() - t0;
        fprintf(stderr, "    %s: %s %.3f s %.2f TFLOP/s\n", r->name, rep < 0 ? "warm-up" : "run",
                secs, s->flops / secs * 1e-12);
        if (rep >= 0)
            times[rep] = secs, submit[rep] = t1 - t0;
        else
            check_row(s, r, s->C); /* synced: the host may read C until the next call */
    }
    finish_row(s, r, times, o.reps);
    r->submit = median_of(submit, o.reps);
    goto done;
fail:
    fail_row(r);
done:
    if (release_held(s, nheld) && !r->failed) fail_row(r);
}

/* ---- one sequence: operands, rows, table --------------------------------------------------- */

static void print_table(struct seq *s, struct srow *rows, int nrows) {
    const struct srow *base = rows[0].ran && !rows[0].failed ? &rows[0] : NULL;
    printf("\n%s sequence: %cgemm n = %lld, %s = %lld, %lld calls, %.4g flop per sequence, "
           "%s operands\n",
           s->update ? "update" : "small", prec_char(s->dt), (long long)s->n,
           s->update ? "nb" : "k", (long long)s->k, (long long)s->ncalls, s->flops,
           s->pinned ? "pinned" : "NOT page-locked");
    if (s->update)
        printf("  C[j:, j:] -= A[j:, :] B[:, j:] for j = %lld, %lld, ... < %lld; median of %d "
               "runs after a warm-up\n",
               (long long)s->nb, (long long)(2 * s->nb), (long long)s->n, o.reps);
    else
        printf("  C = A B + C, %lld times; median of %d runs after a warm-up\n",
               (long long)s->ncalls, o.reps);
    printf("  %-30s %9s %9s %9s %9s %10s %12s  %s\n", "row", "median s", "min s", "max s",
           "TFLOP/s", "vs in-core", "s per call", "check (probe, vs in-core)");
    for (int i = 0; i < nrows; i++) {
        const struct srow *r = &rows[i];
        if (!r->name[0]) continue;
        if (!r->ran) {
            printf("  %-30s %s\n", r->name, r->failed ? "FAILED" : "skipped");
            continue;
        }
        char rat[32] = "-", chk[64] = "not verified";
        if (i > 0) ratio(rat, sizeof rat, r->rate, base ? base->rate : 0);
        if (r->checked) {
            int at = snprintf(chk, sizeof chk, "%s %.1e", r->wrong ? "WRONG" : "ok", r->probe);
            if (r->has_cmp) snprintf(chk + at, sizeof chk - at, ", %.1e", r->cmp);
        }
        printf("  %-30s %9.4f %9.4f %9.4f %9.2f %10s %12.3e  %s\n", r->name, r->med, r->tmin,
               r->tmax, r->rate, rat, r->med / (double)s->ncalls, chk);
    }
    for (int i = 0; i < nrows; i++) {
        const struct srow *r = &rows[i];
        if (r->name[0] && r->note[0]) printf("  note: %s: %s\n", r->name, r->note);
        if (r->ran && r->launch > 0)
            printf("  note: %s: enqueueing the %lld calls took %.3e s per call (host time "
                   "before cudaDeviceSynchronize)\n",
                   r->name, (long long)s->ncalls, r->launch / (double)s->ncalls);
        if (r->ran && r->submit > 0)
            printf("  note: %s: the %lld calls returned after %.3e s per call (host time "
                   "before tess_sync; a GEMM whose A, B and C are all held returns once "
                   "queued)\n",
                   r->name, (long long)s->ncalls, r->submit / (double)s->ncalls);
    }
    printf("  s per call: the median run's wall time / %lld, completion included "
           "(cudaDeviceSynchronize, tess_sync)\n",
           (long long)s->ncalls);
    fflush(stdout);
}

static int run_one(tess_dtype_t dt, int64_t n) {
    struct seq s = {.dt = dt, .es = esize(dt), .update = o.sequence == SEQ_UPDATE, .n = n};
    struct srow rows[4];
    memset(rows, 0, sizeof rows);
    int cplx = is_complex(dt), rc = 0;
    s.k = s.update ? o.seq_nb : n;
    s.nb = s.update ? o.seq_nb : n;
    if (s.update && s.nb >= n) {
        fprintf(stderr, "%s: --sequence update: --nb %lld must be below n = %lld\n", bench_prog,
                (long long)s.nb, (long long)n);
        n_errors++;
        return -1;
    }
    s.ncalls = s.update ? (n - 1) / s.nb : o.calls;
    s.maxmult = s.ncalls; /* update: block (I, J) gets min(I, J) calls, at most ncalls */
    set_scalar(dt, s.al, s.update ? -1.0 : 1.0), set_scalar(dt, s.be, 1.0);
    for (int64_t i = 0; i < s.ncalls; i++) {
        struct call c = seq_call(&s, i);
        s.flops += (cplx ? 8.0 : 2.0) * (double)c.m * (double)c.n * (double)c.k;
    }
    size_t nC = (size_t)n * (size_t)n * s.es, nA = (size_t)n * (size_t)s.k * s.es;
    double need = (double)nC * (o.verify != V_NONE && o.ndev > 0 && !o.skip[K_INCORE] ? 2 : 1) +
                  2.0 * (double)nA;
    if (mem_available() > 0 && need > 0.9 * mem_available())
        fprintf(stderr, "%s: warning: %.1f GB of host operands, %.1f GB available\n", bench_prog,
                need * 1e-9, mem_available() * 1e-9);
    fprintf(stderr, "%s sequence %cgemm n = %lld %s = %lld: %lld calls\n",
            s.update ? "update" : "small", prec_char(dt), (long long)n, s.update ? "nb" : "k",
            (long long)s.k, (long long)s.ncalls);
    double t0 = now();
    s.A = tess_malloc_host(nA), s.B = tess_malloc_host(nA), s.C = tess_malloc_host(nC);
    if (!s.A || !s.B || !s.C) {
        fail_msg("tess_malloc_host", "out of host memory", __FILE__, __LINE__);
        n_errors++, rc = -1;
        goto out;
    }
    s.pinned = is_pinned(s.A) && is_pinned(s.B) && is_pinned(s.C);
    oracle_fill(dt, s.A, n, s.k, n, SEED_A);
    oracle_fill(dt, s.B, s.k, n, s.k, SEED_B);
    fill(dt, s.C, n, SEED_C);
    fprintf(stderr, "  operands %.2f GB (%s) in %.1f s\n", (double)(nC + 2 * nA) * 1e-9,
            s.pinned ? "pinned" : "NOT page-locked", now() - t0);
    if (o.verify != V_NONE) {
        t0 = now();
        if (expect_begin(&s)) {
            n_errors++, rc = -1;
            goto out;
        }
        fprintf(stderr, "  expected probe product in %.1f s\n", now() - t0);
    }
    if (o.ndev > 0 && !o.skip[K_INCORE])
        row_incore(&s, &rows[0]);
    else
        snprintf(rows[0].name, sizeof rows[0].name, "in-core cuBLAS");
    int trc = TS(tess_init());
    if (trc) {
        n_errors++, rc = -1;
        goto out;
    }
    fprintf(stderr, "  tess_init: %d devices\n", tess_device_count());
    if (s.update && !o.skip[K_TESS]) row_tess_update(&s, &rows[1], 0);
    if (s.update) {
        row_tess_update(&s, &rows[2], 1);
        row_tess_update(&s, &rows[3], 3);
    } else {
        row_tess_small(&s, &rows[2]);
    }
    tess_finalize();
    print_table(&s, rows, 4);
out:
    expect_end(&s);
    free(s.Cref);
    tess_free_host(s.A), tess_free_host(s.B), tess_free_host(s.C);
    return rc;
}

int bench_seq(void) {
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++) {
            int64_t n = o.sizes_given ? o.sizes[i] : o.sequence == SEQ_SMALL ? 1024 : 32768;
            run_one(o.precs[p], n);
            if (!o.sizes_given) break;
        }
    printf("\n%.0f s in all; %d wrong result(s), %d row(s) failed\n", elapsed(), n_wrong, n_errors);
    if (n_wrong)
        printf("NOT verified\n");
    else if (o.verify == V_NONE)
        printf("not verified (--verify none)\n");
    else
        printf("verified%s\n", n_errors ? " (the rows that ran)" : "");
    return n_wrong ? 1 : n_errors ? 3 : 0;
}
