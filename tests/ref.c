/* tests/ref.c: the shared test helpers declared in ref.h: generator, matrices of any
 * precision, the OpenBLAS reference GEMM, the comparison under the oracle's bound, the
 * GEMM case runner and its probe check (the tools' oracle, src/tools/oracle.h). Calls
 * tessera only through its public API.
 */
#include "ref.h"

#include "oracle.h"

#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_GUARD 16 /* elements after every matrix that nobody may write */

/* ---- generator ---------------------------------------------------------------------- */

uint64_t ref_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double ref_rand_unit(uint64_t *state) {
    /* 53 random bits in [0, 1), then to [-1, 1] */
    double u = (double)(ref_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return 2.0 * u - 1.0;
}

int64_t ref_rand_int(uint64_t *state, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(ref_rng_next(state) % span);
}

/* ---- precisions and scalars ----------------------------------------------------------- */

size_t ref_esize(tess_dtype_t dt) {
    switch (dt) {
    case TESS_S: return 4;
    case TESS_D: return 8;
    case TESS_C: return 8;
    case TESS_Z: return 16;
    }
    return 0;
}

int ref_is_complex(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }

double ref_eps(tess_dtype_t dt) { return (dt == TESS_S || dt == TESS_C) ? 6e-8 : 1.1e-16; }

const char *ref_dtype_name(tess_dtype_t dt) {
    static const char *n[4] = {"s", "d", "c", "z"};
    return ((unsigned)dt < 4) ? n[dt] : "?";
}

const char *ref_trans_name(tess_trans_t t) {
    return t == TESS_NO_TRANS ? "N" : t == TESS_TRANS ? "T" : t == TESS_CONJ_TRANS ? "C" : "?";
}

const char *ref_layout_name(tess_layout_t l) {
    return l == TESS_COL_MAJOR ? "col" : l == TESS_ROW_MAJOR ? "row" : "?";
}

void ref_scalar(tess_dtype_t dt, void *out, double re, double im) {
    memset(out, 0, 16);
    switch (dt) {
    case TESS_S: {
        float v = (float)re;
        memcpy(out, &v, sizeof v);
        break;
    }
    case TESS_D: memcpy(out, &re, sizeof re); break;
    case TESS_C: {
        float v[2] = {(float)re, (float)im};
        memcpy(out, v, sizeof v);
        break;
    }
    case TESS_Z: {
        double v[2] = {re, im};
        memcpy(out, v, sizeof v);
        break;
    }
    }
}

void ref_set(tess_dtype_t dt, void *X, size_t idx, long double re, long double im) {
    switch (dt) {
    case TESS_S: ((float *)X)[idx] = (float)re; break;
    case TESS_D: ((double *)X)[idx] = (double)re; break;
    case TESS_C:
        ((float *)X)[2 * idx] = (float)re;
        ((float *)X)[2 * idx + 1] = (float)im;
        break;
    case TESS_Z:
        ((double *)X)[2 * idx] = (double)re;
        ((double *)X)[2 * idx + 1] = (double)im;
        break;
    }
}

/* Element idx of X as a long double pair. */
void ref_get(tess_dtype_t dt, const void *X, size_t idx, long double *re, long double *im) {
    *re = *im = 0;
    switch (dt) {
    case TESS_S:
        *re = ((const float *)X)[idx];
        *im = 0;
        break;
    case TESS_D:
        *re = ((const double *)X)[idx];
        *im = 0;
        break;
    case TESS_C:
        *re = ((const float *)X)[2 * idx];
        *im = ((const float *)X)[2 * idx + 1];
        break;
    case TESS_Z:
        *re = ((const double *)X)[2 * idx];
        *im = ((const double *)X)[2 * idx + 1];
        break;
    }
}

static int scalar_is_zero(tess_dtype_t dt, const void *s) {
    long double re, im;
    ref_get(dt, s, 0, &re, &im);
    return re == 0 && im == 0;
}

/* |x| as |re| + |im|: an upper bound of the modulus that multiplies submultiplicatively. */
static long double abs1(long double re, long double im) { return fabsl(re) + fabsl(im); }

/* ---- matrices --------------------------------------------------------------------------- */

void *ref_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "ref_malloc(%zu) failed\n", bytes);
        abort();
    }
    return p;
}

