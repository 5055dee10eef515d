/* src/tools/oracle.c: the probe-vector oracle of oracle.h: the bound, the probe, one masked
 * matrix-vector product in long double (written once for all precisions, run in chunks of
 * outputs: rows for 'N', columns for 'T'/'C', so each chunk owns its outputs) and the GEMM
 * check. */
#include "oracle.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"

typedef long double LD;

static int cplx(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }
static int single(tess_dtype_t dt) { return dt == TESS_S || dt == TESS_C; }

/* ---- the bound --------------------------------------------------------------------------- */

LD oracle_unit(tess_dtype_t dt) { return single(dt) ? FLT_EPSILON / 2.0L : DBL_EPSILON / 2.0L; }

static LD count_n(tess_dtype_t dt, int64_t K) {
    return (LD)(cplx(dt) ? 2 : 1) * ((LD)(K > 0 ? K : 0) + 4);
}

static LD gamma_of(LD j, LD u) { return j * u < 0.5L ? j * u / (1 - j * u) : INFINITY; }

LD oracle_gamma(tess_dtype_t dt, int64_t K) { return gamma_of(count_n(dt, K), oracle_unit(dt)); }

LD oracle_floor(tess_dtype_t dt, int64_t K) {
    return 8 * count_n(dt, K) * (single(dt) ? (LD)FLT_MIN : (LD)DBL_MIN);
}

void oracle_bound_init(struct oracle_bound *b, tess_dtype_t dt, int64_t K, int64_t n, LD tsum) {
    LD f = cplx(dt) ? 2 : 1, m = 2 * f * ((LD)(n > 0 ? n : 0) + (LD)(K > 0 ? K : 0) + 8);
    b->g = oracle_gamma(dt, K);
    b->gl = gamma_of(m, LDBL_EPSILON / 2.0L);
    b->floor = oracle_floor(dt, K) * tsum;
}

double oracle_rows(const struct oracle_bound *b, int64_t rows, const LD *y, const LD *yabs,
                   const LD *e, const LD *eabs, int residual, int64_t *worst_row) {
    double worst = 0;
    if (worst_row) *worst_row = rows > 0 ? 0 : -1;
    for (int64_t i = 0; i < rows; i++) {
        LD err = fabsl(y[2 * i] - e[2 * i]) + fabsl(y[2 * i + 1] - e[2 * i + 1]);
        LD terms = residual ? eabs[i] + yabs[i] : eabs[i];
        LD bound = b->g * terms + b->gl * (terms + yabs[i]) + b->floor;
        double r = bound > 0 ? (double)(err / bound) : err > 0 ? INFINITY : 0;
        if (isnan(r) || isnan((double)bound)) {
            if (worst_row) *worst_row = i;
            return NAN;
        }
        if (r > worst) {
            worst = r;
            if (worst_row) *worst_row = i;
        }
    }
    return worst;
}

/* ---- probe, data -------------------------------------------------------------------------- */

LD oracle_probe(int64_t n, uint64_t seed, int cplx_t, LD *t, LD *tabs) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7919;
    LD sum = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!seed) {
            t[2 * j] = 1.0L + (LD)((j * 7919) % 1000) / 1000.0L, t[2 * j + 1] = 0;
        } else {
            for (int q = 0; q < (cplx_t ? 2 : 1); q++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                t[2 * j + q] = (LD)(s >> 11) * (2.0L / 9007199254740992.0L) - 1;
            }
            if (!cplx_t) t[2 * j + 1] = 0;
        }
        tabs[j] = fabsl(t[2 * j]) + fabsl(t[2 * j + 1]);
        sum += tabs[j];
    }
    return sum;
}

void oracle_fill(tess_dtype_t dt, void *x, int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int parts = cplx(dt) ? 2 : 1;
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows * parts; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double v = (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
            size_t at = (size_t)j * (size_t)ld * parts + (size_t)i;
            if (single(dt))
                ((float *)x)[at] = (float)v;
            else
                ((double *)x)[at] = v;
        }
}

void oracle_scalar(tess_dtype_t dt, const void *s, LD *re, LD *im) {
    switch (dt) {
    case TESS_S: *re = *(const float *)s, *im = 0; break;
    case TESS_D: *re = *(const double *)s, *im = 0; break;
    case TESS_C: *re = ((const float *)s)[0], *im = ((const float *)s)[1]; break;
    default: *re = ((const double *)s)[0], *im = ((const double *)s)[1]; break;
    }
}

