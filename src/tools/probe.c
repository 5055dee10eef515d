/* src/tools/probe.c: the probe-vector oracle (see probe.h). Precision enters only through
 * the element loader; the loops are written once. */
#include "probe.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* element i of x as (re, im) */
static inline void ld_el(tess_dtype_t dt, const void *x, size_t i, long double *re, long double *im) {
    *re = *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)x)[i], *im = 0; break;
    case TESS_D: *re = ((const double *)x)[i], *im = 0; break;
    case TESS_C: *re = ((const float *)x)[2 * i], *im = ((const float *)x)[2 * i + 1]; break;
    case TESS_Z: *re = ((const double *)x)[2 * i], *im = ((const double *)x)[2 * i + 1]; break;
    }
}

void probe_fill(tess_dtype_t dt, void *x, int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int parts = (dt == TESS_C || dt == TESS_Z) ? 2 : 1;
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows * parts; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double v = (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
            size_t at = (size_t)j * (size_t)ld * parts + (size_t)i;
            if (dt == TESS_S || dt == TESS_C) ((float *)x)[at] = (float)v;
            else ((double *)x)[at] = v;
        }
}

/* y = op(X) v for X stored rows x cols (ld), op by trans; v, y complex (re, im pairs);
 * yabs = |op(X)| vabs. out dimension: rows if 'N' else cols. Real precisions with a real v
 * take a loop without the imaginary parts (the same sums: every imaginary term is 0). */
void probe_matvec(tess_dtype_t dt, char trans, int64_t rows, int64_t cols, const void *X,
                  int64_t ld, const long double *v, const long double *vabs, long double *y,
                  long double *yabs) {
    int64_t out = trans == 'N' ? rows : cols, in_n = trans == 'N' ? cols : rows;
    memset(y, 0, sizeof(long double) * 2 * (size_t)out);
    memset(yabs, 0, sizeof(long double) * (size_t)out);
    int real_v = dt == TESS_S || dt == TESS_D;
    for (int64_t j = 0; real_v && j < in_n; j++)
        if (v[2 * j + 1] != 0) real_v = 0;
    if (real_v) {
        for (int64_t j = 0; j < cols; j++) {
            const double *xd = dt == TESS_D ? (const double *)X + (size_t)j * (size_t)ld : NULL;
            const float *xs = dt == TESS_S ? (const float *)X + (size_t)j * (size_t)ld : NULL;
            if (trans == 'N') {
                const long double vr = v[2 * j], va = vabs[j];
                for (int64_t i = 0; i < rows; i++) {
                    const long double x = xd ? (long double)xd[i] : (long double)xs[i];
                    y[2 * i] += x * vr;
                    yabs[i] += fabsl(x) * va;
                }
            } else {
                long double acc = 0, aabs = 0;
                for (int64_t i = 0; i < rows; i++) {
                    const long double x = xd ? (long double)xd[i] : (long double)xs[i];
                    acc += x * v[2 * i];
                    aabs += fabsl(x) * vabs[i];
                }
                y[2 * j] = acc, yabs[j] = aabs;
            }
        }
        return;
    }
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) {
            long double re, im;
            ld_el(dt, X, (size_t)j * (size_t)ld + (size_t)i, &re, &im);
            if (trans == 'C') im = -im;
            int64_t o = trans == 'N' ? i : j, in = trans == 'N' ? j : i;
            long double vr = v[2 * in], vi = v[2 * in + 1];
            y[2 * o] += re * vr - im * vi;
            y[2 * o + 1] += re * vi + im * vr;
            yabs[o] += (im == 0 ? fabsl(re) : sqrtl(re * re + im * im)) * vabs[in];
        }
}