int64_t ref_min_ld(tess_layout_t layout, int64_t rows, int64_t cols) {
    int64_t inner = layout == TESS_ROW_MAJOR ? cols : rows;
    return inner > 1 ? inner : 1;
}

size_t ref_nelem(tess_layout_t layout, int64_t rows, int64_t cols, int64_t ld) {
    int64_t outer = layout == TESS_ROW_MAJOR ? rows : cols;
    return (size_t)(ld * outer);
}

size_t ref_index(tess_layout_t layout, int64_t r, int64_t c, int64_t ld) {
    return layout == TESS_ROW_MAJOR ? (size_t)(r * ld + c) : (size_t)(r + c * ld);
}

void ref_stored_dims(tess_trans_t t, int64_t oprows, int64_t opcols, int64_t *rows, int64_t *cols) {
    if (t == TESS_NO_TRANS) {
        *rows = oprows;
        *cols = opcols;
    } else {
        *rows = opcols;
        *cols = oprows;
    }
}

void ref_fill_random(tess_dtype_t dt, void *X, size_t nelem, uint64_t *state) {
    size_t parts = nelem * (ref_is_complex(dt) ? 2 : 1);
    if (dt == TESS_S || dt == TESS_C) {
        float *x = X;
        for (size_t i = 0; i < parts; i++) x[i] = (float)ref_rand_unit(state);
    } else {
        double *x = X;
        for (size_t i = 0; i < parts; i++) x[i] = ref_rand_unit(state);
    }
}

void ref_fill_nan(tess_dtype_t dt, void *X, size_t nelem) {
    size_t parts = nelem * (ref_is_complex(dt) ? 2 : 1);
    if (dt == TESS_S || dt == TESS_C) {
        float *x = X;
        for (size_t i = 0; i < parts; i++) x[i] = NAN;
    } else {
        double *x = X;
        for (size_t i = 0; i < parts; i++) x[i] = NAN;
    }
}

size_t ref_count_nonfinite(tess_dtype_t dt, tess_layout_t layout, const void *X, int64_t rows,
                           int64_t cols, int64_t ld) {
    size_t bad = 0;
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < rows; r++) {
            long double re, im;
            ref_get(dt, X, ref_index(layout, r, c, ld), &re, &im);
            bad += !isfinite(re) + !isfinite(im);
        }
    return bad;
}

size_t ref_untouched(tess_dtype_t dt, tess_layout_t layout, const void *X, const void *X0,
                     int64_t rows, int64_t cols, int64_t ld, size_t nelem_total) {
    size_t es = ref_esize(dt);
    int64_t inner = layout == TESS_ROW_MAJOR ? cols : rows;
    int64_t outer = layout == TESS_ROW_MAJOR ? rows : cols;
    const unsigned char *x = X, *x0 = X0;
    /* padding of each column (row) between inner and ld */
    for (int64_t o = 0; o < outer; o++) {
        size_t from = (size_t)(o * ld + inner), to = (size_t)((o + 1) * ld);
        if (to > from && memcmp(x + from * es, x0 + from * es, (to - from) * es) != 0)
            for (size_t i = from; i < to; i++)
                if (memcmp(x + i * es, x0 + i * es, es) != 0) return i + 1;
    }
    /* tail after the last column (row): the guard */
    size_t end = (size_t)(outer * ld);
    for (size_t i = end; i < nelem_total; i++)
        if (memcmp(x + i * es, x0 + i * es, es) != 0) return i + 1;
    return 0;
}

/* ---- reference GEMM ---------------------------------------------------------------------- */