void oracle_axpy(LD *y, LD *yabs, LD sr, LD si, const LD *x, const LD *xabs, int64_t m) {
    LD sa = fabsl(sr) + fabsl(si);
    for (int64_t i = 0; i < m; i++) {
        LD xr = x[2 * i], xi = x[2 * i + 1];
        y[2 * i] += sr * xr - si * xi;
        y[2 * i + 1] += sr * xi + si * xr;
        yabs[i] += sa * xabs[i];
    }
}

/* ---- the masked product --------------------------------------------------------------------- */

struct mvjob {
    char op; /* 'N': y = X v; 'T': y = X^T v; 'C': y = X^H v */
    enum oracle_mask mk;
    enum oracle_diag dg;
    int64_t rows, cols, ld, out;
    const void *X;
    const LD *v, *vabs; /* (re, im) pairs; |v| */
    LD *y, *yabs;
    int nchunks;
    int vreal; /* every imaginary part of v is zero (the fixed probe): a shorter loop */
};

/* rows [lo, hi) of column j that the mask keeps */
static inline void mask_range(enum oracle_mask mk, int64_t j, int64_t rows, int64_t *lo,
                              int64_t *hi) {
    switch (mk) {
    default:
    case OM_FULL: *lo = 0, *hi = rows; break;
    case OM_UP: *lo = 0, *hi = j + 1; break;
    case OM_SUP: *lo = 0, *hi = j; break;
    case OM_LO: *lo = j, *hi = rows; break;
    case OM_SLO: *lo = j + 1, *hi = rows; break;
    }
    if (*hi > rows) *hi = rows;
    if (*lo > rows) *lo = rows;
}

/* One chunk [q0, q1) of the outputs, for element type T (CPX: interleaved complex). The
 * diagonal entry of column j, when the mask holds it and dg is not OD_ASIS, is dj. */
#define DEFINE_MV(SUF, T, CPX)                                                        \
    static void mv_chunk_##SUF(const struct mvjob *jb, int64_t q0, int64_t q1) {      \
        const T *X = (const T *)jb->X;                                                \
        const size_t ld = (size_t)jb->ld * (CPX ? 2 : 1);                             \
        const LD *v = jb->v, *vabs = jb->vabs;                                        \
        LD *y = jb->y, *yabs = jb->yabs;                                              \
        const int conj = jb->op == 'C', unit = jb->dg == OD_UNIT;                     \
        if (jb->op == 'N') {                                                          \
            for (int64_t j = 0; j < jb->cols; j++) {                                  \
                int64_t lo, hi;                                                       \
                mask_range(jb->mk, j, jb->rows, &lo, &hi);                            \
                if (lo < q0) lo = q0;                                                 \
                if (hi > q1) hi = q1;                                                 \
                if (lo >= hi) continue;                                               \
                const T *col = X + (size_t)j * ld;                                    \
                const LD vr = v[2 * j], vi = v[2 * j + 1], va = vabs[j];              \
                const int64_t dj = (jb->dg != OD_ASIS && j >= lo && j < hi) ? j : -1; \
                for (int64_t i = lo; i < hi; i++) {                                   \
                    LD xr, xi;                                                        \
                    if (i != dj) {                                                    \
                        xr = CPX ? (LD)col[2 * i] : (LD)col[i];                       \
                        xi = CPX ? (LD)col[2 * i + 1] : 0;                            \
                    } else {                                                          \
                        xr = unit ? 1 : CPX ? (LD)col[2 * i] : (LD)col[i];            \
                        xi = 0;                                                       \
                    }                                                                 \
                    if (vi == 0) { /* the same sums, fewer products */                \
                        y[2 * i] += xr * vr;                                          \
                        if (CPX) y[2 * i + 1] += xi * vr;                             \
                    } else {                                                          \
                        y[2 * i] += xr * vr - xi * vi;                                \
                        y[2 * i + 1] += xr * vi + xi * vr;                            \
                    }                                                                 \
                    yabs[i] += (CPX ? fabsl(xr) + fabsl(xi) : fabsl(xr)) * va;        \
                }                                                                     \
            }                                                                         \
        } else {                                                                      \
            for (int64_t j = q0; j < q1; j++) {                                       \
                int64_t lo, hi;                                                       \
                mask_range(jb->mk, j, jb->rows, &lo, &hi);                            \
                const T *col = X + (size_t)j * ld;                                    \
                const int64_t dj = (jb->dg != OD_ASIS && j >= lo && j < hi) ? j : -1; \
                LD sr = 0, si = 0, sa = 0;                                            \
                for (int64_t i = lo; i < hi; i++) {                                   \
                    LD xr, xi;                                                        \
                    if (i != dj) {                                                    \
                        xr = CPX ? (LD)col[2 * i] : (LD)col[i];                       \
                        xi = CPX ? (LD)col[2 * i + 1] : 0;                            \
                        if (conj) xi = -xi;                                           \
                    } else {                                                          \
                        xr = unit ? 1 : CPX ? (LD)col[2 * i] : (LD)col[i];            \
                        xi = 0;                                                       \
                    }                                                                 \
                    const LD vr = v[2 * i];                                           \
                    if (jb->vreal) {                                                  \
                        sr += xr * vr;                                                \
                        if (CPX) si += xi * vr;                                       \
                    } else {                                                          \
                        const LD vi = v[2 * i + 1];                                   \
                        sr += xr * vr - xi * vi;                                      \
                        si += xr * vi + xi * vr;                                      \
                    }                                                                 \
                    sa += (CPX ? fabsl(xr) + fabsl(xi) : fabsl(xr)) * vabs[i];        \
                }                                                                     \
                y[2 * j] += sr, y[2 * j + 1] += si, yabs[j] += sa;                    \
            }                                                                         \
        }                                                                             \
    }