int probe_begin(struct probe *p, tess_dtype_t dt, int64_t m, int64_t n, const void *C, int64_t ldc) {
    memset(p, 0, sizeof *p);
    p->dt = dt, p->m = m, p->n = n;
    p->t = malloc(sizeof(long double) * 2 * (size_t)(n + 1));
    p->tabs = malloc(sizeof(long double) * (size_t)(n + 1));
    p->c0t = malloc(sizeof(long double) * 2 * (size_t)(m + 1));
    p->c0abs = malloc(sizeof(long double) * (size_t)(m + 1));
    if (!p->t || !p->tabs || !p->c0t || !p->c0abs) {
        probe_end(p);
        return -1;
    }
    for (int64_t j = 0; j < n; j++) {
        p->t[2 * j] = 1.0L + (long double)((j * 7919) % 1000) / 1000.0L;
        p->t[2 * j + 1] = 0;
        p->tabs[j] = p->t[2 * j];
    }
    probe_matvec(dt, 'N', m, n, C, ldc, p->t, p->tabs, p->c0t, p->c0abs);
    return 0;
}

static void cmul(const long double *a, long double br, long double bi, long double *out) {
    out[0] = a[0] * br - a[1] * bi;
    out[1] = a[0] * bi + a[1] * br;
}

double probe_check(const struct probe *p, char ta, char tb, int64_t k, const void *alpha,
                   const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                   const void *C, int64_t ldc) {
    int64_t n = p->n;
    long double *bt = malloc(sizeof(long double) * 2 * (size_t)(k + 1));
    long double *btabs = malloc(sizeof(long double) * (size_t)(k + 1));
    double worst = INFINITY;
    if (bt && btabs) {
        /* op(B) t: B stored k x n ('N') or n x k */
        probe_matvec(p->dt, tb, tb == 'N' ? k : n, tb == 'N' ? n : k, B, ldb, p->t, p->tabs, bt,
                     btabs);
        worst = probe_check_bt(p, ta, k, alpha, A, lda, bt, btabs, beta, C, ldc);
    }
    free(bt), free(btabs);
    return worst;
}

double probe_check_bt(const struct probe *p, char ta, int64_t k, const void *alpha, const void *A,
                      int64_t lda, const long double *bt, const long double *btabs,
                      const void *beta, const void *C, int64_t ldc) {
    tess_dtype_t dt = p->dt;
    int64_t m = p->m, n = p->n;
    long double ar, ai, br, bi;
    ld_el(dt, alpha, 0, &ar, &ai);
    ld_el(dt, beta, 0, &br, &bi);
    long double *abt = malloc(sizeof(long double) * 2 * (size_t)(m + 1));
    long double *abtabs = malloc(sizeof(long double) * (size_t)(m + 1));
    long double *ct = malloc(sizeof(long double) * 2 * (size_t)(m + 1));
    long double *ctabs = malloc(sizeof(long double) * (size_t)(m + 1));
    double worst = INFINITY;
    if (abt && abtabs && ct && ctabs) {
        probe_matvec(dt, ta, ta == 'N' ? m : k, ta == 'N' ? k : m, A, lda, bt, btabs, abt, abtabs);
        probe_matvec(dt, 'N', m, n, C, ldc, p->t, p->tabs, ct, ctabs);
        long double eps = (dt == TESS_S || dt == TESS_C) ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
        long double gamma = (long double)(k + 4) * eps * ((dt == TESS_C || dt == TESS_Z) ? 4 : 1);
        long double amag = sqrtl(ar * ar + ai * ai), bmag = sqrtl(br * br + bi * bi);
        worst = 0;
        for (int64_t i = 0; i < m; i++) {
            long double r1[2], r2[2];
            cmul(&abt[2 * i], ar, ai, r1);
            cmul(&p->c0t[2 * i], br, bi, r2);
            long double er = ct[2 * i] - r1[0] - r2[0], ei = ct[2 * i + 1] - r1[1] - r2[1];
            long double err = sqrtl(er * er + ei * ei);
            /* the result itself is rounded once more per entry: |C||t| * eps */
            long double bound = gamma * (amag * abtabs[i] + bmag * p->c0abs[i]) + 2 * eps * ctabs[i] +
                                LDBL_MIN;
            double r = (double)(err / bound);
            if (!(r <= worst)) worst = r; /* NaN propagates as a failure */
            if (isnan(r)) { worst = NAN; break; }
        }
    }
    free(abt), free(abtabs), free(ct), free(ctabs);
    return worst;
}

void probe_end(struct probe *p) {
    free(p->t), free(p->tabs), free(p->c0t), free(p->c0abs);
    p->t = p->tabs = p->c0t = p->c0abs = NULL;
}