/* C = beta C on the m x n part (beta = 0: zeros without reading). */
static void scale_c(tess_dtype_t dt, tess_layout_t layout, int64_t m, int64_t n, const void *beta,
                    void *C, int64_t ldc) {
    long double br, bi;
    ref_get(dt, beta, 0, &br, &bi);
    int zero = br == 0 && bi == 0;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            size_t idx = ref_index(layout, i, j, ldc);
            if (zero) {
                ref_set(dt, C, idx, 0, 0);
            } else {
                long double cr, ci;
                ref_get(dt, C, idx, &cr, &ci);
                ref_set(dt, C, idx, br * cr - bi * ci, br * ci + bi * cr);
            }
        }
}

void ref_gemm(tess_dtype_t dt, tess_layout_t layout, tess_trans_t ta, tess_trans_t tb, int64_t m,
              int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
              int64_t ldb, const void *beta, void *C, int64_t ldc) {
    if (m == 0 || n == 0) return;
    int beta0 = scalar_is_zero(dt, beta);
    if (beta0 || k == 0 || scalar_is_zero(dt, alpha)) {
        scale_c(dt, layout, m, n, beta, C, ldc); /* zeros when beta = 0 */
        if (k == 0 || scalar_is_zero(dt, alpha)) return;
    }
    enum CBLAS_ORDER o = layout == TESS_ROW_MAJOR ? CblasRowMajor : CblasColMajor;
    enum CBLAS_TRANSPOSE a = (enum CBLAS_TRANSPOSE)ta, b = (enum CBLAS_TRANSPOSE)tb;
    blasint M = (blasint)m, N = (blasint)n, K = (blasint)k;
    blasint LDA = (blasint)lda, LDB = (blasint)ldb, LDC = (blasint)ldc;
    /* with beta = 0, C was zeroed above, so no NaN reaches OpenBLAS */
    switch (dt) {
    case TESS_S:
        cblas_sgemm(o, a, b, M, N, K, *(const float *)alpha, A, LDA, B, LDB, *(const float *)beta,
                    C, LDC);
        break;
    case TESS_D:
        cblas_dgemm(o, a, b, M, N, K, *(const double *)alpha, A, LDA, B, LDB, *(const double *)beta,
                    C, LDC);
        break;
    case TESS_C: cblas_cgemm(o, a, b, M, N, K, alpha, A, LDA, B, LDB, beta, C, LDC); break;
    case TESS_Z: cblas_zgemm(o, a, b, M, N, K, alpha, A, LDA, B, LDB, beta, C, LDC); break;
    }
}

/* op(X)(i, j) of a stored matrix as a long double pair. */
static void op_get(tess_dtype_t dt, tess_layout_t layout, tess_trans_t t, const void *X, int64_t ld,
                   int64_t i, int64_t j, long double *re, long double *im) {
    if (t == TESS_NO_TRANS) {
        ref_get(dt, X, ref_index(layout, i, j, ld), re, im);
    } else {
        ref_get(dt, X, ref_index(layout, j, i, ld), re, im);
        if (t == TESS_CONJ_TRANS) *im = -*im;
    }
}