DEFINE_MV(s, float, 0)
DEFINE_MV(d, double, 0)
DEFINE_MV(c, float, 1)
DEFINE_MV(z, double, 1)

struct mvctx {
    const struct mvjob *jb;
    tess_dtype_t dt;
};

static void mv_chunk(void *c, int q) {
    const struct mvctx *x = c;
    const struct mvjob *jb = x->jb;
    int64_t q0 = jb->out * q / jb->nchunks, q1 = jb->out * (q + 1) / jb->nchunks;
    switch (x->dt) {
    case TESS_S: mv_chunk_s(jb, q0, q1); break;
    case TESS_D: mv_chunk_d(jb, q0, q1); break;
    case TESS_C: mv_chunk_c(jb, q0, q1); break;
    case TESS_Z: mv_chunk_z(jb, q0, q1); break;
    }
}

void oracle_mv(tess_dtype_t dt, int threads, int zero, char op, enum oracle_mask mk,
               enum oracle_diag dg, int64_t rows, int64_t cols, const void *X, int64_t ld,
               const LD *v, const LD *vabs, LD *y, LD *yabs) {
    struct mvjob jb = {.op = op == 'N'   ? 'N'
                             : op == 'T' ? 'T'
                                         : 'C',
                       .mk = mk,
                       .dg = dg,
                       .rows = rows,
                       .cols = cols,
                       .ld = ld,
                       .X = X,
                       .v = v,
                       .vabs = vabs,
                       .y = y,
                       .yabs = yabs};
    if (!cplx(dt) && jb.op == 'C') jb.op = 'T';
    jb.out = jb.op == 'N' ? rows : cols;
    jb.vreal = 1;
    for (int64_t i = 0, nv = jb.op == 'N' ? cols : rows; i < nv && jb.vreal; i++)
        jb.vreal = v[2 * i + 1] == 0;
    if (zero && jb.out > 0) {
        memset(y, 0, sizeof(LD) * 2 * (size_t)jb.out);
        memset(yabs, 0, sizeof(LD) * (size_t)jb.out);
    }
    if (jb.out < 1) return;
    int64_t nch = (int64_t)(threads > 1 ? threads : 1) * 8;
    if (threads <= 1 || (double)rows * (double)cols < 65536.0) nch = 1;
    if (nch > jb.out) nch = jb.out;
    jb.nchunks = (int)nch;
    struct mvctx c = {&jb, dt};
    if (nch == 1)
        mv_chunk(&c, 0);
    else
        tess__par_run(threads, jb.nchunks, mv_chunk, &c);
}