static void msgf(char *msg, size_t len, const char *fmt, ...) {
    if (!msg || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

/* ---- probe-vector oracle (src/tools/oracle.c) ----------------------------------------------- */

int ref_probe_check(tess_dtype_t dt, tess_layout_t layout, tess_trans_t ta, tess_trans_t tb,
                    int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                    const void *B, int64_t ldb, const void *beta, const void *C0, const void *C,
                    int64_t ldc, int nprobe, uint64_t seed, char *msg, size_t len) {
    if (m == 0 || n == 0) return 0;
    /* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same stored
     * matrices with the roles of A and B (and m and n) swapped */
    const char tc[3] = {'N', 'T', 'C'};
    char a = tc[ta == TESS_NO_TRANS ? 0 : ta == TESS_TRANS ? 1 : 2];
    char b = tc[tb == TESS_NO_TRANS ? 0 : tb == TESS_TRANS ? 1 : 2];
    if (layout == TESS_ROW_MAJOR) {
        const void *x = A;
        int64_t lx = lda, mx = m;
        char cx = a;
        A = B, lda = ldb, a = b, B = x, ldb = lx, b = cx, m = n, n = mx;
    }
    for (int p = 0; p < nprobe; p++) {
        struct oracle_gemm o;
        if (oracle_gemm_begin(&o, dt, m, n, C0, ldc, seed * 7919 + (uint64_t)p + 1)) {
            msgf(msg, len, "probe %d: out of memory", p);
            return 1;
        }
        int64_t row;
        double r = oracle_gemm_check(&o, a, b, k, alpha, A, lda, B, ldb, beta, C, ldc, &row);
        oracle_gemm_end(&o);
        if (!(r <= 1)) {
            msgf(msg, len, "probe %d: %s %lld: error/bound %.3g (oracle.h)", p,
                 layout == TESS_ROW_MAJOR ? "column" : "row", (long long)row, r);
            return 1;
        }
    }
    return 0;
}

/* ---- one GEMM case ---------------------------------------------------------------------- */

void ref_gemm_describe(const struct ref_gemm_case *c, char *buf, size_t len) {
    snprintf(buf, len,
             "%s%s %s %s%s m=%lld n=%lld k=%lld pad=%lld/%lld/%lld alpha=%g%+gi "
             "beta=%g%+gi%s%s seed=%llu",
             c->flags & REF_TYPED ? "tess_" : "tess_gemm:", ref_dtype_name(c->dt),
             ref_layout_name(c->layout), ref_trans_name(c->ta), ref_trans_name(c->tb),
             (long long)c->m, (long long)c->n, (long long)c->k, (long long)c->pad_a,
             (long long)c->pad_b, (long long)c->pad_c, c->alpha[0], c->alpha[1], c->beta[0],
             c->beta[1], c->flags & REF_NAN_C ? " nanC" : "", c->flags & REF_NAN_AB ? " nanAB" : "",
             (unsigned long long)c->seed);
}

void ref_gemm_setup(const struct ref_gemm_case *c, struct ref_gemm_data *d) {
    memset(d, 0, sizeof *d);
    d->c = *c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    uint64_t s = c->seed * 0x2545f4914f6cdd1dull + 12345;
    ref_stored_dims(c->ta, c->m, c->k, &d->ar, &d->ac);
    ref_stored_dims(c->tb, c->k, c->n, &d->br, &d->bc);
    d->lda = ref_min_ld(c->layout, d->ar, d->ac) + c->pad_a;
    d->ldb = ref_min_ld(c->layout, d->br, d->bc) + c->pad_b;
    d->ldc = ref_min_ld(c->layout, c->m, c->n) + c->pad_c;
    d->na = ref_nelem(c->layout, d->ar, d->ac, d->lda) + REF_GUARD;
    d->nb = ref_nelem(c->layout, d->br, d->bc, d->ldb) + REF_GUARD;
    d->nc = ref_nelem(c->layout, c->m, c->n, d->ldc) + REF_GUARD;
    d->A = ref_malloc(d->na * es);
    d->B = ref_malloc(d->nb * es);
    d->C = ref_malloc(d->nc * es);
    d->A0 = ref_malloc(d->na * es);
    d->B0 = ref_malloc(d->nb * es);
    d->C0 = ref_malloc(d->nc * es);
    if (c->flags & REF_NAN_AB) {
        ref_fill_nan(dt, d->A, d->na);
        ref_fill_nan(dt, d->B, d->nb);
    } else {
        ref_fill_random(dt, d->A, d->na, &s);
        ref_fill_random(dt, d->B, d->nb, &s);
    }
    if (c->flags & REF_NAN_C)
        ref_fill_nan(dt, d->C, d->nc);
    else
        ref_fill_random(dt, d->C, d->nc, &s);
    memcpy(d->A0, d->A, d->na * es);
    memcpy(d->B0, d->B, d->nb * es);
    memcpy(d->C0, d->C, d->nc * es);
    ref_scalar(dt, d->alpha, c->alpha[0], c->alpha[1]);
    ref_scalar(dt, d->beta, c->beta[0], c->beta[1]);
}

int ref_gemm_call(struct ref_gemm_data *d) {
    const struct ref_gemm_case *c = &d->c;
    if (!(c->flags & REF_TYPED))
        return tess_gemm(c->dt, c->layout, c->ta, c->tb, c->m, c->n, c->k, d->alpha, d->A, d->lda,
                         d->B, d->ldb, d->beta, d->C, d->ldc);
    switch (c->dt) {
    case TESS_S: {
        float a, b;
        memcpy(&a, d->alpha, sizeof a);
        memcpy(&b, d->beta, sizeof b);
        return tess_sgemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, a, d->A, d->lda, d->B, d->ldb,
                          b, d->C, d->ldc);
    }
    case TESS_D: {
        double a, b;
        memcpy(&a, d->alpha, sizeof a);
        memcpy(&b, d->beta, sizeof b);
        return tess_dgemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, a, d->A, d->lda, d->B, d->ldb,
                          b, d->C, d->ldc);
    }
    case TESS_C:
        return tess_cgemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, d->alpha, d->A, d->lda, d->B,
                          d->ldb, d->beta, d->C, d->ldc);
    case TESS_Z:
        return tess_zgemm(c->layout, c->ta, c->tb, c->m, c->n, c->k, d->alpha, d->A, d->lda, d->B,
                          d->ldb, d->beta, d->C, d->ldc);
    }
    return TESS_EINVAL;
}

/* Element-wise comparison of C with the OpenBLAS reference under the rounding bound. */
static int compare_ref(const struct ref_gemm_data *d, char *msg, size_t len) {
    const struct ref_gemm_case *c = &d->c;
    tess_dtype_t dt = c->dt;
    int64_t m = c->m, n = c->n, k = c->k;
    size_t es = ref_esize(dt);
    if (m == 0 || n == 0) return 0;
    void *Cref = ref_malloc(d->nc * es);
    memcpy(Cref, d->C0, d->nc * es);
    ref_gemm(dt, c->layout, c->ta, c->tb, m, n, k, d->alpha, d->A0, d->lda, d->B0, d->ldb, d->beta,
             Cref, d->ldc);

    long double ar, ai, br, bi;
    ref_get(dt, d->alpha, 0, &ar, &ai);
    ref_get(dt, d->beta, 0, &br, &bi);
    int use_ab = k > 0 && !(ar == 0 && ai == 0);
    int use_c0 = !(br == 0 && bi == 0);
    double aabs = (double)abs1(ar, ai), babs = (double)abs1(br, bi);

    /* |op(A)| |op(B)|, column-major m x n, in double */
    double *absab = NULL;
    if (use_ab) {
        double *aa = ref_malloc(sizeof(double) * (size_t)(m * k));
        double *bb = ref_malloc(sizeof(double) * (size_t)(k * n));
        absab = ref_malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t l = 0; l < k; l++)
            for (int64_t i = 0; i < m; i++) {
                long double xr, xi;
                op_get(dt, c->layout, c->ta, d->A0, d->lda, i, l, &xr, &xi);
                aa[i + l * m] = (double)abs1(xr, xi);
            }
        for (int64_t j = 0; j < n; j++)
            for (int64_t l = 0; l < k; l++) {
                long double xr, xi;
                op_get(dt, c->layout, c->tb, d->B0, d->ldb, l, j, &xr, &xi);
                bb[l + j * k] = (double)abs1(xr, xi);
            }
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                    1.0, aa, (blasint)m, bb, (blasint)k, 0.0, absab, (blasint)m);
        free(aa);
        free(bb);
    }
    /* both results carry the oracle's bound (oracle.h): twice gamma_N and the floor */
    double fac = 2 * (double)oracle_gamma(dt, k), tiny = 2 * (double)oracle_floor(dt, k);
    int rc = 0;
    for (int64_t j = 0; j < n && !rc; j++)
        for (int64_t i = 0; i < m && !rc; i++) {
            size_t idx = ref_index(c->layout, i, j, d->ldc);
            long double xr, xi, yr, yi, zr, zi;
            ref_get(dt, d->C, idx, &xr, &xi);
            ref_get(dt, Cref, idx, &yr, &yi);
            double bound = 0;
            if (use_ab) bound += aabs * absab[i + j * m];
            if (use_c0) {
                ref_get(dt, d->C0, idx, &zr, &zi);
                bound += babs * (double)abs1(zr, zi);
            }
            bound = bound * fac + tiny;
            long double diff = abs1(xr - yr, xi - yi);
            if (!(diff <= bound)) {
                msgf(msg, len,
                     "C(%lld,%lld) = %.10Lg%+.10Lgi, reference %.10Lg%+.10Lgi, |diff| %.3Lg "
                     "> bound %.3g",
                     (long long)i, (long long)j, xr, xi, yr, yi, diff, bound);
                rc = 1;
            }
        }
    free(absab);
    free(Cref);
    return rc;
}