void oracle_matvec(tess_dtype_t dt, char op, int64_t rows, int64_t cols, const void *X, int64_t ld,
                   const LD *v, const LD *vabs, LD *y, LD *yabs) {
    oracle_mv(dt, 1, 1, op, OM_FULL, OD_ASIS, rows, cols, X, ld, v, vabs, y, yabs);
}

/* ---- GEMM --------------------------------------------------------------------------------- */

static LD *lalloc(int64_t n) { return calloc((size_t)(n > 0 ? n : 0) + 1, sizeof(LD)); }

int oracle_gemm_begin(struct oracle_gemm *p, tess_dtype_t dt, int64_t m, int64_t n, const void *C0,
                      int64_t ldc, uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->dt = dt, p->m = m, p->n = n;
    p->t = lalloc(2 * n), p->tabs = lalloc(n), p->c0t = lalloc(2 * m), p->c0abs = lalloc(m);
    if (!p->t || !p->tabs || !p->c0t || !p->c0abs) {
        oracle_gemm_end(p);
        return -1;
    }
    p->tsum = oracle_probe(n, seed, cplx(dt), p->t, p->tabs);
    oracle_matvec(dt, 'N', m, n, C0, ldc, p->t, p->tabs, p->c0t, p->c0abs);
    return 0;
}

double oracle_gemm_check(const struct oracle_gemm *p, char ta, char tb, int64_t k,
                         const void *alpha, const void *A, int64_t lda, const void *B, int64_t ldb,
                         const void *beta, const void *C, int64_t ldc, int64_t *worst_row) {
    LD *bt = lalloc(2 * k), *btabs = lalloc(k);
    double worst = NAN;
    if (bt && btabs) {
        LD ar, ai;
        oracle_scalar(p->dt, alpha, &ar, &ai);
        if (k > 0 && (ar != 0 || ai != 0)) /* op(B) t: B stored k x n ('N') or n x k */
            oracle_matvec(p->dt, tb, tb == 'N' ? k : p->n, tb == 'N' ? p->n : k, B, ldb, p->t,
                          p->tabs, bt, btabs);
        worst = oracle_gemm_check_bt(p, ta, k, alpha, A, lda, bt, btabs, beta, C, ldc, worst_row);
    }
    free(bt), free(btabs);
    return worst;
}

double oracle_gemm_check_bt(const struct oracle_gemm *p, char ta, int64_t k, const void *alpha,
                            const void *A, int64_t lda, const LD *bt, const LD *btabs,
                            const void *beta, const void *C, int64_t ldc, int64_t *worst_row) {
    const tess_dtype_t dt = p->dt;
    const int64_t m = p->m;
    LD ar, ai, br, bi;
    oracle_scalar(dt, alpha, &ar, &ai);
    oracle_scalar(dt, beta, &br, &bi);
    LD *e = lalloc(2 * m), *eabs = lalloc(m), *w = lalloc(2 * m), *wabs = lalloc(m);
    double worst = NAN;
    if (e && eabs && w && wabs) {
        if (k > 0 && (ar != 0 || ai != 0)) { /* alpha op(A) (op(B) t) */
            oracle_matvec(dt, ta, ta == 'N' ? m : k, ta == 'N' ? k : m, A, lda, bt, btabs, w, wabs);
            oracle_axpy(e, eabs, ar, ai, w, wabs, m);
        }
        if (br != 0 || bi != 0) oracle_axpy(e, eabs, br, bi, p->c0t, p->c0abs, m);
        oracle_matvec(dt, 'N', m, p->n, C, ldc, p->t, p->tabs, w, wabs); /* C t */
        struct oracle_bound b;
        oracle_bound_init(&b, dt, k, p->n, p->tsum);
        worst = oracle_rows(&b, m, w, wabs, e, eabs, 0, worst_row);
    }
    free(e), free(eabs), free(w), free(wabs);
    return worst;
}

void oracle_gemm_end(struct oracle_gemm *p) {
    free(p->t), free(p->tabs), free(p->c0t), free(p->c0abs);
    p->t = p->tabs = p->c0t = p->c0abs = NULL;
}