int ref_gemm_verify(const struct ref_gemm_data *d, char *msg, size_t len) {
    const struct ref_gemm_case *c = &d->c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    size_t bad;
    if (memcmp(d->A, d->A0, d->na * es) != 0) {
        msgf(msg, len, "A was modified");
        return 1;
    }
    if (memcmp(d->B, d->B0, d->nb * es) != 0) {
        msgf(msg, len, "B was modified");
        return 1;
    }
    bad = ref_untouched(dt, c->layout, d->C, d->C0, c->m, c->n, d->ldc, d->nc);
    if (bad) {
        msgf(msg, len, "C element %zu (outside the m x n part, ldc = %lld) was written", bad - 1,
             (long long)d->ldc);
        return 1;
    }
    bad = ref_count_nonfinite(dt, c->layout, d->C, c->m, c->n, d->ldc);
    if (bad) {
        msgf(msg, len, "C holds %zu NaN/Inf values", bad);
        return 1;
    }
    if (!(c->flags & REF_PROBE_ONLY) && compare_ref(d, msg, len)) return 1;
    return ref_probe_check(dt, c->layout, c->ta, c->tb, c->m, c->n, c->k, d->alpha, d->A0, d->lda,
                           d->B0, d->ldb, d->beta, d->C0, d->C, d->ldc, 2, c->seed, msg, len);
}

int ref_gemm_c_unchanged(const struct ref_gemm_data *d, char *msg, size_t len) {
    size_t es = ref_esize(d->c.dt);
    if (memcmp(d->C, d->C0, d->nc * es) == 0) return 0;
    for (size_t i = 0; i < d->nc; i++)
        if (memcmp((char *)d->C + i * es, (char *)d->C0 + i * es, es) != 0) {
            msgf(msg, len, "C element %zu was written", i);
            break;
        }
    return 1;
}

void ref_gemm_free(struct ref_gemm_data *d) {
    free(d->A);
    free(d->B);
    free(d->C);
    free(d->A0);
    free(d->B0);
    free(d->C0);
    memset(d, 0, sizeof *d);
}

int ref_gemm_run(const struct ref_gemm_case *c, char *msg, size_t len) {
    struct ref_gemm_data d;
    char what[512], why[512] = "";
    ref_gemm_describe(c, what, sizeof what);
    ref_gemm_setup(c, &d);
    int st = ref_gemm_call(&d);
    int rc = 0;
    if (st != TESS_OK) {
        msgf(msg, len, "%s: returned %d (%s): %s", what, st, tess_strerror(st), tess_last_error());
        rc = 1;
    } else if (ref_gemm_verify(&d, why, sizeof why)) {
        msgf(msg, len, "%s: %s", what, why);
        rc = 1;
    }
    ref_gemm_free(&d);
    return rc;
}

/* ---- environment -------------------------------------------------------------------------- */

long ref_env_long(const char *name, long def) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    return strtol(v, NULL, 0);
}

int ref_env_has(const char *name, const char *word) {
    const char *v = getenv(name);
    size_t wl = strlen(word);
    if (!v) return 0;
    while (*v) {
        size_t l = strcspn(v, ", ");
        if (l == wl && strncmp(v, word, wl) == 0) return 1;
        v += l;
        v += strspn(v, ", ");
    }
    return 0;
}
